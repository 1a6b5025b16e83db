"""Kubernetes resource quantities (``20M``, ``1Gi``, ``500m``) as exact numbers, for comparing requests.

Parsing is bounded before it starts: a text longer than :data:`MAX_QUANTITY_LENGTH` characters, an exponent
beyond :data:`MAX_EXPONENT` and a number that is not finite are not quantities, and the pattern cannot
backtrack (one way to read the digits), so a hostile value costs a length check.  :func:`parse_quantity`
never raises.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal
from functools import lru_cache

#: The longest text read as a quantity (surrounding blanks included); a longer one is not a quantity.
MAX_QUANTITY_LENGTH = 64
#: The largest exponent (``1e100``, ``1e-100``) of a quantity.
MAX_EXPONENT = 100

# ``[+]digits[.digits]`` or ``[+].digits``, then an exponent or a suffix.  The digits before the dot are one
# run, so a text that does not match is refused in one pass (the old ``[0-9]*\.?[0-9]+`` split a run of digits
# every possible way: quadratic).  Used with ``fullmatch``.
_QUANTITY = re.compile(
    r"(?P<number>[+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))(?:[eE](?P<exponent>[-+]?[0-9]+)|(?P<suffix>[a-zA-Z]*))"
)

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
    """The value of a quantity, or ``None`` when it is not one (``"1Gi"`` -> 1073741824); never raises.

    A number is its own value when it is finite and has at most :data:`MAX_QUANTITY_LENGTH` digits.
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return Decimal(value) if abs(value) < 10**MAX_QUANTITY_LENGTH else None
    if isinstance(value, float):
        return Decimal(str(value)) if math.isfinite(value) else None
    if not isinstance(value, str) or len(value) > MAX_QUANTITY_LENGTH:
        return None
    return _parse_text(value)


def is_quantity_text(value: str) -> bool:
    """Whether ``value`` is a quantity as Run:ai's API takes it: the grammar above, with no blanks around
    it (every such text also matches Run:ai's pattern ``^([+]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$``)."""
    return len(value) <= MAX_QUANTITY_LENGTH and value == value.strip() and _parse_text(value) is not None


#: A number and what follows it, blanks between them allowed: what :func:`nearest_quantities` reads.
_WRITTEN = re.compile(r"\s*(?P<number>[+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))\s*(?P<unit>[a-zA-Z]{1,4})\s*")
#: The suffixes of a size: what a unit written in bytes (``GB``, ``MiB``, ``mb``) may mean.
_SIZES = tuple(suffix for suffix in _SUFFIX if suffix not in ("", "n", "u", "m"))


def nearest_quantities(value: str) -> tuple[str, ...]:
    """The quantities a text that is not one was probably meant to be: ``2GB`` -> ``2G``, ``2Gi``;
    ``512 mi`` -> ``512Mi``; ``1gib`` -> ``1Gi``; nothing when the text is not a number and a unit.

    A unit written in bytes (a trailing ``B``) or in another case is matched, case aside, against the
    size suffixes: the decimal one (``G``) and, unless the unit already says which, the binary one (``Gi``).
    """
    if len(value) > MAX_QUANTITY_LENGTH:
        return ()
    m = _WRITTEN.fullmatch(value)
    if m is None:
        return ()
    number, unit = m["number"], m["unit"]
    if unit[-1] in "bB" and len(unit) > 1:
        unit = unit[:-1]
    wanted = [unit.lower()] if unit[-1] in "iI" else [unit.lower(), unit.lower() + "i"]
    found = tuple(f"{number}{suffix}" for want in wanted for suffix in _SIZES if suffix.lower() == want)
    return tuple(text for text in found if text != value and is_quantity_text(text))


@lru_cache(maxsize=1024)
def _parse_text(value: str) -> Decimal | None:
    m = _QUANTITY.fullmatch(value.strip())
    if m is None:
        return None
    number = Decimal(m["number"])  # at most MAX_QUANTITY_LENGTH characters of the pattern: always a number
    if m["exponent"] is not None:
        exponent = int(m["exponent"])  # at most MAX_QUANTITY_LENGTH digits: far below int()'s limit
        if abs(exponent) > MAX_EXPONENT:
            return None
        return number * (Decimal(10) ** exponent)
    factor = _SUFFIX.get(m["suffix"])
    return None if factor is None else number * factor


__all__ = ["MAX_EXPONENT", "MAX_QUANTITY_LENGTH", "is_quantity_text", "nearest_quantities", "parse_quantity"]
