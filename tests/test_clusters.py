"""Clusters in the org (issue 33): ``org.yaml`` names the clusters and the departments of each; each cluster
has its own settings (``clusters/C/cluster.yaml``) and may have its own defaults, policies, templates and
assets.  A composition is system -> cluster -> department -> project; ``explain`` names the cluster layer;
``manifests`` use the settings of the pair's own cluster; a change to one cluster's files touches that
cluster's pairs only.  An org that names no clusters composes as before (the example org's snapshots)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from template_engine import InputError, compose, load_org
from template_engine.cli import main
from template_engine.diff import diff_orgs
from template_engine.diffing.pairs import dependencies, pairs
from template_engine.explain import explain
from template_engine.loader.sources import MappingSource
from template_engine.org import Scope, View
from template_engine.paths import parse_path
from template_engine.scopes import LEVELS, level_of, scope_type_of

ORG = """\
clusters:
- name: east
  departments:
  - name: research
    projects: [vision, nlp]
- name: west
  departments:
  - name: applied
    projects: [recsys]
"""

EAST = """\
namespacePattern: east-{project}
priorityClasses:
- {name: low, value: 10}
- {name: high, value: 90}
preemptibleClass: low
nonPreemptibleClass: high
"""

WEST = """\
namespacePattern: west-{project}
priorityClasses:
- {name: spot, value: 5}
- {name: steady, value: 50}
preemptibleClass: spot
nonPreemptibleClass: steady
"""

TEMPLATE = """\
meta: {name: train}
spec:
  distributedFramework: PyTorch
  numWorkers: 2
  image: pytorch/pytorch:2.3
  compute: {gpuDevicesRequest: 1}
"""

FILES: dict[str, str] = {
    "org.yaml": ORG,
    "clusters/east/cluster.yaml": EAST,
    "clusters/west/cluster.yaml": WEST,
    "system/defaults.yaml": (
        "spec:\n  workingDir: /work\n  nodePools: [default]\n  preemptibility: preemptible\n"
    ),
    "clusters/east/defaults.yaml": "spec:\n  nodePools: [h100]\n  labels:\n  - {name: site, value: east}\n",
    "clusters/east/policy.yaml": "rules:\n  worker:\n    compute:\n      gpuDevicesRequest: {max: 4}\n",
    "system/templates/train.yaml": TEMPLATE,
    "clusters/east/templates/east-only.yaml": TEMPLATE.replace("train", "east-only"),
    "clusters/east/assets/datasources/east-data.yaml": (
        "meta: {name: east-data}\nspec:\n  storage:\n    pvc:\n    - {claimName: east-claim, path: /east}\n"
    ),
}


def org_of(files: dict[str, str]) -> Any:
    return load_org(MappingSource(files))


def test_the_levels_are_one_ordered_table_and_tenant_is_the_top() -> None:
    assert [level.type for level in LEVELS] == ["system", "cluster", "department", "project"]
    assert level_of("tenant") is LEVELS[0]
    assert scope_type_of("tenant") == "system"
    assert [level.id_field for level in LEVELS] == [None, "clusterId", "departmentId", "projectId"]


def test_a_project_s_view_runs_system_cluster_department_project() -> None:
    org = org_of(FILES)
    view = org.view_of("vision")
    assert view == View("research", "vision", "east")
    assert view.chain() == (
        Scope("system", None),
        Scope("cluster", "east"),
        Scope("department", "research"),
        Scope("project", "vision"),
    )
    assert org.view_of("recsys").cluster == "west"
    assert org.view_of(department="applied") == View("applied", None, "west")
    assert org.view_of(cluster="west") == View(cluster="west")


def test_the_cluster_defaults_are_a_layer_between_the_system_and_the_department() -> None:
    org = org_of(FILES)
    vision = compose(org, org.find_template("train", org.view_of("vision")), org.view_of("vision"))
    recsys = compose(org, org.find_template("train", org.view_of("recsys")), org.view_of("recsys"))
    assert vision.combined_spec["nodePools"] == ["h100"]
    assert vision.combined_spec["workingDir"] == "/work"
    assert recsys.combined_spec["nodePools"] == ["default"]
    entry, _master = explain(vision, parse_path("nodePools"))
    assert entry.location is not None
    assert entry.location.layer == "cluster east defaults"
    assert entry.location.kind == "cluster"
    assert entry.location.place() == "clusters/east/defaults.yaml:2"
    assert "cluster east defaults" in entry.render()


def test_a_cluster_policy_rules_its_departments_only() -> None:
    files = {
        **FILES,
        "system/templates/train.yaml": TEMPLATE.replace("gpuDevicesRequest: 1", "gpuDevicesRequest: 8"),
    }
    org = org_of(files)
    vision = compose(org, org.find_template("train", org.view_of("vision")), org.view_of("vision"))
    recsys = compose(org, org.find_template("train", org.view_of("recsys")), org.view_of("recsys"))
    assert not vision.runnable.is_runnable
    (issue,) = vision.runnable.issues
    assert issue.field == ("compute", "gpuDevicesRequest")
    assert "cluster east" in issue.message
    assert recsys.runnable.is_runnable


def test_manifests_use_the_settings_of_the_pair_s_own_cluster() -> None:
    org = org_of(FILES)
    for project, namespace, classes in (
        ("vision", "east-vision", {"low"}),
        ("recsys", "west-recsys", {"spot"}),
    ):
        view = org.view_of(project)
        composition = compose(org, org.find_template("train", view), view)
        assert composition.manifests is not None
        objects = composition.manifests.objects
        assert {obj["metadata"]["namespace"] for obj in objects} == {namespace}
        used = {
            spec["template"]["spec"]["priorityClassName"]
            for obj in objects
            for spec in obj.get("spec", {}).get("pytorchReplicaSpecs", {}).values()
        }
        assert used == classes


def test_cluster_templates_and_assets_are_seen_in_their_cluster_only() -> None:
    org = org_of(FILES)
    ids = {pair.id for pair in pairs(org)}
    assert "projects/vision/east-only" in ids
    assert "projects/nlp/east-only" in ids
    assert "projects/recsys/east-only" not in ids
    assert "clusters/east/east-only" in ids
    assert org.assets["datasource"]["east-data"].scope == Scope("cluster", "east")
    uses = TEMPLATE.replace("train", "uses").replace(
        "spec:", "assets:\n  datasources: [{name: east-data}]\nspec:", 1
    )
    in_west = org_of({**FILES, "projects/recsys/templates/uses.yaml": uses})
    view = in_west.view_of("recsys")
    with pytest.raises(Exception, match="the asset belongs to cluster east"):
        compose(in_west, in_west.find_template("uses", view), view)
    in_east = org_of({**FILES, "projects/vision/templates/uses.yaml": uses})
    view = in_east.view_of("vision")
    assert compose(in_east, in_east.find_template("uses", view), view).combined_spec["storage"]["pvc"]


def test_a_change_to_one_cluster_s_files_touches_that_cluster_s_pairs_only() -> None:
    old = org_of(FILES)
    new = org_of({**FILES, "clusters/east/defaults.yaml": "spec:\n  nodePools: [a100]\n"})
    changed = {d.pair.id for d in diff_orgs(old, new).pairs}
    assert changed and all(not pid.startswith("projects/recsys") for pid in changed)
    assert "projects/vision/train" in changed
    settings = org_of({**FILES, "clusters/west/cluster.yaml": WEST.replace("west-{project}", "w-{project}")})
    touched = {d.pair.id for d in diff_orgs(old, settings).pairs}
    assert touched == {"projects/recsys/train"}
    vision = next(p for p in pairs(old) if p.id == "projects/vision/train")
    assert "clusters/east/cluster.yaml" in dependencies(old, vision)
    assert "clusters/east/defaults.yaml" in dependencies(old, vision)
    assert "clusters/west/cluster.yaml" not in dependencies(old, vision)


@pytest.mark.parametrize(
    ("files", "message"),
    [
        (
            {**FILES, "org.yaml": ORG + "departments:\n- name: stray\n"},
            "org.yaml names clusters and departments outside them",
        ),
        (
            {**FILES, "cluster.yaml": EAST},
            "cluster.yaml at the top of the folder, but org.yaml names clusters",
        ),
        (
            {**FILES, "org.yaml": ORG + "- name: east\n"},
            "cluster 'east' is listed twice",
        ),
        (
            {**FILES, "org.yaml": ORG + "- name: north\n  departments:\n  - name: research\n"},
            "department 'research' is listed twice (in cluster 'east' and in cluster 'north')",
        ),
        (
            {**FILES, "clusters/east/cluster.yaml": "namespacePatern: x-{project}\n"},
            "namespacePatern",
        ),
    ],
)
def test_a_wrong_cluster_org_is_an_error_naming_the_file_and_line(
    files: dict[str, str], message: str
) -> None:
    with pytest.raises(InputError) as caught:
        org_of(files)
    text = "\n".join(p.render() for p in caught.value.problems)
    assert message in text
    assert all(p.location is not None for p in caught.value.problems)


def test_an_unknown_cluster_folder_is_a_layout_error_with_a_hint() -> None:
    org = org_of({**FILES, "clusters/eats/defaults.yaml": "spec: {}\n"})
    (problems,) = [ps for file, ps in org.broken.items() if file.startswith("clusters/eats")]
    assert "unknown cluster 'eats': it is not in org.yaml (did you mean 'east'?)" in problems[0].message


def write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def test_the_cli_names_the_cluster_layer_and_uses_each_cluster_s_settings(tmp_path: Path) -> None:
    root = str(write(tmp_path, FILES))
    runner = CliRunner()
    explained = runner.invoke(main, ["explain", "--root", root, "-p", "vision", "-t", "train", "nodePools"])
    assert explained.exit_code == 0, explained.output
    assert "clusters/east/defaults.yaml:2" in explained.output
    assert "cluster east defaults" in explained.output
    east = runner.invoke(main, ["manifests", "--root", root, "-p", "vision", "-t", "train"])
    west = runner.invoke(main, ["manifests", "--root", root, "-p", "recsys", "-t", "train"])
    assert {o["metadata"]["namespace"] for o in yaml.safe_load_all(east.output) if o} == {"east-vision"}
    assert {o["metadata"]["namespace"] for o in yaml.safe_load_all(west.output) if o} == {"west-recsys"}
    policy = runner.invoke(main, ["policy", "--root", root, "-p", "vision", "-o", "json"])
    assert policy.exit_code == 0, policy.output
    rule = json.loads(policy.output)["effective"]["rules"]["worker"]["compute"]["gpuDevicesRequest"]
    assert rule["sourceOfRule"] == {"scope": "cluster", "clusterId": "east"}
    checked = runner.invoke(main, ["check", "--root", root, "-o", "json"])
    assert checked.exit_code == 0, checked.output
    rows = {(r.get("cluster"), r["project"], r["template"]) for r in json.loads(checked.output)["results"]}
    assert {("east", "vision", "train"), ("west", "recsys", "train"), ("east", None, "east-only")} <= rows
    assert ("west", "recsys", "east-only") not in rows
    own = runner.invoke(main, ["preview", "--root", root, "--cluster", "east", "-t", "east-only"])
    assert own.exit_code == 0, own.output
    wrong = runner.invoke(
        main, ["preview", "--root", root, "--cluster", "west", "-p", "vision", "-t", "train"]
    )
    assert wrong.exit_code != 0
    assert "project 'vision' belongs to cluster 'east', not 'west'" in wrong.output
    assert "Traceback" not in wrong.output


@pytest.mark.parametrize(
    ("settings", "field", "expected"),
    [
        (
            EAST.replace("preemptibleClass: low", "preemptibleClass: lo"),
            "preemptibleClass",
            "one of priorityClasses",
        ),
        (
            EAST.replace("- {name: high, value: 90}", "- {name: low, value: 90}"),
            "priorityClasses",
            "given twice",
        ),
        (
            EAST.replace("east-{project}", "Ëast-{project}"),
            "namespacePattern",
            "lowercase letters, digits and '-'",
        ),
    ],
)
def test_a_cluster_s_settings_are_refused_at_the_field_that_is_wrong(
    settings: str, field: str, expected: str
) -> None:
    """A cross-field rule of cluster.yaml names its own field and line, not the document (``invalid value
    dict`` at line 1 before)."""
    with pytest.raises(InputError) as caught:
        org_of({**FILES, "clusters/east/cluster.yaml": settings})
    (problem,) = caught.value.problems
    assert problem.path == (field,)
    assert problem.location is not None and problem.location.file == "clusters/east/cluster.yaml"
    line = next(n for n, text in enumerate(settings.splitlines(), 1) if text.startswith(field))
    assert problem.location.line == line
    assert expected in (problem.expected or "")
