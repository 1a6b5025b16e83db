"""``check`` is the CI gate: it fails on whatever ``validate`` finds and names it, an org with no pairs
says so and fails, and ``preview`` names the org's problems when the template it was asked for is not
visible (issue 17, item 3).  In process, through click's runner (the CLI's own tests run it as a process)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from template_engine.cli import main

EXAMPLE = Path(__file__).resolve().parents[1] / "templates"


@pytest.fixture
def org(tmp_path: Path) -> Path:
    root = tmp_path / "org"
    shutil.copytree(EXAMPLE, root)
    return root


def _run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args))
    assert "Traceback" not in result.output
    return result.exit_code, result.output


def test_the_example_org_passes_both_gates(org: Path) -> None:
    assert _run("validate", "--root", str(org))[0] == 0
    code, out = _run("check", "--root", str(org), "-o", "json")
    assert json.loads(out)["problems"] == []
    # The example org keeps one template that is not runnable on purpose: exit 1 for that, not for problems.
    assert code == 1 and json.loads(out)["runnable"] < json.loads(out)["total"]


def test_an_empty_org_file_fails_the_check_naming_what_validate_finds(org: Path) -> None:
    (org / "org.yaml").write_text("", encoding="utf-8")
    code, validated = _run("validate", "--root", str(org), "-o", "json")
    assert code == 1
    wanted = {p["message"] for p in json.loads(validated)["problems"]}
    assert any("research" in message for message in wanted), wanted
    code, out = _run("check", "--root", str(org), "-o", "json")
    assert code == 1
    answer = json.loads(out)
    assert {p["message"] for p in answer["problems"]} == wanted
    code, text = _run("check", "--root", str(org))
    assert code == 1
    assert f"{len(wanted)} problem(s) in the org" in text
    assert all(message in text for message in wanted)


def test_a_broken_defaults_file_fails_the_pairs_that_need_it_at_its_line(org: Path) -> None:
    defaults = org / "departments" / "research" / "defaults.yaml"
    defaults.write_text(
        defaults.read_text(encoding="utf-8") + "  imagePullSecrets:\n  - {name: Bad_Secret}\n",
        encoding="utf-8",
    )
    code, out = _run("check", "--root", str(org), "-p", "vision", "-o", "json")
    assert code == 1
    answer = json.loads(out)
    assert answer["problems"] == []  # each pair's error names it: not said twice
    for row in answer["results"]:
        assert row["status"] == "error"
        (problem,) = row["issues"]
        assert problem["field"] == "spec.imagePullSecrets[0].name"
        assert problem["file"] == "departments/research/defaults.yaml" and problem["line"] > 1


def test_a_broken_file_no_pair_needs_fails_the_check_all_the_same(org: Path) -> None:
    (org / "assets" / "environments" / "unused.yaml").write_text(
        "meta: {name: unused}\nspec:\n  image: python:3.11\n  environmentVariables:\n"
        "  - {name: DB, secret: {name: Bad_Secret, key: password}}\n",
        encoding="utf-8",
    )
    code, out = _run("check", "--root", str(org), "-o", "json")
    assert code == 1
    (problem,) = json.loads(out)["problems"]
    assert (problem["file"], problem["line"]) == ("assets/environments/unused.yaml", 5)
    assert problem["field"] == "spec.environmentVariables[0].secret.name"
    code, text = _run("check", "--root", str(org))
    assert "1 problem(s) in the org" in text and "assets/environments/unused.yaml:5" in text


def test_an_org_without_pairs_fails_the_check(tmp_path: Path) -> None:
    root = tmp_path / "empty"
    root.mkdir()
    (root / "org.yaml").write_text("departments: []\n", encoding="utf-8")
    code, out = _run("check", "--root", str(root))
    assert code == 1
    assert "no (project, template) pair" in out and "0 in all" in out


def test_preview_names_the_broken_file_behind_a_template_it_cannot_see(org: Path) -> None:
    (org / "org.yaml").write_text("", encoding="utf-8")
    result = CliRunner().invoke(main, ["preview", "--root", str(org), "-p", "vision", "-t", "vit-finetune"])
    assert result.exit_code == 2
    assert "Traceback" not in result.output
    assert "research" in result.output  # the unknown department, not only "not visible"


def test_a_folder_check_cannot_list_fails_the_check_naming_it(
    org: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As the OS refuses a listing (tests may run as root, where chmod blocks nothing)."""
    blocked = os.fspath(org / "projects")
    scandir = os.scandir

    def guarded(path: Any = ".") -> Any:
        if os.fspath(path) == blocked:
            raise PermissionError(13, "Permission denied", blocked)
        return scandir(path)

    monkeypatch.setattr(os, "scandir", guarded)
    code, out = _run("check", "--root", str(org), "-o", "json")
    assert code == 1
    messages = [p["message"] for p in json.loads(out)["problems"]]
    assert "cannot list the folder projects/: Permission denied" in messages


def test_a_value_written_as_an_expression_is_held_to_runais_rules_as_rendered(org: Path) -> None:
    """A literal ``Bad_Secret`` is a problem of its file; ``{{ project.name }}_Secret`` renders to one for
    each project, which makes every pair of the template not runnable, naming the rendered value."""
    template = org / "projects" / "vision" / "templates" / "vit-finetune.yaml"
    text = template.read_text(encoding="utf-8").replace(
        "spec:\n", 'spec:\n  imagePullSecrets:\n  - {name: "{{ project.name }}_Secret"}\n', 1
    )
    template.write_text(text, encoding="utf-8")
    assert _run("validate", "--root", str(org))[0] == 0  # as written, the value is an expression
    code, out = _run("check", "--root", str(org), "-p", "vision", "-t", "vit-finetune", "-o", "json")
    assert code == 1
    (row,) = json.loads(out)["results"]
    assert row["status"] == "not runnable"
    (issue,) = [i for i in row["issues"] if i["field"] == "imagePullSecrets[name=vision_Secret].name"]
    assert "'vision_Secret'" in issue["message"] and "Kubernetes name" in issue["message"]


def test_the_summary_counts_pairs_that_fail_to_compose_as_errors_not_as_not_runnable(org: Path) -> None:
    """25 pairs: 20 runnable, 3 composed with issues (the example's), 2 that fail to compose."""
    (org / "projects/vision/templates/broken.yaml").write_text(
        'meta: {name: broken}\nspec:\n  image: "{{ 1 + }}"\n', encoding="utf-8"
    )
    (org / "projects/nlp/templates/bad2.yaml").write_text(
        "meta: {name: bad2}\nspec:\n  image: \"{{ 'a' + 1 }}\"\n", encoding="utf-8"
    )
    code, text = _run("check", "--root", str(org))
    assert code == 1
    assert "\n20 runnable, 3 not runnable, 2 errors, 25 in all\n" in text
    code, out = _run("check", "--root", str(org), "-o", "json")
    answer = json.loads(out)
    counts = {key: answer[key] for key in ("runnable", "notRunnable", "errors", "total")}
    assert counts == {"runnable": 20, "notRunnable": 3, "errors": 2, "total": 25}
    assert counts["errors"] == sum(row["status"] == "error" for row in answer["results"])


def test_the_summary_says_no_errors_when_every_pair_composes(org: Path) -> None:
    _, text = _run("check", "--root", str(org))
    assert "\n20 runnable, 3 not runnable, 23 in all\n" in text and "error" not in text
    assert json.loads(_run("check", "--root", str(org), "-o", "json")[1])["errors"] == 0


def test_a_department_template_guards_project_by_default_at_its_own_view(org: Path) -> None:
    """Issue 31: ``{{ project.name | default('shared') }}`` in a department template composes at the
    department's own view (its own row of ``check``); used unguarded, the error says how to guard it."""
    template = org / "departments" / "research" / "templates" / "tf-parameter-server.yaml"
    text = template.read_text(encoding="utf-8")
    guarded = "  workingDir: '/home/{{ project.name | default(\"shared\") }}'\n"
    template.write_text(text.replace("spec:\n", "spec:\n" + guarded, 1), encoding="utf-8")
    code, out = _run("preview", "--root", str(org), "-d", "research", "-t", "tf-parameter-server")
    assert code == 0, out
    assert json.loads(out)["combinedSpec"]["workingDir"] == "/home/shared"
    code, out = _run("preview", "--root", str(org), "-p", "vision", "-t", "tf-parameter-server")
    assert json.loads(out)["combinedSpec"]["workingDir"] == "/home/vision"
    code, out = _run("check", "--root", str(org), "-t", "tf-parameter-server", "-o", "json")
    (own,) = [r for r in json.loads(out)["results"] if not r["project"]]
    assert own["status"] == "runnable", own
    template.write_text(text.replace("spec:\n", "spec:\n  workingDir: '/home/{{ project.name }}'\n", 1))
    code, out = _run("check", "--root", str(org), "-t", "tf-parameter-server", "-o", "json")
    (own,) = [r for r in json.loads(out)["results"] if not r["project"]]
    assert own["status"] == "error"
    (issue,) = own["issues"]
    assert "project is not defined at a department's own view" in issue["message"]
    assert "`{% if project is defined %}`" in issue["message"]


def test_a_draft_template_is_reported_and_does_not_fail_the_check(org: Path) -> None:
    """Issue 31: org.yaml's ``drafts`` lists template files that are deliberately unfinished; ``check`` (the
    pre-commit hook) reports their pairs and says it did not fail on them; anything else still fails."""
    draft = "projects/speech/templates/asr-sweep-draft.yaml"
    code, out = _run("check", "--root", str(org), "-p", "speech")
    assert code == 1 and "asr-sweep-draft" in out  # not runnable: the example org's deliberate failure
    with (org / "org.yaml").open("a", encoding="utf-8") as f:
        f.write(f"drafts:\n- {draft}\n")
    code, out = _run("check", "--root", str(org), "-p", "speech")
    assert code == 0, out
    assert "asr-sweep-draft  project speech      not runnable" in out
    assert "1 not runnable pair(s) of draft templates (org.yaml drafts): not failing" in out
    code, out = _run("check", "--root", str(org), "-p", "speech", "-o", "json")
    answer = json.loads(out)
    assert code == 0 and answer["notRunnable"] == 1
    (softened,) = answer["drafts"]
    assert softened == {"template": "asr-sweep-draft", "scope": "project speech", "project": "speech"}
    # a draft that does not even parse is softened too; a pair of another template still fails
    (org / draft).write_text("meta: {name: asr-sweep-draft\n", encoding="utf-8")
    assert _run("check", "--root", str(org), "-p", "speech")[0] == 0
    assert _run("check", "--root", str(org), "-p", "nlp")[0] == 1  # nlp's mpi-horovod is not runnable


def test_a_draft_entry_that_names_no_template_is_a_warning(org: Path) -> None:
    with (org / "org.yaml").open("a", encoding="utf-8") as f:
        f.write("drafts:\n- projects/speech/templates/gone.yaml\n")
    code, out = _run("validate", "--root", str(org), "-o", "json")
    assert code == 0
    (warning,) = json.loads(out)["warnings"]
    assert warning["message"].startswith("drafts lists 'projects/speech/templates/gone.yaml', which is not")
    assert warning["field"] == "drafts[0]"
    assert warning["file"] == "org.yaml" and warning["line"] > 1
