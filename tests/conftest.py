"""Shared fixtures: the example org, throwaway templates folders and a preview that mirrors the CLI.

Test modules use these through fixtures only, never ``from conftest import ...`` (``tests/service`` has a
``conftest.py`` of its own, and the module name ``conftest`` is not unique).
"""

from __future__ import annotations

import json
import os
import subprocess
import textwrap
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml
from kept_logging import kept_logging

from template_engine import Composition, compose, load_org

REPO = Path(__file__).resolve().parents[1]
#: The example org of the repository (``templates/``).
EXAMPLE_ROOT = REPO / "templates"
#: ``shared/`` sits beside the repository (``../shared`` from its root).
#: The reference pages of ../shared/seeds, vendored so that the suite runs in any clone
#: (.ci/run checks they still equal ../shared/seeds).
SHARED = Path(__file__).resolve().parent / "fixtures"

#: The org.yaml of the throwaway folders: two departments, three projects.
ORG_YAML = """\
departments:
- name: research
  projects:
  - vision
  - nlp
- name: applied
  projects:
  - recsys
"""

#: A runnable project template ``job`` in ``vision``.
JOB_YAML = """\
meta:
  name: job
spec:
  image: python:3.11
  distributedFramework: PyTorch
  numWorkers: 2
"""

#: The PostgreSQL server the pytest-xdist workers share: written by ``postgres_server``
#: (tests/service/conftest.py) in the folder that holds every worker's temporary folder.
POSTGRES_STATE = "postgres-server.json"

WriteTree = Callable[[Mapping[str, Any]], Path]
Preview = Callable[..., Composition]


def write_files(root: Path, files: Mapping[str, Any]) -> Path:
    """Write ``files`` (relative path -> YAML text, dedented, or a mapping dumped as YAML) under ``root``."""
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, str):
            path.write_text(textwrap.dedent(content), encoding="utf-8")
        else:
            path.write_text(yaml.safe_dump(content, sort_keys=False), encoding="utf-8")
    return root


@pytest.fixture
def write_tree(tmp_path: Path) -> WriteTree:
    """Writes a templates folder (with org.yaml and the ``job`` template by default) and returns it."""

    def write(files: Mapping[str, Any]) -> Path:
        root = tmp_path / "templates"
        base: dict[str, Any] = {"org.yaml": ORG_YAML, "projects/vision/templates/job.yaml": JOB_YAML}
        base.update(files)
        return write_files(root, {k: v for k, v in base.items() if v is not None})

    return write


def preview_composition(
    root: Path,
    template: str,
    project: str | None = None,
    department: str | None = None,
    variables: Mapping[str, str] | None = None,
) -> Composition:
    """What ``template-engine preview`` computes (``cli.compose_commands``), through the Python API."""
    org = load_org(root)
    view = org.view_of(project, department)
    found = org.find_template(template, view)
    if project is None and department is None:
        view = org.own_view(found)
    return compose(org, found, view, dict(variables or {}))


@pytest.fixture
def preview() -> Preview:
    return preview_composition


@pytest.fixture(scope="session")
def example_root() -> Path:
    assert (EXAMPLE_ROOT / "org.yaml").is_file(), f"the example org is missing at {EXAMPLE_ROOT}"
    return EXAMPLE_ROOT


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    assert (SHARED / "seeds").is_dir(), f"the vendored seed pages are missing from {SHARED}"
    return SHARED


# -- running in parallel (pytest-xdist, ``-n auto`` in pyproject.toml) ---------------------------------------


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> None:
    """One process for ``--snapshot-update`` and ``--collect-only``.

    Under xdist, syrupy's controller deletes unused snapshots through its extension re-imported by name, which
    loses the snapshots folder :func:`template_engine.snapshots.extension.extension_for` binds: the files go,
    their emptied folders stay.  ``--collect-only`` starts no workers, and syrupy would then warn (an error
    here) that no worker reported its snapshots.
    """
    distributed = getattr(config.option, "numprocesses", None)
    if distributed and (config.option.collectonly or getattr(config.option, "update_snapshots", False)):
        config.option.numprocesses = 0


#: The order in which the workers are handed modules (``--dist loadscope --no-loadscope-reorder``): the
#: browser modules, then the service's (they start browsers, servers and databases: the longest modules of
#: the run), then the engine's many short ones, which even out the workers' finishing times.  xdist's own
#: order, most tests first, left the single-test schemathesis module for the end of one worker's run.
FIRST = ("tests/browser/", "tests/service/")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    def group(item: pytest.Item) -> int:
        path = item.nodeid
        return next((i for i, prefix in enumerate(FIRST) if path.startswith(prefix)), len(FIRST))

    items.sort(key=group)  # stable: within a group, the collection's order
    for item in items:
        for marker in markers_of(item):
            item.add_marker(marker)
    if config.getoption("quick"):
        left_out = [item for item in items if any(item.get_closest_marker(n) for n in QUICK_LEAVES_OUT)]
        if left_out:
            config.hook.pytest_deselected(items=left_out)
            items[:] = [
                item for item in items if not any(item.get_closest_marker(n) for n in QUICK_LEAVES_OUT)
            ]


# -- the quick suite (``pytest --quick``: the README, docs/architecture.md "Running the tests") -------------

#: The markers the quick suite leaves out (registered in pyproject.toml, given here by folder, fixture and
#: module): ``pytest -m "not slow"`` and the like select with them in the whole suite too.
QUICK_LEAVES_OUT = ("browser", "service", "postgres", "slow")

#: The folders whose tests need more than the engine: Chromium and Playwright, or the service's extra
#: (FastAPI, uvicorn, SQLAlchemy).  ``--quick`` does not collect them, so it runs without those installed.
FOLDER_MARKERS = {"tests/browser/": "browser", "tests/service/": "service"}

#: The fixtures that start or need a PostgreSQL server (tests/service/conftest.py); ``database_url`` is one
#: for its ``postgresql`` parameter.
POSTGRES_FIXTURES = frozenset({"postgres_server", "postgres_url"})

#: Engine modules that are end-to-end runs rather than the engine's own tests: each test starts the
#: installed ``template-engine`` (or pytest, or pip, or git) as processes, which costs a second or more of
#: CPU per test on this machine where the same rule in process costs milliseconds.  The quick suite leaves
#: them out (marked ``slow``); the whole suite, ``.ci/run``'s, runs them.  Chosen by measurement
#: (``--durations``, docs/architecture.md): together they were most of the core suite's time.
SLOW_MODULES = frozenset(
    {
        "tests/test_cli.py",
        "tests/test_cli_extras.py",
        "tests/test_cli_manifests.py",
        "tests/test_cli_policy.py",
        "tests/test_cli_report.py",
        "tests/test_cli_schema_init.py",
        "tests/test_diff_cli.py",
        "tests/test_lsp_protocol.py",  # the language server as a process, driven over stdio
        "tests/test_lsp_nvim.py",  # Neovim headless with the language server
        "tests/test_lsp_editor_setup.py",  # Neovim 0.11 with the set-up docs/editor.md gives
        "tests/test_lsp_invalid_params.py",  # the language server as a process, raw JSON-RPC
        "tests/test_pytest_plugin.py",
        "tests/test_precommit.py",  # pip builds the hooks' environment: minutes
        "tests/test_docs_examples.py",  # every example of the docs, each a bash process
        "tests/test_deploy_build.py",  # pip builds the image's wheel from the files the Containerfile copies
    }
)


def markers_of(item: pytest.Item) -> list[str]:
    """The markers :data:`QUICK_LEAVES_OUT` names that ``item`` gets from its folder, fixtures and module."""
    found = [name for prefix, name in FOLDER_MARKERS.items() if item.nodeid.startswith(prefix)]
    fixtures = set(getattr(item, "fixturenames", ()))
    callspec = getattr(item, "callspec", None)
    if fixtures & POSTGRES_FIXTURES or (
        callspec is not None and callspec.params.get("database_url") == "postgresql"
    ):
        found.append("postgres")
    if item.nodeid.split("::")[0] in SLOW_MODULES:
        found.append("slow")
    return found


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--quick",
        action="store_true",
        help="the core suite only: no browser, service, PostgreSQL or end-to-end process tests (under a "
        "minute on 2 cores; docs/architecture.md)",
    )


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """``--quick`` does not collect the folders of :data:`FOLDER_MARKERS` (nor import their conftest)."""
    if not config.getoption("quick"):
        return None
    relative = collection_path.resolve().as_posix().removeprefix(REPO.as_posix() + "/") + "/"
    return True if any(relative.startswith(prefix) for prefix in FOLDER_MARKERS) else None


def pytest_sessionfinish(session: pytest.Session) -> None:
    """The xdist controller stops the PostgreSQL server its workers shared, once every worker has finished."""
    if os.environ.get("PYTEST_XDIST_WORKER") or not session.config.pluginmanager.has_plugin("dsession"):
        return
    state = session.config._tmp_path_factory.getbasetemp() / POSTGRES_STATE  # type: ignore[attr-defined]
    if state.is_file():
        data = json.loads(state.read_text())["data"]
        script = REPO / ".ci" / "postgres.sh"
        subprocess.run(["bash", str(script), "stop", data], capture_output=True, timeout=120, check=False)
        state.unlink()


@pytest.fixture(autouse=True)
def _logging_as_before() -> Iterator[None]:
    """The process's logging put back after each test: a ``serve`` run in process (tests/kept_logging.py)
    must not leave a handler keeping every later record of the worker."""
    with kept_logging():
        yield


@pytest.fixture(scope="session", autouse=True)
def _facts_cache_in_a_temporary_folder(tmp_path_factory: pytest.TempPathFactory) -> None:
    """``diff`` and ``impact`` keep a facts cache (``loader/facts.py``) in the user's cache folder; the
    suite's runs of them, in process and in subprocesses, keep theirs in a folder of this session instead,
    so a test run leaves nothing in ``~/.cache`` and never reads what an earlier run left there."""
    os.environ["TEMPLATE_ENGINE_CACHE_DIR"] = str(tmp_path_factory.mktemp("facts-cache"))
