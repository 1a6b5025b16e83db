"""The OpenAPI document states the limits the service enforces (issue 30, item 8): schemathesis found 309
requests the document took and the service refused (an empty ``assetIds=``, any ``filterBy`` operator on any
field, NUL).  What the document takes here, the service takes; what the service refuses, the document
refuses."""

from __future__ import annotations

import functools
import re
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sdk_helpers import service_document

from template_engine.loader import values
from template_engine.service.errors import ApiError
from template_engine.service.listing import TEMPLATES, WORKLOADS, Listing
from template_engine.service.routes.orgunits import DEPARTMENTS, PROJECTS

T = "/api/v1/workload-templates/distributed"
LISTINGS = {"templates": TEMPLATES, "workloads": WORKLOADS, "departments": DEPARTMENTS, "projects": PROJECTS}


@functools.cache
def _document() -> dict[str, Any]:
    return service_document()


def _errors(schema: dict[str, Any], value: Any) -> list[str]:
    root = {**schema, "components": _document()["components"]}
    return [error.message for error in jsonschema.Draft202012Validator(root).iter_errors(value)]


def _parameter(path: str, name: str) -> dict[str, Any]:
    operation = _document()["paths"][path]["get"]
    (schema,) = [p["schema"] for p in operation["parameters"] if p["name"] == name]
    return dict(schema)


def _body(method: str, path: str) -> dict[str, Any]:
    schema: dict[str, Any] = _document()["paths"][path][method]["requestBody"]["content"]["application/json"][
        "schema"
    ]
    return schema


# -- filterBy -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(LISTINGS))
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_every_filter_the_document_takes_the_service_takes(name: str, data: st.DataObject) -> None:
    listing: Listing = LISTINGS[name]
    text = data.draw(st.from_regex(re.compile(listing.pattern), fullmatch=True))
    try:
        listing.parse([text])
    except ApiError as refused:  # pragma: no cover - the failure this test looks for
        raise AssertionError(
            f"the document takes {text!r}, the service refuses it: {refused.problems}"
        ) from None


@pytest.mark.parametrize(
    "text",
    [
        "createdAt=@2024",  # an operator a date does not take
        "createdAt==yesterday",
        "createdAt==2024-02-30",
        "runnable==yes",
        "projectId<=one",
        "projectId>=\u0661",  # an Arabic-Indic digit
        "nosuchfield==1",
        "name=@a,createdAt==bad",  # a second filter joined by a comma
        "createdAt==2024-05-01\n",
        "",
    ],
)
def test_a_filter_the_service_refuses_the_document_refuses(client: Any, text: str) -> None:
    assert client.get(T, params={"filterBy": text}).status_code == 400
    assert _errors(_parameter(T, "filterBy"), [text])


def test_the_documents_filter_grammar_is_the_services() -> None:
    (array,) = [s for s in _parameter(T, "filterBy")["anyOf"] if s.get("type") == "array"]
    assert array["items"]["pattern"] == TEMPLATES.pattern


# -- assetIds -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("ids", ["", ",", "not-a-uuid", "00000000-0000-0000-0000-000000000000,"])
def test_asset_ids_the_service_refuses_the_document_refuses(client: Any, ids: str) -> None:
    path = "/api/v1/asset/environment"
    assert client.get(path, params={"assetIds": ids}).status_code == 400
    assert _errors(_parameter(path, "assetIds"), ids)
    good = "00000000-0000-0000-0000-000000000000,11111111-1111-1111-1111-111111111111"
    assert client.get(path, params={"assetIds": good}).status_code == 200
    assert _errors(_parameter(path, "assetIds"), good) == []


# -- texts of a body ----------------------------------------------------------------------------------------


def _template(spec: dict[str, Any]) -> dict[str, Any]:
    return {"meta": {"name": "limits", "scopeType": "system"}, "spec": spec}


def _at(shape: tuple[str, ...], leaf: Any) -> dict[str, Any]:
    out: Any = leaf
    for part in reversed(shape):
        out = (
            ([out] if not isinstance(out, dict) or "name" in out else [{"name": "k0", **out}])
            if part == "*"
            else {part: out}
        )
    return dict(out)


@pytest.mark.parametrize("shape", list(values.TEXT_BOUNDS), ids=".".join)
def test_each_texts_bound_is_in_the_document(client: Any, shape: tuple[str, ...]) -> None:
    bound, _ = values.TEXT_BOUNDS[shape]
    schema = _body("post", T)
    over = _template(_at(shape, "a" * (bound + 1)))
    assert client.post(T, json=over).status_code == 400
    assert _errors(schema, over), f"the document takes {bound + 1} characters at {shape}"
    assert _errors(schema, _template(_at(shape, "a" * bound))) == []
    if bound < values.LONGEST_TEXT:  # an expression: the service may take more, the document never does
        expression = _template(_at(shape, "{{ project.name }}" + "a" * bound))
        assert _errors(schema, expression)


def test_any_other_text_of_a_spec_is_bounded_and_no_text_holds_a_nul(client: Any) -> None:
    schema = _body("post", T)
    for spec in ({"workingDir": "/" * (values.LONGEST_TEXT + 1)}, {"workingDir": "/a\x00b"}):
        assert client.post(T, json=_template(spec)).status_code == 400
        assert _errors(schema, _template(spec))
    named = {"meta": {"name": "limits", "scopeType": "system", "description": "a\x00b"}}
    assert client.post(T, json=named).status_code == 400
    assert _errors(schema, named)
