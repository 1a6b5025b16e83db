"""Folders written aside, then put in place by renames: what ``report`` and ``db export`` share.

A folder is staged in a hidden sibling of its target (same file system, so a rename never copies) and only
replaces the target once it is whole; :func:`exists` counts a dangling symlink as something in the way.
"""

from __future__ import annotations

import secrets
import shutil
from pathlib import Path


def exists(path: Path) -> bool:
    """Whether anything is at ``path``, a dangling symlink included."""
    return path.exists() or path.is_symlink()


def sibling(target: Path, what: str) -> Path:
    """A new, empty, hidden folder next to ``target`` (so that renames between them never copy)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    while True:
        path = target.parent / f".{target.name[:64]}.{what}-{secrets.token_hex(6)}"
        try:
            path.mkdir()
        except FileExistsError:
            continue
        return path


def put_in_place(staged: Path, out: Path, what: str) -> None:
    """Replace ``out`` (absent, or an earlier output) by the whole folder ``staged``, by renames only.

    The earlier output is moved aside first and put back if the second rename fails, so ``out`` is always
    either the old folder or the new one; ``what`` names the aside folder (``report``, ``manifests``).
    """
    if not exists(out):
        staged.rename(out)
        return
    previous = sibling(out, "previous")
    out.rename(previous / what)
    try:
        staged.rename(out)
    except OSError:
        (previous / what).rename(out)
        previous.rmdir()
        raise
    shutil.rmtree(previous, ignore_errors=True)
