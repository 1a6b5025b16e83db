"""Where kinds differ (issue 32, item 4), and the pair records of every kind (item 7), in process.

The org is the example org with a training, a workspace and an inference template in project vision, a
``passwd`` data source (a ``hostPath``), and system policies of trainings and workspaces that impose it while
the distributed one does not: the drift Run:ai's professional-services policy generator shows between its two
hand-kept files.  The kinds' policies are put into the org as the loader reads ``training-policy.yaml`` once
``read_policy(kind=)`` is merged (branch k-policy), read here through :func:`read_policy` (:func:`kind_policy`
reads them either way).
"""

from __future__ import annotations

import dataclasses
import inspect
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from template_engine.across_kinds import differing_fields, field_across_kinds
from template_engine.cli import policy_commands
from template_engine.compose import compose
from template_engine.diffing.pairs import dependencies, effective_output, pair_id, pairs
from template_engine.explain import not_applied
from template_engine.kinds import KIND_BY_NAME
from template_engine.loader.tree import load_org
from template_engine.org import SYSTEM, Org
from template_engine.paths import parse_path
from template_engine.policy.document import PolicyDocument, read_policy
from template_engine.reports.model import PairResult
from template_engine.snapshots.document import snapshot_text
from template_engine.views.html import render_kinds
from template_engine.views.kinds import kinds_page
from template_engine.views.site import build_site

PASSWD = """\
meta:
  name: passwd
  description: The host's passwd file, read only
spec:
  storage:
    hostPath:
    - path: /etc/passwd
      mountPath: /etc/passwd
      readOnly: true
"""
FILES = {
    "assets/datasources/passwd.yaml": PASSWD,
    "projects/vision/templates/quick-train.yaml": (
        "kind: training\nmeta:\n  name: quick-train\nspec:\n  image: pytorch:24.05\n  completions: 2\n"
    ),
    "projects/vision/templates/notebook.yaml": (
        "kind: workspace\nmeta:\n  name: notebook\nspec:\n  image: jupyter\n"
    ),
    "projects/vision/templates/serve-vit.yaml": (
        "kind: inference\nmeta:\n  name: serve-vit\nspec:\n  image: triton\n"
        "  servingPort:\n    container: 8000\n"
    ),
}


def kind_policy(kind_name: str, names: list[str]) -> PolicyDocument:
    """A system policy of a kind of one role that imposes the data sources ``names`` on its one role, as the
    loader reads ``system/<kind>-policy.yaml``."""
    file = f"system/{kind_name}-policy.yaml"
    if "kind" in inspect.signature(read_policy).parameters:  # branch k-policy: the kind's own, flat shape
        document, problems = read_policy(
            {"imposedAssets": names}, file, {}, SYSTEM, kind=KIND_BY_NAME[kind_name]
        )
        assert document is not None, problems
        return document
    # Before k-policy is merged: the distributed reader's shape, its one role the worker, no value defaults.
    document, problems = read_policy({"imposedAssets": {"worker": names}}, file, {}, SYSTEM)
    assert document is not None, problems
    bridged = type("KindPolicyDocument", (PolicyDocument,), {"value_defaults": {}})
    fields = {f.name: getattr(document, f.name) for f in dataclasses.fields(document)}
    made: PolicyDocument = bridged(**fields)
    return made


@pytest.fixture(scope="module")
def files_root(tmp_path_factory: pytest.TempPathFactory, example_root: Path) -> Path:
    root = tmp_path_factory.mktemp("kinds-reports") / "templates"
    shutil.copytree(example_root, root)
    for rel, text in FILES.items():
        (root / rel).write_text(text, encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def org(files_root: Path) -> Org:
    loaded = load_org(files_root)
    policies = {
        (SYSTEM, "training"): kind_policy("training", ["passwd"]),
        (SYSTEM, "workspace"): kind_policy("workspace", ["passwd"]),
    }
    return dataclasses.replace(loaded, kind_policies=policies)


def test_a_hostpath_imposed_on_trainings_and_workspaces_not_on_distributed(org: Org) -> None:
    across = field_across_kinds(org, org.view_of("vision"), parse_path("storage.hostPath"))
    by_kind = {side.name: side for side in across.sides}
    assert list(by_kind) == ["distributed", "training", "workspace", "inference"]
    for name in ("training", "workspace"):
        side = by_kind[name]
        assert side.value == [
            {"name": "passwd", "path": "/etc/passwd", "mountPath": "/etc/passwd", "readOnly": True}
        ]
        assert [a.name for a in side.imposed] == ["passwd"]
        assert side.imposed_lines() == [
            f"passwd (imposed by the system {name} policy, system/{name}-policy.yaml)"
        ]
        assert [place.file for place in side.locations] == ["assets/datasources/passwd.yaml"]
    for name in ("distributed", "inference"):
        assert not by_kind[name].is_set and by_kind[name].imposed == ()
    assert across.differs
    groups = [([s.name for s in group], text) for group, text in across.groups()]
    assert groups == [
        (["distributed", "inference"], "not set"),
        (["training", "workspace"], "1 item; imposed passwd"),
    ]


def test_the_imposed_item_is_a_field_where_the_kinds_differ(org: Org) -> None:
    rows = {row.field: row for row in differing_fields(org, org.view_of("vision"))}
    row = rows["storage.hostPath[name=passwd]"]
    assert [side.summary() for side in row.sides] == [
        "not set",
        "set; imposed passwd",
        "set; imposed passwd",
        "not set",
    ]
    assert [side.summary() for side in rows["backoffLimit"].sides][-1] == "not a field of an inference"
    # A keyed item a policy does not lock is alike in every kind; the locked one is not (distributed's rule).
    assert "environmentVariables[name=HTTP_PROXY]" not in rows
    assert "environmentVariables[name=PIP_INDEX_URL]" in rows


def test_the_kinds_command_shows_the_imposed_hostpath_side_by_side(
    org: Org, files_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The org with the kinds' policies stands for the folder's (see the module's docstring).
    monkeypatch.setattr(policy_commands, "load_org", lambda root: org)
    done = CliRunner().invoke(
        policy_commands.kinds, ["--root", str(files_root), "-p", "vision", "storage.hostPath"]
    )
    assert done.exit_code == 0, done.output
    lines = done.output.splitlines()
    assert lines[2] == "distributed  not set"
    assert lines[3] == (
        'training     = [{"mountPath": "/etc/passwd", "name": "passwd", "path": "/etc/passwd", '
        '"readOnly": true}]  '
        "(datasource asset passwd (imposed by the system training policy), assets/datasources/passwd.yaml:7)"
    )
    assert (
        lines[4]
        == "             imposed: passwd (imposed by the system training policy, system/training-policy.yaml)"
    )
    assert lines[-3:] == [
        "differs:",
        "  distributed, inference: not set",
        "  training, workspace: 1 item; imposed passwd",
    ]


def test_the_report_has_a_where_kinds_differ_page_per_project(files_root: Path) -> None:
    # The folder as read (compositions of a kind with a policy of its own need apply_policy(kind=), k-policy).
    plain = load_org(files_root)
    site = build_site(plain, "templates")
    assert {rel for rel in site.files if rel.startswith("kinds/")} == {
        "kinds/nlp.html",
        "kinds/recsys.html",
        "kinds/speech.html",
        "kinds/vision.html",
    }
    page = site.files["kinds/vision.html"]
    assert '<tr data-field="cleanPodPolicy">' in page
    assert "not a field of an inference" in page
    assert '<a href="kinds/vision.html">vision</a>: ' in site.files["index.html"]
    assert render_kinds(kinds_page(plain, plain.view_of("vision")), "../index.html") == page
    assert "(project vision training template)" in site.files["index.html"]
    assert "Not applied to this inference" in site.files["pairs/projects/vision/serve-vit.html"]


def test_the_where_kinds_differ_page_shows_the_imposed_hostpath(org: Org) -> None:
    view = kinds_page(org, org.view_of("vision"))
    assert view.kinds == ("distributed", "training", "workspace", "inference")
    row = next(row for row in view.rows if row.field == "storage.hostPath[name=passwd]")
    assert [cell.summary for cell in row.cells] == [
        "not set",
        "set; imposed passwd",
        "set; imposed passwd",
        "not set",
    ]
    assert row.alike == ("distributed, inference: not set", "training, workspace: set; imposed passwd")
    page = render_kinds(view, "../index.html")
    assert '<tr data-field="storage.hostPath[name=passwd]">' in page
    assert "imposed: passwd (imposed by the system training policy, system/training-policy.yaml)" in page


def test_a_training_pair_depends_on_its_kinds_policies_only(org: Org) -> None:
    found = {p.template.name: p for p in pairs(org) if p.view.project == "vision"}
    training = dependencies(org, found["quick-train"])
    assert "system/training-policy.yaml" in training
    assert "assets/datasources/passwd.yaml" in training
    assert "system/policy.yaml" not in training  # a distributed policy rules distributed trainings only
    distributed = dependencies(org, found["vit-finetune"])
    assert "system/policy.yaml" in distributed and "system/training-policy.yaml" not in distributed


def test_the_ids_and_outputs_of_pairs_of_every_kind(org: Org) -> None:
    found = {p.template.name: p for p in pairs(org) if p.view.project == "vision"}
    assert found["quick-train"].id == pair_id(org.view_of("vision"), found["quick-train"].template)
    assert found["quick-train"].id == "projects/vision/quick-train"
    assert found["quick-train"].describe() == (
        "template quick-train (project vision training template) as seen from project vision "
        "(department research)"
    )
    assert found["vit-finetune"].describe() == (
        "template vit-finetune (project vision template) as seen from project vision (department research)"
    )


def test_a_snapshot_of_a_kind_of_one_role_has_no_master(files_root: Path) -> None:
    plain = load_org(files_root)
    view = plain.view_of("vision")
    output = effective_output(compose(plain, plain.find_template("quick-train", view), view))
    assert set(output) == {"combinedSpec", "runnable", "workloadType"}
    assert output["workloadType"] == "Training"
    assert output["combinedSpec"]["completions"] == 2
    distributed = effective_output(compose(plain, plain.find_template("vit-finetune", view), view))
    assert set(distributed) == {"combinedMasterSpec", "combinedSpec", "masterSpecSameAsWorker", "runnable"}


def test_explain_narrows_what_a_kind_lacks_to_a_field(org: Org) -> None:
    view = org.view_of("vision")
    composition = compose(org, org.find_template("serve-vit", view), view)  # no inference policy: it composes
    assert [e.found.field for e in not_applied(composition, parse_path("backoffLimit"))] == ["backoffLimit"]
    assert [e.found.field for e in not_applied(composition, parse_path("compute"))] == []
    assert len(not_applied(composition)) == 4


def test_a_pair_result_names_its_kind_unless_distributed() -> None:
    training = PairResult("vision", "research", "quick-train", "project vision", "runnable", kind="training")
    assert (training.name, training.title, training.workload_type) == (
        "vision / quick-train",
        "vision / quick-train (training)",
        "Training",
    )
    distributed = PairResult("vision", "research", "vit", "project vision", "runnable")
    assert (distributed.name, distributed.title, distributed.workload_type) == (
        "vision / vit",
        "vision / vit",
        None,
    )
    unknown = PairResult("vision", "research", "broken", "project vision", "error", kind=None)
    assert (unknown.title, unknown.workload_type) == ("vision / broken", None)


def test_the_snapshot_file_of_a_training_names_its_kind(files_root: Path) -> None:
    plain = load_org(files_root)
    pair = next(p for p in pairs(plain) if p.id == "projects/vision/quick-train")
    view = plain.view_of("vision")
    text = snapshot_text(pair, effective_output(compose(plain, pair.template, view)))
    assert text.startswith(
        "# template quick-train (project vision training template) as seen from project vision "
        "(department research)\n"
    )
    assert "\nworkloadType: Training\n" in text
    assert "combinedMasterSpec" not in text
