"""Schemathesis against the server's own OpenAPI document, in process: no 5xx, and every response (status
code, content type, headers, body) is one the document describes.

Every operation gets schema-valid (positive) and schema-violating (negative) requests, with a system admin's
token: a fixed number of examples each (:data:`EXAMPLES`), derandomized, with no deadline and no time
budget, so the same requests are sent on every run and the outcome does not depend on the machine's speed.
Schemathesis is driven directly (one hypothesis run per operation and mode) rather than through its pytest
plugin, so that every operation is covered in both modes.

A viewer and a project editor get a smaller positive pass (:data:`ROLE_EXAMPLES`), and every one of the three
a short run of schemathesis' state machine (:data:`STATEFUL`: the links it infers between operations, a
create's id into the read, the update and the delete), derandomized as well.  Whether those runs reach a
stored item by an id a link carried depends on the draws, so each test also follows one link itself
(:func:`_follow`): the admin a department's create into its read, the other roles the departments' list
into one department's read.  This is the suite's deterministic share of ``benchmarks/fuzz_api.py``, which
runs the same checks for every role at length (its figure is in docs/http-api.md, "Fuzzing").
"""

from __future__ import annotations

from typing import Any

import pytest
from conftest import ADMIN, VIEWER, VISION, bearer, open_client
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.errors import Unsatisfiable
from sdk_helpers import install_schemathesis

#: Examples per operation in each mode (schemathesis' GenerationMode, by its value).
EXAMPLES = {"positive": 10, "negative": 6}
#: The positive pass of the other roles: examples per operation.
ROLE_EXAMPLES = {"positive": 2}
#: The state machine's runs: scenarios, and steps at most in one.  Whether a derandomized run reaches a stored
#: item by an id a link carried depends on every operation's parameters and on what the process did before
#: (which draws become which requests), so no test asserts it of the run: :func:`_follow` follows one link
#: to a stored item deterministically instead.
STATEFUL = {"max_examples": 40, "stateful_step_count": 8}
ROLE_STATEFUL = STATEFUL


def _schemathesis() -> Any:
    """Schemathesis, imported by the test that uses it (about 0.5 s that the other xdist worker need not pay
    collecting this module), its ASGI transport's responses checked against Run:ai's schemas."""
    try:
        import schemathesis
    except ImportError:  # pragma: no cover - a missing test dependency must not pass silently
        pytest.fail(
            "schemathesis is missing: it belongs to the test extra (schemathesis>=4.32)", pytrace=False
        )
    install_schemathesis()
    return schemathesis


def _checks() -> list[Any]:
    from schemathesis.checks import not_a_server_error
    from schemathesis.specs.openapi.checks import (
        content_type_conformance,
        response_headers_conformance,
        response_schema_conformance,
        status_code_conformance,
    )

    return [
        not_a_server_error,
        status_code_conformance,
        content_type_conformance,
        response_headers_conformance,
        response_schema_conformance,
    ]


def _settings(**values: Any) -> Any:
    return settings(
        deadline=None,
        database=None,
        derandomize=True,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
        **values,
    )


def _failed(label: str, exc: BaseException) -> str:
    return f"{label}: {exc}" + "".join(f"\n  {e}" for e in getattr(exc, "exceptions", ()))


def _runner(
    operation: Any,
    mode: Any,
    runs: dict[str, int],
    failures: list[str],
    checks: list[Any],
    token: str = ADMIN,
    examples: dict[str, int] = EXAMPLES,
) -> Any:
    from schemathesis.core.failures import FailureGroup

    label = f"{mode.value} {operation.label}"

    @_settings(max_examples=examples[mode.value])
    @given(case=operation.as_strategy(generation_mode=mode))
    def run(case: Any) -> None:
        runs[label] = runs.get(label, 0) + 1
        try:
            case.call_and_validate(headers=bearer(token), checks=checks)
        except (AssertionError, FailureGroup) as exc:  # keep going, report all at the end
            failures.append(_failed(label, exc))

    return run


def _stateful(
    schema: Any,
    token: str,
    runs: dict[str, int],
    failures: list[str],
    checks: list[Any],
    steps: dict[str, int] = STATEFUL,
) -> None:
    """A short derandomized run of schemathesis' state machine with ``token``: every answer checked."""
    from schemathesis import GenerationMode
    from schemathesis.core.failures import FailureGroup
    from schemathesis.generation.stateful import run_state_machine_as_test

    # Positive steps only: a negative step (schemathesis' default mixes both) often drops the token (401).
    schema.config.generation.update(modes=[GenerationMode.POSITIVE])

    class Machine(schema.as_state_machine()):  # type: ignore[misc]
        def get_call_kwargs(self, case: Any) -> dict[str, Any]:
            return {"headers": bearer(token)}

        def validate_response(self, response: Any, case: Any, **kwargs: Any) -> None:
            label = f"stateful {case.operation.label}"
            runs[label] = runs.get(label, 0) + 1
            if response.status_code < 300 and case.path_parameters:  # an id, most often one a link carried
                runs["found"] = runs.get("found", 0) + 1
            try:
                case.validate_response(response, checks=checks)
            except (AssertionError, FailureGroup) as exc:
                failures.append(_failed(label, exc))

    from hypothesis.errors import FlakyStrategyDefinition

    # The server's state carries over from one scenario to the next (that is how a run finds what one
    # request leaves for a later one), so a scenario hypothesis replays may meet another state, take
    # another branch and end its run with FlakyStrategyDefinition: the answers up to there were all checked.
    try:
        run_state_machine_as_test(Machine, settings=_settings(**steps))
    except FlakyStrategyDefinition:
        runs["replays that met another state"] = 1


#: Links schemathesis infers from the document and :func:`_follow` drives: a department's create (its
#: ``id``) and the departments' list (each entry's ``id``) into the read of one department.  A template's
#: create carries no link to its read (its id is ``meta.id``, which schemathesis does not infer), so the
#: department is the item the state machine can reach by an id a link carried.
CREATE_LINK = ("POST /api/v1/org-unit/departments", "201", "GET /api/v1/org-unit/departments/{departmentId}")
LIST_LINK = ("GET /api/v1/org-unit/departments", "200", "GET /api/v1/org-unit/departments/{departmentId}")


def _link(schema: Any, source: str, status: str, target: str) -> Any:
    """The link schemathesis' state machine follows from ``source``'s ``status`` answer to ``target``."""
    from schemathesis.specs.openapi.stateful import collect_transitions

    schema.as_state_machine()  # infers the links the document does not declare
    transitions = collect_transitions([result.ok() for result in schema.get_all_operations()])
    found = [
        link
        for link in transitions.operations[source].outgoing
        if link.status_code == status and link.target.label == target
    ]
    assert found, f"schemathesis infers no link from {source} ({status}) to {target}"
    return found[0]


def _follow(link: Any, token: str, checks: list[Any], body: Any = None) -> Any:
    """One step of the link, as the state machine takes it but with no draw: ``link``'s source sent (with
    ``body``) and checked, its ``id`` carried into the target by the link's expression, the target's answer
    checked and returned."""
    from schemathesis.generation.stateful.state_machine import StepOutput
    from schemathesis.specs.openapi.expressions import MultiMatch

    source = link.source.Case(body=body, media_type="application/json") if body else link.source.Case()
    sent = source.call(headers=bearer(token))
    source.validate_response(sent, checks=checks)
    carried = link.extract(StepOutput(sent, source)).parameters["path_parameters"]
    ids = {}
    for name, parameter in carried.items():
        value = parameter.value.ok()
        ids[name] = value.values[0] if isinstance(value, MultiMatch) else value  # a list's: the first
    target = link.target.Case(path_parameters=ids)
    answer = target.call(headers=bearer(token))
    target.validate_response(answer, checks=checks)
    return answer


def test_the_server_keeps_to_its_openapi_document(app: Any) -> None:
    schemathesis = _schemathesis()
    checks = _checks()
    schema = schemathesis.openapi.from_asgi("/openapi.json", app)
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 45
    failures: list[str] = []
    runs: dict[str, int] = {}
    for mode in map(schemathesis.GenerationMode, EXAMPLES):
        for operation in operations:
            try:
                _runner(operation, mode, runs, failures, checks)()
            except Unsatisfiable:  # nothing in this operation can be made invalid (GET /health)
                assert mode is schemathesis.GenerationMode.NEGATIVE
    _stateful(schema, ADMIN, runs, failures, checks)
    # the stateful run may have made clusters: a department then needs one (the first adopts the org)
    with open_client(app) as client:
        known = client.get("/api/v1/clusters").json()
    body = {"name": "linked", **({"clusterId": known[0]["uuid"]} if known else {})}
    created = _follow(_link(schema, *CREATE_LINK), ADMIN, checks, body)
    assert created.status_code == 200 and created.json()["name"] == "linked"
    assert not failures, "\n\n".join(failures[:10])
    ran = {label.split(" ", 1)[1] for label in runs if label.startswith("positive")}
    assert len(ran) == len(operations), f"{len(operations) - len(ran)} operations got no positive example"
    stateful = sum(n for label, n in runs.items() if label.startswith("stateful"))
    assert stateful >= STATEFUL["max_examples"] * 2  # every scenario runs two steps at least
    sent = sum(runs.values()) - runs.get("found", 0)
    print(
        f"schemathesis: {sent} requests over {len(operations)} operations, both modes and stateful; "
        f"{runs.get('found', 0)} stored items reached by id"
    )


@pytest.mark.parametrize("token", [VIEWER, VISION], ids=["viewer", "project-editor"])
def test_every_role_gets_answers_the_document_describes(app: Any, token: str) -> None:
    """A viewer's and a project editor's requests: refusals (403) included, no 5xx, all conforming (issue 17:
    a viewer's create once answered 500 where it must be 403)."""
    schemathesis = _schemathesis()
    checks = _checks()
    schema = schemathesis.openapi.from_asgi("/openapi.json", app)
    operations = [result.ok() for result in schema.get_all_operations()]
    failures: list[str] = []
    runs: dict[str, int] = {}
    for operation in operations:
        _runner(
            operation, schemathesis.GenerationMode.POSITIVE, runs, failures, checks, token, ROLE_EXAMPLES
        )()
    _stateful(schema, token, runs, failures, checks, ROLE_STATEFUL)
    assert _follow(_link(schema, *LIST_LINK), token, checks).status_code == 200
    assert not failures, "\n\n".join(failures[:10])
    ran = {label.split(" ", 1)[1] for label in runs if label.startswith("positive")}
    assert len(ran) == len(operations), f"{len(operations) - len(ran)} operations got no positive example"
    stateful = sum(n for label, n in runs.items() if label.startswith("stateful"))
    assert stateful >= ROLE_STATEFUL["max_examples"] * 2
    print(
        f"schemathesis as {token}: {sum(runs.values()) - runs.get('found', 0)} requests, {stateful} stateful"
    )
