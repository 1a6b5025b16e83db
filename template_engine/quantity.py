"""Kubernetes resource quantities (``20M``, ``1Gi``, ``500m``) as exact numbers, for comparing requests."""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from functools import lru_cache

_QUANTITY = re.compile(r"^([+]?[0-9]*\.?[0-9]+|[+]?[0-9]+\.)(([eE][-+]?[0-9]+)|[a-zA-Z]*)$")

_SUFFIX = {
    "": Decimal(1),
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "k": Decimal(10) ** 3,
    "M": Decimal(10) ** 6,
    "G": Decimal(10) ** 9,
    "T": Decimal(10) ** 12,
    "P": Decimal(10) ** 15,
    "E": Decimal(10) ** 18,
    "Ki": Decimal(2) ** 10,
    "Mi": Decimal(2) ** 20,
    "Gi": Decimal(2) ** 30,
    "Ti": Decimal(2) ** 40,
    "Pi": Decimal(2) ** 50,
    "Ei": Decimal(2) ** 60,
}


def parse_quantity(value: object) -> Decimal | None:
    """The value of a quantity, or ``None`` when it is not one (``"1Gi"`` -> 1073741824)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return Decimal(str(value))
    if not isinstance(value, str):
        return None
    return _parse_text(value)


@lru_cache(maxsize=1024)
def _parse_text(value: str) -> Decimal | None:
    m = _QUANTITY.match(value.strip())
    if m is None:
        return None
    try:
        number = Decimal(m.group(1))
        if m.group(3):
            return number * (Decimal(10) ** int(m.group(3)[1:]))
        factor = _SUFFIX.get(m.group(2))
    except InvalidOperation:
        return None
    return None if factor is None else number * factor
