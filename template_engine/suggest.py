"""Did-you-mean: the known names closest to a misspelt one, and the hint that offers them.

One helper for every such hint (an unknown field of a document, an unknown name in an expression, a
quantity with a unit Kubernetes does not read), so they read alike: ``(did you mean 'user'?)``.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence


def closest(name: str, known: Iterable[str], n: int = 1) -> list[str]:
    """At most ``n`` of ``known`` closest to ``name`` (difflib's ratio of at least 0.6), closest first."""
    return difflib.get_close_matches(name, list(known), n=n)


def did_you_mean(options: Sequence[str]) -> str:
    """`` (did you mean 'a'?)``, `` (did you mean 'a' or 'b'?)``, or nothing when there is no option."""
    if not options:
        return ""
    shown = [repr(option) for option in options]
    words = shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + " or " + shown[-1]
    return f" (did you mean {words}?)"


__all__ = ["closest", "did_you_mean"]
