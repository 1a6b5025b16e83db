"""``check`` of the starter org imports only what runs (issue 20): its job object is valid, so the fast
validator (jsonschema_rs) says so and neither ``jsonschema`` (the full validator, which explains a refusal)
nor ``kubernetes_validate`` (whose schema files are read without importing it) is imported."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

RUN_CHECK = """
import sys
from template_engine.cli import main
try:
    main(["check", "--root", sys.argv[1], "-o", "json"])
except SystemExit as stop:
    code = stop.code
sys.stdout = sys.__stdout__
print("@@", code)
print("\\n".join(sorted(sys.modules)))
"""


def test_check_of_the_starter_org_imports_neither_full_validator(tmp_path: Path) -> None:
    starter = tmp_path / "starter"
    subprocess.run([sys.executable, "-m", "template_engine", "init", str(starter)], check=True)
    done = subprocess.run(
        [sys.executable, "-c", RUN_CHECK, str(starter)], capture_output=True, text=True, check=True
    )
    code, *modules = done.stdout.rsplit("@@", 1)[1].split()
    assert code in {"0", "None"}
    assert "jsonschema_rs" in modules  # the cluster step ran, on the fast path
    assert "template_engine.cluster.fastpath" in modules
    assert [m for m in modules if m.split(".")[0] in {"jsonschema", "kubernetes_validate"}] == []
