"""``template-engine policy`` and the policy side of ``explain``, through the installed entry point, on the
example org (``templates/``: a system policy, research's and speech's).

Every invocation is declared once in :data:`INVOCATIONS` and started together; each test reads its result.
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
from typing import Any

import pytest
import yaml

#: The venv's scripts folder first: CI runs ``.venv/bin/pytest`` without activating the venv.
SEARCH_PATH = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])

#: The keys of a rule object (Run:ai's rules, and ``instances``' own); a mapping with one is a rule object.
RULE_KEYS = {"required", "canEdit", "min", "max", "step", "options", "defaultFrom", "locked", "canAdd"}

BROKEN_SPEECH_POLICY = """\
rules:
  worker:
    compute:
      gpuRequestType:
        options:
        - value: portion
    backoffLimit:
      max: lots
"""

RESEARCH_RULES_GPU = """\
    compute:
      gpuDevicesRequest:
        max: 4
"""


@dataclass(frozen=True)
class Invocation:
    """``template-engine ARGS`` on the example org, or on a copy of it with ``files`` written (relative path,
    whole text) or ``appends`` added at the end of files."""

    args: tuple[str, ...]
    files: tuple[tuple[str, str], ...] = ()
    appends: tuple[tuple[str, str, str], ...] = ()  # (file, after this text, insert this text)


def policy(*more: str) -> tuple[str, ...]:
    return ("policy", "--root", "{root}", *more)


def explain(*more: str) -> tuple[str, ...]:
    return ("explain", "--root", "{root}", *more)


INVOCATIONS: dict[str, Invocation] = {
    "system-yaml": Invocation(policy()),
    "system-json": Invocation(policy("-o", "json")),
    "research-yaml": Invocation(policy("-d", "research")),
    "research-json": Invocation(policy("-d", "research", "-o", "json")),
    "vision-json": Invocation(policy("-p", "vision", "-o", "json")),
    "speech-json": Invocation(policy("--project", "speech", "--output", "json")),
    "speech-yaml": Invocation(policy("-p", "speech", "-o", "yaml")),
    "unknown-project": Invocation(policy("-p", "nope")),
    "unknown-department": Invocation(policy("-d", "nope")),
    "project-of-another-department": Invocation(policy("-p", "vision", "-d", "applied")),
    "missing-root": Invocation(("policy", "--root", "{missing}")),
    "broken-speech": Invocation(
        policy("-p", "speech"), files=(("projects/speech/policy.yaml", BROKEN_SPEECH_POLICY),)
    ),
    "broken-speech-seen-from-system": Invocation(
        policy(), files=(("projects/speech/policy.yaml", BROKEN_SPEECH_POLICY),)
    ),
    "conflict-research": Invocation(
        policy("-d", "research", "-o", "json"),
        appends=(("departments/research/policy.yaml", "rules:\n  worker:\n", RESEARCH_RULES_GPU),),
    ),
    "explain-auto-deletion": Invocation(
        explain("-p", "vision", "-t", "vit-finetune", "autoDeletionTimeAfterCompletionSeconds")
    ),
    "explain-auto-deletion-json": Invocation(
        explain("-p", "vision", "-t", "vit-finetune", "autoDeletionTimeAfterCompletionSeconds", "-o", "json")
    ),
    "explain-gpus": Invocation(explain("-p", "vision", "-t", "vit-finetune", "compute.gpuDevicesRequest")),
    "explain-gpu-request-type-speech": Invocation(
        explain("-p", "speech", "-t", "asr-sweep-draft", "compute.gpuRequestType", "-o", "json")
    ),
    "explain-auto-deletion-outside-research": Invocation(
        explain("-p", "recsys", "-t", "xgboost-ctr", "autoDeletionTimeAfterCompletionSeconds")
    ),
    "preview-speech": Invocation(
        ("preview", "--root", "{root}", "-p", "speech", "-t", "asr-sweep-draft", "-o", "json")
    ),
}

Runs = dict[str, "Future[subprocess.CompletedProcess[str]]"]


@pytest.fixture(scope="module")
def cli() -> str:
    found = shutil.which("template-engine", path=SEARCH_PATH)
    assert found, "the template-engine entry point is not installed (pip install -e .)"
    return found


def _prepare(name: str, invocation: Invocation, example: Path, scratch: Path) -> list[str]:
    root = example
    if invocation.files or invocation.appends:
        root = scratch / name / "templates"
        shutil.copytree(example, root)
        for rel, text in invocation.files:
            (root / rel).write_text(text, encoding="utf-8")
        for rel, anchor, insert in invocation.appends:
            text = (root / rel).read_text(encoding="utf-8")
            assert anchor in text, f"{name}: {anchor!r} is not in {rel}"
            (root / rel).write_text(text.replace(anchor, anchor + insert, 1), encoding="utf-8")
    missing = scratch / "no-such-folder"
    return [arg.format(root=root, missing=missing) for arg in invocation.args]


@pytest.fixture(scope="module")
def runs(cli: str, example_root: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runs]:
    scratch = tmp_path_factory.mktemp("cli-policy")
    commands = {name: _prepare(name, inv, example_root, scratch) for name, inv in INVOCATIONS.items()}
    with ThreadPoolExecutor(max_workers=2) as pool:
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


def refused(runs: Runs, name: str) -> str:
    """The standard error of a run that must exit 2 with a clean message (no traceback, nothing printed)."""
    result = runs[name].result()
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    assert "Traceback" not in result.stderr + result.stdout
    assert result.stdout == ""
    assert result.stderr.startswith("error: "), result.stderr
    return result.stderr


def loaded(runs: Runs, name: str) -> dict[str, Any]:
    text = ok(runs, name).stdout
    data = json.loads(text) if "json" in name else yaml.safe_load(text)
    assert isinstance(data, dict)
    return data


def rule_objects(node: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], dict[str, Any]]]:
    """Every rule object of an ``effective.rules`` tree (a mapping with a rule key or a ``sourceOfRule``)."""
    if not isinstance(node, dict):
        return
    if RULE_KEYS & set(node) or "sourceOfRule" in node:
        yield path, node
        return
    for name, inner in node.items():
        yield from rule_objects(inner, (*path, name))


def rules_of(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """``worker.compute.gpuDevicesRequest`` -> its rule object."""
    return {".".join(path): node for path, node in rule_objects(data["effective"]["rules"])}


def line_of(example_root: Path, rel: str, text: str) -> int:
    lines = (example_root / rel).read_text(encoding="utf-8").splitlines()
    return next(n for n, line in enumerate(lines, 1) if text in line)


TENANT = {"scope": "tenant"}
RESEARCH = {"scope": "department", "departmentId": "research"}
SPEECH = {"scope": "project", "projectId": "speech"}

SYSTEM_RULES = {
    "worker.image",
    "worker.numWorkers",
    "worker.compute.gpuDevicesRequest",
    "worker.compute.cpuMemoryRequest",
    "worker.security.allowPrivilegeEscalation",
    "worker.environmentVariables.instances",
    "worker.tolerations.attributes.effect",
    "master.image",
}
RESEARCH_RULES = {"worker.ports.attributes.serviceType", "worker.autoDeletionTimeAfterCompletionSeconds"}
SPEECH_RULES = {"worker.compute.gpuRequestType", "worker.nodePools"}


# -- the effective policy of each scope ----------------------------------------------------------------------


def test_the_system_policy(runs: Runs) -> None:
    data = loaded(runs, "system-yaml")
    assert data["meta"] == {"scope": "tenant"}
    rules = rules_of(data)
    assert set(rules) == SYSTEM_RULES
    assert all(node["sourceOfRule"] == TENANT for node in rules.values())
    assert rules["worker.numWorkers"] == {"min": 1, "max": 16, "sourceOfRule": TENANT}
    assert rules["worker.compute.cpuMemoryRequest"]["max"] == "1Ti"  # a quantity as written
    assert rules["worker.environmentVariables.instances"]["locked"] == ["PIP_INDEX_URL"]
    assert "imposedAssets" not in data["effective"]


def test_a_department_sees_the_system_and_its_own_rules(runs: Runs) -> None:
    data = loaded(runs, "research-json")
    assert data["meta"] == {"scope": "department", "departmentId": "research"}
    rules = rules_of(data)
    assert set(rules) == SYSTEM_RULES | RESEARCH_RULES
    for name, node in rules.items():
        assert node["sourceOfRule"] == (RESEARCH if name in RESEARCH_RULES else TENANT), name
    assert rules["worker.autoDeletionTimeAfterCompletionSeconds"]["defaultFrom"] == {
        "field": "terminationGracePeriodSeconds",
        "factor": 60,
    }
    assert rules["worker.ports.attributes.serviceType"]["options"] == [{"value": "ClusterIP"}]
    assert data["effective"]["imposedAssets"] == {"worker": ["datasets"]}


def test_a_project_without_a_policy_sees_its_branch(runs: Runs) -> None:
    vision, research = loaded(runs, "vision-json"), loaded(runs, "research-json")
    assert vision["meta"] == {"scope": "project", "departmentId": "research", "projectId": "vision"}
    assert vision["effective"] == research["effective"]


def test_a_project_with_a_policy_sees_the_system_and_its_own_not_another_department(runs: Runs) -> None:
    data = loaded(runs, "speech-json")
    assert data["meta"] == {"scope": "project", "departmentId": "applied", "projectId": "speech"}
    rules = rules_of(data)
    assert set(rules) == SYSTEM_RULES | SPEECH_RULES  # applied has no policy; research's do not apply
    for name, node in rules.items():
        assert node["sourceOfRule"] == (SPEECH if name in SPEECH_RULES else TENANT), name
    assert rules["worker.nodePools"] == {
        "canEdit": True,
        "options": [{"value": "a100-80gb"}, {"value": "l40s"}],
        "sourceOfRule": SPEECH,
    }
    assert "imposedAssets" not in data["effective"]


@pytest.mark.parametrize(
    "name", ["system-json", "research-json", "vision-json", "speech-json", "research-yaml"]
)
def test_every_rule_object_carries_its_source(runs: Runs, name: str) -> None:
    found = list(rule_objects(loaded(runs, name)["effective"]["rules"]))
    assert found
    for path, node in found:
        assert RULE_KEYS & set(node), path  # a sourceOfRule is never alone
        source = node.get("sourceOfRule")
        assert isinstance(source, dict), path
        assert source["scope"] in ("tenant", "department", "project"), path
        if source["scope"] == "department":
            assert set(source) == {"scope", "departmentId"}
        elif source["scope"] == "project":
            assert set(source) == {"scope", "projectId"}
        else:
            assert set(source) == {"scope"}


@pytest.mark.parametrize(
    ("json_run", "yaml_run"), [("system-json", "system-yaml"), ("speech-json", "speech-yaml")]
)
def test_json_and_yaml_say_the_same(runs: Runs, json_run: str, yaml_run: str) -> None:
    assert loaded(runs, json_run) == loaded(runs, yaml_run)
    text = ok(runs, json_run).stdout
    assert text == json.dumps(json.loads(text), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def test_yaml_is_the_default_output(runs: Runs) -> None:
    text = ok(runs, "system-yaml").stdout
    assert not text.lstrip().startswith("{")
    assert yaml.safe_load(text) == loaded(runs, "system-json")


# -- errors --------------------------------------------------------------------------------------------------


def test_an_unknown_project_is_refused_cleanly(runs: Runs) -> None:
    said = refused(runs, "unknown-project")
    assert "unknown project 'nope'" in said
    assert "vision" in said  # the projects it knows


def test_an_unknown_department_is_refused_cleanly(runs: Runs) -> None:
    assert "unknown department 'nope'" in refused(runs, "unknown-department")


def test_a_project_of_another_department_is_refused_cleanly(runs: Runs) -> None:
    assert "belongs to department 'research'" in refused(runs, "project-of-another-department")


def test_a_missing_templates_folder_is_refused_cleanly(runs: Runs) -> None:
    assert "does not exist" in refused(runs, "missing-root")


def test_a_broken_policy_file_is_refused_with_its_file_and_line(runs: Runs) -> None:
    said = refused(runs, "broken-speech")
    assert "projects/speech/policy.yaml:8" in said  # the line of max: lots
    assert "max must be a whole number, not 'lots'" in said
    assert "rules.worker.backoffLimit.max" in said


def test_a_broken_policy_file_outside_the_branch_does_not_matter(runs: Runs) -> None:
    data = loaded(runs, "broken-speech-seen-from-system")
    assert set(rules_of(data)) == SYSTEM_RULES


def test_a_rule_conflict_names_both_files(runs: Runs, example_root: Path) -> None:
    said = refused(runs, "conflict-research")
    line = line_of(example_root, "system/policy.yaml", "gpuDevicesRequest:")
    assert "'compute.gpuDevicesRequest'" in said
    assert f"system/policy.yaml:{line}" in said
    assert "departments/research/policy.yaml:" in said


# -- explain -------------------------------------------------------------------------------------------------


def test_explain_names_the_default_from_origin(runs: Runs, example_root: Path) -> None:
    line = line_of(
        example_root, "departments/research/policy.yaml", "autoDeletionTimeAfterCompletionSeconds:"
    )
    text = ok(runs, "explain-auto-deletion").stdout
    worker = next(row for row in text.splitlines() if row.startswith("worker "))
    assert "autoDeletionTimeAfterCompletionSeconds = 3600" in worker  # 60 x the system's 60 s grace period
    assert "defaultFrom rule of the department research policy" in worker
    assert "terminationGracePeriodSeconds x 60" in worker
    assert f"departments/research/policy.yaml:{line}" in worker
    assert "[governed by default 60 x terminationGracePeriodSeconds" in worker


def test_explain_json_names_the_default_from_origin(runs: Runs, example_root: Path) -> None:
    line = line_of(
        example_root, "departments/research/policy.yaml", "autoDeletionTimeAfterCompletionSeconds:"
    )
    entries = loaded(runs, "explain-auto-deletion-json")["entries"]
    worker = next(e for e in entries if e["replica"] == "worker")
    assert worker["value"] == 3600
    assert (worker["file"], worker["line"]) == ("departments/research/policy.yaml", line)
    assert worker["layer"].startswith("defaultFrom rule of the department research policy")
    assert [r for r in worker["rules"] if r.startswith("default ")]
    master = next(e for e in entries if e["replica"] == "master")  # same as the worker: derived from it
    assert (master["action"], master["value"], master["file"]) == ("derived", 3600, worker["file"])


def test_explain_names_the_governing_rules(runs: Runs, example_root: Path) -> None:
    line = line_of(example_root, "system/policy.yaml", "gpuDevicesRequest:")
    text = ok(runs, "explain-gpus").stdout
    worker = next(row for row in text.splitlines() if row.startswith("worker "))
    assert (
        f"[governed by at most 8 (system policy, system/policy.yaml:{line}); in steps of 1 (system policy, "
        in worker
    )


def test_explain_names_a_project_rule_that_is_broken(runs: Runs, example_root: Path) -> None:
    line = line_of(example_root, "projects/speech/policy.yaml", "gpuRequestType:")
    entries = loaded(runs, "explain-gpu-request-type-speech")["entries"]
    worker = next(e for e in entries if e["replica"] == "worker")
    assert worker["value"] == "memory"
    assert worker["rules"] == [f"one of portion (project speech policy, projects/speech/policy.yaml:{line})"]


def test_explain_outside_research_has_no_default_from_value(runs: Runs) -> None:
    result = runs["explain-auto-deletion-outside-research"].result()
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert "autoDeletionTimeAfterCompletionSeconds" in result.stderr


def test_preview_reports_the_compliance_issue_with_rule_and_source(runs: Runs, example_root: Path) -> None:
    result = runs["preview-speech"].result()
    assert "Traceback" not in result.stderr
    got = json.loads(result.stdout)["runnable"]
    line = line_of(example_root, "projects/speech/policy.yaml", "gpuRequestType:")
    assert got["isRunnable"] is False
    compliance = [i for i in got["issues"] if i["rule"]]
    assert {
        "replica": "worker",
        "field": "compute.gpuRequestType",
        "rule": "options",
        "source": f"projects/speech/policy.yaml:{line}",
    }.items() <= compliance[0].items()
    assert all(i["source"] for i in compliance)
