"""What a piece of work will cost, priced from its documents before it runs.

:mod:`.expressions` bounds one composition by construction (its :class:`~.expressions.Budget`); a request
that composes many (a list, an impact, a ``validateOnly`` write) is priced as a whole before any of them
runs, from the documents each composition reads: one unit per JSON value and per 128 characters of text,
:data:`EXPRESSION_PRICE` units per value that holds an expression (it is parsed, checked and rendered for
each replica, where a plain value is only copied), and :data:`COMPOSITION_PRICE` units for each composition
(its layers, merges and checks).

The units are calibrated, not exact: on the reference machine (``docs/performance.md``) a unit is 0.4 to
0.9 µs of CPU in a service request (the first for templates of 1,000 expressions, the second for the
example org's small documents).  Pure: documents in,
numbers out; the edges decide what a request may spend.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from template_engine.diffing.pairs import Pair, dependencies, documents
from template_engine.loader.tree import CLUSTER_FILE
from template_engine.org import Org
from template_engine.render import is_expression

__all__ = [
    "COMPOSITION_PRICE",
    "EXPRESSION_PRICE",
    "Pricer",
    "data_bytes",
    "data_price",
]

#: Units of a value holding an expression (``{{`` or ``{%``): measured at 30 to 60 times a plain value.
EXPRESSION_PRICE = 50
#: A text is priced a unit more per ``2 ** TEXT_UNIT_SHIFT`` (128) characters: what reading it from the
#: database, scanning it and writing it in an answer costs (about 5 ns a character, a unit per 100).
TEXT_UNIT_SHIFT = 7
#: Units of one composition beyond its documents' values.
COMPOSITION_PRICE = 1_000


def data_price(data: Any, expression: int = EXPRESSION_PRICE) -> int:
    """The units of one document's data: a unit per JSON value (objects, arrays and scalars; keys are not
    counted, as ``MAX_VALUES`` does not count them) and one per 128 characters of a text (its bytes, issue
    30), ``expression`` for a text with an expression (to read and validate a document, that is 1: nothing
    is rendered).  Walked without recursion, linear in the
    values."""
    total = 0
    stack: list[Any] = [data]
    while stack:
        value = stack.pop()
        if isinstance(value, str):
            total += expression if is_expression(value) else 1 + (len(value) >> TEXT_UNIT_SHIFT)
        elif isinstance(value, Mapping):
            total += 1
            stack.extend(value.values())
        elif isinstance(value, list | tuple):
            total += 1
            stack.extend(value)
        else:
            total += 1
    return total


#: Bytes of a JSON scalar other than text (a number, ``true``, ``null``), at most: a float's ``repr``.
_SCALAR_BYTES = 24


def data_bytes(data: Any) -> int:
    """The bytes of ``data`` written as JSON, bounded from above: each text its characters times their
    widest UTF-8 form (1 for ASCII text, else 4) and its quotes, each key likewise with its colon, each
    other scalar :data:`_SCALAR_BYTES`, each container its brackets and commas.  Walked without recursion,
    linear in the values; a text's only cost is ``len`` (and ``isascii``)."""
    total = 0
    stack: list[Any] = [data]
    pop, push = stack.pop, stack.append
    while stack:
        value = pop()
        kind = type(value)
        if kind is str:
            total += (len(value) if value.isascii() else 4 * len(value)) + 3
        elif kind is dict or isinstance(value, Mapping):
            total += 2
            for key, item in value.items():
                name = key if type(key) is str else str(key)
                total += (len(name) if name.isascii() else 4 * len(name)) + 4
                push(item)
        elif kind is list or isinstance(value, list | tuple):
            total += 2
            for item in value:
                push(item)
        else:
            total += _SCALAR_BYTES
    return total


def _document_data(document: Any) -> Any:
    """The data a document of an org was read from (a template, defaults, an asset: its source's data; a
    policy: its own)."""
    source = getattr(document, "source", None)
    if source is not None:
        return source.data
    return getattr(document, "data", None)


class Pricer:
    """Prices compositions of one or more orgs, each document's data priced once (the pricer holds what it
    priced, so an id is never reused meanwhile)."""

    def __init__(self) -> None:
        self._by_org: dict[int, tuple[Org, dict[str, Any]]] = {}
        self._prices: dict[tuple[int, int], tuple[Any, int]] = {}

    def data(self, data: Any, expression: int = EXPRESSION_PRICE) -> int:
        """The units of composing ``data`` (or, with ``expression=1``, of reading it)."""
        key = (id(data), expression)
        found = self._prices.get(key)
        if found is None:
            found = self._prices[key] = (data, data_price(data, expression))
        return found[1]

    def bytes(self, data: Any) -> int:
        """:func:`data_bytes` of ``data``, each document measured once."""
        key = (id(data), -1)
        found = self._prices.get(key)
        if found is None:
            found = self._prices[key] = (data, data_bytes(data))
        return found[1]

    def _documents(self, org: Org) -> dict[str, Any]:
        held = self._by_org.get(id(org))
        if held is None:
            held = self._by_org[id(org)] = (org, documents(org))  # the org is held: its id stays its own
        return held[1]

    def composition(self, org: Org, pair: Pair) -> int:
        """The units of composing ``pair`` of ``org``: its documents (``dependencies``) and the overhead."""
        found = self._documents(org)
        total = COMPOSITION_PRICE
        for name in dependencies(org, pair):
            document = found.get(name)
            if document is not None and name != CLUSTER_FILE:  # the settings: small, in the overhead
                total += self.data(_document_data(document))
        return total

    def compositions(self, work: Iterable[tuple[Org, Pair]]) -> int:
        return sum(self.composition(org, pair) for org, pair in work)
