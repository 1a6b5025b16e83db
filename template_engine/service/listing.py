"""Run:ai's list parameters: ``filterBy`` (``field<op>value``), ``search``, ``sortBy``/``sortOrder``, paging.

Operators: ``==`` equal, ``!=`` not equal, ``<=``/``>=`` ordered (text order, which is time order for the
timestamps), ``=@`` contains, ``!@`` does not contain, ``=^`` starts with, ``=$`` ends with.  Fields: those of
a template's ``meta`` plus ``runnable`` (``runnable==false``).  Several ``filterBy`` all apply.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, get_args

from template_engine.errors import Problem
from template_engine.service.errors import bad_request
from template_engine.service.schemas import SortBy

#: The fields a list may be filtered and sorted by: the API's ``sortBy`` values, declared once in schemas.
FIELDS: tuple[str, ...] = get_args(SortBy)
_OPERATORS: dict[str, Callable[[str, str], bool]] = {
    "==": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
    "<=": lambda a, b: a <= b,
    ">=": lambda a, b: a >= b,
    "=@": lambda a, b: b.lower() in a.lower(),
    "!@": lambda a, b: b.lower() not in a.lower(),
    "=^": lambda a, b: a.lower().startswith(b.lower()),
    "=$": lambda a, b: a.lower().endswith(b.lower()),
}
_FILTER = re.compile(r"^(" + "|".join(FIELDS) + r")(==|!=|<=|>=|=@|!@|=\^|=\$)(.*)$", re.DOTALL)


@dataclass(frozen=True, slots=True)
class Filter:
    field: str
    test: Callable[[str, str], bool]
    value: str

    def __call__(self, entry: Mapping[str, Any]) -> bool:
        return self.test(field_text(entry, self.field), self.value)


def parse_filters(raw: Sequence[str] | None) -> list[Filter]:
    filters: list[Filter] = []
    problems: list[Problem] = []
    for index, text in enumerate(raw or ()):
        m = _FILTER.match(text)
        if m is None:
            problems.append(
                Problem(
                    f"cannot read the filter {text!r}",
                    ("filterBy", index),
                    None,
                    f"<field><operator><value>, field one of {', '.join(FIELDS)}, "
                    "operator one of == != <= >= =@ !@ =^ =$",
                )
            )
            continue
        if m.group(1) == "runnable" and m.group(3) not in ("true", "false"):
            problems.append(
                Problem(
                    f"runnable is true or false, not {m.group(3)!r}",
                    ("filterBy", index),
                    None,
                    "runnable==true or runnable==false",
                )
            )
            continue
        filters.append(Filter(m.group(1), _OPERATORS[m.group(2)], m.group(3)))
    if problems:
        raise bad_request(problems)
    return filters


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
