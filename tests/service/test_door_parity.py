"""One truth at every door: one corpus of documents, each breaking one rule, fed through every way a
document enters (a folder's files, ``validate`` and ``check``, ``db import``, the API and the UI's form),
gets the same set of problems (field path, what was expected) everywhere.

The corpus is built from the rules themselves, so a rule added later is broken here too: every value rule
of Run:ai's OpenAPI document the engine keeps (:data:`template_engine.loader.values.RULES`), keys of every
kind that is not text or a number (and none, and one given twice) in every keyed list of the spec plan,
text no database stores, a number beyond what JSON readers keep, and a document over the value limit.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from conftest import ADMIN, bearer, ui_sign_in
from fastapi import FastAPI
from fastapi.testclient import TestClient

from template_engine.cli import main
from template_engine.errors import InputError, Problem
from template_engine.loader import values
from template_engine.loader.sources import MappingSource
from template_engine.loader.tree import load_org
from template_engine.merge.plan import SPEC_PLAN, PlanNode
from template_engine.paths import format_path
from template_engine.service.importer import import_folder
from template_engine.service.storage.database import create_db_engine, ensure_schema

ORG = "departments:\n- name: research\n  projects: [vision]\n"
TEMPLATE = "meta: {name: train}\nspec: {image: 'python:3.11', distributedFramework: PyTorch, numWorkers: 2}\n"
DEFAULTS = "system/defaults.yaml"

#: A value each kind of rule refuses.
_BAD = {
    values._NAME: "Bad_Secret",
    values._QUANTITY: "12 GB",
    values._uuid: "not-a-uuid",
    values._not_empty: "",
}


def _bad_value(shape: tuple[str, ...]) -> str:
    check = values.RULES[shape]
    if check in _BAD:
        return _BAD[check]
    for candidate in ("no-slash", "-bad-", "x" * 70):
        if check(candidate) is not None:
            return candidate
    raise AssertionError(f"no value breaks the rule of {shape}")  # pragma: no cover - a new kind of rule


def _node(plan: PlanNode, part: str) -> PlanNode | None:
    return plan.children.get(part) if plan.children else None


def _build(shape: tuple[str, ...], leaf: Any, plan: PlanNode | None = SPEC_PLAN) -> Any:
    """The spec fragment holding ``leaf`` at ``shape`` (``*``: the first item of a list), each keyed item
    with its key."""
    if not shape:
        return leaf
    head, rest = shape[0], shape[1:]
    if head == "*":
        item = _build(rest, leaf, plan)
        key = plan.key if plan is not None else None
        if key is not None and isinstance(item, dict) and key.field not in item:
            item = {key.field: "k0", **item}
        return [item]
    below = _node(plan, head) if plan is not None else None
    return {head: _build(rest, leaf, below)}


def _keyed_lists(plan: PlanNode, shape: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], PlanNode]]:
    """Every keyed list of the spec plan, by its shape (``*`` for the items of the lists above it)."""
    for name, child in (plan.children or {}).items():
        here = (*shape, name)
        if child.whole:
            continue
        if child.key is not None:
            yield here, child
            yield from _keyed_lists(child, (*here, "*"))
        else:
            yield from _keyed_lists(child, here)


def _corpus() -> list[tuple[str, dict[str, Any]]]:
    cases: list[tuple[str, dict[str, Any]]] = []
    for shape in values.RULES:
        cases.append((f"value {'.'.join(shape)}", _build(shape, _bad_value(shape))))
    for shape, node in _keyed_lists(SPEC_PLAN):
        assert node.key is not None
        field = node.key.field
        for name, key in (("object", {}), ("list", [1]), ("mapping", {"a": 1}), ("empty list", [])):
            cases.append((f"{name} key {'.'.join(shape)}", _build((*shape, "*"), {field: key})))
        fragment = _build((*shape, "*"), {field: "twice"})
        twice = _build(shape, [{field: "twice"}, {field: "twice"}])
        cases.append((f"no key {'.'.join(shape)}", _build(shape, [{"exclude": True}])))
        if fragment != twice:
            cases.append((f"duplicate key {'.'.join(shape)}", twice))
    cases += [
        ("NUL in a value", {"labels": [{"name": "a", "value": "a\x00b"}]}),
        ("lone surrogate in a value", {"labels": [{"name": "a", "value": "\udfff"}]}),
        ("NUL in a key", {"labels": [{"name": "a", "va\x00lue": "b"}]}),
        ("a 400-digit number", {"numWorkers": 10**400}),
        ("more values than the limit", {"labels": [{"name": f"l{i}"} for i in range(values.MAX_VALUES)]}),
        # Issue 30: every text has a bound, in one table, the same at every door.
        ("a text longer than any field's", {"workingDir": "/" + "w" * values.LONGEST_TEXT}),
    ]
    for shape, (bound, _why) in values.TEXT_BOUNDS.items():
        cases.append((f"text {'.'.join(shape)}", _build(shape, "a" * (bound + 1))))
    return cases


CORPUS = _corpus()


def _text(spec: dict[str, Any]) -> str:
    """The defaults document as a YAML file: JSON, with every character outside ASCII escaped (a NUL and a
    lone surrogate can only be written so)."""
    return json.dumps({"spec": spec}, ensure_ascii=True) + "\n"


Found = frozenset[tuple[str, str]]

#: What the core's rules expect, word for word at every door: Run:ai's value rules, keys, text a database
#: stores, the value limit.  A schema problem is named ``schema``: the API words it after its OpenAPI model
#: (Run:ai's field descriptions), a file after the engine's model, on the same field (docs/decisions.md).
_CORE_WORDS = {
    *(_check(object()) for _check in values.RULES.values()),
    "the item's identity key",
    "each key once per list in one file",
    "text or a number",
    "text without NUL characters or lone surrogates",
    "keys without NUL characters or lone surrogates",
    values.MAX_VALUES_EXPECTED,
}


def _rule(expected: object) -> str:
    return str(expected) if expected in _CORE_WORDS else "schema"


def _found(problems: list[Problem] | list[dict[str, Any]]) -> Found:
    out = set()
    for p in problems:
        if isinstance(p, Problem):
            out.add((format_path(p.path), _rule(p.expected)))
        else:
            out.add((str(p.get("field", "")), _rule(p.get("expected"))))
    return frozenset(out)


def _folder(tmp_path: Path, text: str) -> Path:
    root = tmp_path / "org"
    for rel, content in {
        "org.yaml": ORG,
        DEFAULTS: text,
        "projects/vision/templates/train.yaml": TEMPLATE,
    }.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(content, encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def service(empty_service: FastAPI) -> FastAPI:
    return empty_service


def test_the_corpus_breaks_every_rule_and_every_keyed_list() -> None:
    names = [name for name, _ in CORPUS]
    assert len(names) == len(set(names))
    assert sum(name.startswith("value ") for name in names) == len(values.RULES)
    lists = list(_keyed_lists(SPEC_PLAN))
    assert len(lists) >= 8, lists  # labels, environmentVariables, tolerations, ports, storage kinds...
    assert sum(name.startswith("list key ") for name in names) == len(lists)


@pytest.mark.parametrize(("name", "spec"), CORPUS, ids=[name for name, _ in CORPUS])
def test_every_door_finds_the_same_problems(
    name: str, spec: dict[str, Any], tmp_path: Path, service: FastAPI
) -> None:
    text = _text(spec)
    answers: dict[str, Found] = {}

    # A folder's files, as every CLI command and the pytest plugin load them.
    org = load_org(
        MappingSource({"org.yaml": ORG, DEFAULTS: text, "projects/vision/templates/train.yaml": TEMPLATE})
    )
    answers["files"] = _found(org.broken.get(DEFAULTS, []))
    assert all(p.location is not None and p.location.file == DEFAULTS for p in org.broken.get(DEFAULTS, []))

    # validate and check, the CI gates, in JSON.
    root = _folder(tmp_path, text)
    runner = CliRunner()
    validated = runner.invoke(main, ["validate", "--root", str(root), "-o", "json"])
    assert validated.exit_code == 1, validated.output
    answers["validate"] = _found(json.loads(validated.output)["problems"])
    checked = runner.invoke(main, ["check", "--root", str(root), "-o", "json"])
    assert checked.exit_code == 1, checked.output  # whatever validate finds fails the check
    report = json.loads(checked.output)  # the org's problems, and those its error rows name
    errors = [issue for row in report["results"] if row["status"] == "error" for issue in row["issues"]]
    answers["check"] = _found(report["problems"] + errors)

    # db import: every problem, before anything is stored.
    engine = create_db_engine(f"sqlite:///{tmp_path / 'import.sqlite'}")
    ensure_schema(engine)
    with pytest.raises(InputError) as refused:
        import_folder(engine, root)
    answers["db import"] = _found(refused.value.problems)
    engine.dispose()

    # The API.
    with TestClient(service) as api:
        api.headers.update(bearer(ADMIN))
        body = text.encode("utf-8")
        put = api.put("/api/v1/defaults/system", content=body, headers={"Content-Type": "application/json"})
        assert put.status_code in (400, 413), put.text
        answers["API"] = _found(put.json()["problems"])
        assert api.get("/api/v1/defaults/system").headers["etag"] == '"0"'  # nothing stored

        # The UI's form (it names each problem in one line: field and expected are in it).
        with TestClient(service, base_url="http://localhost") as browser:
            csrf = ui_sign_in(browser)
            form = {"csrf": csrf, "version": "0", "text": text, "action": "preview"}
            page = browser.post("/ui/scope/system/edit/defaults", data=form, follow_redirects=False)
            assert page.status_code in (400, 413), page.text
            shown = html.unescape(page.text)
            missing = {p for p in answers["API"] if not all(part in shown for part in p if part != "schema")}
            assert not missing, (
                f"the UI does not name {sorted(missing)}: {re.findall('<li>(.*?)</li>', shown)}"
            )

    assert answers["files"], f"{name}: no door finds anything"
    for door, found in answers.items():
        assert found == answers["files"], (
            f"{name}: {door} finds {sorted(found)}, files {sorted(answers['files'])}"
        )
