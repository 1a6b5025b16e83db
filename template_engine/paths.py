"""Field paths as typed values.

A path is a tuple of segments: ``str`` for a mapping key, ``int`` for a list position and :class:`Match` for
a keyed list item (``environmentVariables[name=HOME]``).  Paths are rendered as strings only at the edges.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, NamedTuple, TypeAlias


class Match(NamedTuple):
    """A keyed list item, identified by the value of its key field."""

    field: str
    value: object

    def __str__(self) -> str:
        return f"[{self.field}={self.value}]"


Segment: TypeAlias = str | int | Match
Path: TypeAlias = tuple[Segment, ...]


def format_path(path: Path) -> str:
    """``('storage', 'nfs', Match('name', 'data'), 'server')`` -> ``storage.nfs[name=data].server``."""
    out: list[str] = []
    for seg in path:
        if isinstance(seg, Match):
            out.append(str(seg))
        elif isinstance(seg, int):
            out.append(f"[{seg}]")
        else:
            out.append(f".{seg}" if out else seg)
    return "".join(out)


_TOKEN = re.compile(r"\.?([A-Za-z_][A-Za-z0-9_]*)|\[([A-Za-z_][A-Za-z0-9_]*)=([^\]]*)\]|\[(\d+)\]")


def parse_path(text: str) -> Path:
    """Parse the string form back into a path; raises ``ValueError`` on malformed input.

    A matched value that looks like an integer is compared as an integer (``ports[container=8080]``).
    """
    segments: list[Segment] = []
    pos = 0
    text = text.strip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None or (m.group(1) is not None and text[pos] == "." and pos == 0):
            raise ValueError(f"cannot read a field path at {text[pos:]!r} in {text!r}")
        if m.group(1) is not None:
            segments.append(m.group(1))
        elif m.group(2) is not None:
            raw = m.group(3)
            value: object = int(raw) if raw.isdigit() else raw
            segments.append(Match(m.group(2), value))
        else:
            segments.append(int(m.group(4)))
        pos = m.end()
    if not segments:
        raise ValueError("empty field path")
    return tuple(segments)


def is_prefix(prefix: Path, path: Path) -> bool:
    return len(prefix) <= len(path) and path[: len(prefix)] == prefix


def value_at(value: Any, *names: str) -> Any:
    """``value[names[0]][names[1]]...`` through nested mappings, or ``None`` where a step is not a mapping
    or lacks the name (the one such lookup: the cluster checks, the pod mapping and the runnable rules)."""
    for name in names:
        value = value.get(name) if isinstance(value, Mapping) else None
    return value


def with_value_at(data: Mapping[str, Any], path: tuple[str, ...], value: Any) -> dict[str, Any]:
    """A copy of ``data`` with ``path`` set to ``value`` (mappings made on the way where there are none); the
    mappings on the way keep their keys sorted, as rendered.  ``data`` is not changed."""
    out = dict(data)
    if len(path) == 1:
        out[path[0]] = value
    else:
        inner = out.get(path[0])
        out[path[0]] = with_value_at(inner if isinstance(inner, Mapping) else {}, path[1:], value)
    return dict(sorted(out.items()))
