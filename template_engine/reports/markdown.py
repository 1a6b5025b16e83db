"""``diff -o markdown``: a pull-request comment of what a change does to an org.

A heading with the summary line (as ``diff`` prints it), a table of the pairs that differ (how, their status
before and after, how many fields and object values change), then each pair's changes as a table of field,
change and the layer that now sets it.  Lists longer than :data:`FOLD` rows (a pair's changes, its object
changes, the invalid files' problems) are folded in a ``<details>`` element.

Every text that comes from the org or the command line (a value, a field path, a file, a problem, the
``--against`` ref) goes through :func:`inert`: GitHub renders Markdown inside ``<code>`` and inside a table's
cells, and mentions people, links issues and turns URLs into links there, so a template's value could ping
``@someone`` or put a link in the comment. It is HTML-escaped, ``|`` is written ``&#124;`` (a value cannot
break the table), Markdown's inline punctuation is written as character references (which CommonMark never
reads as syntax), and a zero-width space follows ``@`` and ``#`` and breaks ``://`` and ``www.`` (no
mention, no issue reference, no autolink); it reads the same once rendered.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from typing import Any

from template_engine.diff import OrgDiff, PairDiff
from template_engine.diffing.fields import FieldChange
from template_engine.diffing.objects import ObjectChange
from template_engine.kinds import DISTRIBUTED

#: A list with more rows than this is folded in ``<details>``.
FOLD = 10
#: A value longer than this is cut (with ``…``).
MAX_CELL = 120


def _code(text: str) -> str:
    text = text if len(text) <= MAX_CELL else text[: MAX_CELL - 1] + "…"
    return f"<code>{_cell(text)}</code>" if text else ""


#: A zero-width space: what breaks a mention, an issue reference or an autolink without being seen.
_ZWSP = "&#8203;"
#: Markdown's inline punctuation (code, emphasis, links and images, strikethrough; what can start syntax in
#: the middle of a line), ``|`` for the tables, and a newline (a cell is one line), after HTML escaping (which
#: has written ``&``, ``<`` and ``>``).
_INERT = str.maketrans(
    {
        **{char: f"&#{ord(char)};" for char in "\\`*_[]()~|"},
        "\n": "<br>",
        "@": "@" + _ZWSP,
        "#": "#" + _ZWSP,
    }
)
#: What GitHub's autolinks start with (``https://``, ``www.``): broken after the translation above.
_AUTOLINK = re.compile(r"://|www\.", re.IGNORECASE)


def inert(text: str) -> str:
    """``text`` as Markdown that renders as the same characters and nothing else (see the module): no
    element, emphasis, link, table cell, mention (``@``), issue reference (``#123``) nor autolink."""
    translated = html.escape(text, quote=False).translate(_INERT)  # html.escape writes no "#"
    return _AUTOLINK.sub(lambda match: match.group()[:-1] + _ZWSP + match.group()[-1], translated)


_cell = inert


def _value(value: Any) -> str:
    import json

    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def _table(head: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines


def _folded(summary: str, lines: list[str], rows: int) -> list[str]:
    """``lines`` as they are, or inside ``<details>`` when there are more than :data:`FOLD` rows."""
    if rows <= FOLD:
        return [f"**{summary}**", "", *lines, ""]
    return [f"<details><summary>{summary}</summary>", "", *lines, "", "</details>", ""]


def _status(diff: PairDiff) -> str:
    old = diff.old.status() if diff.old is not None else "—"
    new = diff.new.status() if diff.new is not None else "—"
    return old if old == new else f"{old} → {new}"


def _field_row(change: FieldChange) -> list[str]:
    old = "" if change.kind == "added" else _code(_value(change.old))
    new = "" if change.kind == "removed" else _code(_value(change.new))
    by = change.set_by or change.excluded_by or change.was_set_by
    where = _cell(by.with_layer()) if by is not None else ""
    field = _code(change.field) + (" (and combinedMasterSpec)" if change.also_master else "")
    return [field, change.kind, old, new, where]


def _object_row(change: ObjectChange) -> list[str]:
    old = "" if change.kind == "added" else _code(_value(change.old))
    new = "" if change.kind == "removed" else _code(_value(change.new))
    return [_code(change.field), change.kind, old, new]


def _pair_section(diff: PairDiff) -> list[str]:
    lines = [f"#### {_code(diff.id)} ({_cell(diff.pair.template_words)}): {diff.status}", ""]
    old_errors, new_errors = diff.error_lines()
    for title, errors in (("now fails to compose", new_errors), ("failed to compose before", old_errors)):
        if errors:
            lines += [f"{title}:", "", *(f"- {_cell(line)}" for line in errors), ""]
    if diff.changes:
        rows = [_field_row(change) for change in diff.changes]
        table = _table(("field", "change", "old", "new", "set by"), rows)
        lines += _folded(f"{len(rows)} field change{'s' * (len(rows) != 1)}", table, len(rows))
    if diff.object_changes:
        rows = [_object_row(change) for change in diff.object_changes]
        table = _table(("object value", "change", "old", "new"), rows)
        count = len(rows)
        lines += _folded(f"{count} cluster object change{'s' * (count != 1)}", table, count)
    return lines


def diff_markdown(result: OrgDiff, against: str) -> str:
    """The comment: summary, the invalid files, the table of pairs, each pair's changes."""
    lines = [f"### template-engine diff against {_code(against)}", "", f"{result.summary_line()}", ""]
    if result.broken:
        rows = [
            [_code(file), _cell(problem.one_line())]
            for file, problems in result.broken
            for problem in problems
        ]
        lines += _folded(
            f"{len(result.broken)} invalid file{'s' * (len(result.broken) != 1)} (the pairs they would make "
            "are missing)",
            _table(("file", "problem"), rows),
            len(rows),
        )
    if result.pairs:
        # A column of the kinds only where a pair is not a distributed training (docs/decisions.md, "The kind
        # in check's table"): the comment on an org of distributed templates reads as it always has.
        kinds = any(diff.pair.template.kind is not DISTRIBUTED for diff in result.pairs)
        rows = [
            [
                _code(diff.id),
                _cell(str(diff.pair.template.scope)),
                *([diff.pair.template.kind.name] if kinds else []),
                diff.status,
                _cell(_status(diff)),
                str(len(diff.changes)),
                str(len(diff.object_changes)),
            ]
            for diff in result.pairs
        ]
        head = ("pair", "template scope", *(("kind",) if kinds else ()), "change", "status", "fields")
        table = _table((*head, "object values"), rows)
        lines += _folded(f"{len(rows)} pair{'s' * (len(rows) != 1)} differ", table, len(rows))
        for diff in result.pairs:
            lines += _pair_section(diff)
    return "\n".join(lines).rstrip("\n") + "\n"


__all__ = ["FOLD", "diff_markdown", "inert"]
