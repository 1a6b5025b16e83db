"""The ``template-engine`` command through its installed entry point, as a user runs it.

Every invocation is declared once in :data:`INVOCATIONS` and started together (the command spends most of its
time starting up), each test then reads the result it is about.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

#: The venv's scripts folder first: CI runs ``.venv/bin/pytest`` without activating the venv.
SEARCH_PATH = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])

BILLION_LAUGHS = 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n' + "".join(
    f"{name}: &{name} [{', '.join(['*' + prev] * 9)}]\n"
    for prev, name in zip("abcdefgh", "bcdefghi", strict=True)
)

VISION_DEFAULTS = "projects/vision/defaults.yaml"
VIT = "projects/vision/templates/vit-finetune.yaml"
HTTP_PROXY = "environmentVariables[name=HTTP_PROXY]"


@dataclass(frozen=True)
class Invocation:
    """``template-engine ARGS`` on the example org, or on a copy of it changed by ``edits``/``files``.

    ``{root}`` in ``args`` is the templates folder; ``{missing}`` a folder that does not exist.
    """

    args: tuple[str, ...]
    edits: tuple[tuple[str, str, str], ...] = ()  # (file, old text, new text)
    files: tuple[tuple[str, str], ...] = ()  # (file, whole new text)


def preview(project: str, template: str, *more: str) -> tuple[str, ...]:
    return ("preview", "--root", "{root}", "--project", project, "--template", template, *more)


def explain(*more: str) -> tuple[str, ...]:
    return ("explain", "--root", "{root}", "-p", "vision", "-t", "vit-finetune", *more)


INVOCATIONS: dict[str, Invocation] = {
    "preview-vit": Invocation(preview("vision", "vit-finetune", "--output", "json")),
    "preview-vit-again": Invocation(preview("vision", "vit-finetune", "--output", "json")),
    "preview-vit-alice": Invocation(preview("vision", "vit-finetune", "--var", "user=alice")),
    "preview-vit-bad-var": Invocation(preview("vision", "vit-finetune", "--var", "alice")),
    "preview-tf": Invocation(preview("nlp", "tf-parameter-server")),
    "preview-tf-again": Invocation(preview("nlp", "tf-parameter-server")),
    "preview-tf-yaml": Invocation(preview("nlp", "tf-parameter-server", "--output", "yaml")),
    "preview-asr": Invocation(preview("speech", "asr-sweep-draft", "-o", "json")),
    "preview-department": Invocation(
        ("preview", "--root", "{root}", "--department", "research", "--template", "tf-parameter-server")
    ),
    "preview-system": Invocation(("preview", "--root", "{root}", "--template", "mpi-horovod")),
    "preview-warning": Invocation(
        preview("vision", "vit-finetune"),
        edits=((VISION_DEFAULTS, "  labels:\n", "  labels:\n  - name: orgg\n    exclude: true\n"),),
    ),
    "check": Invocation(("check", "--root", "{root}")),
    "check-recsys": Invocation(("check", "--root", "{root}", "--project", "recsys")),
    "check-json": Invocation(("check", "--root", "{root}", "--output", "json")),
    "check-broken-template": Invocation(
        ("check", "--root", "{root}", "--output", "json"), edits=((VIT, "numWorkers:", "numWorkerz:"),)
    ),
    "check-unknown-project": Invocation(("check", "--root", "{root}", "--project", "nowhere")),
    "explain-all": Invocation(explain()),
    "explain-item": Invocation(explain(HTTP_PROXY)),
    "explain-item-json": Invocation(explain(HTTP_PROXY, "--output", "json")),
    "explain-port": Invocation(
        ("explain", "--root", "{root}", "-p", "speech", "-t", "xgboost-ctr", "ports[container=6006]")
    ),
    "explain-bad-field": Invocation(explain("env[name=")),
    "explain-unset-field": Invocation(explain("nodeType")),
    "validate": Invocation(("validate", "--root", "{root}")),
    "validate-broken": Invocation(
        ("validate", "--root", "{root}"),
        edits=(
            ("system/defaults.yaml", "imagePullPolicy:", "imagePullPolicys:"),
            ("projects/nlp/defaults.yaml", "  preemptibility: null\n", "  numWorkers: many\n"),
            (VIT, "environment: pytorch", "environment: pytorh"),
            (VISION_DEFAULTS, "spec:\n", "spec:\n  nodePools: [a\n"),
        ),
    ),
    # bad input: one clear message on stderr, exit 2, no traceback
    "bad-broken-yaml": Invocation(
        preview("vision", "vit-finetune"), edits=((VISION_DEFAULTS, "nodePools:\n", "nodePools: [a100\n"),)
    ),
    "bad-typo-field": Invocation(
        preview("vision", "vit-finetune"), edits=((VISION_DEFAULTS, "nodePools:", "nodePool:"),)
    ),
    "bad-duplicate-key": Invocation(
        preview("vision", "vit-finetune"),
        edits=((VIT, "  numWorkers: 2\n", "  numWorkers: 2\n  numWorkers: 3\n"),),
    ),
    "bad-alias-bomb": Invocation(
        preview("vision", "vit-finetune"), files=((VISION_DEFAULTS, BILLION_LAUGHS),)
    ),
    "bad-unknown-asset": Invocation(
        preview("vision", "vit-finetune"), edits=((VIT, "compute: a100-x8", "compute: a100-x9"),)
    ),
    "bad-jinja-class": Invocation(
        preview("vision", "vit-finetune"),
        edits=(
            (VIT, "workingDir: '/home/{{ project.name }}'", "workingDir: \"{{ ''.__class__.__mro__ }}\""),
        ),
    ),
    "bad-jinja-runtime-error": Invocation(
        preview("vision", "vit-finetune"),
        edits=((VIT, "workingDir: '/home/{{ project.name }}'", "workingDir: '{{ 1 / 0 }}'"),),
    ),
    "bad-unknown-project": Invocation(preview("nowhere", "vit-finetune")),
    "bad-unknown-template": Invocation(preview("vision", "no-such-template")),
    "bad-invisible-template": Invocation(preview("recsys", "vit-finetune")),
    "bad-missing-root": Invocation(("preview", "--root", "{missing}", "-p", "vision", "-t", "vit-finetune")),
}

Runs = dict[str, "Future[subprocess.CompletedProcess[str]]"]


@pytest.fixture(scope="module")
def cli() -> str:
    found = shutil.which("template-engine", path=SEARCH_PATH)
    assert found, "the template-engine entry point is not installed (pip install -e .)"
    return found


def _prepare(name: str, invocation: Invocation, example: Path, scratch: Path) -> list[str]:
    root = example
    if invocation.edits or invocation.files:
        root = scratch / name / "templates"
        shutil.copytree(example, root)
        for rel, old, new in invocation.edits:
            text = (root / rel).read_text(encoding="utf-8")
            assert old in text, f"{name}: {old!r} is not in {rel}"
            (root / rel).write_text(text.replace(old, new, 1), encoding="utf-8")
        for rel, text in invocation.files:
            (root / rel).write_text(text, encoding="utf-8")
    missing = scratch / "no-such-folder"
    return [arg.format(root=root, missing=missing) for arg in invocation.args]


@pytest.fixture(scope="module")
def runs(cli: str, example_root: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runs]:
    scratch = tmp_path_factory.mktemp("cli")
    commands = {name: _prepare(name, inv, example_root, scratch) for name, inv in INVOCATIONS.items()}
    with ThreadPoolExecutor(max_workers=4) as pool:
        yield {
            name: pool.submit(
                subprocess.run, [cli, *args], capture_output=True, text=True, timeout=120, check=False
            )
            for name, args in commands.items()
        }


def ok(runs: Runs, name: str) -> subprocess.CompletedProcess[str]:
    result = runs[name].result()
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    return result


# -- preview -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["preview-vit", "preview-tf"])
def test_preview_json_is_sorted_and_deterministic(runs: Runs, name: str) -> None:
    first, second = ok(runs, name), ok(runs, f"{name}-again")
    assert first.stdout == second.stdout
    doc = json.loads(first.stdout)
    assert first.stdout.strip() == json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False)
    assert {"meta", "spec", "masterSpecSameAsWorker", "master", "runnable", "combinedSpec"} <= set(doc)
    assert "combinedMasterSpec" in doc
    assert doc["runnable"]["isRunnable"] is True
    assert first.stderr == ""  # the example org's runnable templates warn about nothing


def test_preview_renders_names(runs: Runs) -> None:
    doc = json.loads(ok(runs, "preview-vit").stdout)
    assert doc["meta"]["name"] == "vit-finetune"
    assert doc["combinedSpec"]["workingDir"] == "/home/vision"
    assert doc["spec"]["workingDir"] == "/home/{{ project.name }}"  # the template as written


def test_preview_of_the_not_runnable_template_lists_every_issue(runs: Runs) -> None:
    runnable = json.loads(ok(runs, "preview-asr").stdout)["runnable"]
    assert runnable["isRunnable"] is False
    assert runnable["issue"] == "mandatory image is not provided"
    assert [(i["field"], i["rule"]) for i in runnable["issues"]] == [
        ("image", None),
        ("compute.cpuCoreRequest", None),
        ("compute.gpuMemoryRequest", None),
        ("minReplicas", None),
        # then what the policies say (system: image required; speech: gpuRequestType options)
        ("compute.gpuRequestType", "options"),
        ("image", "required"),
        ("image", "required"),
    ]
    assert [i["replica"] for i in runnable["issues"]][-2:] == ["worker", "master"]
    assert runnable["issues"][-3]["source"] == "projects/speech/policy.yaml:5"


def test_preview_yaml_matches_json(runs: Runs) -> None:
    assert yaml.safe_load(ok(runs, "preview-tf-yaml").stdout) == json.loads(ok(runs, "preview-tf").stdout)


def test_preview_warnings_go_to_stderr(runs: Runs) -> None:
    result = ok(runs, "preview-warning")
    assert "warning:" in result.stderr and "orgg" in result.stderr
    assert "warning:" not in result.stdout
    doc = json.loads(result.stdout)
    assert any("orgg" in w["field"] for w in doc["runnable"]["warnings"])
    assert doc["runnable"]["isRunnable"] is True


def test_preview_var(runs: Runs) -> None:
    def username(name: str) -> str:
        env = json.loads(ok(runs, name).stdout)["combinedSpec"]["environmentVariables"]
        return str(next(e["value"] for e in env if e["name"] == "WANDB_USERNAME"))

    assert username("preview-vit-alice") == "alice"
    assert username("preview-vit") == "vision-bot"


def test_preview_bad_var_syntax(runs: Runs) -> None:
    result = runs["preview-vit-bad-var"].result()
    assert result.returncode == 2
    assert "--var" in result.stderr and "Traceback" not in result.stderr
    assert result.stdout == ""


def test_preview_from_a_department(runs: Runs) -> None:
    doc = json.loads(ok(runs, "preview-department").stdout)
    assert doc["meta"]["departmentId"] == "research"
    assert "projectId" not in doc["meta"]
    labels = {label["name"]: label["value"] for label in doc["combinedSpec"]["labels"]}
    assert labels["cost-center"] == "cc-2100"  # research's value over the system's
    assert "project" not in labels  # no project defaults in a department view


def test_preview_of_a_system_template_without_a_view(runs: Runs) -> None:
    doc = json.loads(ok(runs, "preview-system").stdout)
    labels = {label["name"]: label["value"] for label in doc["combinedSpec"]["labels"]}
    assert labels["cost-center"] == "cc-1000"  # system defaults only
    assert "departmentId" not in doc["meta"] and "projectId" not in doc["meta"]
    assert doc["combinedMasterSpec"] is not None
    assert "numWorkers" not in doc["combinedMasterSpec"]


# -- check ---------------------------------------------------------------------------------------------------


def test_check_table_exits_1_for_the_deliberately_broken_template(runs: Runs) -> None:
    result = runs["check"].result()
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    rows = [
        line.split() for line in result.stdout.splitlines() if line.startswith(("vision", "speech", "nlp"))
    ]
    (bad,) = [row for row in rows if row[1] == "asr-sweep-draft"]
    assert bad[:7] == ["speech", "asr-sweep-draft", "distributed", "project", "speech", "not", "runnable"]
    # and the system's mpi-horovod moves the data source research imposes (policy: locked)
    assert sorted((row[0], row[1]) for row in rows if "not" in row) == [
        ("nlp", "mpi-horovod"),
        ("speech", "asr-sweep-draft"),
        ("vision", "mpi-horovod"),
    ]
    assert "mandatory image is not provided" in result.stdout
    assert "3 not runnable" in result.stdout


def test_check_one_project_exits_0(runs: Runs) -> None:
    result = ok(runs, "check-recsys")
    assert "xgboost-ctr" in result.stdout and "asr-sweep-draft" not in result.stdout


def test_check_json(runs: Runs) -> None:
    result = runs["check-json"].result()
    assert result.returncode == 1
    doc = json.loads(result.stdout)
    assert doc["total"] == len(doc["results"]) and doc["total"] >= 14
    assert doc["runnable"] == doc["total"] - 3
    bad = {(r["project"], r["template"]): r for r in doc["results"] if not r["isRunnable"]}
    assert set(bad) == {("speech", "asr-sweep-draft"), ("nlp", "mpi-horovod"), ("vision", "mpi-horovod")}
    assert bad[("speech", "asr-sweep-draft")]["issues"][0]["message"] == "mandatory image is not provided"
    locked = bad[("vision", "mpi-horovod")]["issues"]
    assert [(i["field"], i["rule"], i["source"]) for i in locked] == [
        ("storage.nfs[name=datasets]", "locked", "departments/research/policy.yaml:18")
    ]
    pairs = {(r["project"], r["template"]) for r in doc["results"]}
    assert ("nlp", "pytorch-elastic") in pairs and ("vision", "vit-finetune") in pairs
    assert ("recsys", "tf-parameter-server") not in pairs  # research's template is not visible from applied


def test_check_reports_a_broken_template_and_checks_the_rest(runs: Runs) -> None:
    result = runs["check-broken-template"].result()
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    rows = json.loads(result.stdout)["results"]
    broken = [r for r in rows if r["template"] == "vit-finetune"]
    assert broken and all(r["status"] == "error" and not r["isRunnable"] for r in broken)
    assert "numWorkerz" in broken[0]["issues"][0]["message"]
    assert broken[0]["issues"][0]["file"] == "projects/vision/templates/vit-finetune.yaml"
    # vit-finetune, asr-sweep-draft, and mpi-horovod in nlp and vision (the imposed data source moved)
    assert sum(r["isRunnable"] for r in rows) == len(rows) - 4


def test_check_unknown_project(runs: Runs) -> None:
    assert_clean_failure(runs["check-unknown-project"].result(), "'nowhere'")


# -- explain -------------------------------------------------------------------------------------------------


def test_explain_everything(runs: Runs) -> None:
    out = ok(runs, "explain-all").stdout
    assert "worker image" in out and "environment asset pytorch" in out
    assert "excluded by department research defaults" in out
    assert "labels[name=tier]" in out


def test_explain_one_item_shows_who_set_and_who_excluded_it(runs: Runs) -> None:
    lines = [line for line in ok(runs, "explain-item").stdout.splitlines() if line.startswith("worker")]
    assert any("excluded by department research defaults" in line for line in lines)
    assert any("added by project vision defaults" in line for line in lines)
    assert all(HTTP_PROXY in line for line in lines)

    entries = json.loads(ok(runs, "explain-item-json").stdout)["entries"]
    worker = {(e["field"], e["action"]): e for e in entries if e["replica"] == "worker"}
    assert worker[(HTTP_PROXY, "excluded")]["file"] == "departments/research/defaults.yaml"
    assert worker[(HTTP_PROXY, "added")]["file"] == "projects/vision/defaults.yaml"
    value = worker[(f"{HTTP_PROXY}.value", "set")]
    assert value["value"] == "http://egress-vision.acme.internal:3128"
    assert value["layer"] == "project vision defaults"


def test_explain_a_port_keyed_by_container(runs: Runs) -> None:
    out = ok(runs, "explain-port").stdout
    assert "ports[container=6006].serviceType" in out and "project speech defaults" in out
    assert "ports[container=6006].toolType" in out and "system defaults" in out


def test_explain_bad_field(runs: Runs) -> None:
    result = runs["explain-bad-field"].result()
    assert result.returncode == 2
    assert "FIELD" in result.stderr and "Traceback" not in result.stderr
    assert result.stdout == ""


def test_explain_a_field_nobody_set(runs: Runs) -> None:
    result = runs["explain-unset-field"].result()
    assert result.returncode == 1
    assert "nodeType" in result.stderr and "Traceback" not in result.stderr


# -- validate ------------------------------------------------------------------------------------------------


def test_validate_the_example_org(runs: Runs) -> None:
    assert "all files are valid" in ok(runs, "validate").stdout


def test_validate_lists_every_problem(runs: Runs) -> None:
    result = runs["validate-broken"].result()
    assert result.returncode == 1
    out = result.stdout
    assert "system/defaults.yaml" in out and "did you mean 'imagePullPolicy'" in out
    assert "projects/nlp/defaults.yaml" in out and "numWorkers" in out
    assert "projects/vision/templates/vit-finetune.yaml" in out and "pytorh" in out
    assert "projects/vision/defaults.yaml" in out and "invalid YAML" in out
    assert "4 problem(s) in 4 file(s)" in out
    assert "Traceback" not in result.stderr


# -- bad input: one clear message, non-zero exit, no traceback -----------------------------------------------


@pytest.mark.parametrize(
    ("name", "needle", "file"),
    [
        ("bad-broken-yaml", "invalid YAML", VISION_DEFAULTS),
        ("bad-typo-field", "did you mean 'nodePools'", VISION_DEFAULTS),
        ("bad-duplicate-key", "duplicate key 'numWorkers'", VIT),
        ("bad-alias-bomb", "each alias as often as it is used", VISION_DEFAULTS),
        ("bad-unknown-asset", "'a100-x9'", VIT),
        ("bad-jinja-class", "sandbox", VIT),
        ("bad-jinja-runtime-error", "workingDir", VIT),
        ("bad-unknown-project", "'nowhere'", None),
        ("bad-unknown-template", "'no-such-template'", None),
        ("bad-invisible-template", "'vit-finetune'", None),
        ("bad-missing-root", "no-such-folder", None),
    ],
)
def test_bad_input_gives_one_clear_message(runs: Runs, name: str, needle: str, file: str | None) -> None:
    assert_clean_failure(runs[name].result(), needle, file)


def assert_clean_failure(
    result: subprocess.CompletedProcess[str], needle: str, file: str | None = None
) -> None:
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert result.stdout == ""
    assert needle in result.stderr, result.stderr
    assert result.stderr.count("error:") == 1, result.stderr
    if file is not None:
        assert file in result.stderr, result.stderr
