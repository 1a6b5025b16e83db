"""The combined specs of a composition are independent values: nothing shared with each other or the org."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from template_engine import compose, load_org
from template_engine.errors import WarningKind

ROOT = Path(__file__).resolve().parents[1] / "templates"


def _containers(value: Any) -> list[Any]:
    found: list[Any] = []
    if isinstance(value, dict):
        found.append(value)
        for item in value.values():
            found.extend(_containers(item))
    elif isinstance(value, list):
        found.append(value)
        for item in value:
            found.extend(_containers(item))
    return found


def test_master_same_as_worker_shares_no_container_with_the_worker() -> None:
    org = load_org(ROOT)
    view = org.view_of("vision")
    result = compose(org, org.find_template("vit-finetune", view), view)
    assert result.master_same_as_worker is True
    assert result.combined_master_spec is not None
    worker_ids = {id(c) for c in _containers(result.combined_spec)}
    master_ids = {id(c) for c in _containers(result.combined_master_spec)}
    assert worker_ids.isdisjoint(master_ids)
    result.combined_master_spec["labels"].clear()
    assert result.combined_spec["labels"], "clearing the master's labels must leave the worker's alone"


def test_an_unused_variable_is_reported_as_a_warning() -> None:
    org = load_org(ROOT)
    view = org.view_of("vision")
    template = org.find_template("vit-finetune", view)
    used = compose(org, template, view, {"user": "alice"})
    typo = compose(org, template, view, {"usr": "alice"})
    assert used.runnable.warnings == ()
    (warning,) = typo.runnable.warnings
    assert (warning.kind, warning.variable) == (WarningKind.UNUSED_VARIABLE, "usr")
    assert warning.to_dict() == {
        "replica": "worker",
        "field": "--var usr",
        "message": "variable 'usr' is not used by any value (a typo?)",
    }
    assert used.combined_spec["environmentVariables"][-1] == {"name": "WANDB_USERNAME", "value": "alice"}


def test_a_re_added_item_is_explained_exclusion_first() -> None:
    from template_engine import explain, parse_path

    org = load_org(ROOT)
    view = org.view_of("vision")
    result = compose(org, org.find_template("vit-finetune", view), view)
    entries = explain(result, parse_path("environmentVariables[name=HTTP_PROXY]"))
    worker = [(e.action, e.location.file if e.location else None) for e in entries if e.replica == "worker"]
    assert worker[:2] == [
        ("excluded", "departments/research/defaults.yaml"),
        ("added", "projects/vision/defaults.yaml"),
    ]


def test_a_shared_merge_cache_changes_no_result() -> None:
    from template_engine import explain
    from template_engine.compose import MergeCache

    org = load_org(ROOT)
    cache: MergeCache = {}
    for _ in range(2):  # the second round is served from the cache
        for view, template in org.views():
            plain = compose(org, template, view)
            cached = compose(org, template, view, cache=cache)
            assert cached.to_response() == plain.to_response()
            assert [e.to_dict() for e in explain(cached)] == [e.to_dict() for e in explain(plain)]
    assert cache, "the cache was used"


def test_the_merge_cache_is_not_changed_by_compositions() -> None:
    import copy

    from template_engine.compose import MergeCache

    org = load_org(ROOT)
    cache: MergeCache = {}
    view = org.view_of("vision")
    compose(org, org.find_template("vit-finetune", view), view, cache=cache)
    before = copy.deepcopy({key: (r.spec, r.set_by, r.excluded) for key, r in cache.items()})
    for template in org.visible(view).values():
        compose(org, template, view, cache=cache)
    after = {key: (r.spec, r.set_by, r.excluded) for key, r in cache.items() if key in before}
    assert after == before
