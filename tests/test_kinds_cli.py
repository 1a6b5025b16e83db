"""The CLI over every workload kind (issue 32, items 3, 4 and 7), through the installed entry point, on a
small org of its own (:data:`ORG`) with a training, a workspace and an inference template in project vision.

``check -o json`` gives each pair's ``workloadType``; the text table and the CI formats name a pair's kind
when it is not a distributed training (whose ids and records stay as they were); ``explain`` says what the
layers give that a kind lacks; ``diff`` names the kind of a changed pair; ``kinds`` puts one field's policy
side of each kind side by side.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

import pytest
import yaml

SEARCH_PATH = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])

#: A small org of its own (the example org's content moves on; these tests read only what they write): a
#: shared default an inference lacks (``backoffLimit``), a distributed policy with a rule and a locked item, a
#: department policy that imposes a data source on distributed trainings, and two distributed templates.
ORG = {
    "org.yaml": "departments:\n- name: research\n  projects:\n  - vision\n",
    "system/defaults.yaml": """\
spec:
  imagePullPolicy: IfNotPresent
  backoffLimit: 6
  cleanPodPolicy: Running
  environmentVariables:
  - name: TZ
    value: UTC
  - name: PIP_INDEX_URL
    value: https://pypi.acme.internal/simple
""",
    "system/policy.yaml": """\
rules:
  worker:
    compute:
      gpuDevicesRequest:
        max: 8
    environmentVariables:
      instances:
        locked:
        - PIP_INDEX_URL
""",
    "departments/research/policy.yaml": "imposedAssets:\n  worker:\n  - datasets\n",
    "assets/datasources/datasets.yaml": """\
meta:
  name: datasets
spec:
  storage:
    nfs:
    - server: nfs01.acme.internal
      path: /export/datasets
      mountPath: /datasets
      readOnly: true
""",
    "system/templates/ddp.yaml": """\
meta:
  name: ddp
spec:
  image: nvcr.io/nvidia/pytorch:24.05-py3
  distributedFramework: PyTorch
  numWorkers: 2
""",
    "projects/vision/templates/no-image.yaml": """\
meta:
  name: no-image
spec:
  distributedFramework: PyTorch
  numWorkers: 2
""",
}

TRAINING = """\
kind: training
meta:
  name: quick-train
  description: A one-pod training
spec:
  image: nvcr.io/nvidia/pytorch:24.05-py3
  completions: 2
"""
INFERENCE = """\
kind: inference
meta:
  name: serve-vit
spec:
  image: nvcr.io/nvidia/tritonserver:24.05-py3
  servingPort:
    container: 8000
"""
WORKSPACE = """\
kind: workspace
meta:
  name: notebook
spec:
  image: jupyter/base-notebook
"""
#: A workspace without an image: not runnable.
NO_IMAGE = """\
kind: workspace
meta:
  name: bad-ws
spec:
  workingDir: /home/jovyan
"""
#: A training template whose file is invalid: its pair's kind is not known.
BROKEN = """\
kind: training
meta:
  name: broken-train
spec:
  completions: lots
"""

TEMPLATES = Path("projects/vision/templates")


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["template-engine", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "PATH": SEARCH_PATH, "NO_COLOR": "1"},
        check=False,
        timeout=120,
    )


def _org(base: Path, files: dict[str, str]) -> Path:
    root = base / "templates"
    for rel, text in {**ORG, **files}.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def plain_org(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The small org: distributed templates only."""
    return _org(tmp_path_factory.mktemp("plain"), {})


@pytest.fixture(scope="module")
def kinds_org(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The small org with a training, an inference and a workspace template in project vision."""
    files = {
        str(TEMPLATES / "quick-train.yaml"): TRAINING,
        str(TEMPLATES / "serve-vit.yaml"): INFERENCE,
        str(TEMPLATES / "notebook.yaml"): WORKSPACE,
    }
    return _org(tmp_path_factory.mktemp("kinds"), files)


@pytest.fixture(scope="module")
def failing_org(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The small org with a workspace that is not runnable and a training template that is invalid."""
    files = {str(TEMPLATES / "bad-ws.yaml"): NO_IMAGE, str(TEMPLATES / "broken-train.yaml"): BROKEN}
    return _org(tmp_path_factory.mktemp("failing"), files)


def _results(root: Path, *more: str) -> dict[str, dict[str, Any]]:
    done = run("check", "--root", str(root), "-p", "vision", "-o", "json", *more)
    assert done.returncode in (0, 1), done.stderr
    return {r["template"]: r for r in json.loads(done.stdout)["results"]}


# -- check ---------------------------------------------------------------------------------------------------


def test_check_json_gives_each_pair_its_workload_type(kinds_org: Path) -> None:
    results = _results(kinds_org)
    types = {name: r["workloadType"] for name, r in results.items()}
    assert types == {
        "quick-train": "Training",
        "serve-vit": "Inference",
        "notebook": "Workspace",
        "ddp": "Distributed",
        "no-image": "Distributed",
    }
    assert results["serve-vit"]["status"] == "runnable"


def test_a_pair_whose_template_file_is_invalid_has_no_known_kind(failing_org: Path) -> None:
    results = _results(failing_org)
    assert results["broken-train"]["status"] == "error"
    assert results["broken-train"]["workloadType"] is None
    assert results["bad-ws"]["workloadType"] == "Workspace"
    assert results["bad-ws"]["status"] == "not runnable"


def test_the_check_table_shows_the_kind_where_an_org_has_other_kinds(
    kinds_org: Path, plain_org: Path
) -> None:
    done = run("check", "--root", str(kinds_org), "-p", "vision")
    lines = done.stdout.splitlines()
    assert lines[0].split() == ["PROJECT", "TEMPLATE", "KIND", "SCOPE", "STATUS", "FIRST", "ISSUE"]
    rows = {line.split()[1]: line.split()[2] for line in lines[1:6]}
    assert rows == {
        "ddp": "distributed",
        "no-image": "distributed",
        "notebook": "workspace",
        "quick-train": "training",
        "serve-vit": "inference",
    }
    # An org of distributed templates reads as it always has.
    plain = run("check", "--root", str(plain_org), "-p", "vision").stdout.splitlines()
    assert plain[0].split() == ["PROJECT", "TEMPLATE", "SCOPE", "STATUS", "FIRST", "ISSUE"]


def test_the_ci_formats_name_a_pairs_kind_and_keep_its_id(failing_org: Path) -> None:
    sarif = json.loads(run("check", "--root", str(failing_org), "-p", "vision", "-o", "sarif").stdout)
    results = sarif["runs"][0]["results"]
    workspace = next(r for r in results if r["properties"].get("template") == "bad-ws")
    assert workspace["properties"]["workloadType"] == "Workspace"
    assert workspace["message"]["text"].startswith("vision / bad-ws (workspace): worker image: ")
    logical = workspace["locations"][0]["logicalLocations"][0]
    assert logical == {"name": "bad-ws", "fullyQualifiedName": "vision / bad-ws"}
    distributed = next(r for r in results if r["properties"].get("template") == "no-image")
    assert "workloadType" not in distributed["properties"]  # a distributed pair's record is as it was
    assert distributed["message"]["text"].startswith("vision / no-image: ")

    junit = ET.fromstring(run("check", "--root", str(failing_org), "-p", "vision", "-o", "junit").stdout)
    names = {case.get("name") for case in junit.iter("testcase") if case.get("classname") == "vision"}
    assert names == {"bad-ws (workspace)", "broken-train", "ddp", "no-image"}
    failure = next(c for c in junit.iter("testcase") if c.get("name") == "bad-ws (workspace)").find("failure")
    assert failure is not None
    assert failure.get("message") == "vision / bad-ws (workspace) is not runnable: 1 issue"

    text = run("check", "--root", str(failing_org), "-p", "vision", "-o", "policy-report").stdout
    found = [r for report in yaml.safe_load_all(text) for r in report["results"]]
    workspace_results = [r for r in found if r["properties"]["template"] == "bad-ws"]
    assert workspace_results and all(
        r["properties"]["workloadType"] == "Workspace" for r in workspace_results
    )
    others = [r for r in found if r["properties"]["template"] == "no-image"]
    assert others and all("workloadType" not in r["properties"] for r in others)


# -- explain -------------------------------------------------------------------------------------------------


def _not_applied(root: Path, template: str, *more: str) -> list[dict[str, Any]]:
    args = ("explain", "--root", str(root), "-p", "vision", "-t", template, *more, "-o", "json")
    found: list[dict[str, Any]] = json.loads(run(*args).stdout)["notApplied"]
    return found


def test_explain_says_what_the_shared_defaults_give_that_an_inference_lacks(kinds_org: Path) -> None:
    gone = _not_applied(kinds_org, "serve-vit")
    assert [(g["field"], g["kind"], g["file"], g["line"], g["layer"]) for g in gone] == [
        ("backoffLimit", "inference", "system/defaults.yaml", 3, "system defaults"),
        ("cleanPodPolicy", "inference", "system/defaults.yaml", 4, "system defaults"),
    ]
    assert gone[0]["message"].startswith("backoffLimit is not applied to ")
    done = run("explain", "--root", str(kinds_org), "-p", "vision", "-t", "serve-vit")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert (
        f"worker backoffLimit  not applied (system defaults, system/defaults.yaml:3): {gone[0]['message']}"
    ) in lines
    assert len([line for line in lines if "  not applied (" in line]) == 2


def test_explain_of_a_field_the_kind_lacks_says_why_and_succeeds(kinds_org: Path) -> None:
    done = run("explain", "--root", str(kinds_org), "-p", "vision", "-t", "serve-vit", "backoffLimit")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(
        "worker backoffLimit  not applied (system defaults, system/defaults.yaml:3): "
    )
    assert [g["field"] for g in _not_applied(kinds_org, "serve-vit", "backoffLimit")] == ["backoffLimit"]
    assert (
        json.loads(
            run(
                "explain",
                "--root",
                str(kinds_org),
                "-p",
                "vision",
                "-t",
                "serve-vit",
                "backoffLimit",
                "-o",
                "json",
            ).stdout
        )["entries"]
        == []
    )
    # A training has the field: the default reaches it.
    training = run("explain", "--root", str(kinds_org), "-p", "vision", "-t", "quick-train", "backoffLimit")
    assert training.stdout == "worker backoffLimit = 6  (system defaults, system/defaults.yaml:3)\n"
    # A workspace lacks cleanPodPolicy (a distributed training's only), not backoffLimit.
    assert [g["field"] for g in _not_applied(kinds_org, "notebook")] == ["cleanPodPolicy"]


def test_explain_of_a_field_of_another_kind_says_the_kind_lacks_it(kinds_org: Path) -> None:
    done = run("explain", "--root", str(kinds_org), "-p", "vision", "-t", "quick-train", "numWorkers")
    assert done.returncode == 1
    assert done.stderr == (
        "error: numWorkers is not a field of a training: a training's spec has no field 'numWorkers'\n"
    )
    # A misspelt field is offered the closest field of the kind's own spec.
    done = run("explain", "--root", str(kinds_org), "-p", "vision", "-t", "quick-train", "completion")
    assert done.stderr == (
        "error: completion is neither set nor excluded by any layer (did you mean 'completions'?)\n"
    )


def test_explain_of_a_distributed_pair_is_as_it_was(kinds_org: Path) -> None:
    answer = json.loads(
        run("explain", "--root", str(kinds_org), "-p", "vision", "-t", "ddp", "-o", "json").stdout
    )
    assert set(answer) == {"entries", "warnings"}


# -- diff ----------------------------------------------------------------------------------------------------


def test_diff_names_the_kind_of_a_changed_pair(kinds_org: Path, tmp_path: Path) -> None:
    new = tmp_path / "new"
    shutil.copytree(kinds_org, new)
    changed = new / TEMPLATES / "quick-train.yaml"
    changed.write_text(TRAINING.replace("completions: 2", "completions: 4"), encoding="utf-8")
    against = ("--against", str(kinds_org), "--no-cache")
    text = run("diff", "--root", str(new), *against)
    assert text.returncode == 1, text.stderr
    assert text.stdout.splitlines()[0] == "~ projects/vision/quick-train  (project vision training template)"
    answer = json.loads(run("diff", "--root", str(new), *against, "-o", "json").stdout)
    (pair,) = answer["pairs"]
    assert (pair["pair"], pair["workloadType"], pair["changes"][0]["field"]) == (
        "projects/vision/quick-train",
        "Training",
        "combinedSpec.completions",
    )
    markdown = run("diff", "--root", str(new), *against, "-o", "markdown").stdout
    assert "| pair | template scope | kind | change | status | fields | object values |" in markdown
    assert "| <code>projects/vision/quick-train</code> | project vision | training | changed |" in markdown
    assert (
        "#### <code>projects/vision/quick-train</code> (project vision training template): changed"
        in markdown
    )


def test_a_template_whose_kind_changes_says_so(kinds_org: Path, tmp_path: Path) -> None:
    new = tmp_path / "new"
    shutil.copytree(kinds_org, new)
    changed = new / TEMPLATES / "notebook.yaml"
    changed.write_text(WORKSPACE.replace("kind: workspace", "kind: training"), encoding="utf-8")
    answer = json.loads(
        run("diff", "--root", str(new), "--against", str(kinds_org), "--no-cache", "-o", "json").stdout
    )
    (pair,) = answer["pairs"]
    change = next(c for c in pair["changes"] if c["field"] == "workloadType")
    assert (change["old"], change["new"]) == ("Workspace", "Training")


def test_a_distributed_pairs_diff_reads_as_it_did(plain_org: Path, tmp_path: Path) -> None:
    new = tmp_path / "new"
    shutil.copytree(plain_org, new)
    template = new / "system/templates/ddp.yaml"
    template.write_text(
        template.read_text(encoding="utf-8").replace("numWorkers: 2", "numWorkers: 3"), "utf-8"
    )
    text = run("diff", "--root", str(new), "--against", str(plain_org), "--no-cache")
    assert text.stdout.splitlines()[0] == "~ projects/vision/ddp  (system template)"
    markdown = run("diff", "--root", str(new), "--against", str(plain_org), "--no-cache", "-o", "markdown")
    assert "| pair | template scope | change | status | fields | object values |" in markdown.stdout


# -- kinds ---------------------------------------------------------------------------------------------------


def test_kinds_puts_a_field_of_each_kind_side_by_side(kinds_org: Path) -> None:
    done = run("kinds", "--root", str(kinds_org), "-p", "vision", "backoffLimit")
    assert done.returncode == 0, done.stderr
    message = _not_applied(kinds_org, "serve-vit", "backoffLimit")[0]["message"]
    assert done.stdout.splitlines() == [
        "backoffLimit: the policy side of each kind, as seen from project vision (department research)",
        "",
        "distributed  = 6  (system defaults, system/defaults.yaml:3)",
        "training     = 6  (system defaults, system/defaults.yaml:3)",
        "workspace    = 6  (system defaults, system/defaults.yaml:3)",
        "inference    not a field of an inference",
        f"             {message} (system/defaults.yaml:3, system defaults)",
        "",
        "differs:",
        "  distributed, training, workspace: 6",
        "  inference: not a field of an inference",
    ]


def test_kinds_shows_what_each_kinds_own_policies_impose_and_rule(kinds_org: Path) -> None:
    answer = json.loads(
        run("kinds", "--root", str(kinds_org), "-p", "vision", "storage.nfs", "-o", "json").stdout
    )
    assert (answer["field"], answer["differs"]) == ("storage.nfs", True)
    by_kind = {side["kind"]: side for side in answer["kinds"]}
    assert [a["name"] for a in by_kind["distributed"]["imposed"]] == ["datasets"]
    assert by_kind["distributed"]["setBy"] == [
        {
            "file": "assets/datasources/datasets.yaml",
            "line": 6,
            "layer": "datasource asset datasets (imposed by the department research policy)",
        }
    ]
    # A distributed policy imposes on, and rules, distributed trainings only (Run:ai's policies are per kind).
    assert by_kind["training"]["imposed"] == [] and "value" not in by_kind["training"]
    assert by_kind["training"]["workloadType"] == "Training"
    gpu = json.loads(
        run(
            "kinds", "--root", str(kinds_org), "-p", "vision", "compute.gpuDevicesRequest", "-o", "json"
        ).stdout
    )
    rules = {side["kind"]: side["rules"] for side in gpu["kinds"]}
    assert rules == {
        "distributed": ["at most 8 (system policy, system/policy.yaml:4)"],
        "training": [],
        "workspace": [],
        "inference": [],
    }


def test_kinds_without_a_field_lists_every_field_where_the_kinds_differ(kinds_org: Path) -> None:
    done = run("kinds", "--root", str(kinds_org), "-p", "vision")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == (
        "6 field(s) where the kinds' policy sides differ, as seen from project vision (department research):"
    )
    assert lines[2].split() == ["FIELD", "DISTRIBUTED", "TRAINING", "WORKSPACE", "INFERENCE"]
    rows = {
        line.split()[0]: [cell.strip() for cell in line.split("  ")[1:] if cell.strip()] for line in lines[3:]
    }
    assert rows == {
        "backoffLimit": ["6", "6", "6", "not a field of an inference"],
        "cleanPodPolicy": [
            '"Running"',
            "not a field of a training",
            "not a field of a workspace",
            "not a field of an inference",
        ],
        "compute.gpuDevicesRequest": ["not set; rules max", "not set", "not set", "not set"],
        "environmentVariables": ["2 items; rules locked", "2 items", "2 items", "2 items"],
        # The locked item differs (a distributed policy locks it); the other item of the list is alike.
        "environmentVariables[name=PIP_INDEX_URL]": ["set; rules locked", "set", "set", "set"],
        "storage.nfs[name=datasets]": ["set; imposed datasets", "not set", "not set", "not set"],
    }


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("-p", "nope"), "unknown project 'nope'"),
        (("-p", "vision", "storage..x"), "cannot read a field path"),
    ],
)
def test_kinds_refuses_bad_input_in_words(kinds_org: Path, args: tuple[str, ...], message: str) -> None:
    done = run("kinds", "--root", str(kinds_org), *args)
    assert done.returncode == 2
    assert message in done.stderr
    assert "Traceback" not in done.stderr


def test_policy_reads_the_policies_of_the_kind_asked_for() -> None:
    """``policy --kind``: each kind's effective policy of a scope (the example org imposes passwd on
    trainings, and the research department's datasets on distributed trainings only)."""
    from click.testing import CliRunner

    from template_engine.cli import main

    example = Path(__file__).resolve().parents[1] / "templates"
    args = ["policy", "--root", str(example), "-p", "vision"]
    training = CliRunner().invoke(main, [*args, "-k", "training", "-o", "json"])
    assert training.exit_code == 0, training.output
    shape = json.loads(training.stdout)["effective"]
    assert shape["imposedAssets"] == ["passwd"]
    assert shape["rules"]["compute"]["gpuDevicesRequest"]["max"] == 4
    distributed = CliRunner().invoke(main, [*args, "-o", "json"])
    assert json.loads(distributed.stdout)["effective"]["imposedAssets"] == {"worker": ["datasets"]}
    unknown = CliRunner().invoke(main, ["policy", "--root", str(example), "-k", "trainig"])
    assert unknown.exit_code == 2 and "'trainig' is not one of" in unknown.output


def test_kinds_refuses_a_field_of_no_kind_and_names_a_group_that_lacks_one() -> None:
    """A field no kind's spec has is bad input (exit 2, did-you-mean); kinds that lack a field are said so
    as a group, not in the first one's words."""
    from click.testing import CliRunner

    from template_engine.cli import main

    example = Path(__file__).resolve().parents[1] / "templates"
    args = ["kinds", "--root", str(example), "-p", "vision"]
    typo = CliRunner().invoke(main, [*args, "imagePullSecret"])
    assert typo.exit_code == 2 and "did you mean 'imagePullSecrets'?" in typo.output
    lacking = CliRunner().invoke(main, [*args, "imagePullSecrets"])
    assert lacking.exit_code == 0
    assert "  training, workspace, inference: not a field of their specs" in lacking.output
