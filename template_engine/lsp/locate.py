"""A place in a file of the org, as the engine names it: the document there, the field path under the cursor,
and the layers of each pair that this file is.

The loader keeps the line and column of every value of a document (``Source.lines``, by the path inside the
document, list items by position).  A composition's layers name their file and where their spec sits in it
(``Layer.root``); the merge names a keyed item by its identity (``labels[name=tier]``).
:func:`~template_engine.walk.keyed_path` turns a path as written into the path the merge gives it, with the
plan's one rule
(:func:`template_engine.walk.items`), and :class:`LayerIndex` the other way round, for every place a layer
writes.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from template_engine.compose import Composition
from template_engine.merge.engine import Layer, MergeResult
from template_engine.merge.plan import SPEC_PLAN
from template_engine.org import Asset, Defaults, Org, Template
from template_engine.paths import Match, Path
from template_engine.walk import steps

__all__ = [
    "Document",
    "LayerIndex",
    "Spot",
    "document_at",
    "layer_index",
    "replicas",
    "spot",
    "value_at",
]

Replica = Literal["worker", "master"]
Document = Defaults | Template | Asset


@dataclass(frozen=True, slots=True)
class Spot:
    """The deepest value written at a line and column of a document: its path in the document (list items
    by position) and its line and column (from 1)."""

    document: Document
    path: Path
    line: int
    column: int


def document_at(org: Org, file: str) -> Document | None:
    """The defaults, template or asset document read from ``file`` (``None``: another kind, or broken)."""
    for entry in org.defaults.values():
        if entry.file == file:
            return entry
    for by_name in org.templates.values():
        for template in by_name.values():
            if template.file == file:
                return template
    for by_kind in org.assets.values():
        for asset in by_kind.values():
            if asset.file == file:
                return asset
    return None


def spot(document: Document, line: int, column: int) -> Spot | None:
    """The value written at ``line`` (from 1) whose key starts at or before ``column`` (from 1): the
    deepest such path, a keyed item rather than its key field (``- name: tier`` is the item)."""
    best: tuple[int, int, Path] | None = None
    for path, (at, col) in document.source.lines.items():
        if at != line or col > max(column, 1) or not path:
            continue
        rank = (len(path), col)
        if best is None or rank > best[:2]:
            best = (len(path), col, path)
    if best is None:
        return None
    path = best[2]
    if (
        len(path) >= 2
        and isinstance(path[-2], int)
        and document.source.lines.get(path[:-1]) == (line, best[1])
    ):
        path = path[:-1]  # the first key of a list item: the item itself
    return Spot(document, path, line, best[1])


@dataclass(frozen=True, slots=True)
class LayerIndex:
    """Every place a layer writes, as the merge names it, with its path inside the layer's spec.

    ``places`` holds the merge's units (scalars, values replaced whole, keyed items) and every mapping on the
    way to them; ``leaves`` the units that are replaced whole (a value there decides everything below it).
    """

    places: Mapping[Path, Path]
    leaves: frozenset[Path]

    def raw(self, path: Path) -> Path | None:
        """Where the layer writes ``path`` (or the value replaced whole that holds it), if it does."""
        found = self.places.get(path)
        if found is not None:
            return found
        for n in range(len(path) - 1, 0, -1):
            if path[:n] in self.leaves:
                return self.places[path[:n]]
        return None


_INDEXES: dict[int, tuple[Any, LayerIndex]] = {}


def layer_index(layer: Layer) -> LayerIndex:
    """:class:`LayerIndex` of ``layer`` (kept for the spec object, which documents share between pairs)."""
    kept = _INDEXES.get(id(layer.spec))
    if kept is not None and kept[0] is layer.spec:
        return kept[1]
    places: dict[Path, Path] = {}
    leaves: set[Path] = set()
    by_position = steps(layer.spec, SPEC_PLAN, by_position=True)
    for raw_step, step in zip(by_position, steps(layer.spec, SPEC_PLAN), strict=False):
        raw, path = raw_step.path, step.path
        for n in range(1, len(path) + 1):
            places.setdefault(path[:n], raw[:n])
        if not step.item:
            leaves.add(path)
    index = LayerIndex(places, frozenset(leaves))
    if len(_INDEXES) > 4096:
        _INDEXES.clear()
    _INDEXES[id(layer.spec)] = (layer.spec, index)
    return index


def replicas(composition: Composition) -> Iterator[tuple[Replica, MergeResult, Any]]:
    """Each replica's merge and its combined spec (the master only when it has its own)."""
    yield "worker", composition.worker, composition.combined_spec
    if composition.master is not None and composition.combined_master_spec is not None:
        yield "master", composition.master, composition.combined_master_spec


_MISSING = object()


def value_at(spec: Any, path: Path) -> Any:
    """The value at ``path`` of a combined spec (a keyed item found by its identity), or ``_MISSING``."""
    value = spec
    for segment in path:
        if isinstance(segment, Match):
            if not isinstance(value, list):
                return _MISSING
            value = next(
                (v for v in value if isinstance(v, Mapping) and v.get(segment.field) == segment.value),
                _MISSING,
            )
        elif isinstance(segment, int):
            value = value[segment] if isinstance(value, list) and 0 <= segment < len(value) else _MISSING
        elif isinstance(value, Mapping):
            value = value.get(segment, _MISSING)
        else:
            return _MISSING
        if value is _MISSING:
            return _MISSING
    return value


def missing(value: Any) -> bool:
    return value is _MISSING
