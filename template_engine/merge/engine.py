"""Exclude-aware keyed merge of layer fragments, built on deepmerge strategies.

Each strategy has deepmerge's shape ``(config, path, base, nxt)``.  The ``path`` it threads through is a
:class:`Trail`: the output path (keyed items as ``Match``), the path inside the current layer's document
(list positions as ``int``, for line numbers) and the plan node that says how the value merges.

The accumulator is built only from containers created here, so the layers are never mutated: a new subtree
is merged into a fresh ``{}`` or ``[]`` rather than assigned by reference (the trap deepmerge's own
``always_merger`` falls into).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, cast

from deepmerge import Merger
from deepmerge.strategy.core import STRATEGY_END

from template_engine.errors import CompositionError, CompositionWarning, Location, Problem, WarningKind
from template_engine.merge.plan import PlanNode, item_key
from template_engine.paths import Match, Path, format_path
from template_engine.walk import steps


@dataclass(frozen=True, slots=True)
class Layer:
    """One layer of a composition: a spec fragment and where it came from."""

    label: str
    file: str
    spec: Mapping[str, Any]
    lines: Mapping[Path, tuple[int, int]] = field(default_factory=dict)
    #: Where ``spec`` sits inside ``file`` (``("spec",)`` for a defaults file, ``("master", "spec")``...).
    root: Path = ()

    def location(self, raw: Path) -> Location:
        """File, line and column of the value at ``raw`` (relative to ``spec``), or of its nearest parent."""
        full = (*self.root, *raw)
        while True:
            pos = self.lines.get(full)
            if pos is not None:
                return Location(self.file, pos[0], pos[1], self.label)
            if not full:
                return Location(self.file, None, None, self.label)
            full = full[:-1]


class Origin(NamedTuple):
    """The layer (by position) and the path inside it that set or excluded a value."""

    layer: int
    raw: Path


@dataclass(frozen=True, slots=True)
class MergeResult:
    """The merged spec and its provenance."""

    spec: dict[str, Any]
    layers: tuple[Layer, ...]
    set_by: dict[Path, Origin]
    excluded: dict[Path, Origin]
    #: Exclusions that matched nothing (all said to be the worker's: the composition places them).
    warnings: tuple[CompositionWarning, ...]

    def location(self, origin: Origin) -> Location:
        return self.layers[origin.layer].location(origin.raw)

    def locate(self, path: Path) -> Location | None:
        """Where the value at ``path`` (or the nearest parent set whole) was set; ``None`` if nowhere."""
        origin = self.origin_of(path)
        return self.location(origin) if origin is not None else None

    def origin_of(self, path: Path) -> Origin | None:
        """The layer that set ``path`` or, for a value replaced whole, the nearest parent that was set."""
        probe = path
        while probe:
            found = self.set_by.get(probe)
            if found is not None:
                return found
            probe = probe[:-1]
        return None


class Trail(NamedTuple):
    out: Path
    raw: Path
    plan: PlanNode

    def key(self, name: str) -> Trail:
        return Trail((*self.out, name), (*self.raw, name), self.plan.child(name))

    def item(self, match: Match, index: int) -> Trail:
        return Trail((*self.out, match), (*self.raw, index), self.plan)


def clone(value: Any) -> Any:
    """A deep copy of plain data (mappings, lists, scalars); exact types are checked first."""
    kind = type(value)
    if kind is dict:
        return {k: clone(v) for k, v in value.items()}
    if kind is list:
        return [clone(v) for v in value]
    if kind in (str, int, float, bool) or value is None:
        return value
    if isinstance(value, Mapping):
        return {k: clone(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [clone(v) for v in value]
    return value


def _descend(config: Merger, trail: Trail, base: Any, nxt: Any) -> Any:
    return config.value_strategy(cast(Any, trail), base, nxt)


class _Run:
    """The mutable state of one merge: the current layer and the provenance being recorded."""

    def __init__(self, plan: PlanNode, layers: Sequence[Layer]) -> None:
        self.plan = plan
        self.layers = tuple(layers)
        self.layer = 0
        self.set_by: dict[Path, Origin] = {}
        self.excluded: dict[Path, Origin] = {}
        self.warnings: list[CompositionWarning] = []
        #: Item positions of each keyed list of the accumulator, by the list's identity; the list itself is
        #: kept with them so that its id cannot be reused by another list during the run.
        self.positions: dict[int, tuple[list[Any], dict[Match | None, int]]] = {}
        # deepmerge types its path as a list; ours is a Trail it threads through untouched.
        self.merger = Merger(
            cast(
                Any,
                [(dict, [self.merge_whole, self.merge_mapping]), (list, [self.merge_whole, self.merge_list])],
            ),
            cast(Any, [self.set_scalar]),
            cast(Any, [self.keep_on_null, self.set_scalar]),
        )

    # -- strategies -----------------------------------------------------------------------------------------

    def merge_whole(self, config: Merger, trail: Trail, base: Any, nxt: Any) -> Any:
        """``ReplaceWhole`` values (and lists that are not keyed) are replaced by the higher layer."""
        if trail.plan.whole or (isinstance(nxt, list) and trail.plan.key is None):
            self.set_by[trail.out] = Origin(self.layer, trail.raw)
            return clone(nxt)
        return STRATEGY_END

    def merge_mapping(self, config: Merger, trail: Trail, base: dict[str, Any], nxt: Any) -> Any:
        set_by, layer = self.set_by, self.layer
        out, raw, plan = trail
        for name, value in nxt.items():
            if value is None:
                continue  # null: no opinion
            if type(value) is dict:
                child = Trail((*out, name), (*raw, name), plan.child(name))
                base[name] = _descend(config, child, base.get(name, {}), value)
            elif type(value) is list:
                child = Trail((*out, name), (*raw, name), plan.child(name))
                base[name] = _descend(config, child, base.get(name, []), value)
            else:
                # A scalar replaces whatever was there: the fast path of deepmerge's "override".
                set_by[(*out, name)] = Origin(layer, (*raw, name))
                base[name] = value
        return base

    def merge_list(self, config: Merger, trail: Trail, base: list[Any], nxt: list[Any]) -> Any:
        key = trail.plan.key
        assert key is not None  # merge_whole took every list without a key
        known = self.positions.get(id(base))
        if known is None:
            known = self.positions[id(base)] = (base, {item_key(item, key): i for i, item in enumerate(base)})
        positions = known[1]
        for index, item in enumerate(nxt):
            match = item_key(item, key)
            if match is None:
                raise CompositionError(
                    [
                        Problem(
                            f"keyed list item has no {key.field!r}",
                            (*trail.out, index),
                            self.layers[self.layer].location((*trail.raw, index)),
                            f"every item of this list to have {key.field!r}",
                        )
                    ]
                )
            here = trail.item(match, index)
            if item.get("exclude") is True:
                pos = positions.pop(match, None)
                if pos is None:
                    self.warnings.append(
                        CompositionWarning(
                            WarningKind.UNMATCHED_EXCLUSION,
                            "worker",
                            here.out,
                            f"exclusion of {format_path(here.out)} matches nothing below "
                            f"{self.layers[self.layer].label} (is the {match.field} a typo?)",
                            self.layers[self.layer].location(here.raw),
                        )
                    )
                else:
                    del base[pos]
                    for other, at in positions.items():
                        if at > pos:
                            positions[other] = at - 1
                    self.excluded[here.out] = Origin(self.layer, here.raw)
                continue
            pos = positions.get(match)
            if pos is None:
                positions[match] = len(base)
                self.set_by[here.out] = Origin(self.layer, here.raw)
                base.append(_descend(config, here, {}, item))
            else:
                key_path = (*here.out, match.field)
                first = self.set_by.get(key_path)
                base[pos] = _descend(config, here, base[pos], item)
                if first is not None:
                    self.set_by[key_path] = first  # the key identifies the item; it was set when it appeared
        return base

    def set_scalar(self, config: Merger, trail: Trail, base: Any, nxt: Any) -> Any:
        self.set_by[trail.out] = Origin(self.layer, trail.raw)
        return clone(nxt)

    def keep_on_null(self, config: Merger, trail: Trail, base: Any, nxt: Any) -> Any:
        return base if nxt is None else STRATEGY_END

    # -- driver ---------------------------------------------------------------------------------------------

    def run(self, start: MergeResult | None = None) -> MergeResult:
        acc: dict[str, Any] = {}
        first = 0
        if start is not None:
            acc = clone(start.spec)
            self.set_by.update(start.set_by)
            self.excluded.update(start.excluded)
            self.warnings.extend(start.warnings)
            first = len(start.layers)
        root = Trail((), (), self.plan)
        for index in range(first, len(self.layers)):
            self.layer = index
            layer = self.layers[index]
            if layer.spec:
                acc = _descend(self.merger, root, acc, layer.spec)
        return MergeResult(acc, self.layers, self.set_by, self.excluded, tuple(self.warnings))


def merge_layers(plan: PlanNode, layers: Sequence[Layer], start: MergeResult | None = None) -> MergeResult:
    """Fold ``layers`` (lowest precedence first) into one spec; the layers are left unchanged.

    ``start``, the result of merging a prefix of ``layers``, saves merging that prefix again (many templates
    share their scope defaults); it is copied, never changed.
    """
    if start is not None and (
        len(layers) < len(start.layers) or any(a is not b for a, b in zip(layers, start.layers, strict=False))
    ):
        raise ValueError("start must be the merge of a prefix of layers (the same Layer objects)")
    return _Run(plan, layers).run(start)


def check_keys(plan: PlanNode, spec: Any, path: Path = ()) -> list[tuple[str, Path, Path | None]]:
    """Keyed-list problems inside one layer: items without a key and keys given twice.

    Returns ``(message, path, other_path)`` triples with the layer's own paths (list items by position);
    ``other_path`` is the first position of a duplicate.  The fields of an item without its key are not
    looked into.
    """
    problems: list[tuple[str, Path, Path | None]] = []
    first: dict[Path, dict[Match, Path]] = {}  # per keyed list, where each key was given first
    walk = steps(spec, plan, path, by_position=True, leaves=False)
    for here, item, node, _ in walk:
        key = node.key
        assert key is not None  # without leaves, only a keyed list's items are steps
        mapping = type(item) is dict or isinstance(item, Mapping)
        match = item_key(item, key) if mapping else None
        if match is None:
            if mapping:
                want = f"neither {key.field!r} nor {key.fallback!r}" if key.fallback else f"no {key.field!r}"
                problems.append((f"keyed list item has {want} (its identity key)", here, None))
            walk.skip()
            continue
        seen = first.setdefault(here[:-1], {})
        if match in seen:
            problems.append((f"duplicate key {match} in one layer", here, seen[match]))
        else:
            seen[match] = here
    return problems


__all__ = [
    "Layer",
    "MergeResult",
    "Origin",
    "check_keys",
    "clone",
    "merge_layers",
]
