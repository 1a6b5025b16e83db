"""The CLI over every workload kind (issue 32, items 3, 4 and 7), through the installed entry point, on a copy
of the example org with a training, a workspace and an inference template in project vision.

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


def _org(base: Path, example: Path, files: dict[str, str]) -> Path:
    root = base / "templates"
    shutil.copytree(example, root)
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def kinds_org(tmp_path_factory: pytest.TempPathFactory, example_root: Path) -> Path:
    """The example org with a training, an inference and a workspace template in project vision."""
    files = {
        str(TEMPLATES / "quick-train.yaml"): TRAINING,
        str(TEMPLATES / "serve-vit.yaml"): INFERENCE,
        str(TEMPLATES / "notebook.yaml"): WORKSPACE,
    }
    return _org(tmp_path_factory.mktemp("kinds"), example_root, files)


@pytest.fixture(scope="module")
def failing_org(tmp_path_factory: pytest.TempPathFactory, example_root: Path) -> Path:
    """The example org with a workspace that is not runnable and a training template that is invalid."""
    files = {str(TEMPLATES / "bad-ws.yaml"): NO_IMAGE, str(TEMPLATES / "broken-train.yaml"): BROKEN}
    return _org(tmp_path_factory.mktemp("failing"), example_root, files)


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
        "vit-finetune": "Distributed",
        "mpi-horovod": "Distributed",
        "pytorch-elastic": "Distributed",
        "tf-parameter-server": "Distributed",
    }
    assert results["serve-vit"]["status"] == "runnable"


def test_a_pair_whose_template_file_is_invalid_has_no_known_kind(failing_org: Path) -> None:
    results = _results(failing_org)
    assert results["broken-train"]["status"] == "error"
    assert results["broken-train"]["workloadType"] is None
    assert results["bad-ws"]["workloadType"] == "Workspace"
    assert results["bad-ws"]["status"] == "not runnable"


def test_the_check_table_shows_the_kind_where_an_org_has_other_kinds(
    kinds_org: Path, example_root: Path
) -> None:
    done = run("check", "--root", str(kinds_org), "-p", "vision")
    lines = done.stdout.splitlines()
    assert lines[0].split() == ["PROJECT", "TEMPLATE", "KIND", "SCOPE", "STATUS", "FIRST", "ISSUE"]
    rows = {line.split()[1]: line.split()[2] for line in lines[1:8]}
    assert rows["serve-vit"] == "inference"
    assert rows["quick-train"] == "training"
    assert rows["notebook"] == "workspace"
    assert rows["vit-finetune"] == "distributed"
    # An org of distributed templates reads as it always has.
    plain = run("check", "--root", str(example_root), "-p", "vision").stdout.splitlines()
    assert plain[0].split() == ["PROJECT", "TEMPLATE", "SCOPE", "STATUS", "FIRST", "ISSUE"]


def test_the_ci_formats_name_a_pairs_kind_and_keep_its_id(failing_org: Path) -> None:
    sarif = json.loads(run("check", "--root", str(failing_org), "-p", "vision", "-o", "sarif").stdout)
    results = sarif["runs"][0]["results"]
    workspace = next(r for r in results if r["properties"].get("template") == "bad-ws")
    assert workspace["properties"]["workloadType"] == "Workspace"
    assert workspace["message"]["text"].startswith("vision / bad-ws (workspace): worker image: ")
    logical = workspace["locations"][0]["logicalLocations"][0]
    assert logical == {"name": "bad-ws", "fullyQualifiedName": "vision / bad-ws"}
    distributed = next(r for r in results if r["properties"].get("template") == "mpi-horovod")
    assert "workloadType" not in distributed["properties"]  # a distributed pair's record is as it was
    assert distributed["message"]["text"].startswith("vision / mpi-horovod: ")

    junit = ET.fromstring(run("check", "--root", str(failing_org), "-p", "vision", "-o", "junit").stdout)
    names = {case.get("name") for case in junit.iter("testcase") if case.get("classname") == "vision"}
    assert {"bad-ws (workspace)", "broken-train", "mpi-horovod", "vit-finetune"} <= names
    failure = next(c for c in junit.iter("testcase") if c.get("name") == "bad-ws (workspace)").find("failure")
    assert failure is not None
    assert failure.get("message") == "vision / bad-ws (workspace) is not runnable: 1 issue"

    reports = list(
        yaml.safe_load_all(
            run("check", "--root", str(failing_org), "-p", "vision", "-o", "policy-report").stdout
        )
    )
    found = [r for report in reports for r in report["results"] if r["properties"]["template"] == "bad-ws"]
    assert found and all(r["properties"]["workloadType"] == "Workspace" for r in found)
    others = [
        r for report in reports for r in report["results"] if r["properties"]["template"] == "mpi-horovod"
    ]
    assert others and all("workloadType" not in r["properties"] for r in others)


# -- explain -------------------------------------------------------------------------------------------------


def test_explain_says_what_the_shared_defaults_give_that_an_inference_lacks(kinds_org: Path) -> None:
    done = run("explain", "--root", str(kinds_org), "-p", "vision", "-t", "serve-vit")
    assert done.returncode == 0, done.stderr
    assert (
        "worker backoffLimit  not applied (system defaults, system/defaults.yaml:63): backoffLimit is not "
        "applied to a inference: a inference's spec has no field 'backoffLimit'"
    ) in done.stdout.splitlines()
    gone = {line.split()[1] for line in done.stdout.splitlines() if "  not applied (" in line}
    assert gone == {"imagePullSecrets", "backoffLimit", "cleanPodPolicy", "terminationGracePeriodSeconds"}


def test_explain_of_a_field_the_kind_lacks_says_why_and_succeeds(kinds_org: Path) -> None:
    done = run("explain", "--root", str(kinds_org), "-p", "vision", "-t", "serve-vit", "backoffLimit")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(
        "worker backoffLimit  not applied (system defaults, system/defaults.yaml:63)"
    )
    answer = json.loads(
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
    )
    assert answer["entries"] == []
    assert answer["notApplied"] == [
        {
            "field": "backoffLimit",
            "kind": "inference",
            "file": "system/defaults.yaml",
            "line": 63,
            "layer": "system defaults",
            "message": (
                "backoffLimit is not applied to a inference: a inference's spec has no field 'backoffLimit'"
            ),
        }
    ]
    # A training has the field: the default reaches it.
    training = run("explain", "--root", str(kinds_org), "-p", "vision", "-t", "quick-train", "backoffLimit")
    assert training.stdout == "worker backoffLimit = 6  (system defaults, system/defaults.yaml:63)\n"


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
        run("explain", "--root", str(kinds_org), "-p", "vision", "-t", "vit-finetune", "-o", "json").stdout
    )
    assert set(answer) == {"entries", "warnings"}


# -- diff ----------------------------------------------------------------------------------------------------


def test_diff_names_the_kind_of_a_changed_pair(kinds_org: Path, tmp_path: Path) -> None:
    new = tmp_path / "new"
    shutil.copytree(kinds_org, new)
    changed = new / TEMPLATES / "quick-train.yaml"
    changed.write_text(TRAINING.replace("completions: 2", "completions: 4"), encoding="utf-8")
    text = run("diff", "--root", str(new), "--against", str(kinds_org), "--no-cache")
    assert text.returncode == 1, text.stderr
    assert text.stdout.splitlines()[0] == "~ projects/vision/quick-train  (project vision training template)"
    answer = json.loads(
        run("diff", "--root", str(new), "--against", str(kinds_org), "--no-cache", "-o", "json").stdout
    )
    (pair,) = answer["pairs"]
    assert (pair["pair"], pair["workloadType"], pair["changes"][0]["field"]) == (
        "projects/vision/quick-train",
        "Training",
        "combinedSpec.completions",
    )
    markdown = run(
        "diff", "--root", str(new), "--against", str(kinds_org), "--no-cache", "-o", "markdown"
    ).stdout
    assert "| pair | template scope | kind | change | status | fields | object values |" in markdown
    assert "| <code>projects/vision/quick-train</code> | project vision | training | changed |" in markdown
    assert (
        "#### <code>projects/vision/quick-train</code> (project vision training template): changed"
        in markdown
    )


def test_a_distributed_pairs_diff_reads_as_it_did(example_root: Path, tmp_path: Path) -> None:
    new = tmp_path / "new"
    shutil.copytree(example_root, new)
    template = new / "projects/vision/templates/vit-finetune.yaml"
    template.write_text(
        template.read_text(encoding="utf-8").replace("numWorkers: 2", "numWorkers: 3"), "utf-8"
    )
    text = run("diff", "--root", str(new), "--against", str(example_root), "--no-cache")
    assert text.stdout.splitlines()[0] == "~ projects/vision/vit-finetune  (project vision template)"
    markdown = run("diff", "--root", str(new), "--against", str(example_root), "--no-cache", "-o", "markdown")
    assert "| pair | template scope | change | status | fields | object values |" in markdown.stdout


# -- kinds ---------------------------------------------------------------------------------------------------


def test_kinds_puts_a_field_of_each_kind_side_by_side(kinds_org: Path) -> None:
    done = run("kinds", "--root", str(kinds_org), "-p", "vision", "backoffLimit")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "backoffLimit: the policy side of each kind, as seen from project vision (department research)",
        "",
        "distributed  = 6  (system defaults, system/defaults.yaml:63)",
        "training     = 6  (system defaults, system/defaults.yaml:63)",
        "workspace    = 6  (system defaults, system/defaults.yaml:63)",
        "inference    not a field of an inference",
        "             backoffLimit is not applied to a inference: a inference's spec has no field "
        "'backoffLimit' (system/defaults.yaml:63, system defaults)",
        "",
        "differs:",
        "  distributed, training, workspace: 6",
        "  inference: not a field of an inference",
    ]


def test_kinds_shows_the_rules_of_each_kinds_own_policy(kinds_org: Path) -> None:
    answer = json.loads(
        run(
            "kinds", "--root", str(kinds_org), "-p", "vision", "compute.gpuDevicesRequest", "-o", "json"
        ).stdout
    )
    assert answer["field"] == "compute.gpuDevicesRequest"
    assert answer["differs"] is True
    by_kind = {side["kind"]: side for side in answer["kinds"]}
    assert by_kind["distributed"]["rules"] == [
        "max 8 (system policy, system/policy.yaml:11)",
        "step 1 (system policy, system/policy.yaml:11)",
    ]
    # A distributed policy's rules govern distributed trainings only (Run:ai's policies are per kind).
    assert by_kind["training"]["rules"] == []
    assert by_kind["training"]["workloadType"] == "Training"


def test_kinds_without_a_field_lists_every_field_where_the_kinds_differ(kinds_org: Path) -> None:
    done = run("kinds", "--root", str(kinds_org), "-p", "vision")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[2].split() == ["FIELD", "DISTRIBUTED", "TRAINING", "WORKSPACE", "INFERENCE"]
    rows = {line.split()[0]: line for line in lines[3:]}
    assert "not a field of a training" in rows["cleanPodPolicy"]
    assert "imposed datasets" in rows["storage.nfs[name=datasets]"]
    # The locked item differs (a distributed policy locks it); the others of the list are alike.
    assert "environmentVariables[name=PIP_INDEX_URL]" in rows
    assert "environmentVariables[name=HTTP_PROXY]" not in rows


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
