"""References to what a broken file would have provided: small named types, read by field, not position."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from template_engine import InputError, View, load_org
from template_engine.org import (
    SYSTEM,
    AssetRef,
    DefaultsRef,
    PolicyRef,
    Scope,
    TemplateRef,
    asset_ref,
    defaults_ref,
    policy_ref,
    template_ref,
)

WriteTree = Callable[[Mapping[str, Any]], Path]
VISION = Scope("project", "vision")


def test_each_ref_names_its_parts() -> None:
    ref = template_ref(VISION, "job")
    assert isinstance(ref, TemplateRef)
    assert (ref.scope, ref.name) == (VISION, "job")
    defaults = defaults_ref(SYSTEM)
    assert isinstance(defaults, DefaultsRef) and defaults.scope == SYSTEM
    policy = policy_ref(Scope("department", "research"))
    assert isinstance(policy, PolicyRef) and policy.scope == Scope("department", "research")
    asset = asset_ref("compute", "a100")
    assert isinstance(asset, AssetRef) and (asset.kind, asset.name) == ("compute", "a100")


def test_refs_of_different_kinds_never_meet() -> None:
    assert defaults_ref(VISION) != policy_ref(VISION)
    assert len({defaults_ref(VISION), policy_ref(VISION), template_ref(VISION, "")}) == 3
    assert defaults_ref(VISION) == defaults_ref(Scope("project", "vision"))


def test_refs_sort_by_kind_then_scope_then_name() -> None:
    refs = [
        template_ref(VISION, "b"),
        template_ref(SYSTEM, "z"),
        asset_ref("environment", "py"),
        template_ref(VISION, "a"),
        defaults_ref(SYSTEM),
    ]
    assert sorted(refs) == [
        asset_ref("environment", "py"),
        defaults_ref(SYSTEM),
        template_ref(VISION, "a"),
        template_ref(VISION, "b"),
        template_ref(SYSTEM, "z"),
    ]


def test_a_broken_template_file_is_a_template_ref_that_fails_its_composition(write_tree: WriteTree) -> None:
    root = write_tree({"projects/vision/templates/ddp.yaml": "meta: [not, a, mapping]\n"})
    org = load_org(root)
    assert org.broken_refs == {template_ref(VISION, "ddp"): "projects/vision/templates/ddp.yaml"}
    with pytest.raises(InputError):
        org.find_template("ddp", org.view_of("vision"))
    with pytest.raises(InputError):  # found by name from no view at all
        org.find_template("ddp", View())


def test_a_template_s_asset_references_are_read_once_with_the_field_that_names_each() -> None:
    from template_engine.models.documents import TemplateDocument, asset_refs
    from template_engine.org import Source, Template

    doc = TemplateDocument.model_validate(
        {
            "meta": {"name": "job"},
            "assets": {"environment": "pytorch", "datasources": [{"name": "a"}, {"name": "b"}]},
            "master": {"assets": {"compute": "small"}},
        }
    )
    assert asset_refs(doc) == (
        ("environment", "pytorch", ("assets", "environment")),
        ("datasource", "a", ("assets", "datasources", 0, "name")),
        ("datasource", "b", ("assets", "datasources", 1, "name")),
        ("compute", "small", ("master", "assets", "compute")),
    )
    template = Template("job", VISION, Source("t.yaml", {}), doc)
    assert template.asset_refs() == tuple((kind, name) for kind, name, _ in asset_refs(doc))
