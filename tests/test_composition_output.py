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


def test_an_exclusion_that_gives_a_value_warns_at_its_line(write_tree: Any, preview: Any) -> None:
    """Issue 31: ``exclude: true`` with a ``value`` drops the value; the composition says so, at the line of
    the excluding entry (the item is still excluded, as DESIGN.md says; the identity keys are not 'more')."""
    root = write_tree(
        {
            "system/defaults.yaml": "spec:\n  labels:\n  - {name: tier, value: gold}\n"
            "  - {name: team, value: a}\n"
            "  ports:\n  - {name: web, container: 80, serviceType: ClusterIP}\n",
            "projects/vision/defaults.yaml": "spec:\n  labels:\n  - name: tier\n    exclude: true\n"
            "    value: silver\n  - {name: team, exclude: true}\n  ports:\n"
            "  - {name: web, container: 80, exclude: true}\n",
        }
    )
    composition = preview(root, "job", project="vision")
    assert "labels" not in composition.combined_spec and "ports" not in composition.combined_spec
    (warning,) = composition.runnable.warnings
    assert warning.kind is WarningKind.EXCLUSION_WITH_FIELDS
    assert warning.one_line() == (
        "labels[name=tier]: exclusion of labels[name=tier] also gives value: an excluding entry needs only "
        "its key, and this is not used (to keep the item and change it, leave out exclude: true) "
        "[projects/vision/defaults.yaml:3]"
    )
