"""Every text of a document has a bound (issue 30): the rows of ``values.TEXT_BOUNDS`` and ``LONGEST_TEXT``
for any other text, checked with the document's other rules (``document_rules``: files, revisions,
``db import``, API bodies and the UI's form; ``tests/service/test_door_parity.py`` proves the doors agree)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from template_engine.loader import values
from template_engine.loader.rules import document_rules
from template_engine.models.documents import LayerDocument


def _spec_at(shape: tuple[str, ...], leaf: Any) -> dict[str, Any]:
    out: Any = leaf
    for part in reversed(shape):
        if part == "*":
            out = [out] if not isinstance(out, dict) or "name" in out else [{"name": "k0", **out}]
        else:
            out = {part: out}
    return {"spec": out}


def _problems(document: dict[str, Any]) -> list[tuple[str, str | None]]:
    return [(p.message, p.expected) for p in document_rules(LayerDocument, document, "d.yaml", {})]


@pytest.mark.parametrize("shape", list(values.TEXT_BOUNDS), ids=".".join)
def test_each_field_takes_its_bound_and_refuses_one_more_character(shape: tuple[str, ...]) -> None:
    bound, why = values.TEXT_BOUNDS[shape]
    assert _problems(_spec_at(shape, "a" * bound)) == []
    refused = _problems(_spec_at(shape, "a" * (bound + 1)))
    assert refused == [
        (f"the text is {bound + 1:,} characters long", f"at most {bound:,} characters ({why})")
    ]


def test_any_other_text_is_held_to_the_longest_and_the_issues_900_kb_image_is_refused() -> None:
    assert _problems({"spec": {"workingDir": "/" * values.LONGEST_TEXT}}) == []
    assert _problems({"spec": {"workingDir": "/" * (values.LONGEST_TEXT + 1)}})
    assert _problems({"description": "d" * (values.LONGEST_TEXT + 1), "spec": {}})  # outside a spec too
    image = _problems({"spec": {"image": "x" * 900_000}})
    assert image == [
        (
            "the text is 900,000 characters long",
            f"at most 520 characters ({values.TEXT_BOUNDS[('image',)][1]})",
        )
    ]
    value = _problems(_spec_at(("environmentVariables", "*", "value"), "v" * 900_000))
    assert value and value[0][0] == "the text is 900,000 characters long"


def test_an_expression_is_held_to_the_longest_text_not_to_its_rendered_fields_bound() -> None:
    label = "{{ project.name }}-" + "x" * 100  # its rendering is Run:ai's to check
    assert _problems(_spec_at(("labels", "*", "value"), label)) == []
    assert _problems(_spec_at(("labels", "*", "value"), "{{ x }}" + "x" * values.LONGEST_TEXT))


_TEXTS = st.text(st.sampled_from("ab"), max_size=12).map(lambda t: t * 500)
_DATA = st.recursive(
    st.one_of(st.none(), st.integers(), _TEXTS),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.sampled_from("xyz"), inner, max_size=3)
    ),
    max_leaves=12,
)


def _texts(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else []
    return [text for item in items for text in _texts(item)]


@settings(max_examples=100, deadline=None)
@given(_DATA)
def test_measure_values_sees_a_long_text_wherever_it_is(data: Any) -> None:
    count, long = values.measure_values(data)
    assert count == values.count_values(data)
    assert long == any(len(text) > values.LONGEST_TEXT for text in _texts(data))
