"""The work the loader and the org model do per file and per project (issue 20), counted, never timed: an org
of many small projects, each with its own defaults, merges its departments' chains once per department, a
project's department is looked up (not searched for), and the value count the loader asks of every file is
the plain count."""

from __future__ import annotations

import sys
from collections import OrderedDict
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from template_engine import compose, load_org
from template_engine.compose import MergeCache
from template_engine.errors import NotFoundError
from template_engine.loader.values import count_values
from template_engine.merge.engine import Layer, MergeResult
from template_engine.org import Org

# -- count_values --------------------------------------------------------------------------------------------


def _naive_count(value: Any) -> int:
    """One for the value, plus the count of each child (the definition :func:`count_values` walks)."""
    if isinstance(value, Mapping):
        return 1 + sum(_naive_count(v) for v in value.values())
    if isinstance(value, list):
        return 1 + sum(_naive_count(v) for v in value)
    return 1


_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=3))
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.text(max_size=3), inner, max_size=4),
        st.dictionaries(st.text(max_size=3), inner, max_size=3).map(OrderedDict),  # a Mapping, not a dict
    ),
    max_leaves=30,
)


@settings(max_examples=200, deadline=None)
@given(_VALUES)
def test_count_values_is_the_plain_count_of_every_value(value: Any) -> None:
    assert count_values(value) == _naive_count(value)


def test_count_values_counts_a_leaf_of_another_type_once() -> None:
    import datetime

    assert count_values({"when": datetime.date(2024, 6, 1), "items": [b"x", 1]}) == 5


# -- the org model ------------------------------------------------------------------------------------------


class _CountingMapping(Mapping[str, tuple[str, ...]]):
    """A departments mapping that counts how often its items are walked."""

    def __init__(self, data: dict[str, tuple[str, ...]]) -> None:
        self.data = data
        self.walks = 0

    def __getitem__(self, key: str) -> tuple[str, ...]:
        return self.data[key]

    def __iter__(self) -> Iterator[str]:
        self.walks += 1
        return iter(self.data)

    def __len__(self) -> int:
        return len(self.data)


def test_the_department_of_every_project_is_found_in_one_walk_of_the_departments() -> None:
    departments = _CountingMapping({f"d{d}": tuple(f"d{d}-p{p}" for p in range(50)) for d in range(8)})
    org = Org(departments=departments)
    for department, projects in departments.data.items():
        for project in projects:
            assert org.department_of(project) == department
    assert departments.walks == 1


def test_a_project_listed_twice_belongs_to_the_first_department_and_an_unknown_one_is_refused() -> None:
    org = Org(departments={"a": ("x",), "b": ("x", "y")})
    assert org.department_of("x") == "a"
    assert org.department_of("y") == "b"
    with pytest.raises(NotFoundError, match="unknown project 'z'"):
        org.department_of("z")


# -- the departments' chains, merged once -------------------------------------------------------------------


def _wide_org(root: Path, departments: int, projects: int) -> Path:
    """``departments`` x ``projects`` projects of one template each, every scope with its own defaults."""

    def spec(tag: str) -> dict[str, Any]:
        env = [{"name": f"{tag.upper()}_{i}", "value": f"{tag}-{i}"} for i in range(3)]
        return {"environmentVariables": env, "labels": [{"name": "owner", "value": tag}]}

    files: dict[str, Any] = {
        "org.yaml": {
            "departments": [
                {"name": f"d{d}", "projects": [f"d{d}-p{p}" for p in range(projects)]}
                for d in range(departments)
            ]
        },
        "system/defaults.yaml": {"spec": {"image": "python:3.12", **spec("sys")}},
    }
    for d in range(departments):
        files[f"departments/d{d}/defaults.yaml"] = {"spec": spec(f"d{d}")}
        for p in range(projects):
            project = f"d{d}-p{p}"
            files[f"projects/{project}/defaults.yaml"] = {"spec": spec(project)}
            files[f"projects/{project}/templates/job.yaml"] = {
                "meta": {"name": "job"},
                "spec": {"distributedFramework": "PyTorch", "numWorkers": 2, "command": "train"},
            }
    for rel, doc in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return root


def test_the_defaults_chain_of_a_department_is_merged_once_for_all_its_projects(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    org = load_org(_wide_org(tmp_path / "templates", departments=3, projects=4))
    module = sys.modules["template_engine.compose"]
    real = module.merge_layers
    merged: list[tuple[str, ...]] = []  # the labels of the layers each merge folds in itself

    def counting(plan: Any, layers: list[Layer], start: MergeResult | None = None) -> MergeResult:
        first = len(start.layers) if start is not None else 0
        merged.append(tuple(layer.label for layer in layers[first:]))
        return real(plan, layers, start)

    monkeypatch.setattr(module, "merge_layers", counting)
    cache: MergeCache = {}
    views = org.views()
    assert len(views) == 12
    for view, template in views:
        compose(org, template, view, cache=cache)
    chains = sorted(m for m in merged if m[0] == "system defaults")
    assert chains == [("system defaults", f"department d{d} defaults") for d in range(3)]  # not one a project
    projects = sorted(m for m in merged if m[0].startswith("project "))
    assert projects == sorted((f"project d{d}-p{p} defaults",) for d in range(3) for p in range(4))
    assert sorted(m for m in merged if m[0].startswith("template")) == [("template job",)] * 12
    assert len(merged) == 3 + 12 + 12
    monkeypatch.setattr(module, "merge_layers", real)
    for view, template in views:  # and the same result as a composition that shares nothing
        alone, shared = compose(org, template, view), compose(org, template, view, cache=cache)
        assert shared.to_response() == alone.to_response()
        assert dict(shared.worker.set_by) == dict(alone.worker.set_by)
        assert dict(shared.worker.excluded) == dict(alone.worker.excluded)
        where = ("environmentVariables",)
        assert shared.worker.locate(where) == alone.worker.locate(where)


# -- the layout, kept while a source's listing is the same ---------------------------------------------------


class _Listed:
    """A folder with a ``listing`` state, as the language server's buffers name it."""

    def __init__(self, root: Path) -> None:
        from template_engine.loader.sources import FolderSource

        self.disk = FolderSource(root)
        self.listing = 1
        self.label = self.disk.label
        self.kind = self.disk.kind
        self.entries = self.disk.entries
        self.read = self.disk.read

    def identity(self, path: str) -> str | None:
        return None


def test_the_layout_is_walked_once_while_the_source_s_listing_is_the_same(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import shutil

    from template_engine.loader import tree

    walks: list[object] = []
    real = tree.read_layout
    monkeypatch.setattr(tree, "read_layout", lambda *args: walks.append(args) or real(*args))
    example = Path(__file__).resolve().parents[1] / "templates"
    shutil.copytree(example, tmp_path / "templates")
    listed = _Listed(tmp_path / "templates")
    first = load_org(listed)
    again = load_org(listed)
    assert len(walks) == 1 and again.templates.keys() == first.templates.keys()
    (tmp_path / "templates/projects/vision/templates/vit-finetune.yaml").unlink()
    listed.listing = 2  # the source says its listing changed: walked again, the template is gone
    gone = load_org(listed)
    assert len(walks) == 2 and "vit-finetune" not in {t for by in gone.templates.values() for t in by}
    load_org(tmp_path / "templates")  # a source without a listing state: always walked
    load_org(tmp_path / "templates")
    assert len(walks) == 4


def test_loading_a_valid_org_builds_no_line_map_but_its_policies(monkeypatch: pytest.MonkeyPatch) -> None:
    """A valid document's line map is made from its text only when something reads it (a policy's rules
    carry their lines; defaults, templates and assets keep theirs unread): `lines or {}` on a LazyLines once
    built every map, a second parse of every file, 30 % of `check`'s CPU and 13 MB at 400 pairs."""
    from template_engine.loader import yaml_safe

    built: list[str] = []
    real = yaml_safe._lines_of
    monkeypatch.setattr(yaml_safe, "_lines_of", lambda text: built.append(text) or real(text))
    root = Path(__file__).resolve().parents[1] / "templates"
    org = load_org(root)
    assert not org.broken
    policies = {path.read_text(encoding="utf-8") for path in root.rglob("policy.yaml")}
    # (none at all where an earlier test of this process loaded the same files: the reuse keeps them)
    assert set(built) <= policies
