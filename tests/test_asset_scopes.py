"""Asset scopes (Run:ai's ``AssetMeta.scope``): an asset's folder is its scope, and a template or policy may
use only the assets of its scope and the scopes above it.

``assets/`` at the top is the tenant's (the system scope: usable everywhere), ``departments/D/assets/`` is
department D's (D and its projects), ``projects/P/assets/`` project P's (P only).  Names stay unique per kind
in the whole org.  The message of an out-of-scope use is made once, by ``template_engine.org.out_of_scope``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from template_engine import CompositionError, InputError, compose, load_org, reference_problems
from template_engine.diff import diff_orgs
from template_engine.diffing.pairs import Pair, dependencies, pairs
from template_engine.loader import tree
from template_engine.loader.facts import FactCache
from template_engine.loader.layout import asset_file, asset_scope
from template_engine.loader.sources import MappingSource
from template_engine.org import SYSTEM, Org, Scope, View

ORG = """\
departments:
- name: research
  projects: [vision, nlp]
- name: applied
  projects: [recsys]
"""


def datasource(name: str, path: str = "/data") -> str:
    storage = f"  storage:\n    pvc:\n    - claimName: {name}-claim\n      path: {path}\n"
    return f"meta:\n  name: {name}\nspec:\n{storage}"


def template(name: str, datasource_name: str) -> str:
    return (
        f"meta:\n  name: {name}\n"
        "assets:\n"
        "  datasources:\n"
        f"  - name: {datasource_name}\n"
        "spec:\n  image: python:3.11\n  distributedFramework: PyTorch\n  numWorkers: 2\n"
    )


def policy(datasource_name: str) -> str:
    return f"imposedAssets:\n  worker:\n  - {datasource_name}\n"


#: One data source of each scope: the tenant's, research's, vision's.
ASSETS = {
    "assets/datasources/shared.yaml": datasource("shared"),
    "departments/research/assets/datasources/corpus.yaml": datasource("corpus"),
    "projects/vision/assets/datasources/scratch.yaml": datasource("scratch"),
}


def org_of(files: dict[str, str]) -> Org:
    return load_org(MappingSource({"org.yaml": ORG, **ASSETS, **files}))


# -- placement -----------------------------------------------------------------------------------------------


def test_an_assets_folder_is_its_scope() -> None:
    org = org_of({})
    assert not org.broken
    found = {name: asset.scope for name, asset in org.assets["datasource"].items()}
    assert found == {
        "shared": SYSTEM,
        "corpus": Scope("department", "research"),
        "scratch": Scope("project", "vision"),
    }
    assert org.assets["datasource"]["scratch"].file == "projects/vision/assets/datasources/scratch.yaml"


@pytest.mark.parametrize(
    ("rel", "scope"),
    [
        ("assets/computes/a.yaml", SYSTEM),
        ("departments/research/assets/computes/a.yaml", Scope("department", "research")),
        ("projects/vision/assets/environments/a.yml", Scope("project", "vision")),
    ],
)
def test_asset_scope_and_asset_file_read_and_write_the_same_places(rel: str, scope: Scope) -> None:
    assert asset_scope(rel) == scope
    assert asset_file("compute", "a", scope).rpartition("/assets/")[0] == rel.rpartition("/assets/")[0]


def test_the_system_folder_has_no_assets_the_tenant_s_are_at_the_top() -> None:
    org = org_of({"system/assets/datasources/x.yaml": datasource("x")})
    (problem,) = org.broken["system/assets"]
    assert "unexpected folder 'assets' in system/" in problem.message
    assert problem.expected is not None and "assets/ at the top" in problem.expected
    assert "x" not in org.assets["datasource"]


def test_a_misnamed_kind_folder_of_a_project_is_an_error_with_a_hint() -> None:
    org = org_of({"projects/vision/assets/datasource/x.yaml": datasource("x")})
    (problem,) = org.broken["projects/vision/assets/datasource"]
    assert "did you mean 'datasources'?" in problem.message


# -- names unique per kind in the whole org ------------------------------------------------------------------


def test_one_name_in_two_scopes_is_an_error_naming_both_files_and_neither_is_used() -> None:
    twice = "projects/nlp/assets/datasources/corpus.yaml"
    org = org_of({twice: datasource("corpus"), "projects/nlp/templates/t.yaml": template("t", "corpus")})
    first = "departments/research/assets/datasources/corpus.yaml"
    (problem,) = org.broken[twice]
    assert first in problem.message and twice in problem.message
    assert "unique per kind in the whole org" in problem.message
    assert problem.related[0].file == first
    assert "corpus" not in org.assets["datasource"]
    with pytest.raises(InputError) as failed:  # the composition that uses it fails with the error
        compose(org, org.templates[Scope("project", "nlp")]["t"], View("research", "nlp"))
    assert failed.value.problems == (problem,)


def test_one_name_of_two_kinds_is_no_conflict() -> None:
    compute = "meta:\n  name: shared\nspec:\n  compute:\n    cpuCoreRequest: 1\n"
    org = org_of({"projects/vision/assets/computes/shared.yaml": compute})
    assert not org.broken
    assert org.assets["compute"]["shared"].scope == Scope("project", "vision")


# -- a template uses the assets of its scope and above -------------------------------------------------------


@pytest.mark.parametrize(
    ("rel", "uses"),
    [
        ("system/templates/t.yaml", "shared"),
        ("departments/research/templates/t.yaml", "shared"),
        ("departments/research/templates/t.yaml", "corpus"),
        ("projects/nlp/templates/t.yaml", "corpus"),
        ("projects/vision/templates/t.yaml", "corpus"),
        ("projects/vision/templates/t.yaml", "scratch"),
    ],
)
def test_a_template_may_use_the_assets_of_its_scope_and_above(rel: str, uses: str) -> None:
    org = org_of({rel: template("t", uses)})
    assert reference_problems(org) == []
    for view, found in org.views():
        combined = compose(org, found, view).combined_spec
        assert combined["storage"]["pvc"][0]["claimName"] == f"{uses}-claim"


_S, _R, _A = "system", "department research", "department applied"


@pytest.mark.parametrize(
    ("rel", "uses", "owner", "chain"),
    [
        ("system/templates/t.yaml", "corpus", "department research", "system"),
        ("system/templates/t.yaml", "scratch", "project vision", "system"),
        ("departments/research/templates/t.yaml", "scratch", "project vision", f"{_S} or {_R}"),
        ("departments/applied/templates/t.yaml", "corpus", "department research", f"{_S} or {_A}"),
        ("projects/nlp/templates/t.yaml", "scratch", "project vision", f"{_S}, {_R} or project nlp"),
        (
            "projects/recsys/templates/t.yaml",
            "corpus",
            "department research",
            f"{_S}, {_A} or project recsys",
        ),
    ],
)
def test_a_template_using_an_asset_out_of_its_scope_is_broken_with_one_message(
    rel: str, uses: str, owner: str, chain: str
) -> None:
    org = org_of({rel: template("t", uses)})
    (problem,) = reference_problems(org)
    scope = org.templates[next(iter(org.templates))]["t"].scope
    assert problem.message == (
        f"template 't' of {scope} may not use datasource asset {uses!r}: the asset belongs to {owner}"
        f" ({org.assets['datasource'][uses].file}), and an asset is usable only in its own scope and the"
        " scopes below it"
    )
    assert problem.expected == f"an asset of {chain}"
    assert problem.path == ("assets", "datasources", 0, "name")
    assert problem.location is not None and (problem.location.file, problem.location.line) == (rel, 5)
    for view, found in org.views():  # every composition of it fails with the same problem
        with pytest.raises(CompositionError) as failed:
            compose(org, found, view)
        assert failed.value.problems == (problem,)


def test_the_check_reads_deferred_assets_without_parsing_them(tmp_path: Path) -> None:
    """With the facts cache an asset is a stand-in read on first use; its scope comes from its place."""
    files = {"projects/nlp/templates/t.yaml": template("t", "scratch")}
    source = MappingSource({"org.yaml": ORG, **ASSETS, **files})
    tree._Reuse.last = {}  # nothing known from an earlier load: the cache learns every file
    load_org(source, FactCache(tmp_path / "facts", fingerprint=b"test"))
    tree._Reuse.last = {}  # not the documents of the last load: the cache's stand-ins
    org = load_org(source, FactCache(tmp_path / "facts", fingerprint=b"test"))
    scratch = org.assets["datasource"]["scratch"]
    assert scratch.scope == Scope("project", "vision")
    assert getattr(scratch, "loaded", True) is False, "the asset was parsed"
    (problem,) = reference_problems(org)
    assert "belongs to project vision" in problem.message


# -- a policy imposes the data sources of its scope and above ------------------------------------------------


def test_a_policy_may_impose_the_data_sources_of_its_scope_and_above() -> None:
    org = org_of(
        {
            "projects/vision/policy.yaml": policy("scratch"),
            "departments/research/policy.yaml": policy("corpus"),
        }
    )
    assert not org.broken
    assert set(org.policies) == {Scope("project", "vision"), Scope("department", "research")}


def test_a_policy_imposing_a_data_source_out_of_its_scope_is_broken_with_the_same_message() -> None:
    rel = "departments/research/policy.yaml"
    org = org_of({rel: policy("scratch"), "departments/research/templates/t.yaml": template("t", "shared")})
    (problem,) = org.broken[rel]
    assert problem.message == (
        "the policy of department research may not use datasource asset 'scratch': the asset belongs to"
        " project vision (projects/vision/assets/datasources/scratch.yaml), and an asset is usable only in"
        " its own scope and the scopes below it"
    )
    assert problem.expected == "an asset of system or department research"
    assert problem.path == ("imposedAssets", "worker")
    assert problem.location is not None and (problem.location.file, problem.location.line) == (rel, 3)
    assert Scope("department", "research") not in org.policies
    template_t = org.templates[Scope("department", "research")]["t"]
    with pytest.raises(InputError) as failed:  # a composition under the broken policy fails with its problem
        compose(org, template_t, View("research"))
    assert problem in failed.value.problems


# -- the diff: a change to a project's asset is a change for the pairs that use it ---------------------------


def test_a_scoped_asset_is_a_dependency_of_exactly_the_pairs_that_use_it() -> None:
    org = org_of(
        {
            "projects/vision/templates/uses.yaml": template("uses", "scratch"),
            "projects/vision/templates/other.yaml": template("other", "shared"),
        }
    )
    scratch = "projects/vision/assets/datasources/scratch.yaml"
    using = {p.template.name for p in pairs(org) if scratch in dependencies(org, p)}
    assert using == {"uses"}
    assert all(isinstance(p, Pair) for p in pairs(org))


def test_the_diff_of_a_change_to_a_project_s_asset_names_only_the_pairs_that_use_it() -> None:
    files = {
        "projects/vision/templates/uses.yaml": template("uses", "scratch"),
        "projects/vision/templates/other.yaml": template("other", "shared"),
        "departments/research/templates/dept.yaml": template("dept", "corpus"),
    }
    scratch = "projects/vision/assets/datasources/scratch.yaml"
    old = load_org(MappingSource({"org.yaml": ORG, **ASSETS, **files}))
    new = load_org(
        MappingSource({"org.yaml": ORG, **ASSETS, **files, scratch: datasource("scratch", "/new")})
    )
    result = diff_orgs(old, new)
    changed = {(d.pair.template.name, d.pair.view.project) for d in result.pairs}
    assert changed == {("uses", "vision")}
    (pair,) = result.pairs
    assert pair.status == "changed" and pair.changes
