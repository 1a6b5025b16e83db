"""``template-engine lsp`` in a real editor: Debian's Neovim, headless, attaches to the server with a small
Lua script (tests/fixtures/lsp/nvim_session.lua), edits a department default so that the research pairs are
no longer runnable, and this test reads what the editor received: the diagnostic at the edited line, the
hover text, and no diagnostic once the edit is undone.  scripts/test installs Neovim when it is missing."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "tests" / "fixtures" / "lsp" / "nvim_session.lua"


def test_neovim_receives_the_diagnostic_at_the_edited_line_and_the_hover(tmp_path: Path) -> None:
    nvim = shutil.which("nvim")
    assert nvim is not None, "Neovim is needed (scripts/test installs Debian's neovim)"
    org = tmp_path / "templates"
    shutil.copytree(REPO / "templates", org)
    out = tmp_path / "answer.json"
    env = {
        **os.environ,
        "ORG": str(org),
        "PYTHON": sys.executable,
        "OUT": str(out),
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
    }
    subprocess.run(
        [nvim, "--headless", "-u", "NONE", "-i", "NONE", "-n", "-c", f"luafile {SCRIPT}"],
        env=env,
        cwd=tmp_path,
        timeout=180,
        check=True,
        capture_output=True,
    )
    answer = json.loads(out.read_text("utf-8"))
    assert answer["opened"] and answer["edited"] and answer["undone"], answer
    assert answer["events"][0] == 23  # the first load composes every pair; the edits, research's 13
    assert answer["events"][1:] == [13, 13]
    assert not [d for d in answer["before"] if "NoExecute" in d["message"]]
    (found,) = [d for d in answer["after"] if "NoExecute" in d["message"]]
    assert found["line"] == answer["edited_line"]  # `effect: NoExecute`, the line the edit wrote
    assert found["severity"] == 1  # an error
    assert "not runnable in 8 of 13 pairs: nlp/mpi-horovod, nlp/pytorch-elastic" in found["message"]
    hover = answer["hover"]
    assert hover.startswith("**`labels[name=cost-center].value`** (department research defaults)")
    assert 'overrode `"cc-1000"` of system defaults (`system/defaults.yaml:12`)' in hover
    assert not [d for d in answer["restored"] if "NoExecute" in d["message"]]
