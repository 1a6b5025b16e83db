"""``serve --dev`` as a newcomer meets it (issue 31): text log lines on a terminal, and a word about the
development tokens when the seeded org has none of their departments or projects."""

from __future__ import annotations

import os
import pty
import select
import signal
import subprocess
import time
from pathlib import Path

import pytest
from conftest import TEMPLATES
from servers import EXE, free_port
from waiting import READY_WITHIN

from template_engine.service.app import unbound_dev_tokens
from template_engine.service.commands import _terminal_log_format
from template_engine.service.importer import import_folder
from template_engine.service.storage.database import create_db_engine, ensure_schema


@pytest.mark.parametrize(
    ("dev", "terminal", "variable", "chosen"),
    [
        (True, True, None, "text"),
        (True, False, None, None),  # a log collector reads the pipe: the default, JSON
        (False, True, None, None),  # a production start on a terminal: the default too
        (True, True, "json", None),  # the variable chose: its own resolution
    ],
)
def test_a_dev_terminal_reads_text_lines(
    monkeypatch: pytest.MonkeyPatch, dev: bool, terminal: bool, variable: str | None, chosen: str | None
) -> None:
    monkeypatch.delenv("TEMPLATE_ENGINE_LOG_FORMAT", raising=False)
    if variable is not None:
        monkeypatch.setenv("TEMPLATE_ENGINE_LOG_FORMAT", variable)
    assert _terminal_log_format(dev, terminal) == chosen


def _read_until(fd: int, marker: bytes) -> bytes:
    """What the terminal ``fd`` shows until ``marker`` appears (bounded: fails after READY_WITHIN s)."""
    seen = b""
    deadline = time.monotonic() + READY_WITHIN
    while marker not in seen:
        assert time.monotonic() < deadline, seen.decode(errors="replace")
        ready, _, _ = select.select([fd], [], [], 0.1)
        if ready:
            try:
                seen += os.read(fd, 65536)
            except OSError:  # the other side closed: the process ended
                break
    return seen


def test_serve_dev_on_a_terminal_writes_text_and_names_unbound_tokens(tmp_path: Path) -> None:
    """A real ``serve --dev --seed`` of an org with no research department or vision project, its stderr a
    terminal: the lines are text (not JSON), and dev-research and dev-vision are said to see the system
    scope only."""
    org = tmp_path / "org"
    org.mkdir()
    (org / "org.yaml").write_text("departments:\n- name: platform\n  projects:\n  - infra\n")
    controller, terminal = pty.openpty()
    env = {k: v for k, v in os.environ.items() if not k.startswith("TEMPLATE_ENGINE_")}
    command = [str(EXE), "serve", "--dev", "--port", str(free_port()), "--seed", str(org)]
    command += ["--database-url", f"sqlite:///{tmp_path / 'te.db'}"]
    process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=terminal, stderr=terminal, env=env)
    os.close(terminal)
    try:
        shown = _read_until(controller, b"Uvicorn running").decode()
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=READY_WITHIN)
        os.close(controller)
    lines = [line for line in shown.splitlines() if line.strip()]
    assert lines and not any(line.lstrip().startswith("{") for line in lines), shown
    assert any(" INFO uvicorn.error: Uvicorn running on http://127.0.0.1:" in line for line in lines), shown
    unbound = [line for line in lines if "development token dev-" in line]
    assert len(unbound) == 2, shown
    # logged as every other line is (logging is set up before the seed), not bare on stderr
    assert all(" WARNING template_engine.service: development token dev-" in line for line in unbound), shown
    assert "dev-research (department-admin of department 'research') matches no department" in unbound[0]
    assert "(platform): it sees the system scope only" in unbound[0]
    assert (
        "dev-vision (project-editor of project 'vision') matches no project of this database (infra)"
        in (unbound[1])
    )


def test_the_example_org_binds_every_development_token(tmp_path: Path) -> None:
    engine = create_db_engine(f"sqlite:///{tmp_path / 'te.db'}")
    try:
        ensure_schema(engine)
        assert unbound_dev_tokens(engine) == [
            "development token dev-research (department-admin of department 'research') matches no "
            "department of this database (none): it sees the system scope only; give an auth file "
            "(--auth-file) to bind tokens to this org's scopes",
            "development token dev-vision (project-editor of project 'vision') matches no project of this "
            "database (none): it sees the system scope only; give an auth file (--auth-file) to bind tokens "
            "to this org's scopes",
        ]
        import_folder(engine, TEMPLATES, subject="test")
        assert unbound_dev_tokens(engine) == []
    finally:
        engine.dispose()
