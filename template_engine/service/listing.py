"""Run:ai's list parameters: ``filterBy`` (``field<op>value``), ``search``, ``sortBy``/``sortOrder``, paging.

Operators: ``==`` equal, ``!=`` not equal, ``<=``/``>=`` ordered, ``=@`` contains, ``!@`` does not contain,
``=^`` starts with, ``=$`` ends with.  Several filters all apply, whether given as several ``filterBy``
parameters or joined by commas in one (``filterBy=name=@bert,runnable==true``, as Run:ai's SDK sends them): a
comma starts a new filter where a field and an operator follow it, so a value may still hold a comma.

A :class:`Listing` says which fields a list takes and how each is read: dates (ISO 8601 date or time, no zone
means UTC) compare as instants with ``== != <= >=``; ids compare as numbers with ``<=``/``>=``; booleans are
``true`` or ``false``; every other comparison is on the text.  A value that cannot be read is a 400, never
an empty list.  :data:`TEMPLATES` lists templates (the fields of ``meta`` plus ``runnable``);
:data:`WORKLOADS` lists workloads (the fields of Run:ai's ``Workload``).
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Annotated, Any, get_args

from fastapi import Query
from pydantic import WithJsonSchema

from template_engine.errors import Problem
from template_engine.service.errors import bad_request
from template_engine.service.ids import EXPECTED, id_number, refused
from template_engine.service.schemas import SortBy, WorkloadSortBy

_ORDERED: dict[str, Callable[[Any, Any], bool]] = {
    "==": operator.eq,
    "!=": operator.ne,
    "<=": operator.le,
    ">=": operator.ge,
}
_TEXT: dict[str, Callable[[Any, Any], bool]] = {
    **_ORDERED,
    "=@": lambda a, b: b.lower() in a.lower(),
    "!@": lambda a, b: b.lower() not in a.lower(),
    "=^": lambda a, b: a.lower().startswith(b.lower()),
    "=$": lambda a, b: a.lower().endswith(b.lower()),
}
_OPERATOR = "(" + "|".join(re.escape(op) for op in _TEXT) + ")"


#: An ISO 8601 date ``fromisoformat`` reads, of the years 1000 to 9999 (no February 29: a year's leap is
#: not a regular expression's; no lookahead, so that examples are quick to generate).
_DATE = (
    "[1-9][0-9]{3}-(?:(?:0[1-9]|1[0-2])-(?:0[1-9]|1[0-9]|2[0-8])|(?:0[13-9]|1[0-2])-(?:29|30)"
    "|(?:0[13578]|1[02])-31)"
)
#: An optional time of day and zone ``fromisoformat`` reads after a date.
_TIME = (
    "(?:T(?:[01][0-9]|2[0-3]):[0-5][0-9](?::[0-5][0-9](?:\\.[0-9]{3}|\\.[0-9]{6})?)?"
    "(?:Z|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])?)?"
)
#: A finite number of at most 40 characters, as :func:`_number` reads it.
_NUMBER = "[+-]?(?:[0-9]{1,18}(?:\\.[0-9]{0,15})?|\\.[0-9]{1,15})(?:[eE][+-]?[0-9]{1,2})?"


def instant(text: str) -> datetime | None:
    """An ISO 8601 date or time as an aware instant (no zone: UTC), or None."""
    try:
        found = datetime.fromisoformat(text)
    except ValueError:
        return None
    return found.replace(tzinfo=UTC) if found.tzinfo is None else found


def _digits(text: str) -> int | None:
    return id_number(text)


def _number(text: str) -> float | None:
    try:
        found = float(text) if len(text) <= 40 else None
    except ValueError:
        return None
    return found if found is not None and found == found and abs(found) != float("inf") else None


def _text(text: str) -> str:
    return text


@dataclass(frozen=True, slots=True)
class Filter:
    """One filter: the field's text is read as ``read`` reads the value, then compared by ``test``."""

    field: str
    test: Callable[[Any, Any], bool]
    value: Any
    text_of: Callable[[Mapping[str, Any], str], str]
    read: Callable[[str], Any] = _text

    def __call__(self, entry: Mapping[str, Any]) -> bool:
        found = self.read(self.text_of(entry, self.field))
        return found is not None and self.test(found, self.value)


@dataclass(frozen=True)
class Listing:
    """The fields a list is filtered and sorted by, how each is read, and where an entry keeps it."""

    fields: tuple[str, ...]
    text_of: Callable[[Mapping[str, Any], str], str]
    dates: frozenset[str] = frozenset()
    ids: frozenset[str] = frozenset()
    booleans: frozenset[str] = frozenset()
    #: Fields read as numbers (quotas), compared with ``== != <= >=``; an empty field matches no filter.
    numbers: frozenset[str] = frozenset()
    #: Values that mean another value of a field (``scopeType==tenant`` is ``scopeType==system``).
    aliases: Mapping[tuple[str, str], str] = field(default_factory=dict)

    @property
    def _field(self) -> str:
        return "(" + "|".join(self.fields) + ")"

    def _one(self) -> str:
        """One filter as :meth:`_parse` takes it, written as a regular expression (ECMA-262 and Python
        alike): each field with the operators and values it takes."""
        # A value without a comma: the service reads one (it splits only where a field and an operator
        # follow), but a lookahead here makes generating examples from the document slow (hypothesis).
        text = "[^,]*"
        ordered = "(==|!=|<=|>=)"
        typed = self.dates | self.booleans | self.numbers | self.ids
        shapes = []
        plain = [name for name in self.fields if name not in typed]
        if plain:
            shapes.append(f"(?:{'|'.join(plain)}){_OPERATOR}{text}")
        if self.booleans:
            shapes.append(f"(?:{'|'.join(sorted(self.booleans))}){_OPERATOR}(?:true|false)")
        if self.dates:
            shapes.append(f"(?:{'|'.join(sorted(self.dates))}){ordered}{_DATE}{_TIME}")
        if self.numbers:
            shapes.append(f"(?:{'|'.join(sorted(self.numbers))}){ordered}{_NUMBER}")
        if self.ids:
            ids = "|".join(sorted(self.ids))
            shapes.append(f"(?:{ids}){_OPERATOR}[0-9]{{1,18}}")
        return "(?:" + "|".join(shapes) + ")"

    @property
    def pattern(self) -> str:
        """What the OpenAPI document says of a ``filterBy`` value: exactly the filters :meth:`parse` takes
        (issue 30: the document took any operator on any field), one or several joined by commas."""
        one = self._one()
        return f"^{one}(?:,{one})*(?![\\s\\S])"  # the end, where '$' would let a newline past

    def syntax(self) -> str:
        """What the OpenAPI document says of ``filterBy``."""
        parts = [
            "field<op>value; several filters all apply (repeat the parameter, or join them with commas: "
            f"{self.fields[0]}=@a,{self.fields[1]}!=b). Fields: " + ", ".join(self.fields) + ". Operators: "
            "== != <= >= =@ (contains) !@ (does not contain) =^ (starts with) =$ (ends with)."
        ]
        if self.dates:
            parts.append(
                f"{', '.join(sorted(self.dates))} take an ISO 8601 date or time (2024-05-01, "
                "2024-05-01T12:00:00Z; no zone means UTC) with == != <= >= only."
            )
        if self.ids:
            parts.append(
                f"{' and '.join(sorted(self.ids))} take an id (1 to 18 ASCII digits) and compare as numbers "
                "with <= and >=."
            )
        if self.booleans:
            parts.append(f"{', '.join(sorted(self.booleans))}: true or false.")
        if self.numbers:
            parts.append(f"{', '.join(sorted(self.numbers))} compare as numbers with == != <= >=.")
        parts.append("A value that cannot be read is a 400.")
        return " ".join(parts)

    def split(self, text: str) -> list[str]:
        """``a==1,b=@x`` -> ``['a==1', 'b=@x']``: a comma starts a filter where a field and an operator
        follow."""
        starts = [0, *(m.start() + 1 for m in re.finditer(f",(?={self._field}{_OPERATOR})", text))]
        ends = [s - 1 for s in starts[1:]] + [len(text)]
        return [text[start:end] for start, end in zip(starts, ends, strict=True)]

    def _parse(self, text: str) -> Filter | tuple[str, str]:
        """The filter ``text`` says, or what is wrong with it and what was expected."""
        m = re.match(f"^{self._field}{_OPERATOR}(.*)$", text, re.DOTALL)
        if m is None:
            return (
                f"cannot read the filter {text!r}",
                f"<field><operator><value>, field one of {', '.join(self.fields)}, "
                "operator one of == != <= >= =@ !@ =^ =$",
            )
        name, op, value = m.groups()
        value = self.aliases.get((name, value), value)
        if name in self.booleans:
            if value not in ("true", "false"):
                return f"{name} is true or false, not {value!r}", f"{name}==true or {name}==false"
            return Filter(name, _TEXT[op], value, self.text_of)
        if name in self.dates:
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
            return Filter(name, _ORDERED[op], when, self.text_of, instant)
        if name in self.numbers:
            number = _number(value)
            if op not in _ORDERED or number is None:
                return f"{name} compares numbers with == != <= >=, not {text!r}", f"{name}>=2"
            return Filter(name, _ORDERED[op], number, self.text_of, _number)
        if name in self.ids:
            number = _digits(value)
            if number is None:  # an id field's value is an id, whatever the operator
                return f"{name}: {refused(value)}", f"{name}{op}1 ({EXPECTED})"
            if op in ("<=", ">="):
                return Filter(name, _ORDERED[op], number, self.text_of, _digits)
        return Filter(name, _TEXT[op], value, self.text_of)

    def parse(self, raw: Sequence[str] | None) -> list[Filter]:
        filters: list[Filter] = []
        problems: list[Problem] = []
        for index, given in enumerate(raw or ()):
            for text in self.split(given):
                parsed = self._parse(text)
                if isinstance(parsed, Filter):
                    filters.append(parsed)
                else:
                    problems.append(Problem(parsed[0], ("filterBy", index), None, parsed[1]))
        if problems:
            raise bad_request(problems)
        return filters

    def sort_key(self, name: str, key: str) -> Callable[[Mapping[str, Any]], tuple[str, str]]:
        """Sort by the text of ``name``, then by the entry's ``key`` (its id) for a stable order."""
        return lambda entry: (self.text_of(entry, name), self.text_of(entry, key))


def _template_text(entry: Mapping[str, Any], name: str) -> str:
    """What a template filter or sort compares: ``runnable`` from ``runnable.isRunnable``, the rest from
    ``meta``."""
    if name == "runnable":
        return "true" if entry["runnable"]["isRunnable"] else "false"
    value = entry["meta"].get(name)
    return "" if value is None else str(value)


def _workload_text(entry: Mapping[str, Any], name: str) -> str:
    value = entry.get(name)
    return "" if value is None else str(value)


#: Templates: the fields of ``meta`` and ``runnable`` (the API's ``sortBy`` values, declared in schemas).
TEMPLATES = Listing(
    get_args(SortBy),
    _template_text,
    dates=frozenset({"createdAt", "updatedAt"}),
    ids=frozenset({"projectId", "departmentId"}),
    booleans=frozenset({"runnable"}),
    aliases={("scopeType", "tenant"): "system"},
)
#: Workloads: the fields of Run:ai's ``Workload`` (those the service has no value for read as empty).
WORKLOADS = Listing(
    get_args(WorkloadSortBy),
    _workload_text,
    dates=frozenset({"createdAt", "deletedAt", "completedAt", "phaseUpdatedAt", "guaranteedRuntimeEndsAt"}),
    ids=frozenset({"projectId", "departmentId"}),
)

#: The fields a template list may be filtered and sorted by.
FIELDS: tuple[str, ...] = TEMPLATES.fields
FILTER_PATTERN = TEMPLATES.pattern
FILTER_SYNTAX = TEMPLATES.syntax()
FilterBy = Annotated[
    list[Annotated[str, WithJsonSchema({"type": "string", "pattern": TEMPLATES.pattern})]] | None,
    Query(description=FILTER_SYNTAX),
]
WorkloadFilterBy = Annotated[
    list[Annotated[str, WithJsonSchema({"type": "string", "pattern": WORKLOADS.pattern})]] | None,
    Query(description=WORKLOADS.syntax()),
]


def parse_filters(raw: Sequence[str] | None) -> list[Filter]:
    return TEMPLATES.parse(raw)


def field_text(entry: Mapping[str, Any], name: str) -> str:
    return _template_text(entry, name)


def needs_composition(filters: Sequence[Filter], sort_by: str | None) -> bool:
    return sort_by == "runnable" or any(f.field == "runnable" for f in filters)


def sort_key(name: str) -> Callable[[Mapping[str, Any]], tuple[str, str]]:
    return lambda entry: (_template_text(entry, name), entry["meta"]["id"])
