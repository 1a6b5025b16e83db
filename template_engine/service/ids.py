"""Department and project ids as the service reads them, wherever they come from: a path, a query
(``departmentId``, ``projectId``, ``scopeId``) or a body (a template's ``meta.scopeId``, a preview's scope,
an asset's ``meta.departmentId``, a workload's ``projectId``).

An id is 1 to 18 ASCII digits (:data:`~.schemas.ID_PATTERN`), nothing else: Python's ``int()`` and
``str.isdigit()`` also take Unicode digits (an Arabic-Indic one, U+0661, is read as 1; a superscript
three, U+00B3, is a digit to ``isdigit()`` but ``int()`` raises on it), so neither is asked.
Every reader goes through :func:`id_number` or :func:`parse_id`; what they refuse is a 400 naming the field.
"""

from __future__ import annotations

import re

from template_engine.models.documents import PATTERN_WORDS
from template_engine.models.orgunit import UUID_PATTERN
from template_engine.paths import Path
from template_engine.service.errors import field_error
from template_engine.service.schemas import ID_PATTERN

_ID = re.compile(ID_PATTERN.removeprefix("^").removesuffix("$"))
#: What a refused id's problem says was expected: the same words wherever an id is read (a path, a query,
#: a body, ``filterBy``, org.yaml), since a pattern's problem says ``must be`` these words too.
EXPECTED = PATTERN_WORDS[ID_PATTERN]


_UUID = re.compile(UUID_PATTERN.removeprefix("^").removesuffix("$"))
#: What a refused cluster id says was expected: Run:ai names a cluster by its UUID.
UUID_EXPECTED = PATTERN_WORDS[UUID_PATTERN]


def is_uuid(value: object) -> bool:
    """Whether ``value`` is a UUID as text (a cluster's id, as Run:ai gives it)."""
    return isinstance(value, str) and _UUID.fullmatch(value) is not None


def id_number(value: object) -> int | None:
    """``value`` (text, or a JSON integer) as an id; ``None`` when it is not 1 to 18 ASCII digits."""
    if isinstance(value, bool):
        return None
    text = str(value) if isinstance(value, int | str) else None
    if text is None or _ID.fullmatch(text) is None:
        return None
    return int(text)


def parse_id(value: object, field: str | Path, what: str = "id") -> int:
    """``value`` as an id (:func:`id_number`); a 400 on ``field`` when it is not one."""
    number = id_number(value)
    if number is None:
        path = (field,) if isinstance(field, str) else field
        raise field_error(path, refused(value), EXPECTED)
    return number


def refused(value: object) -> str:
    """What a 400 says of ``value`` where an id belongs: a pattern's words, :data:`EXPECTED`."""
    shown = repr(value)
    return f"must be {EXPECTED} (got {shown if len(shown) <= 80 else shown[:77] + '...'})"


__all__ = ["EXPECTED", "id_number", "parse_id", "refused"]
