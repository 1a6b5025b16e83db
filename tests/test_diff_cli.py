"""``template-engine diff`` and ``impact`` through the installed command, against real git revisions of a
temporary repository that holds a copy of the example org."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, NoReturn

import pytest

from template_engine import Org, load_org
from template_engine.diff import diff_orgs
from template_engine.diffing.fields import same
from template_engine.diffing.pairs import compose_pair, pairs

EXAMPLE = Path(__file__).resolve().parents[1] / "templates"
EXE = shutil.which("template-engine", path=str(Path(sys.executable).parent)) or "template-engine"

#: Pairs seen from research (its projects' and its own), of every kind: research's defaults reach them all.
RESEARCH_PAIRS = [
    "projects/nlp/jupyter-lab",
    "projects/nlp/llm-serve",
    "projects/nlp/mpi-horovod",
    "projects/nlp/pytorch-elastic",
    "projects/nlp/tf-parameter-server",
    "projects/vision/hpo-sweep",
    "projects/vision/jupyter-lab",
    "projects/vision/mpi-horovod",
    "projects/vision/pytorch-elastic",
    "projects/vision/tf-parameter-server",
    "projects/vision/vit-finetune",
    "departments/research/jupyter-lab",
    "departments/research/tf-parameter-server",
]
#: Pairs whose templates use the environment asset ``pytorch`` (hpo-sweep is a training).
PYTORCH_PAIRS = [
    "projects/nlp/pytorch-elastic",
    "projects/recsys/pytorch-elastic",
    "projects/speech/pytorch-elastic",
    "projects/vision/hpo-sweep",
    "projects/vision/pytorch-elastic",
    "projects/vision/vit-finetune",
    "system/pytorch-elastic",
]


class Repo:
    """A git repository in a temporary folder, with the example org at ``templates/``."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.env = {
            **os.environ,
            "GIT_AUTHOR_NAME": "test",
            "GIT_AUTHOR_EMAIL": "test@example.invalid",
            "GIT_COMMITTER_NAME": "test",
            "GIT_COMMITTER_EMAIL": "test@example.invalid",
            "GIT_CONFIG_NOSYSTEM": "1",
            "HOME": str(path),
        }

    def git(self, *args: str) -> str:
        done = subprocess.run(["git", *args], cwd=self.path, env=self.env, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        return done.stdout

    def commit(self, message: str) -> None:
        self.git("add", "-A")
        self.git("commit", "-q", "-m", message)

    def edit(self, rel: str, old: str, new: str) -> None:
        path = self.path / "templates" / rel
        text = path.read_text(encoding="utf-8")
        assert old in text, f"{old!r} not in {rel}"
        path.write_text(text.replace(old, new), encoding="utf-8")

    def run(self, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run([EXE, *args], cwd=cwd or self.path, capture_output=True, text=True)


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    repo = Repo(tmp_path / "repo")
    shutil.copytree(EXAMPLE, repo.path / "templates")
    repo.git("init", "-q", "-b", "main")
    repo.commit("the example org")
    return repo


def pairs_in(text: str, mark: str = "~") -> list[str]:
    return [line.split()[1] for line in text.splitlines() if line.startswith(f"{mark} ")]


def exclude_no_proxy_in_research(repo: Repo) -> None:
    repo.edit(
        "departments/research/defaults.yaml",
        "  - name: NCCL_DEBUG\n    value: WARN\n",
        "  - name: NCCL_DEBUG\n    value: INFO\n  - name: NO_PROXY\n    exclude: true\n",
    )


def test_nothing_differs_exit_0(repo: Repo) -> None:
    done = repo.run("diff", "--against", "HEAD")
    assert (done.returncode, done.stdout, done.stderr) == (0, "no pair differs (23 pairs)\n", "")


def test_a_changed_default_between_two_revisions(repo: Repo) -> None:
    exclude_no_proxy_in_research(repo)
    repo.commit("research: no NO_PROXY, NCCL_DEBUG=INFO")

    done = repo.run("diff", "--root", "templates", "--against", "HEAD~1")
    assert done.returncode == 1, done.stderr
    assert pairs_in(done.stdout) == RESEARCH_PAIRS
    lines = done.stdout.splitlines()
    at = lines.index("~ projects/vision/mpi-horovod  (system template)")
    assert lines[at + 1 : at + 3] == [
        "    combinedSpec.environmentVariables[name=NO_PROXY]: removed (excluded by "
        "departments/research/defaults.yaml:18, department research defaults); "
        "the same in combinedMasterSpec",
        '    combinedSpec.environmentVariables[name=NCCL_DEBUG].value: "WARN" -> "INFO" (set by '
        "departments/research/defaults.yaml:17, department research defaults); "
        "the same in combinedMasterSpec",
    ]
    # A separately composed master does not get the worker's defaults: only the worker changes.
    at = lines.index("~ projects/vision/tf-parameter-server  (department research template)")
    assert [line.split(":")[0].strip() for line in lines[at + 1 : at + 3]] == [
        "combinedSpec.environmentVariables[name=NO_PROXY]",
        "combinedSpec.environmentVariables[name=NCCL_DEBUG].value",
    ]
    # A training's (and a workspace's, an inference's) one worker gets the shared defaults too.
    at = lines.index("~ projects/vision/hpo-sweep  (project vision training template)")
    assert lines[at + 1 : at + 3] == [
        "    combinedSpec.environmentVariables[name=NO_PROXY]: removed (excluded by "
        "departments/research/defaults.yaml:18, department research defaults)",
        '    combinedSpec.environmentVariables[name=NCCL_DEBUG].value: "WARN" -> "INFO" (set by '
        "departments/research/defaults.yaml:17, department research defaults)",
    ]
    assert lines[-1] == "13 of 23 pairs differ: 13 changed"

    # The working tree against the last commit, and the other way round, from a subfolder.
    assert repo.run("diff", "--against", "HEAD").returncode == 0
    back = repo.run("diff", "--root", ".", "--against", "HEAD~1", cwd=repo.path / "templates")
    assert pairs_in(back.stdout) == RESEARCH_PAIRS


def test_json_output(repo: Repo) -> None:
    exclude_no_proxy_in_research(repo)
    repo.commit("research")
    done = repo.run("diff", "--against", "HEAD~1", "--output", "json")
    assert done.returncode == 1
    report = json.loads(done.stdout)
    assert done.stdout == json.dumps(report, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    assert report["summary"] == {
        "appeared": 0,
        "invalidFiles": 0,
        "changed": 13,
        "disappeared": 0,
        "pairs": 23,
        "unchanged": 10,
    }
    pair = next(p for p in report["pairs"] if p["pair"] == "projects/vision/vit-finetune")
    assert pair["status"] == "changed"
    assert (pair["project"], pair["department"], pair["template"], pair["scope"]) == (
        "vision",
        "research",
        "vit-finetune",
        "project vision",
    )
    removed = pair["changes"][0]
    assert removed == {
        "alsoIn": ["combinedMasterSpec"],
        "change": "removed",
        "excludedBy": {
            "file": "departments/research/defaults.yaml",
            "layer": "department research defaults",
            "line": 18,
        },
        "field": "combinedSpec.environmentVariables[name=NO_PROXY]",
        "old": {"name": "NO_PROXY", "value": "localhost,127.0.0.1,.svc,.cluster.local"},
    }
    assert pair["changes"][1]["old"] == "WARN" and pair["changes"][1]["new"] == "INFO"


def test_a_changed_default_shows_the_changed_objects(repo: Repo) -> None:
    repo.edit("system/defaults.yaml", "    cpuCoreLimit: 8\n", "    cpuCoreLimit: 16\n")
    done = repo.run("diff", "--against", "HEAD")
    assert done.returncode == 1
    lines = done.stdout.splitlines()
    # llm-serve has no compute asset: the system's limit is its limit too.
    assert pairs_in(done.stdout) == ["projects/nlp/llm-serve", "projects/speech/asr-sweep-draft"]
    at = lines.index("~ projects/nlp/llm-serve  (project nlp inference template)")
    assert lines[at + 1 : at + 4] == [
        "    combinedSpec.compute.cpuCoreLimit: 8 -> 16 (set by system/defaults.yaml:56, system defaults)",
        "    objects:",
        "      Service.spec.template.spec.containers[0].resources.limits.cpu: 8 -> 16",
    ]
    at = lines.index("~ projects/speech/asr-sweep-draft  (project speech template)")
    replicas = "PyTorchJob.spec.pytorchReplicaSpecs"
    limits = "template.spec.containers[0].resources.limits.cpu"
    assert lines[at + 1 :] == [
        '    runnable.issues: removed (was "worker: compute.cpuCoreRequest 16 is '
        'above compute.cpuCoreLimit 8")',
        "    combinedSpec.compute.cpuCoreLimit: 8 -> 16 (set by system/defaults.yaml:56, system defaults); "
        "the same in combinedMasterSpec",
        "    objects:",
        f"      {replicas}.Master.{limits}: 8 -> 16",
        f"      {replicas}.Worker.{limits}: 8 -> 16",
        "2 of 23 pairs differ: 2 changed",
    ]
    report = json.loads(repo.run("diff", "--against", "HEAD", "-o", "json").stdout)
    assert [p["pair"] for p in report["pairs"]] == [
        "projects/nlp/llm-serve",
        "projects/speech/asr-sweep-draft",
    ]
    pair = report["pairs"][1]
    assert pair["objectChanges"] == [
        {"object": f"{replicas}.Master.{limits}", "change": "changed", "old": 8, "new": 16},
        {"object": f"{replicas}.Worker.{limits}", "change": "changed", "old": 8, "new": 16},
    ]
    assert [c["field"] for c in pair["changes"]] == ["runnable.issues", "combinedSpec.compute.cpuCoreLimit"]


def test_a_cluster_setting_changes_objects_only(repo: Repo) -> None:
    """Every pair depends on cluster.yaml: a setting that changes no spec still changes the pairs whose
    objects it changes, in diff and in impact."""
    repo.edit("cluster.yaml", "  speech: speech\n", "  speech: speech-batch\n")
    speech = ["projects/speech/asr-sweep-draft", "projects/speech/mpi-horovod"]
    speech += ["projects/speech/pytorch-elastic", "projects/speech/xgboost-ctr"]
    for args in (("diff", "--against", "HEAD"), ("impact", "templates/cluster.yaml")):
        done = repo.run(*args)
        assert done.returncode == 1, done.stderr
        assert pairs_in(done.stdout) == speech
        lines = done.stdout.splitlines()
        at = lines.index("~ projects/speech/xgboost-ctr  (department applied template)")
        assert lines[at + 1 : at + 3] == [
            "    objects:",
            '      XGBoostJob.metadata.labels.kai.scheduler/queue: "speech" -> "speech-batch"',
        ]
        assert lines[-1] == "4 of 23 pairs differ: 4 changed"
    assert done.stdout.splitlines()[0] == "cluster.yaml against HEAD: used by 23 pairs"
    report = json.loads(repo.run("impact", "templates/cluster.yaml", "-o", "json").stdout)
    assert len(report["usedBy"]) == 23
    for pair in report["pairs"]:
        assert pair["changes"] == []
        assert pair["objectChanges"][0]["object"].endswith(".metadata.labels.kai.scheduler/queue")
    # The file removed: the settings' defaults (KAI's default queue, its priority classes) change every
    # project's objects.
    (repo.path / "templates/cluster.yaml").unlink()
    done = repo.run("impact", "templates/cluster.yaml")
    assert done.returncode == 1
    assert '      MPIJob.metadata.labels.kai.scheduler/queue: "vision" -> "default-queue"' in done.stdout


def test_pairs_that_appear_and_disappear(repo: Repo) -> None:
    repo.edit("org.yaml", "  - vision\n  - nlp\n", "  - vision\n")
    repo.edit("org.yaml", "  - speech\n", "  - speech\n  - ads\n")
    repo.commit("nlp leaves, ads arrives")
    done = repo.run("diff", "--against", "HEAD~1")
    assert done.returncode == 1
    assert pairs_in(done.stdout, "+") == [
        "projects/ads/mpi-horovod",
        "projects/ads/pytorch-elastic",
        "projects/ads/xgboost-ctr",
    ]
    assert pairs_in(done.stdout, "-") == [
        "projects/nlp/jupyter-lab",
        "projects/nlp/llm-serve",
        "projects/nlp/mpi-horovod",
        "projects/nlp/pytorch-elastic",
        "projects/nlp/tf-parameter-server",
    ]
    assert "+ projects/ads/xgboost-ctr  (department applied template) appeared, runnable" in done.stdout
    # projects/nlp/ is still there, but org.yaml no longer lists nlp.
    assert "! projects/nlp is invalid (the pairs it would make are missing):" in done.stdout
    assert done.stdout.splitlines()[-1] == "8 of 26 pairs differ: 3 appeared, 5 disappeared; 1 invalid file"


def test_an_invalid_file_is_a_difference(repo: Repo) -> None:
    repo.edit("projects/vision/templates/vit-finetune.yaml", "  numWorkers: 2\n", "  numWorkers: [2\n")
    done = repo.run("diff", "--against", "HEAD")
    assert done.returncode == 1
    assert done.stdout.splitlines()[:2] == [
        "! projects/vision/templates/vit-finetune.yaml is invalid (the pairs it would make are missing):",
        "    projects/vision/templates/vit-finetune.yaml:19: invalid YAML: while parsing a flow sequence "
        "did not find expected ',' or ']'",
    ]
    assert pairs_in(done.stdout, "-") == ["projects/vision/vit-finetune"]
    assert done.stdout.splitlines()[-1] == "1 of 23 pairs differ: 1 disappeared; 1 invalid file"


def test_against_another_folder(repo: Repo, tmp_path: Path) -> None:
    before = tmp_path / "before"
    shutil.copytree(repo.path / "templates", before)
    exclude_no_proxy_in_research(repo)
    done = repo.run("diff", "--against", str(before))
    assert done.returncode == 1
    assert pairs_in(done.stdout) == RESEARCH_PAIRS


def test_a_revision_without_the_folder_makes_every_pair_new(repo: Repo) -> None:
    repo.git("mv", "templates", "org")
    repo.commit("move")
    shutil.copytree(repo.path / "org", repo.path / "templates")
    done = repo.run("diff", "--root", "org", "--against", "HEAD~1")
    assert done.returncode == 1
    assert done.stderr == "note: org does not exist at HEAD~1; every pair is new\n"
    assert done.stdout.splitlines()[-1] == "23 of 23 pairs differ: 23 appeared"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ("diff", "--against", "no-such-branch"),
            "error: --against 'no-such-branch' is neither a folder nor a revision",
        ),
        (
            ("diff", "--against", "HEAD", "--root", "missing"),
            "error: templates folder 'missing' does not exist",
        ),
        (
            ("impact", "/etc/hostname"),
            "error: '/etc/hostname' is not inside the templates folder 'templates'",
        ),
        (("impact", "templates/nothing.yaml"), "error: nothing.yaml exists neither in templates nor in HEAD"),
    ],
)
def test_errors_exit_2_with_one_message(repo: Repo, args: tuple[str, ...], message: str) -> None:
    done = repo.run(*args)
    assert done.returncode == 2
    assert done.stderr.startswith(message), done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""


@pytest.mark.parametrize("cache", ["--no-cache", "--cache"])
def test_a_blob_git_cannot_give_is_an_error_naming_the_file_never_a_wrong_answer(
    repo: Repo, cache: str
) -> None:
    """A damaged repository (or a partial clone without its remote): ``impact``, which reads both versions
    from the revision, needs the lost blob and exits 2 naming it, whether it reads it while loading or, with
    the cache warm, when a pair is composed.  ``diff`` against the working tree has the same file with the
    same blob id there, so it needs no read of the lost blob, and its answer is the intact repository's."""
    rel = "projects/nlp/defaults.yaml"
    repo.edit("system/defaults.yaml", "value: UTC", "value: Europe/Paris")
    intact = repo.run("diff", "--against", "HEAD", cache, "-o", "json")  # also fills the cache when it is on
    assert intact.returncode == 1, intact.stderr
    assert repo.run("impact", "templates/system/defaults.yaml", cache).returncode == 1
    lost = repo.git("rev-parse", f"HEAD:templates/{rel}").strip()
    (repo.path / ".git" / "objects" / lost[:2] / lost[2:]).unlink()

    done = repo.run("impact", "templates/system/defaults.yaml", cache, "-o", "json")
    assert done.returncode == 2 and done.stdout == "" and "Traceback" not in done.stderr, done.stdout
    first, expected = done.stderr.splitlines()
    assert first.startswith("error: ") and f"git cannot give {rel} as " in first, first
    assert first.endswith(f"the repository has no blob {lost}"), first
    assert expected.startswith("    expected: a repository that holds every object of the revision")

    again = repo.run("diff", "--against", "HEAD", cache, "-o", "json")
    assert (again.returncode, again.stdout, again.stderr) == (1, intact.stdout, "")


def test_a_reader_that_stops_early_gets_no_error_message(repo: Repo) -> None:
    """``impact ... | head -1``: the reader closes the pipe; the command stops quietly (exit 2: its answer was
    not delivered), with no "internal error" on stderr."""
    repo.edit("system/defaults.yaml", "value: UTC", "value: Europe/Paris")
    command = [EXE, "impact", "templates/system/defaults.yaml", "--no-cache"]
    with subprocess.Popen(command, cwd=repo.path, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as process:
        assert process.stdout is not None
        process.stdout.close()  # before the first line: every write of the command fails
        _, err = process.communicate(timeout=60)
    assert (process.returncode, err) == (2, b"")


def test_outside_a_repository(tmp_path: Path) -> None:
    shutil.copytree(EXAMPLE, tmp_path / "templates")
    done = subprocess.run([EXE, "diff", "--against", "HEAD~1"], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 2
    assert done.stderr.startswith(
        "error: --against is not a folder, and 'templates' is not inside a git repository"
    )
    assert "Traceback" not in done.stderr


def test_impact_of_an_asset_turning_pairs_unrunnable(repo: Repo) -> None:
    repo.edit("assets/environments/pytorch.yaml", "  image: nvcr.io/nvidia/pytorch:24.05-py3\n", "")
    repo.edit("org.yaml", "  - speech\n", "")  # another change in the working tree: not part of the question
    done = repo.run("impact", "templates/assets/environments/pytorch.yaml")
    assert done.returncode == 1, done.stderr
    assert done.stdout.splitlines()[0] == "assets/environments/pytorch.yaml against HEAD: used by 7 pairs"
    assert pairs_in(done.stdout) == PYTORCH_PAIRS
    lines = done.stdout.splitlines()
    at = lines.index("~ projects/recsys/pytorch-elastic  (system template)")
    assert lines[at + 1 : at + 6] == [
        "    runnable.isRunnable: true -> false",
        '    runnable.issues: added "worker: mandatory image is not provided"',
        # the system policy requires an image, on the worker and the master (each a compliance issue)
        '    runnable.issues: added "worker: image is required by the system policy"',
        '    runnable.issues: added "master: image is required by the system policy"',
        '    combinedSpec.image: removed (was "nvcr.io/nvidia/pytorch:24.05-py3"; no longer set by '
        "assets/environments/pytorch.yaml:6, environment asset pytorch); the same in combinedMasterSpec",
    ]
    # a training has no master, and the training policy does not require an image: only the kind's mandatory
    at = lines.index("~ projects/vision/hpo-sweep  (project vision training template)")
    assert lines[at + 1 : at + 4] == [
        "    runnable.isRunnable: true -> false",
        '    runnable.issues: added "worker: mandatory image is not provided"',
        '    combinedSpec.image: removed (was "nvcr.io/nvidia/pytorch:24.05-py3"; no longer set by '
        "assets/environments/pytorch.yaml:6, environment asset pytorch)",
    ]
    assert lines[-1] == "7 of 23 pairs differ: 7 changed"

    report = json.loads(repo.run("impact", "templates/assets/environments/pytorch.yaml", "-o", "json").stdout)
    assert report["file"] == "assets/environments/pytorch.yaml"
    assert report["usedBy"] == PYTORCH_PAIRS
    assert {p["new"]["status"] for p in report["pairs"]} == {"not runnable"}


def test_impact_of_a_template_that_no_longer_composes(repo: Repo) -> None:
    repo.edit("projects/vision/templates/vit-finetune.yaml", "compute: a100-x8", "compute: a100-x16")
    repo.commit("typo")
    done = repo.run("impact", "templates/projects/vision/templates/vit-finetune.yaml", "--against", "HEAD~1")
    assert done.returncode == 1
    assert done.stdout.splitlines() == [
        "projects/vision/templates/vit-finetune.yaml against HEAD~1: used by 1 pair",
        "~ projects/vision/vit-finetune  (project vision template)",
        "    now fails to compose:",
        "      projects/vision/templates/vit-finetune.yaml:10: assets.compute: "
        "template 'vit-finetune' refers to an unknown compute asset 'a100-x16'",
        "1 of 23 pairs differ: 1 changed",
    ]
    # Unchanged against the commit that made the change.
    assert repo.run("impact", "templates/projects/vision/templates/vit-finetune.yaml").returncode == 0


def test_impact_of_a_new_template(repo: Repo) -> None:
    (repo.path / "templates/departments/applied/templates/ranker.yaml").write_text(
        "meta:\n  name: ranker\nassets:\n  environment: pytorch\nspec:\n  distributedFramework: PyTorch\n",
        encoding="utf-8",
    )
    done = repo.run("impact", "templates/departments/applied/templates/ranker.yaml")
    assert done.returncode == 1
    assert pairs_in(done.stdout, "+") == [
        "projects/recsys/ranker",
        "projects/speech/ranker",
        "departments/applied/ranker",
    ]


EDITS: dict[str, list[tuple[str, str, str]]] = {
    "a department default": [
        ("departments/research/defaults.yaml", "value: cc-2100", "value: cc-2200"),
    ],
    "an asset": [("assets/computes/a100-x8.yaml", "gpuDevicesRequest: 8", "gpuDevicesRequest: 4")],
    "a template": [("system/templates/mpi-horovod.yaml", "numWorkers: 4", "numWorkers: 8")],
    "a project moving department": [
        ("org.yaml", "  - vision\n  - nlp\n", "  - nlp\n"),
        ("org.yaml", "  - recsys\n", "  - recsys\n  - vision\n"),
    ],
    "a broken file": [("projects/speech/defaults.yaml", "spec:\n", "spec: [\n")],
    "a cluster setting": [("cluster.yaml", "  speech: speech\n", "  speech: speech-batch\n")],
}


@pytest.mark.parametrize("edit", list(EDITS))
def test_skipping_unchanged_pairs_finds_what_composing_everything_finds(tmp_path: Path, edit: str) -> None:
    """diff_orgs composes only pairs whose inputs changed; composing every pair must find the same ones
    (a pair differs when its effective output or its objects do)."""
    after = tmp_path / "after"
    shutil.copytree(EXAMPLE, after)
    for rel, old, new in EDITS[edit]:
        text = (after / rel).read_text(encoding="utf-8")
        assert old in text
        (after / rel).write_text(text.replace(old, new), encoding="utf-8")
    old_org, new_org = load_org(EXAMPLE), load_org(after)

    def outputs(org: Org) -> dict[str, Any]:
        found: dict[str, Any] = {}
        for pair in pairs(org):
            outcome = compose_pair(org, pair)
            found[pair.id] = (
                (outcome.output, outcome.objects)
                if outcome.output is not None
                else [p.one_line() for p in outcome.problems]
            )
        return found

    before_all, after_all = outputs(old_org), outputs(new_org)
    expected = {
        pid
        for pid in before_all.keys() | after_all.keys()
        if pid not in before_all or pid not in after_all or not same(before_all[pid], after_all[pid])
    }
    assert expected, "the edit should change something"
    result = diff_orgs(old_org, new_org)
    assert {d.id for d in result.pairs} == expected
    # ``composed`` counts compositions, one per side of a pair compared: composing everything makes
    # len(before_all) + len(after_all).  A file that cannot be read makes every pair worth comparing; every
    # pair's objects use the settings.
    if edit not in ("a broken file", "a cluster setting"):
        assert result.composed < len(before_all) + len(after_all)
    else:
        assert result.composed == len(before_all) + len(after_all)


def test_diff_and_impact_write_no_temporary_folder(repo: Repo, monkeypatch: pytest.MonkeyPatch) -> None:
    """A revision is read from git's blobs into memory, impact overlays one file: nothing is written."""
    from click.testing import CliRunner

    from template_engine.cli import main

    exclude_no_proxy_in_research(repo)
    repo.commit("research")

    def refuse(*args: object, **kwargs: object) -> NoReturn:
        raise AssertionError("diff and impact must not write temporary files or copies")

    for name in ("mkdtemp", "mkstemp", "TemporaryDirectory", "NamedTemporaryFile", "TemporaryFile"):
        monkeypatch.setattr(tempfile, name, refuse)
    monkeypatch.setattr(shutil, "copytree", refuse)
    monkeypatch.setattr(shutil, "copyfile", refuse)
    monkeypatch.chdir(repo.path)
    runner = CliRunner()

    done = runner.invoke(main, ["diff", "--against", "HEAD~1"])
    assert isinstance(done.exception, SystemExit) and done.exit_code == 1, done.exception
    assert pairs_in(done.stdout) == RESEARCH_PAIRS

    done = runner.invoke(
        main, ["impact", "templates/departments/research/defaults.yaml", "--against", "HEAD~1"]
    )
    assert isinstance(done.exception, SystemExit) and done.exit_code == 1, done.exception
    assert done.stdout.splitlines()[0] == (
        "departments/research/defaults.yaml against HEAD~1: used by 13 pairs"
    )
    assert pairs_in(done.stdout) == RESEARCH_PAIRS
