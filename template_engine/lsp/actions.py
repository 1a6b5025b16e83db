"""Code actions: exclude an inherited item here, override it here, apply a did-you-mean.

On the line of a keyed list of a defaults file or template (``labels:``, or inside one of its items), each
item a lower layer gives (:func:`~.complete.inherited_items`) can be excluded here (``- name: X`` and
``exclude: true``, the merge's own directive) or overridden here (the item as the pairs have it, to edit).
On an unknown field that ``validate`` reports, the closest field name of the schema at that place (the
same ``difflib`` choice ``validate`` words as "did you mean") replaces it.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass

import yaml

from template_engine.lsp.analysis import Analysis
from template_engine.lsp.complete import (
    inherited_items,
    kind_of_file,
    schema_at,
    schema_kind,
    schema_of,
    yaml_context,
)
from template_engine.lsp.diagnostics import Diagnostic
from template_engine.paths import Path, format_path

__all__ = ["Action", "Edit", "actions", "did_you_mean"]


@dataclass(frozen=True, slots=True)
class Edit:
    """Replace the text from (line, column) to (end_line, end_column), all from 0, by ``text``."""

    line: int
    column: int
    end_line: int
    end_column: int
    text: str


@dataclass(frozen=True, slots=True)
class Action:
    title: str
    #: ``quickfix`` (a did-you-mean) or ``refactor`` (exclude, override).
    kind: str
    edits: tuple[Edit, ...]
    diagnostic: Diagnostic | None = None


def _list_at(lines: Sequence[str], line: int) -> tuple[Path, int] | None:
    """The keyed list the cursor's line is in or names (its document path) and the line of its key."""
    if not 0 <= line < len(lines):
        return None
    path, value_of, typed = yaml_context(lines, line, len(lines[line]))
    if value_of is not None and not typed and not lines[line].lstrip().startswith("-"):
        path = (*path, value_of)  # ``labels:``: the list it opens
        key_line = line
    elif 0 in path:
        cut = len(path) - 1 - list(reversed(path)).index(0)
        path = path[:cut]
        key_line = _key_line(lines, line, str(path[-1])) if path else -1
    else:
        return None
    return (path, key_line) if path and key_line >= 0 else None


def _key_line(lines: Sequence[str], line: int, key: str) -> int:
    for number in range(line, -1, -1):
        if lines[number].strip().removeprefix("- ").startswith(f"{key}:"):
            return number
    return -1


def _item_text(indent: str, fields: dict[str, object]) -> str:
    dumped = yaml.safe_dump([fields], sort_keys=False, default_flow_style=False, allow_unicode=True)
    return "".join(f"{indent}{row}\n" for row in dumped.splitlines())


def actions(
    analysis: Analysis | None, file: str, lines: Sequence[str], line: int, found: Sequence[Diagnostic]
) -> list[Action]:
    """The code actions at ``line`` (from 0) of ``file``; ``found``: the diagnostics the editor sent."""
    out = [fix for diagnostic in found if (fix := did_you_mean(file, lines, diagnostic)) is not None]
    if kind_of_file(file) not in ("defaults", "template"):
        return out
    place = _list_at(lines, line)
    if place is None:
        return out
    path, key_line = place
    key_text = lines[key_line]
    indent = key_text[: len(key_text) - len(key_text.lstrip())]
    if key_text.lstrip().startswith("- "):
        indent += "  "
    written = "\n".join(lines)
    at = Edit(key_line + 1, 0, key_line + 1, 0, "")
    for inherited in inherited_items(analysis, file, path):
        field = f"{format_path(path[1:] if path[:1] == ('spec',) else path)}[name={inherited.key}]"
        excluded = _item_text(indent, {"name": inherited.key, "exclude": True})
        if f"name: {inherited.key}\n" not in written + "\n":
            out.append(
                Action(
                    f"Exclude {field} here (from {inherited.source})",
                    "refactor",
                    (Edit(at.line, 0, at.line, 0, excluded),),
                )
            )
            override = {"name": inherited.key, **{k: v for k, v in inherited.item.items() if k != "name"}}
            out.append(
                Action(
                    f"Override {field} here (from {inherited.source})",
                    "refactor",
                    (Edit(at.line, 0, at.line, 0, _item_text(indent, override)),),
                )
            )
    return out


def did_you_mean(file: str, lines: Sequence[str], diagnostic: Diagnostic) -> Action | None:
    """Replace an unknown field by the schema's closest name at its place, when there is one."""
    kind = kind_of_file(file)
    if kind is None or not diagnostic.path or not isinstance(diagnostic.path[-1], str):
        return None
    name = diagnostic.path[-1]
    schema = schema_of(schema_kind(file, lines) or kind)
    allowed = {
        key for node in schema_at(schema, diagnostic.path[:-1]) for key in node.get("properties") or {}
    }
    if not allowed or name in allowed:
        return None
    close = difflib.get_close_matches(name, sorted(allowed), n=1)
    if not close:
        return None
    line = diagnostic.line - 1
    text = lines[line] if 0 <= line < len(lines) else ""
    start = text.find(name, max(diagnostic.column - 1, 0))
    if start < 0:
        return None
    edit = Edit(line, start, line, start + len(name), close[0])
    return Action(f"Change {name!r} to {close[0]!r}", "quickfix", (edit,), diagnostic)
