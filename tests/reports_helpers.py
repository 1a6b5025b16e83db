"""What the tests of the CI formats share: the example org, the vendored schemas, the CLI in process."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner, Result

from template_engine.cli import main

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "templates"
FORMATS = Path(__file__).resolve().parent / "fixtures" / "formats"


def run(*args: str) -> Result:
    """The real CLI entry point, in this process."""
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def check_json(root: str = "templates") -> dict[str, Any]:
    result = run("check", "--root", root, "-o", "json")
    answer: dict[str, Any] = json.loads(result.stdout)
    return answer


def crd_schema(kind: str) -> dict[str, Any]:
    """The ``v1alpha2`` openAPIV3Schema of ``PolicyReport`` or ``ClusterPolicyReport`` (the vendored CRDs)."""
    name = {"PolicyReport": "policyreports", "ClusterPolicyReport": "clusterpolicyreports"}[kind]
    crd = yaml.safe_load((FORMATS / f"wgpolicyk8s.io_{name}.v1alpha2.yaml").read_text(encoding="utf-8"))
    version = next(v for v in crd["spec"]["versions"] if v["name"] == "v1alpha2")
    schema: dict[str, Any] = version["schema"]["openAPIV3Schema"]
    return schema


@pytest.fixture
def at_repo(monkeypatch: pytest.MonkeyPatch) -> Path:
    """The repository root as the working directory (where CI runs ``check --root templates``)."""
    monkeypatch.chdir(REPO)
    return REPO


def broken_copy(tmp_path: Path) -> Path:
    """A copy of the example org with a default file that is not valid (an unknown field at line 3)."""
    import shutil

    root = tmp_path / "templates"
    shutil.copytree(EXAMPLE, root)
    path = root / "system" / "defaults.yaml"
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("spec:\n", "spec:\n  numWorker: 3\n", 1), encoding="utf-8")
    return root
