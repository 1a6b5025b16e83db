"""How the policy step reads a plain spec: whether a value is unset, and the value at a field path."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any


def unset(value: Any) -> bool:
    """No value: ``None``, an empty text, list or mapping (what a rule's ``required`` refuses)."""
    return value is None or value == "" or value == [] or value == {}


def field_value(data: Any, path: Iterable[str]) -> Any:
    """The value at the field names ``path`` of ``data`` (a spec as plain data), or ``None``."""
    for name in path:
        if not isinstance(data, Mapping):
            return None
        data = data.get(name)
    return data
