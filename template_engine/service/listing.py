"""Run:ai's list parameters: ``filterBy`` (``field<op>value``), ``search``, ``sortBy``/``sortOrder``, paging.

Operators: ``==`` equal, ``!=`` not equal, ``<=``/``>=`` ordered, ``=@`` contains, ``!@`` does not contain,
``=^`` starts with, ``=$`` ends with.  Fields: those of a template's ``meta`` plus ``runnable``
(``runnable==false``).  Several filters all apply, whether given as several ``filterBy`` parameters or joined
by commas in one (``filterBy=name=@bert,runnable==true``, as Run:ai's SDK sends them): a comma starts a new
filter where a field and an operator follow it, so a value may still hold a comma.

Values are read by the field's kind, and a value that cannot be read is a 400, never an empty list:
``createdAt``/``updatedAt`` take an ISO 8601 date or time (``2024-05-01``, ``2024-05-01T12:00:00Z``; no zone
means UTC) and compare as instants with ``== != <= >=``; ``projectId``/``departmentId`` compare as numbers
with ``<=``/``>=``; ``runnable`` is ``true`` or ``false``; every other comparison is on the text.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Annotated, Any, get_args

from fastapi import Query
from pydantic import WithJsonSchema

from template_engine.errors import Problem
from template_engine.service.errors import bad_request
from template_engine.service.schemas import SortBy

#: The fields a list may be filtered and sorted by: the API's ``sortBy`` values, declared once in schemas.
FIELDS: tuple[str, ...] = get_args(SortBy)
_DATES = frozenset({"createdAt", "updatedAt"})
_IDS = frozenset({"projectId", "departmentId"})
_ORDERED: dict[str, Callable[[Any, Any], bool]] = {
    "==": operator.eq,
    "!=": operator.ne,
    "<=": operator.le,
    ">=": operator.ge,
}
_TEXT: dict[str, Callable[[Any, Any], bool]] = {
    "==": operator.eq,
    "!=": operator.ne,
    "<=": operator.le,
    ">=": operator.ge,
    "=@": lambda a, b: b.lower() in a.lower(),
    "!@": lambda a, b: b.lower() not in a.lower(),
    "=^": lambda a, b: a.lower().startswith(b.lower()),
    "=$": lambda a, b: a.lower().endswith(b.lower()),
}
_FIELD = "(" + "|".join(FIELDS) + ")"
_OPERATOR = "(" + "|".join(re.escape(op) for op in _TEXT) + ")"
_FILTER = re.compile(f"^{_FIELD}{_OPERATOR}(.*)$", re.DOTALL)
_NEXT = re.compile(f",(?={_FIELD}{_OPERATOR})")

#: What the OpenAPI document says of ``filterBy``: the pattern every value starts with, and the rules.
FILTER_PATTERN = f"^{_FIELD}{_OPERATOR}"
FILTER_SYNTAX = (
    "field<op>value, e.g. runnable==false; several filters all apply (repeat the parameter, or join them "
    "with commas: name=@bert,runnable==true). Fields: " + ", ".join(FIELDS) + ". Operators: == != <= >= "
    "=@ (contains) !@ (does not contain) =^ (starts with) =$ (ends with). createdAt and updatedAt take an "
    "ISO 8601 date or time (2024-05-01, 2024-05-01T12:00:00Z; no zone means UTC) with == != <= >= only; "
    "projectId and departmentId compare as numbers with <= and >=; runnable is true or false. A value "
    "that cannot be read is a 400."
)
FilterBy = Annotated[
    list[Annotated[str, WithJsonSchema({"type": "string", "pattern": FILTER_PATTERN})]] | None,
    Query(description=FILTER_SYNTAX),
]


def instant(text: str) -> datetime | None:
    """An ISO 8601 date or time as an aware instant (no zone: UTC), or None."""
    try:
        found = datetime.fromisoformat(text)
    except ValueError:
        return None
    return found.replace(tzinfo=UTC) if found.tzinfo is None else found


def _digits(text: str) -> int | None:
    return int(text) if text.isascii() and text.isdigit() and len(text) <= 18 else None


def _text(text: str) -> str:
    return text


@dataclass(frozen=True, slots=True)
class Filter:
    """One filter: the field's text is read as ``read`` reads the value, then compared by ``test``."""

    field: str
    test: Callable[[Any, Any], bool]
    value: Any
    read: Callable[[str], Any] = _text

    def __call__(self, entry: Mapping[str, Any]) -> bool:
        found = self.read(field_text(entry, self.field))
        return found is not None and self.test(found, self.value)


def _parse(text: str) -> Filter | tuple[str, str]:
    """The filter ``text`` says, or what is wrong with it and what was expected."""
    m = _FILTER.match(text)
    if m is None:
        return (
            f"cannot read the filter {text!r}",
            f"<field><operator><value>, field one of {', '.join(FIELDS)}, "
            "operator one of == != <= >= =@ !@ =^ =$",
        )
    name, op, value = m.groups()
    if name == "runnable":
        if value not in ("true", "false"):
            return f"runnable is true or false, not {value!r}", "runnable==true or runnable==false"
        return Filter(name, _TEXT[op], value)
    if name in _DATES:
        if op not in _ORDERED:
            return (
                f"{name} is compared with == != <= >=, not {op}",
                f"{name}>=2024-05-01 or {name}<=2024-05-01T12:00:00Z",
            )
        when = instant(value)
        if when is None:
            return (
                f"{name} needs an ISO 8601 date or time, not {value!r}",
                "a date such as 2024-05-01 or a time such as 2024-05-01T12:00:00Z",
            )
        return Filter(name, _ORDERED[op], when, instant)
    if name in _IDS and op in ("<=", ">="):
        number = _digits(value)
        if number is None:
            return f"{name}{op} compares ids as numbers, not {value!r}", f"{name}{op}1"
        return Filter(name, _ORDERED[op], number, _digits)
    return Filter(name, _TEXT[op], value)


def parse_filters(raw: Sequence[str] | None) -> list[Filter]:
    filters: list[Filter] = []
    problems: list[Problem] = []
    for index, given in enumerate(raw or ()):
        for text in split_filters(given):
            parsed = _parse(text)
            if isinstance(parsed, Filter):
                filters.append(parsed)
            else:
                problems.append(Problem(parsed[0], ("filterBy", index), None, parsed[1]))
    if problems:
        raise bad_request(problems)
    return filters


def split_filters(text: str) -> list[str]:
    """``a==1,b=@x`` -> ``['a==1', 'b=@x']``: a comma starts a filter where a field and an operator follow."""
    starts = [0, *(m.start() + 1 for m in _NEXT.finditer(text))]
    ends = [s - 1 for s in starts[1:]] + [len(text)]
    return [text[start:end] for start, end in zip(starts, ends, strict=True)]


def field_text(entry: Mapping[str, Any], name: str) -> str:
    """What a filter or sort compares: ``runnable`` from ``runnable.isRunnable``, the rest from ``meta``."""
    if name == "runnable":
        return "true" if entry["runnable"]["isRunnable"] else "false"
    value = entry["meta"].get(name)
    return "" if value is None else str(value)


def needs_composition(filters: Sequence[Filter], sort_by: str | None) -> bool:
    return sort_by == "runnable" or any(f.field == "runnable" for f in filters)


def sort_key(name: str) -> Callable[[Mapping[str, Any]], tuple[str, str]]:
    return lambda entry: (field_text(entry, name), entry["meta"]["id"])
