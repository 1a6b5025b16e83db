"""Folders written aside, then put in place by renames: what ``report`` and ``db export`` share.

A folder is staged in a hidden sibling of its target (same file system, so a rename never copies) and only
replaces the target once it is whole; :func:`exists` counts a dangling symlink as something in the way.
"""

from __future__ import annotations

import secrets
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
