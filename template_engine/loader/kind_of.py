"""The workload kind a template document says it is (``kind:``), or the one problem of a kind it cannot be.

Every door that reads a template without a route to say its kind (a templates folder, a git revision,
``db import``, the language server) asks here first, then validates the document against the kind's model
(:attr:`template_engine.kinds.WorkloadKind.template_model`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from template_engine.errors import Problem
from template_engine.kinds import DISTRIBUTED, KIND_BY_NAME, TEMPLATE_KINDS, WorkloadKind
from template_engine.loader.validate import locate
from template_engine.paths import Path
from template_engine.suggest import closest, did_you_mean

__all__ = ["template_kind"]

_NAMES = [kind.name for kind in TEMPLATE_KINDS]
_EXPECTED = "one of " + ", ".join(_NAMES) + " (no kind: distributed)"


def template_kind(
    data: Mapping[str, Any], file: str, lines: Mapping[Path, tuple[int, int]]
) -> tuple[WorkloadKind | None, list[Problem]]:
    """The kind of a template document as read (no ``kind``, or null: distributed), or its one problem."""
    value = data.get("kind")
    if value is None:
        return DISTRIBUTED, []
    kind = KIND_BY_NAME.get(value) if isinstance(value, str) else None
    if kind is not None and kind.template_model is not None:
        return kind, []
    where = locate(file, lines, ("kind",))
    if kind is not None:
        message = f"Run:ai has no templates of kind {kind.name!r}, only policies ({kind.policy_file})"
    elif isinstance(value, str):
        message = f"unknown kind {value!r}{did_you_mean(closest(value, _NAMES))}"
    else:
        message = f"kind must be a name, not {type(value).__name__}"
    return None, [Problem(message, ("kind",), where, _EXPECTED)]
