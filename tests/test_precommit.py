"""The repository's ``.pre-commit-hooks.yaml`` run by the real pre-commit in an organisation's repository.

pre-commit clones the hook repository at a revision and installs it with pip into an environment of its
own (with the hook's ``additional_dependencies``), from the package index, as it would on a platform
team's laptop.  The revision is a commit of this working tree (uncommitted changes included), made in a
throwaway repository; the organisation's repository is the starter org of ``template-engine init`` with
its snapshots committed.  The environment is built once per module (``PRE_COMMIT_HOME``), so the module
costs one pip install (a few minutes) and then a few seconds per commit.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

#: The first commit builds the hooks' environment with pip from the package index (about three minutes
#: on a busy 2-core machine); the default 300 s of pytest-timeout is too close.
pytestmark = pytest.mark.timeout(900)

REPO = Path(__file__).resolve().parents[1]
PRE_COMMIT = Path(sys.executable).parent / "pre-commit"
GIT_IDENTITY = {
    "GIT_AUTHOR_NAME": "Platform Team",
    "GIT_AUTHOR_EMAIL": "platform@example.com",
    "GIT_COMMITTER_NAME": "Platform Team",
    "GIT_COMMITTER_EMAIL": "platform@example.com",
}
#: Inherited variables that would make the hook's pytest or Python something other than what a user runs.
_DROPPED = ("PYTHONPATH", "PYTEST_ADDOPTS", "PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT")
_DROPPED += ("PYTEST_XDIST_TESTRUNUID", "PYTEST_CURRENT_TEST", "PRE_COMMIT", "GIT_DIR", "GIT_INDEX_FILE")


def git(cwd: Path, *args: str, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        ["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=True, timeout=120
    )
    return done.stdout


def clean_env(pre_commit_home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _DROPPED and not k.startswith("GIT_")}
    env.update(GIT_IDENTITY, PRE_COMMIT_HOME=str(pre_commit_home))
    return env


@pytest.fixture(scope="module")
def hook_repo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A git repository whose one commit is this working tree: what ``repo:``/``rev:`` point at."""
    engine = tmp_path_factory.mktemp("engine")
    listed = git(REPO, "ls-files", "-z", "--cached", "--others", "--exclude-standard").split("\0")
    for rel in filter(None, listed):
        source = REPO / rel
        if source.is_file():
            (engine / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, engine / rel)
    env = clean_env(tmp_path_factory.getbasetemp())
    git(engine, "init", "-q", "-b", "main", env=env)
    git(engine, "add", "-A", env=env)
    git(engine, "commit", "-q", "-m", "the working tree", env=env)
    return engine, git(engine, "rev-parse", "HEAD", env=env).strip()


@pytest.fixture(scope="module")
def pre_commit_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("pre-commit-home")


@pytest.fixture
def org_repo(tmp_path: Path, hook_repo: tuple[Path, str], pre_commit_home: Path) -> Path:
    """An organisation's repository: the starter org, its snapshots and a pre-commit config using both
    hooks of this repository, committed; the hooks installed."""
    engine, rev = hook_repo
    org = tmp_path / "acme-templates"
    org.mkdir()
    env = clean_env(pre_commit_home)
    git(org, "init", "-q", "-b", "main", env=env)
    cli = [sys.executable, "-m", "template_engine"]
    subprocess.run([*cli, "init", "templates"], cwd=org, check=True, capture_output=True, timeout=120)
    snapshot_update = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist", "-q"]
    snapshot_update += ["--template-root=templates", "templates/org.yaml", "--snapshot-update"]
    inner = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    written = subprocess.run(snapshot_update, cwd=org, env=inner, capture_output=True, text=True, timeout=300)
    assert written.returncode == 0, written.stdout + written.stderr
    (org / ".pre-commit-config.yaml").write_text(
        f"repos:\n- repo: {engine}\n  rev: {rev}\n  hooks:\n"
        "  - id: template-engine-check\n  - id: template-engine-snapshots\n",
        encoding="utf-8",
    )
    subprocess.run([str(PRE_COMMIT), "install"], cwd=org, env=env, check=True, capture_output=True)
    git(org, "add", "-A", env=env)
    git(org, "commit", "-q", "--no-verify", "-m", "the starter org and its snapshots", env=env)
    return org


def commit(org: Path, pre_commit_home: Path, message: str) -> subprocess.CompletedProcess[str]:
    """``git add -A && git commit``: the hooks run as pre-commit installed them."""
    env = clean_env(pre_commit_home)
    git(org, "add", "-A", env=env)
    done = subprocess.run(
        ["git", "commit", "-m", message], cwd=org, env=env, capture_output=True, text=True, timeout=600
    )
    # The hooks write to git's stderr; one text, in the order a terminal shows it, is what is asserted.
    return subprocess.CompletedProcess(done.args, done.returncode, done.stdout + done.stderr, "")


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new), encoding="utf-8")


def test_a_clean_change_passes_both_hooks(org_repo: Path, pre_commit_home: Path) -> None:
    """A comment is no change to any effective spec: both hooks run and pass, and the commit is made."""
    defaults = org_repo / "templates/system/defaults.yaml"
    defaults.write_text(defaults.read_text(encoding="utf-8") + "# reviewed\n", encoding="utf-8")
    done = commit(org_repo, pre_commit_home, "a comment")
    assert done.returncode == 0, done.stdout
    assert "template-engine check (every pair runnable)" in done.stdout
    assert "template-engine snapshots" in done.stdout
    assert "Failed" not in done.stdout
    assert git(org_repo, "log", "-1", "--format=%s").strip() == "a comment"


def test_a_changed_default_without_its_snapshots_fails_the_commit(
    org_repo: Path, pre_commit_home: Path
) -> None:
    """Still runnable, so check passes; the effective spec drifted from its snapshot, so the commit fails
    with the changed field."""
    edit(org_repo / "templates/system/defaults.yaml", "value: UTC", "value: Europe/Paris")
    done = commit(org_repo, pre_commit_home, "another time zone")
    assert done.returncode != 0
    out = done.stdout
    assert "template-engine check (every pair runnable)" in out
    check_line = next(line for line in out.splitlines() if line.startswith("template-engine check"))
    assert check_line.endswith("Passed"), out
    snapshot_line = next(line for line in out.splitlines() if line.startswith("template-engine snapshots"))
    assert snapshot_line.endswith("Failed"), out
    assert "projects/vision/train" in out
    assert "Europe/Paris" in out
    assert git(org_repo, "log", "-1", "--format=%s").strip() == "the starter org and its snapshots"


def test_a_default_that_breaks_a_pair_fails_the_check_hook(org_repo: Path, pre_commit_home: Path) -> None:
    """The system default's image removed: the pair is not runnable, so check fails and names the issue."""
    edit(org_repo / "templates/system/defaults.yaml", "  image: python:3.11\n", "")
    done = commit(org_repo, pre_commit_home, "no image")
    assert done.returncode != 0
    out = done.stdout
    check_line = next(line for line in out.splitlines() if line.startswith("template-engine check"))
    assert check_line.endswith("Failed"), out
    assert "mandatory image is not provided" in out
    assert "0 runnable, 1 not runnable" in out
    assert git(org_repo, "log", "-1", "--format=%s").strip() == "the starter org and its snapshots"
