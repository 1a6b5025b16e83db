"""What the deployment tests read from deploy/Containerfile: tests/test_deploy.py, test_deploy_build.py."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEPLOY = REPO / "deploy"
CONTAINERFILE = DEPLOY / "Containerfile"


def containerfile_instructions() -> list[tuple[str, str]]:
    """``(KEYWORD, rest)`` of each instruction of the Containerfile, continuation lines joined, runs of
    spaces made one, comments left out (Dockerfile syntax: a comment is a line that starts with ``#``)."""
    instructions: list[tuple[str, str]] = []
    pending = ""
    for line in CONTAINERFILE.read_text(encoding="utf-8").splitlines():
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        pending += line.rstrip()
        if pending.endswith("\\"):
            pending = pending[:-1] + " "
            continue
        keyword, _, rest = pending.strip().partition(" ")
        instructions.append((keyword.upper(), " ".join(rest.split())))
        pending = ""
    assert not pending, "the Containerfile ends in a continuation line"
    return instructions
