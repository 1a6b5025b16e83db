"""Issue 31, "a newcomer's first hour": what the command line says about a pair is what the other outputs say.

``check``'s table names the replica of its first issue; runnable and cluster issues carry the place that set
their value and the value, in the text and in JSON.  In process, through click's runner.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from template_engine.cli import main

EXAMPLE = Path(__file__).resolve().parents[1] / "templates"
ASR = "projects/speech/templates/asr-sweep-draft.yaml"


@pytest.fixture
def org(tmp_path: Path) -> Path:
    root = tmp_path / "org"
    shutil.copytree(EXAMPLE, root)
    return root


def _run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args))
    assert "Traceback" not in result.output
    return result.exit_code, result.stdout


def _edit(root: Path, rel: str, old: str, new: str) -> None:
    path = root / rel
    text = path.read_text(encoding="utf-8")
    assert old in text, f"{old!r} is not in {rel}"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def _first_issue(out: str, project: str, template: str) -> str:
    head, *rows = out.splitlines()
    start = head.index("FIRST ISSUE")
    row = next(r for r in rows if r.split()[:2] == [project, template])
    return row[start:]


def _only_the_master_lacks_an_image(root: Path) -> None:
    """asr-sweep-draft with an image for its workers and a master of its own that has none (its other
    issues fixed)."""
    _edit(root, ASR, "  minReplicas: 4\n", "  minReplicas: 1\n")
    _edit(root, ASR, "    cpuCoreRequest: 16\n", "    cpuCoreRequest: 4\n")
    _edit(root, ASR, "    gpuRequestType: memory\n", "")
    text = (root / ASR).read_text(encoding="utf-8")
    text += "  image: nvcr.io/nvidia/pytorch:24.01-py3\nmasterSpecSameAsWorker: false\n"
    text += "master:\n  spec:\n    args: launcher\n"
    (root / ASR).write_text(text, encoding="utf-8")


# -- 1. the table's first issue names its replica ------------------------------------------------------------


def test_the_first_issue_names_the_replica_that_lacks_the_image(org: Path) -> None:
    _only_the_master_lacks_an_image(org)
    code, out = _run("check", "--root", str(org), "-p", "speech", "-t", "asr-sweep-draft")
    assert code == 1
    first = _first_issue(out, "speech", "asr-sweep-draft")
    assert first.startswith("master image: mandatory image is not provided"), first
    # as JSON says it
    _, answer = _run("check", "--root", str(org), "-p", "speech", "-t", "asr-sweep-draft", "-o", "json")
    issue = json.loads(answer)["results"][0]["issues"][0]
    assert (issue["replica"], issue["field"], issue["message"]) == (
        "master",
        "image",
        "mandatory image is not provided",
    )


def test_the_example_orgs_first_issue_names_the_worker() -> None:
    code, out = _run("check", "--root", str(EXAMPLE), "-p", "speech")
    assert code == 1
    first = _first_issue(out, "speech", "asr-sweep-draft")
    assert first.startswith("worker image: mandatory image is not provided"), first


# -- 3. runnable and cluster issues carry their place and value ----------------------------------------------


def _issues(root: Path, project: str, template: str) -> list[dict[str, Any]]:
    _, answer = _run("check", "--root", str(root), "-p", project, "-t", template, "-o", "json")
    issues: list[dict[str, Any]] = json.loads(answer)["results"][0]["issues"]
    return issues


def test_a_runnable_issue_carries_the_file_line_and_value_in_json() -> None:
    by_field = {i["field"]: i for i in _issues(EXAMPLE, "speech", "asr-sweep-draft") if i["rule"] is None}
    above = by_field["compute.cpuCoreRequest"]
    assert (above["file"], above["line"], above["value"]) == (ASR, 21, 16)
    assert above["layer"] == "template asr-sweep-draft"
    assert (by_field["minReplicas"]["line"], by_field["minReplicas"]["value"]) == (18, 4)
    # a field no layer sets has no value, and is placed where the template's spec is
    missing = by_field["image"]
    assert "value" not in missing and (missing["file"], missing["line"]) == (ASR, 15)


def test_a_policy_issue_keeps_its_rule_and_gains_the_place_of_the_value() -> None:
    (options,) = [i for i in _issues(EXAMPLE, "speech", "asr-sweep-draft") if i["rule"] == "options"]
    assert options["source"] == "projects/speech/policy.yaml:5"  # the rule, as before
    assert (options["file"], options["line"], options["value"]) == (ASR, 23, "memory")


def test_a_cluster_issue_carries_the_file_line_and_value(org: Path) -> None:
    # a label value the cluster refuses (a space: not a Kubernetes label value), set by the vision defaults;
    # (a value over 63 characters is refused by the files' own text bounds before the cluster sees it)
    long = "has a space"
    label = f"  labels:\n  - name: team\n    value: {long}\n"
    _edit(org, "projects/vision/defaults.yaml", "  labels:\n", label)
    issues = [i for i in _issues(org, "vision", "vit-finetune") if "object" in i]
    assert issues, "the cluster refuses the label"
    found = issues[0]
    assert found["field"] == "labels[name=team].value" and found["value"] == long
    assert found["file"] == "projects/vision/defaults.yaml" and isinstance(found["line"], int)
    code, out = _run("check", "--root", str(org), "-p", "vision", "-t", "vit-finetune")
    assert code == 1
    first = _first_issue(out, "vision", "vit-finetune")
    assert f'(value "{long}")' in first and f"[projects/vision/defaults.yaml:{found['line']}]" in first


def test_the_table_shows_the_value_and_place_of_each_issue() -> None:
    _, out = _run("check", "--root", str(EXAMPLE), "-p", "speech")
    assert (
        "  issue: worker: compute.cpuCoreRequest 16 is above compute.cpuCoreLimit 8 (value 16) "
        f"[{ASR}:21]" in out.splitlines()
    )
    assert f"worker image: mandatory image is not provided [{ASR}:15]" in out


# -- 5. report says how many pairs are not runnable ----------------------------------------------------------


def test_report_counts_the_pairs_that_are_not_runnable(tmp_path: Path) -> None:
    out = tmp_path / "site"
    code, said = _run("report", "--root", str(EXAMPLE), "--out", str(out))
    assert code == 0
    assert said == f"wrote 28 page(s) to {out}: 23 pair(s), 20 runnable, 3 not runnable\n"
    index = (out / "index.html").read_text(encoding="utf-8")
    assert "23 pair(s): 20 runnable, 3 not runnable;" in index


def test_report_counts_a_pair_that_fails_to_compose_apart(org: Path, tmp_path: Path) -> None:
    _edit(org, "projects/vision/templates/vit-finetune.yaml", "compute: a100-x8", "compute: a100-x9")
    out = tmp_path / "site"
    code, said = _run("report", "--root", str(org), "--out", str(out))
    assert code == 0
    assert said.endswith(": 23 pair(s), 19 runnable, 3 not runnable, 1 fails to compose\n"), said
    index = (out / "index.html").read_text(encoding="utf-8")
    assert "23 pair(s): 19 runnable, 3 not runnable, 1 fails to compose;" in index


# -- 2. explain says what a value overrode -------------------------------------------------------------------

RDMA = "compute.extendedResources[resource=rdma/rdma_shared_device_a].quantity"


def test_explain_names_the_values_a_value_overrode_with_their_sources() -> None:
    code, out = _run("explain", "--root", str(EXAMPLE), "-p", "nlp", "-t", "mpi-horovod", RDMA)
    assert code == 0
    worker = next(line for line in out.splitlines() if line.startswith("worker"))
    assert worker == (
        f'worker {RDMA} = "8"  (compute asset a100-x8, assets/computes/a100-x8.yaml:15)'
        '  [overrode "1" (system defaults, system/defaults.yaml:62);'
        ' "2" (project nlp defaults, projects/nlp/defaults.yaml:7)]'
    )


def test_explain_json_lists_the_overridden_values() -> None:
    args = ("explain", "--root", str(EXAMPLE), "-p", "nlp", "-t", "mpi-horovod", RDMA, "-o", "json")
    code, out = _run(*args)
    assert code == 0
    (worker,) = [e for e in json.loads(out)["entries"] if e["replica"] == "worker"]
    assert worker["value"] == "8"
    assert worker["overrode"] == [
        {"value": "1", "file": "system/defaults.yaml", "line": 62, "layer": "system defaults"},
        {"value": "2", "file": "projects/nlp/defaults.yaml", "line": 7, "layer": "project nlp defaults"},
    ]


def test_explain_names_what_an_exclusion_removed() -> None:
    code, out = _run(
        "explain", "--root", str(EXAMPLE), "-p", "vision", "-t", "vit-finetune", "labels[name=tier]"
    )
    assert code == 0
    worker = next(line for line in out.splitlines() if line.startswith("worker"))
    assert worker.endswith(
        '[removed {"name": "tier", "value": "standard"} (system defaults, system/defaults.yaml:13);'
        ' {"name": "tier", "value": "research"} (department research defaults,'
        " departments/research/defaults.yaml:7)]"
    )


def test_a_value_nothing_overrode_says_nothing_more() -> None:
    code, out = _run("explain", "--root", str(EXAMPLE), "-p", "nlp", "-t", "mpi-horovod", "slotsPerWorker")
    assert code == 0 and "overrode" not in out and "[" not in out


def test_the_explain_view_hover_says_what_explain_says() -> None:
    """One function answers both: the UI's hover lines are explain's ``replaced`` values."""
    from template_engine import compose, load_org
    from template_engine.explain import explain
    from template_engine.paths import parse_path
    from template_engine.views.model import explain_page

    org = load_org(EXAMPLE)
    view = org.view_of("nlp")
    composition = compose(org, org.find_template("mpi-horovod", view), view)
    page = explain_page(composition)
    (worker,) = [r for r in page.replicas if r.replica == "worker"]
    node = next(n for top in worker.nodes for n in top.walk() if n.path == parse_path(RDMA))
    overrode = [line for line in node.details if line.startswith("overrode")]
    (entry,) = [e for e in explain(composition, parse_path(RDMA)) if e.replica == "worker"]
    assert overrode == [f"overrode {r.render()}" for r in entry.replaced]
    assert overrode == [
        'overrode "1" (system defaults, system/defaults.yaml:62)',
        'overrode "2" (project nlp defaults, projects/nlp/defaults.yaml:7)',
    ]


# -- 4. manifests --all groups its warnings by source line ---------------------------------------------------


def _manifests_all(root: Path, out: Path, *more: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["manifests", "--root", str(root), "--all", "--out", str(out), *more])
    assert "Traceback" not in result.output
    return result.exit_code, result.stdout, result.stderr


def test_manifests_all_says_each_warning_once_per_source_line_with_its_pairs(tmp_path: Path) -> None:
    code, _, err = _manifests_all(EXAMPLE, tmp_path / "out")
    assert code == 1
    warnings = [line for line in err.splitlines() if line.startswith("warning: ")]
    # the example org's warnings (23 pairs) come from 21 source lines and wordings
    assert len(warnings) == 21
    assert len(warnings) == len(set(warnings))
    tool = [w for w in warnings if "[system/defaults.yaml:45]" in w]
    assert tool == [
        "warning: worker ports[container=6006].toolType: not in the objects: a Run:ai UI tool link "
        "[system/defaults.yaml:45] in 22 pairs: nlp / jupyter-lab, nlp / mpi-horovod, nlp / pytorch-elastic, "
        "nlp / tf-parameter-server, recsys / mpi-horovod, recsys / pytorch-elastic, recsys / xgboost-ctr, "
        "speech / asr-sweep-draft, speech / mpi-horovod, speech / pytorch-elastic, speech / xgboost-ctr, "
        "vision / hpo-sweep, vision / jupyter-lab, vision / mpi-horovod, vision / pytorch-elastic, "
        "vision / tf-parameter-server, vision / vit-finetune, "
        "(system) / mpi-horovod, (system) / pytorch-elastic, (applied) / xgboost-ctr, "
        "(research) / jupyter-lab, (research) / tf-parameter-server"
    ]
    # one line for a source line both replicas read
    (both,) = [w for w in warnings if "[assets/environments/tensorflow.yaml:17]" in w]
    assert both.startswith("warning: worker and master ports[container=2222].serviceType: ")
    assert both.endswith(
        " in 3 pairs: nlp / tf-parameter-server, vision / tf-parameter-server,"
        " (research) / tf-parameter-server"
    )
    # each pair's issues are still its own lines
    assert (
        "error: speech / asr-sweep-draft: not runnable: worker image: mandatory image is not provided" in err
    )


def test_the_grouped_warnings_are_every_warning_of_the_pairs(tmp_path: Path) -> None:
    """Nothing is lost: the pairs listed add up, line by line, to the warnings each pair has alone."""
    from template_engine import compose, load_org
    from template_engine.cli.manifest_commands import _warnings

    org = load_org(EXAMPLE)
    each = 0
    for view, template in org.views():
        each += len(
            {(w.location, w.field_text(), w.message) for w in _warnings(compose(org, template, view))}
        )
    _, _, err = _manifests_all(EXAMPLE, tmp_path / "out")
    counts = [
        int(line.rsplit(" in ", 1)[1].split()[0]) for line in err.splitlines() if line.startswith("warning")
    ]
    assert sum(counts) == each


# -- 6. manifests --all marks the file of a pair that is not runnable ----------------------------------------


def test_the_file_of_a_pair_that_is_not_runnable_opens_with_why(tmp_path: Path) -> None:
    import yaml

    out = tmp_path / "out"
    _manifests_all(EXAMPLE, out)
    text = (out / "speech--asr-sweep-draft.yaml").read_text(encoding="utf-8")
    head = text.split("\n---\n")[0].splitlines()
    assert head[0].startswith("# NOT RUNNABLE: ")
    assert "#   worker image: mandatory image is not provided" in head
    assert "#   master: image is required by the system policy" in head
    assert yaml.safe_load_all(text) is not None and next(yaml.safe_load_all(text))["kind"] == "PyTorchJob"
    # a runnable pair's file has no such header
    assert not (out / "vision--vit-finetune.yaml").read_text(encoding="utf-8").startswith("#")
    marker = (out / ".template-engine-manifests").read_text(encoding="utf-8")
    assert "speech--asr-sweep-draft.yaml: worker image: mandatory image is not provided" in marker
    assert "vision--vit-finetune" not in marker


def test_json_files_are_unchanged_and_the_marker_file_names_the_pairs_not_runnable(tmp_path: Path) -> None:
    out = tmp_path / "out"
    _manifests_all(EXAMPLE, out, "-o", "json")
    objects = json.loads((out / "speech--asr-sweep-draft.json").read_text(encoding="utf-8"))
    assert objects[0]["kind"] == "PyTorchJob"
    marker = (out / ".template-engine-manifests").read_text(encoding="utf-8")
    assert "Not runnable (do not apply these files):" in marker
    assert "speech--asr-sweep-draft.json: worker image: mandatory image is not provided" in marker


# -- 7. docs/cli.md counts errors apart from the pairs that are not runnable ---------------------------------


def test_the_check_docs_count_errors_as_check_does(org: Path) -> None:
    """The page said the `not runnable` count includes the `error` rows; check counts them apart."""
    _edit(org, "projects/vision/templates/vit-finetune.yaml", "compute: a100-x8", "compute: a100-x9")
    code, out = _run("check", "--root", str(org), "-p", "vision")
    assert code == 1
    assert "4 runnable, 1 not runnable, 1 error, 6 in all" in out  # vit-finetune is the error
    page = (Path(__file__).resolve().parents[1] / "docs" / "cli.md").read_text(encoding="utf-8")
    section = page.split("\n## check\n", 1)[1].split("\n## explain\n", 1)[0]
    assert "count includes the\n`error` rows" not in section and "includes the `error` rows" not in section
    assert "counted apart, as `N error(s)`" in section
    assert "\n0 runnable, 0 not runnable, 1 error, 1 in all;" in section  # an example, run by the doc tests
