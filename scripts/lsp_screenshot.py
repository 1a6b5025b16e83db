"""docs/images/lsp-nvim.png: Neovim with ``template-engine lsp`` in tmux, captured and rendered to PNG.

Runs ``nvim`` with scripts/lsp_screenshot.lua in a detached tmux session over a copy of the example org,
captures the pane with its colours (``tmux capture-pane -e``), turns the terminal's escape sequences into
HTML and has Chromium (headless, as the browser tests use it) take the picture.  Needs tmux, nvim and
chromium (Debian packages).  Run from the repository: ``python scripts/lsp_screenshot.py``.
"""

from __future__ import annotations

import html
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "docs" / "images" / "lsp-nvim.png"
COLUMNS, ROWS = 160, 44
#: xterm's 16 colours; 16-231 a 6x6x6 cube; 232-255 greys.
BASE = [
    "#1e1e1e", "#cd3131", "#0dbc79", "#e5e510", "#2472c8", "#bc3fbc", "#11a8cd", "#e5e5e5",
    "#666666", "#f14c4c", "#23d18b", "#f5f543", "#3b8eea", "#d670d6", "#29b8db", "#ffffff",
]  # fmt: skip


def rgb(red: int, green: int, blue: int) -> str:
    return f"#{red:02x}{green:02x}{blue:02x}"


def color(n: int) -> str:
    if n < 16:
        return BASE[n]
    if n < 232:
        n -= 16
        steps = [0, 95, 135, 175, 215, 255]
        return rgb(steps[n // 36], steps[n // 6 % 6], steps[n % 6])
    grey = 8 + (n - 232) * 10
    return rgb(grey, grey, grey)


def to_html(text: str) -> str:
    out, fg, bg, bold = [], None, None, False
    for part in re.split(r"(\x1b\[[0-9;]*m)", text):
        if not part.startswith("\x1b["):
            if part:
                style = (f"color:{fg};" if fg else "") + (f"background:{bg};" if bg else "")
                style += "font-weight:bold;" if bold else ""
                out.append(
                    f'<span style="{style}">{html.escape(part)}</span>' if style else html.escape(part)
                )
            continue
        codes = [int(c) if c else 0 for c in part[2:-1].split(";")]
        i = 0
        while i < len(codes):
            c = codes[i]
            if c == 0:
                fg, bg, bold = None, None, False
            elif c == 1:
                bold = True
            elif c == 22:
                bold = False
            elif 30 <= c <= 37 or 90 <= c <= 97:
                fg = color(c - 30 if c < 90 else c - 82)
            elif 40 <= c <= 47 or 100 <= c <= 107:
                bg = color(c - 40 if c < 100 else c - 92)
            elif c in (38, 48) and i + 2 < len(codes) and codes[i + 1] == 5:
                if c == 38:
                    fg = color(codes[i + 2])
                else:
                    bg = color(codes[i + 2])
                i += 2
            elif c in (38, 48) and i + 4 < len(codes) and codes[i + 1] == 2:
                value = rgb(*codes[i + 2 : i + 5])
                fg, bg = (value, bg) if c == 38 else (fg, value)
                i += 4
            elif c == 39:
                fg = None
            elif c == 49:
                bg = None
            i += 1
    body = "".join(out)
    return (
        "<html><body style='margin:0;background:#1e1e1e'><pre style='margin:8px;color:#e5e5e5;"
        f'font:14px/1.25 "DejaVu Sans Mono",monospace\'>{body}</pre></body></html>'
    )


def main() -> None:
    session = f"lsp-shot-{os.getpid()}"
    with tempfile.TemporaryDirectory() as folder:
        org = Path(folder) / "templates"
        shutil.copytree(REPO / "templates", org)
        env = {**os.environ, "ORG": str(org), "PYTHON": sys.executable, "TERM": "tmux-256color"}
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
        script = REPO / "scripts" / "lsp_screenshot.lua"
        command = f"nvim -u NONE -i NONE -n -c 'luafile {script}'"
        subprocess.run(
            ["tmux", "new-session", "-d", "-s", session, "-x", str(COLUMNS), "-y", str(ROWS), command],
            env=env,
            check=True,
        )
        try:
            time.sleep(12)  # the server starts, loads the org twice, and the hover opens
            captured = subprocess.run(
                ["tmux", "capture-pane", "-p", "-e", "-t", session],
                check=True,
                capture_output=True,
                text=True,
            ).stdout
        finally:
            subprocess.run(["tmux", "kill-session", "-t", session], check=False)
        page = Path(folder) / "screen.html"
        page.write_text(to_html(captured), encoding="utf-8")
        subprocess.run(
            [
                os.environ.get("TEMPLATE_ENGINE_CHROMIUM", "chromium"),
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                f"--screenshot={OUT}",
                "--window-size=1370,910",
                page.as_uri(),
            ],
            check=True,
            capture_output=True,
        )
    print(OUT)


if __name__ == "__main__":
    main()
