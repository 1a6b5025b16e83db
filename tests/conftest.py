"""Shared fixtures: the example org, throwaway templates folders and a preview that mirrors the CLI.

Test modules use these through fixtures only, never ``from conftest import ...`` (``tests/service`` has a
``conftest.py`` of its own, and the module name ``conftest`` is not unique).
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

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
