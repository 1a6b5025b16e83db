"""What no database stores and no answer can carry, said once for every door.

Text holding a NUL character (no database stores it) or a lone surrogate (not Unicode text), a number that
is not finite, a key that is not text, a key given twice, and in a document column anything that is not a
JSON value.  :func:`text_problem` is the rule on one text (the YAML reader applies it while it builds a
file, with lines); :func:`unstorable` is the one walk of a value that the API's bodies, ``db import``,
``db export`` and the repository's last guard all use.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from template_engine.paths import Path

#: Characters no text may hold: NUL (no database stores it) and lone surrogates (not Unicode text).
BAD_TEXT = re.compile(r"[\x00\ud800-\udfff]")
TEXT_EXPECTED = "text without NUL characters or lone surrogates"
KEY_EXPECTED = "keys without NUL characters or lone surrogates"

#: What :func:`unstorable` says of one place: its path, what is wrong, what was expected.
Unfit = tuple[Path, str, str]
#: Words for a value the walk does not know (``None``: it is not a JSON value).
Other = Callable[[Any], tuple[str, str] | None]


def text_problem(text: str) -> str | None:
    """Why ``text`` cannot be stored or answered (a NUL character, a lone surrogate), or ``None``."""
    found = BAD_TEXT.search(text)
    if found is None:
        return None
    if found.group() == "\x00":
        return "holds a NUL character (\\u0000)"
    return f"holds a lone surrogate ({ascii(found.group())[1:-1]}), which is not Unicode text"


def unstorable(
    value: Any, document: bool = True, other: Other | None = None, max_depth: int | None = None
) -> Iterator[Unfit]:
    """Every place of ``value`` that cannot be stored, in document order, walked without recursion (values
    come from anyone); ``document``: it goes to a JSON column (else only a text or a number is looked at).

    A mapping with a ``repeated`` attribute (a decoder's record of keys given twice) has each such key named.
    ``other`` words a value of another type; beyond ``max_depth`` levels the walk says so and stops.
    """
    stack: list[tuple[Path, Any]] = [((), value)]
    while stack:
        path, item = stack.pop()
        if max_depth is not None and len(path) > max_depth:
            yield path[:max_depth], f"the document is nested more than {max_depth} levels deep", ""
            return
        if isinstance(item, str):
            why = text_problem(item)
            if why is not None:
                yield path, f"the text {why}", TEXT_EXPECTED
        elif isinstance(item, bool) or item is None or (isinstance(item, int) and not isinstance(item, bool)):
            continue
        elif isinstance(item, float):
            if not math.isfinite(item):
                yield path, f"the number {item} is not finite", "a finite number"
        elif document and isinstance(item, Mapping):
            children: list[tuple[Path, Any]] = []
            bad: set[str] = set()
            for key, child in item.items():
                why = text_problem(key) if isinstance(key, str) else "is not text"
                if why is None:
                    children.append(((*path, key), child))
                else:
                    bad.add(key)
                    yield path, f"the key {key!r} {why}", KEY_EXPECTED
            for key in getattr(item, "repeated", ()):
                if key not in bad:
                    yield (*path, key), f"the key {key!r} is given more than once", "each key once"
            stack.extend(reversed(children))
        elif document and isinstance(item, list | tuple):
            stack.extend(reversed([((*path, index), child) for index, child in enumerate(item)]))
        elif document:
            words = other(item) if other is not None else None
            if words is None:
                yield path, f"a {type(item).__name__} is not a JSON value", "a JSON value"
            else:
                yield path, *words


__all__ = ["BAD_TEXT", "KEY_EXPECTED", "TEXT_EXPECTED", "Unfit", "text_problem", "unstorable"]
