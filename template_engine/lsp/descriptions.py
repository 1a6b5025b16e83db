"""Run:ai's description of a spec field (``descriptions.json``, extracted from Run:ai's OpenAPI document by
:mod:`.descriptions_source`), for completion and hover."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path as FsPath

from template_engine.paths import Match, Path

__all__ = ["description", "spec_part"]

#: Where a spec sits in each kind of document: a defaults file, a template, an asset, a policy's rules.
_ROOTS: tuple[Path, ...] = (
    ("spec",),
    ("master", "spec"),
    ("rules", "worker"),
    ("rules", "master"),
)


@cache
def _descriptions() -> dict[str, str]:
    found: dict[str, str] = json.loads(FsPath(__file__).with_name("descriptions.json").read_text("utf-8"))
    return found


def spec_part(path: Path) -> Path | None:
    """The part of a document path inside its spec (``None`` when the path is not in one)."""
    for root in _ROOTS:
        if tuple(path[: len(root)]) == root:
            return tuple(path[len(root) :])
    return None


def description(field: Path) -> str | None:
    """Run:ai's description of ``field``, a path in a spec (list items by position or identity)."""
    key = ""
    for segment in field:
        if isinstance(segment, int | Match):
            key += "[]"
        else:
            key += f".{segment}" if key else str(segment)
    return _descriptions().get(key) if key else None
