"""``template-engine manifests`` on the example org, through ``python -m template_engine`` and the installed
command: one pair as YAML or JSON, ``--annotate``, ``--all --out``, the exit statuses, the errors; and
``template_engine.manifests`` from Python."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

import template_engine
from template_engine import CompositionError, Submission, load_org
from template_engine.cluster.mapping import Derived
from template_engine.compose import compose
from template_engine.org import Org

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "templates"
EXE = shutil.which("template-engine", path=str(Path(sys.executable).parent)) or "template-engine"
#: The subprocess imports this checkout's package, whatever is installed.
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}


def run(*args: str, exe: bool = False, root: Path = EXAMPLE) -> subprocess.CompletedProcess[str]:
    head = [EXE] if exe else [sys.executable, "-m", "template_engine"]
    command = [*head, "manifests", "--root", str(root), *args]
    return subprocess.run(command, capture_output=True, text=True, check=False, env=ENV, cwd=REPO)


@pytest.fixture(scope="module")
def org() -> Org:
    return load_org(EXAMPLE)


def objects_of(org: Org, project: str | None, template: str, department: str | None = None) -> list[Any]:
    view = org.view_of(project, department)
    found = template_engine.manifests(org, org.find_template(template, view), view)
    return list(found.objects)


def copy_of_example(tmp_path: Path) -> Path:
    root = tmp_path / "templates"
    shutil.copytree(EXAMPLE, root)
    return root


# -- one pair ------------------------------------------------------------------------------------------------


def test_one_pair_is_printed_as_yaml_documents_in_the_mappings_key_order(org: Org) -> None:
    done = run("--project", "vision", "--template", "vit-finetune", exe=True)
    assert done.returncode == 0, done.stderr
    expected = objects_of(org, "vision", "vit-finetune")
    assert done.stdout.startswith("---\napiVersion: kubeflow.org/v1\nkind: PyTorchJob\n")
    documents = list(yaml.safe_load_all(done.stdout))
    assert documents == expected
    # Not sorted: in the order the mapping built them.
    assert [list(d) for d in documents] == [list(o) for o in expected]
    assert [d["kind"] for d in documents] == ["PyTorchJob", "PersistentVolumeClaim"]


def test_json_is_a_list_of_the_objects(org: Org) -> None:
    done = run("-p", "vision", "-t", "vit-finetune", "-o", "json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == objects_of(org, "vision", "vit-finetune")


def test_a_department_pair_and_a_system_pair_as_preview_sees_them(org: Org) -> None:
    done = run("--department", "research", "-t", "tf-parameter-server", "-o", "json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == objects_of(org, None, "tf-parameter-server", "research")
    system = run("-t", "pytorch-elastic", "-o", "json")
    assert system.returncode == 0, system.stderr
    assert json.loads(system.stdout) == objects_of(org, None, "pytorch-elastic")


def test_the_objects_warnings_go_to_stderr_one_line_each_at_their_layer() -> None:
    done = run("-p", "vision", "-t", "vit-finetune")
    lines = done.stderr.splitlines()
    assert "warning: worker relatedUrls: not in the objects: links shown by Run:ai's UI" in done.stderr
    assert any(
        line.startswith("warning: worker ports[container=6006].toolType: not in the objects")
        and line.endswith("[system/defaults.yaml:45]")
        for line in lines
    ), lines
    assert all(line.startswith("warning: ") for line in lines)


def test_a_pair_that_is_not_runnable_prints_its_objects_and_exits_1(org: Org) -> None:
    done = run("-p", "speech", "-t", "asr-sweep-draft")
    assert done.returncode == 1
    assert list(yaml.safe_load_all(done.stdout)) == objects_of(org, "speech", "asr-sweep-draft")
    errors = [line for line in done.stderr.splitlines() if line.startswith("error: ")]
    assert "error: not runnable: worker image: mandatory image is not provided" in errors
    assert "error: not runnable: worker: minReplicas 4 is above maxReplicas 2" in errors


def test_two_runs_are_byte_identical() -> None:
    first = run("-p", "nlp", "-t", "mpi-horovod", "--annotate")
    second = run("-p", "nlp", "-t", "mpi-horovod", "--annotate")
    assert first.stdout == second.stdout and first.stderr == second.stderr
    assert first.stdout


# -- --annotate ----------------------------------------------------------------------------------------------


def test_annotated_yaml_parses_back_to_exactly_the_objects(org: Org) -> None:
    plain = run("-p", "nlp", "-t", "mpi-horovod")
    annotated = run("-p", "nlp", "-t", "mpi-horovod", "--annotate")
    assert plain.returncode == annotated.returncode == 1  # the example's nlp MPI job is not compliant
    assert list(yaml.safe_load_all(annotated.stdout)) == list(yaml.safe_load_all(plain.stdout))
    assert list(yaml.safe_load_all(plain.stdout)) == objects_of(org, "nlp", "mpi-horovod")
    # The same lines, each perhaps with a comment at its end.
    pairs = list(zip(plain.stdout.splitlines(), annotated.stdout.splitlines(), strict=True))
    assert all(a == p or a.startswith(p + "  # ") for p, a in pairs)
    assert sum(a != p for p, a in pairs) > len(pairs) // 2


def line_of(file: str, text: str) -> int:
    lines = (EXAMPLE / file).read_text(encoding="utf-8").splitlines()
    return next(i for i, line in enumerate(lines, 1) if text in line)


def test_each_kind_of_origin_is_written_beside_its_value(org: Org) -> None:
    done = run("-p", "nlp", "-t", "mpi-horovod", "--annotate")
    lines = done.stdout.splitlines()
    queue = line_of("cluster.yaml", "  nlp: nlp")
    # A cluster setting cluster.yaml sets, and one it leaves to its default.
    assert f"    kai.scheduler/queue: nlp  # cluster setting queues (cluster.yaml:{queue})" in lines
    assert "  namespace: runai-nlp  # cluster setting namespacePattern (default)" in lines
    # A spec field: its layer and file:line, as explain locates it.
    view = org.view_of("nlp")
    composition = compose(org, org.find_template("mpi-horovod", view), view)
    image = composition.worker.locate(("image",))
    assert image is not None and image.line is not None
    want = f"image: horovod/horovod:0.28.1  # worker: {image.layer}, {image.place()}"
    assert any(line.strip() == want for line in lines), want
    # A value the mapping decides, and one a policy's defaultFrom rule derives.
    assert "  mpiImplementation: OpenMPI  # the MPI Operator's default, written out" in lines
    ttl = next(line for line in lines if "ttlSecondsAfterFinished:" in line)
    rule = composition.policy_origins[("worker", ("autoDeletionTimeAfterCompletionSeconds",))]
    assert rule.default_from is not None
    assert ttl.endswith(
        "  # worker: defaultFrom rule of the department research policy: "
        f"autoDeletionTimeAfterCompletionSeconds = {rule.default_from.field} x {rule.default_from.factor}, "
        f"{rule.location.place()}"
    )
    assert rule.location.place().startswith("departments/research/policy.yaml:")


def test_annotate_needs_yaml() -> None:
    done = run("-p", "vision", "-t", "vit-finetune", "--annotate", "-o", "json")
    assert done.returncode == 2
    assert "--annotate writes YAML comments: it cannot be used with -o json" in done.stderr


# -- --all --out ---------------------------------------------------------------------------------------------


def check_pairs() -> list[str]:
    done = subprocess.run(
        [sys.executable, "-m", "template_engine", "check", "--root", str(EXAMPLE), "-o", "json"],
        capture_output=True,
        text=True,
        check=False,
        env=ENV,
    )
    results = json.loads(done.stdout)["results"]
    return [
        f"{r['project'] or '(' + (r['department'] or 'system') + ')'}--{r['template']}.yaml" for r in results
    ]


def test_all_writes_one_file_per_pair_of_check(tmp_path: Path, org: Org) -> None:
    out = tmp_path / "out"
    done = run("--all", "--out", str(out))
    assert done.returncode == 1  # three pairs of the example are not runnable
    names = check_pairs()
    assert sorted(p.name for p in out.iterdir()) == sorted([*names, ".template-engine-manifests"])
    assert len(names) == 23  # a training, a workspace (seen by research, vision and nlp) and an inference
    assert {"vision--hpo-sweep.yaml", "nlp--jupyter-lab.yaml", "nlp--llm-serve.yaml"} <= set(names)
    assert done.stdout == f"wrote 23 file(s) to {out}: 23 pair(s), 20 runnable, 3 not runnable\n"
    for view, template in org.views():
        who = view.project or f"({view.department or 'system'})"
        text = (out / f"{who}--{template.name}.yaml").read_text(encoding="utf-8")
        manifests = compose(org, template, view).manifests
        assert manifests is not None
        assert list(yaml.safe_load_all(text)) == list(manifests.objects), who
    assert "error: speech / asr-sweep-draft: not runnable: worker image: mandatory image" in done.stderr
    # the warnings come grouped by the source line they are about, each with the pairs it touches
    assert "(system) / mpi-horovod" in next(w for w in done.stderr.splitlines() if "sshd" in w)
    # No staging folder is left beside it.
    assert [p.name for p in tmp_path.iterdir()] == ["out"]


def test_all_is_deterministic_and_replaces_an_earlier_output_whole(tmp_path: Path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    assert run("--all", "--out", str(first), "--annotate").returncode == 1
    assert run("--all", "--out", str(second), "--annotate").returncode == 1
    files = sorted(p.name for p in first.iterdir())
    assert files == sorted(p.name for p in second.iterdir())
    assert all((first / n).read_bytes() == (second / n).read_bytes() for n in files)
    (first / "stale.yaml").write_text("old", encoding="utf-8")
    assert run("--all", "--out", str(first), "-o", "json").returncode == 1
    assert not (first / "stale.yaml").exists()
    assert all(n.endswith(".json") for n in os.listdir(first) if not n.startswith("."))
    assert (
        json.loads((first / "vision--vit-finetune.json").read_text(encoding="utf-8"))[0]["kind"]
        == "PyTorchJob"
    )


def test_all_on_a_runnable_org_exits_0(tmp_path: Path) -> None:
    root = tmp_path / "starter"
    init = subprocess.run(
        [sys.executable, "-m", "template_engine", "init", str(root)],
        capture_output=True,
        env=ENV,
        check=False,
    )
    assert init.returncode == 0
    out = tmp_path / "out"
    done = run("--all", "--out", str(out), root=root)
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"wrote 1 file(s) to {out}: 1 pair(s), 1 runnable, 0 not runnable\n"
    (job,) = yaml.safe_load_all((out / "vision--train.yaml").read_text(encoding="utf-8"))
    assert job["metadata"]["namespace"] == "runai-vision"


def test_all_refuses_an_out_that_is_a_file_or_a_foreign_folder(tmp_path: Path) -> None:
    file = tmp_path / "file.yaml"
    file.write_text("mine", encoding="utf-8")
    done = run("--all", "--out", str(file))
    assert done.returncode == 2
    assert f"Error: Invalid value for '--out': Directory {str(file)!r} is a file." in done.stderr
    assert file.read_text(encoding="utf-8") == "mine"
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("mine", encoding="utf-8")
    done = run("--all", "--out", str(mine))
    assert done.returncode == 2
    assert "is not empty and has no .template-engine-manifests" in done.stderr
    assert "warning:" not in done.stderr  # refused before any pair is composed
    assert [p.name for p in mine.iterdir()] == ["notes.txt"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file.yaml", "mine"]


def test_all_names_a_template_that_cannot_be_composed(tmp_path: Path) -> None:
    root = copy_of_example(tmp_path)
    vit = root / "projects/vision/templates/vit-finetune.yaml"
    vit.write_text(vit.read_text(encoding="utf-8").replace("environment: pytorch", "environment: nosuch"))
    out = tmp_path / "out"
    done = run("--all", "--out", str(out), root=root)
    assert done.returncode == 1
    assert "error: vision / vit-finetune: cannot be composed: " in done.stderr
    assert "nosuch" in done.stderr
    assert not (out / "vision--vit-finetune.yaml").exists()
    assert (out / "vision--mpi-horovod.yaml").is_file()
    assert done.stdout == (
        f"wrote 22 file(s) to {out}: 23 pair(s), 19 runnable, 3 not runnable, 1 cannot be composed; "
        "1 problem(s) in the org (as `validate` reports them)\n"
    )  # as check counts them: the reference problem of the template is the org's too
    assert "error: unknown environment asset 'nosuch'" in done.stderr
    # The one pair asked for: an error, as preview's.
    one = run("-p", "vision", "-t", "vit-finetune", root=root)
    assert one.returncode == 2 and one.stdout == ""
    assert one.stderr.startswith("error: ")


# -- bad input -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--all",), "--all writes one file per pair: give the folder with --out DIR"),
        (
            ("--all", "--out", "x", "-p", "vision"),
            "--all writes every pair: it cannot be used with --project",
        ),
        (("--out", "x", "-p", "vision", "-t", "vit-finetune"), "--out writes every pair: use it with --all"),
        (("-p", "vision"), "give --template T (and --project P), or --all --out DIR"),
        (("-t", "vit-finetune", "--var", "user"), "is not NAME=VALUE"),
    ],
)
def test_usage_errors_exit_2(tmp_path: Path, args: tuple[str, ...], message: str) -> None:
    done = run(*args)
    assert done.returncode == 2
    assert message in done.stderr
    assert done.stdout == "" and not (REPO / "x").exists()


def test_an_unknown_project_or_template_says_what_there_is() -> None:
    project = run("-p", "visoin", "-t", "vit-finetune")
    assert project.returncode == 2
    assert project.stderr.startswith("error: unknown project 'visoin'\n    expected: one of: vision, ")
    template = run("-p", "vision", "-t", "vit-fintune")
    assert template.returncode == 2
    assert "error: no template 'vit-fintune' is visible from project 'vision'" in template.stderr
    assert (
        "expected: one of: hpo-sweep, jupyter-lab, mpi-horovod, pytorch-elastic, tf-parameter-server, "
        "vit-finetune" in template.stderr
    )


def test_a_bad_cluster_yaml_names_its_file_line_and_field(tmp_path: Path) -> None:
    root = copy_of_example(tmp_path)
    (root / "cluster.yaml").write_text("# cluster\nschedulerNam: kai\n", encoding="utf-8")
    done = run("-p", "vision", "-t", "vit-finetune", root=root)
    assert done.returncode == 2 and done.stdout == ""
    assert "cluster.yaml:2" in done.stderr and "schedulerNam" in done.stderr
    out = tmp_path / "out"
    assert run("--all", "--out", str(out), root=root).returncode == 2
    assert not out.exists()


# -- from Python ---------------------------------------------------------------------------------------------


def test_manifests_from_python_are_the_compositions_objects(org: Org) -> None:
    view = org.view_of("recsys")
    template = org.find_template("xgboost-ctr", view)
    found = template_engine.manifests(org, template, view, {"user": "alice"})
    assert found == compose(org, template, view, {"user": "alice"}).manifests
    assert found.objects[0]["kind"] == "XGBoostJob"
    assert found.source_of(0, ("metadata", "namespace")) is not None


def test_manifests_from_python_raise_as_compose_does(tmp_path: Path) -> None:
    root = copy_of_example(tmp_path)
    vit = root / "projects/vision/templates/vit-finetune.yaml"
    vit.write_text(vit.read_text(encoding="utf-8").replace("environment: pytorch", "environment: nosuch"))
    org = load_org(root)
    view = org.view_of("vision")
    with pytest.raises(CompositionError) as raised:
        template_engine.manifests(org, org.find_template("vit-finetune", view), view)
    assert any("nosuch" in p.message for p in raised.value.problems)


def test_the_annotation_of_a_spec_field_names_the_file_that_sets_it() -> None:
    done = run("-p", "vision", "-t", "vit-finetune", "--annotate")
    found = [x for x in done.stdout.splitlines() if re.match(r"\s+- name: WANDB_PROJECT\b", x)]
    assert len(found) == 2  # the master's container and the workers'
    line = found[0]
    file = "projects/vision/templates/vit-finetune.yaml"
    assert line.endswith(f"  # worker: template vit-finetune, {file}:{line_of(file, 'name: WANDB_PROJECT')}")


def test_a_master_composed_separately_is_annotated_with_its_own_layers(org: Org) -> None:
    done = run("-p", "nlp", "-t", "tf-parameter-server", "--annotate")
    assert done.returncode == 0, done.stderr
    file = "departments/research/templates/tf-parameter-server.yaml"
    view = org.view_of("nlp")
    composition = compose(org, org.find_template("tf-parameter-server", view), view)
    assert composition.master is not None and not composition.master_same_as_worker
    where = composition.master.locate(("image",))
    assert where is not None
    masters = [line for line in done.stdout.splitlines() if "  # master: " in line]
    assert any(line.strip().startswith("image: ") and line.endswith(where.place()) for line in masters)
    role = line_of(file, "value: parameter-server")
    layer = "template tf-parameter-server master"
    assert f"role: parameter-server  # master: {layer}, {file}:{role}" in done.stdout


def test_manifests_of_a_submission_name_the_job_after_the_workload(org: Org) -> None:
    view = org.view_of("vision")
    template = org.find_template("vit-finetune", view)
    found = template_engine.manifests(org, template, view, submission=Submission(name="my-run"))
    assert found.objects[0]["metadata"]["name"] == "my-run"
    assert found.source_of(0, ("metadata", "name")) == Derived("the workload's name")
