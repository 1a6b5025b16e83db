"""The image's build stage has what it needs from the checkout: the files ``deploy/Containerfile`` copies,
and only those, build the package with all of its package data.

No container engine runs here: the build stage's ``COPY`` lines are replayed into a scratch folder (its
``WORKDIR``) and pip builds the wheel there, as ``pip install "/src[service]"`` does in the image (without
build isolation: the test environment's setuptools, no download).
"""

from __future__ import annotations

import fnmatch
import shlex
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

from deploy_helpers import REPO, containerfile_instructions


def _build_stage_copies() -> tuple[str, list[tuple[list[str], str]]]:
    """The build stage's ``WORKDIR`` and its ``COPY`` lines from the checkout: ``(sources, destination)``."""
    instructions = containerfile_instructions()
    froms = [i for i, (keyword, _) in enumerate(instructions) if keyword == "FROM"]
    stage = instructions[froms[0] : froms[1]]
    (workdir,) = [rest for keyword, rest in stage if keyword == "WORKDIR"]
    copies = []
    for keyword, rest in stage:
        if keyword == "COPY":
            *sources, destination = shlex.split(rest)
            copies.append((sources, destination))
    return workdir, copies


def _replay(workdir: str, copies: list[tuple[list[str], str]], root: Path) -> Path:
    """The build stage's ``WORKDIR`` under ``root`` after its ``COPY`` lines (Dockerfile semantics: a folder's
    contents go to the destination; a destination ending in ``/`` is a folder)."""
    where = root / workdir.lstrip("/")
    where.mkdir(parents=True)
    for sources, destination in copies:
        target = (where / destination).resolve()
        for source in sources:
            path = REPO / source
            if path.is_dir():
                shutil.copytree(path, target, ignore=shutil.ignore_patterns("__pycache__"))
            else:
                folder = target if destination.endswith("/") else target.parent
                folder.mkdir(parents=True, exist_ok=True)
                shutil.copy2(path, folder / path.name if destination.endswith("/") else target)
    return where


def test_the_files_the_build_stage_copies_build_the_package_with_its_package_data(tmp_path: Path) -> None:
    workdir, copies = _build_stage_copies()
    assert workdir == "/src"
    source = _replay(workdir, copies, tmp_path / "image")
    wheels = tmp_path / "wheels"
    # With build isolation, as the image's `pip install` builds: pip brings the build backend the
    # pyproject names (a fresh venv has no `wheel` package for an old setuptools to build with).
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", wheels, source],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert built.returncode == 0, built.stderr
    (wheel,) = wheels.glob("template_engine-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "template_engine/cli/__init__.py" in names
    assert "template_engine/service/app.py" in names
    # every package-data pattern of pyproject.toml is in the wheel: nothing the package reads at run time
    # lives outside what the image copies
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    for pattern in project["tool"]["setuptools"]["package-data"]["template_engine"]:
        assert fnmatch.filter(names, f"template_engine/{pattern}"), f"{pattern} is not in the image's wheel"
