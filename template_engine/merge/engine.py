"""Exclude-aware keyed merge of layer fragments, built on deepmerge strategies.

Each strategy has deepmerge's shape ``(config, path, base, nxt)``.  The ``path`` it threads through is a
:class:`Trail`: the output path (keyed items as ``Match``), the path inside the current layer's document
(list positions as ``int``, for line numbers) and the plan node that says how the value merges.

The accumulator is built only from containers created here, so the layers are never mutated: a new subtree
is merged into a fresh ``{}`` or ``[]`` rather than assigned by reference (the trap deepmerge's own
``always_merger`` falls into).  A merge that starts from another merge's result (``start``: the scope
defaults many templates share) shares that result's containers and copies one only before changing it
(copy on write): a run changes only the containers it made, which it keeps in ``owned``.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, cast

from deepmerge import Merger
from deepmerge.strategy.core import STRATEGY_END

from template_engine.errors import CompositionError, CompositionWarning, Location, Problem, WarningKind
from template_engine.merge.plan import _LEAF, PlanNode, item_key
from template_engine.models.markers import MergeKey
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
    #: What the layer is, as a value (a scope level's type, ``imposed``, an asset kind, ``template``,
    #: ``submission``): :attr:`Location.kind` of its values.
    kind: str = "submission"

    def location(self, raw: Path) -> Location:
        """File, line and column of the value at ``raw`` (relative to ``spec``), or of its nearest parent."""
        full = (*self.root, *raw)
        while True:
            pos = self.lines.get(full)
            if pos is not None:
                return Location(self.file, pos[0], pos[1], self.label, self.kind)
            if not full:
                return Location(self.file, None, None, self.label, self.kind)
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
    #: A dict, or (see ``merge_layers``) a mapping that merges again, recording, when first read.
    set_by: Mapping[Path, Origin]
    excluded: Mapping[Path, Origin]
    #: Exclusions that matched nothing (all said to be the worker's: the composition places them).
    warnings: tuple[CompositionWarning, ...]
    #: The item positions of each keyed list of ``spec`` (by the list's ``id``, the list kept with them), for
    #: a merge that starts from this one.  ``spec`` is shared by such merges: it is never changed.
    positions: dict[int, tuple[list[Any], dict[Match | None, int]]] = field(
        default_factory=dict, compare=False, repr=False
    )

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


class _Replay:
    """A merge run again with provenance recorded, once, for the :class:`Provenance` of a lean run."""

    __slots__ = ("_args", "_result")

    def __init__(self, plan: PlanNode, layers: tuple[Layer, ...], start: MergeResult | None) -> None:
        self._args: tuple[PlanNode, tuple[Layer, ...], MergeResult | None] | None = (plan, layers, start)
        self._result: _Run | None = None

    def run(self) -> _Run:
        if self._result is None:
            assert self._args is not None
            plan, layers, start = self._args
            recorded = _Run(plan, layers, record=True)
            recorded.run(start)
            self._result, self._args = recorded, None
        return self._result


class Provenance(Mapping[Path, Origin]):
    """``set_by`` or ``excluded`` of a merge that did not record them (most merges are never asked): made
    on first use by merging the same layers again, recording.  The merge is deterministic, so this is
    exactly what recording the first time would have given."""

    __slots__ = ("_map", "_replay", "_which")

    def __init__(self, replay: _Replay, which: str) -> None:
        self._replay = replay
        self._which = which
        self._map: dict[Path, Origin] | None = None

    def _get(self) -> dict[Path, Origin]:
        found = self._map
        if found is None:
            found = self._map = getattr(self._replay.run(), self._which)
        return found

    def __getitem__(self, path: Path) -> Origin:
        return self._get()[path]

    def get(self, path: Path, default: Any = None) -> Any:
        return self._get().get(path, default)

    def __contains__(self, path: object) -> bool:
        return path in self._get()

    def __iter__(self) -> Iterator[Path]:
        return iter(self._get())

    def __len__(self) -> int:
        return len(self._get())

    def __repr__(self) -> str:
        return repr(self._get())


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
        out = value.copy()
        for k, v in value.items():
            if type(v) not in _ATOMS:  # a scalar is kept as it is (the copy already holds it)
                out[k] = clone(v)
        return out
    if kind is list:
        return [v if type(v) in _ATOMS else clone(v) for v in value]
    if kind in _ATOMS:
        return value
    if isinstance(value, Mapping):
        return {k: clone(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [clone(v) for v in value]
    return value


#: The types :func:`clone` returns as they are (immutable scalars).
_ATOMS = frozenset({str, int, float, bool, type(None)})

#: Builds a Trail or an Origin without the NamedTuple constructor's own Python-level call.
_make = tuple.__new__

#: An excluded item's place in a keyed list until the list is compacted (see ``merge_list``).
_GONE = object()
#: The paths of a lean run's trails (it records no provenance, so it needs none).
_NOWHERE: Path = ()


class _Doubt(Exception):
    """A lean run met what it would have to word (a warning, an error): the recording run says it."""


class _Run:
    """The mutable state of one merge: the current layer and the provenance being recorded."""

    def __init__(self, plan: PlanNode, layers: Sequence[Layer], record: bool = True) -> None:
        self.plan = plan
        self.layers = tuple(layers)
        #: Whether paths and provenance are recorded; a lean run (``False``) raises :class:`_Doubt` where it
        #: would warn or fail, and the recording run does it.
        self.record = record
        self.layer = 0
        self.set_by: dict[Path, Origin] = {}
        self.excluded: dict[Path, Origin] = {}
        self.warnings: list[CompositionWarning] = []
        #: Item positions of each keyed list of the accumulator, by the list's identity; the list itself is
        #: kept with them so that its id cannot be reused by another list during the run.
        self.positions: dict[int, tuple[list[Any], dict[Match | None, int]]] = {}
        #: The containers of the accumulator made by this run, by ``id`` (kept, so no id is reused): only
        #: these are changed; any other (shared with ``start``) is copied first.
        self.owned: dict[int, Any] = {}
        #: The positions of the lists of ``start``, for their copies.
        self.inherited: dict[int, tuple[list[Any], dict[Match | None, int]]] = {}
        self._merger: Merger | None = None

    @property
    def merger(self) -> Merger:
        """The deepmerge ``Merger`` of this run's strategies (made when first needed: ``descend`` takes the
        strategies of two mappings or two lists directly)."""
        if self._merger is None:
            self._merger = self._make_merger()
        return self._merger

    def _make_merger(self) -> Merger:
        # deepmerge types its path as a list; ours is a Trail it threads through untouched.
        return Merger(
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
            if self.record:
                self.set_by[trail.out] = Origin(self.layer, trail.raw)
            return clone(nxt)
        return STRATEGY_END

    def _own(self, value: Any, node: PlanNode) -> Any:
        """``value`` (a mapping or list of the accumulator, about to be merged into under ``node``) as a
        container this run may change: a fresh one for nothing, a copy of one it did not make."""
        owned = self.owned
        kind = type(value)
        if value is None:
            return None
        if id(value) in owned or node.whole:
            return value  # made here, or replaced whole (merge_whole does not change it)
        if kind is dict:
            copy: Any = dict(value)
        elif kind is list:
            if node.key is None:
                return value  # replaced whole too
            copy = list(value)
            known = self.inherited.get(id(value))
            if known is not None:
                self.positions[id(copy)] = (copy, dict(known[1]))
        else:
            return value  # a scalar or another type: not merged into
        owned[id(copy)] = copy
        return copy

    def _fresh(self, value: Any) -> Any:
        self.owned[id(value)] = value
        return value

    def descend(self, config: Merger, trail: Trail, base: Any, nxt: Any) -> Any:
        """deepmerge's dispatch (``Merger.value_strategy``), taken directly where both values are exactly a
        ``dict`` or a ``list``: the strategy list registered for that type (see ``__init__``), in order."""
        kind = type(nxt)
        if kind is type(base):
            if kind is dict:
                found = self.merge_whole(config, trail, base, nxt)
                return self.merge_mapping(config, trail, base, nxt) if found is STRATEGY_END else found
            if kind is list:
                found = self.merge_whole(config, trail, base, nxt)
                return self.merge_list(config, trail, base, nxt) if found is STRATEGY_END else found
        return self.merger.value_strategy(cast(Any, trail), base, nxt)

    def merge_mapping(self, config: Merger, trail: Trail, base: dict[str, Any], nxt: Any) -> Any:
        """``nxt``'s fields merged into ``base``: a null is no opinion, a mapping or list merges below, a
        scalar replaces.  Its lean twin for a new keyed item is :meth:`_new_item`."""
        set_by, layer, record = self.set_by, self.layer, self.record
        out, raw, plan = trail
        children = plan.children
        for name, value in nxt.items():
            if value is None:
                continue  # null: no opinion
            kind = type(value)
            if kind is dict or kind is list:
                node = children.get(name, _LEAF)
                if record:
                    child = _make(Trail, ((*out, name), (*raw, name), node))
                else:
                    child = _make(Trail, (_NOWHERE, _NOWHERE, node))
                found = base.get(name)
                if found is None:
                    found = self._fresh({} if kind is dict else [])
                elif id(found) not in self.owned:
                    found = self._own(found, node)
                if kind is dict and type(found) is dict and not node.whole:
                    # what descend does for two mappings when merge_whole passes (STRATEGY_END)
                    base[name] = self.merge_mapping(config, child, found, value)
                else:
                    base[name] = self.descend(config, child, found, value)
            else:
                # A scalar replaces whatever was there: the fast path of deepmerge's "override".
                if record:
                    set_by[(*out, name)] = _make(Origin, (layer, (*raw, name)))
                base[name] = value
        return base

    def merge_list(self, config: Merger, trail: Trail, base: list[Any], nxt: list[Any]) -> Any:
        """A keyed list merged item by item: an item is identified by :func:`item_key`; ``exclude: true``
        removes the item below (a warning when there is none); a new item is appended, a known one merged
        into its place; an item without its key is an error.

        Twin: :meth:`_lean_list` applies the same rules in a lean run (no paths, no provenance) and raises
        :class:`_Doubt` where this one warns or fails (docs/architecture.md, "Fast paths and their twins");
        a rule changed here is changed there, and ``tests/test_twins.py::
        test_the_lean_merge_equals_the_recording_merge`` proves the two runs equal on generated stacks."""
        out, raw, plan = trail
        key = plan.key
        assert key is not None  # merge_whole took every list without a key
        known = self.positions.get(id(base))
        if known is None:
            known = self.positions[id(base)] = (base, {item_key(item, key): i for i, item in enumerate(base)})
        positions = known[1]
        if not self.record:
            return self._lean_list(config, plan, key, base, positions, nxt)
        set_by, layer, owned = self.set_by, self.layer, self.owned
        gone: list[int] = []  # excluded items' places, _GONE until the end (one compaction for them all)
        try:
            for index, item in enumerate(nxt):
                match = item_key(item, key)
                if match is None:
                    raise CompositionError(
                        [
                            Problem(
                                f"keyed list item has no {key.field!r}",
                                (*out, index),
                                self.layers[layer].location((*raw, index)),
                                f"every item of this list to have {key.field!r}",
                            )
                        ]
                    )
                here_out, here_raw = (*out, match), (*raw, index)
                if item.get("exclude") is True:
                    self._dropped_fields(item, key, here_out, here_raw)
                    pos = positions.pop(match, None)
                    if pos is None:
                        self.warnings.append(
                            CompositionWarning(
                                WarningKind.UNMATCHED_EXCLUSION,
                                "worker",
                                here_out,
                                f"exclusion of {format_path(here_out)} matches nothing below "
                                f"{self.layers[layer].label} (is the {match.field} a typo?)",
                                self.layers[layer].location(here_raw),
                            )
                        )
                    else:
                        base[pos] = _GONE
                        gone.append(pos)
                        self.excluded[here_out] = _make(Origin, (layer, here_raw))
                    continue
                here = _make(Trail, (here_out, here_raw, plan))
                pos = positions.get(match)
                # An item is a mapping merged into a mapping: what descend does when merge_whole passes (a
                # keyed list is not replaced whole, so its items are not either).
                direct = type(item) is dict and not plan.whole
                if pos is None:
                    positions[match] = len(base)
                    set_by[here_out] = _make(Origin, (layer, here_raw))
                    fresh = self._fresh({})
                    if direct:
                        base.append(self.merge_mapping(config, here, fresh, item))
                    else:
                        base.append(self.descend(config, here, fresh, item))
                else:
                    key_path = (*here_out, match.field)
                    first = set_by.get(key_path)
                    current = base[pos]
                    if id(current) not in owned:
                        current = self._own(current, plan)
                    if direct and type(current) is dict:
                        base[pos] = self.merge_mapping(config, here, current, item)
                    else:
                        base[pos] = self.descend(config, here, current, item)
                    if first is not None:
                        set_by[key_path] = first  # the key identifies the item; it was set when it appeared
        finally:
            if gone:
                _compact(base, positions, gone)
        return base

    def _dropped_fields(self, item: Mapping[str, Any], key: MergeKey, here_out: Path, here_raw: Path) -> None:
        """Warn of the fields an exclusion gives besides its identity: the item is removed, they are not used
        (the lean twin, :meth:`_lean_list`, doubts where this warns)."""
        dropped = dropped_fields(item, key.field, key.fallback) if len(item) > 2 else ()
        if dropped:
            names = ", ".join(dropped)
            self.warnings.append(
                CompositionWarning(
                    WarningKind.EXCLUSION_WITH_FIELDS,
                    "worker",
                    here_out,
                    f"exclusion of {format_path(here_out)} also gives {names}: an excluding entry needs "
                    f"only its key, and {'these are' if len(dropped) > 1 else 'this is'} not used (to keep "
                    "the item and change it, leave out exclude: true)",
                    self.layers[self.layer].location(here_raw),
                )
            )

    def _lean_list(
        self,
        config: Merger,
        plan: PlanNode,
        key: MergeKey,
        base: list[Any],
        positions: dict[Any, int],
        nxt: list[Any],
    ) -> list[Any]:
        """``merge_list`` in a lean run: no paths, no provenance; :class:`_Doubt` where it would fail or
        warn.

        Twin of :meth:`merge_list` (docs/architecture.md, "Fast paths and their twins"): the same rules, with
        :func:`item_key` inlined (a ``(field, value)`` tuple equals its ``Match``); proved equal by
        ``tests/test_twins.py::test_the_lean_merge_equals_the_recording_merge``."""
        field, fallback, whole, owned = key.field, key.fallback, plan.whole, self.owned
        lean = _make(Trail, (_NOWHERE, _NOWHERE, plan))
        gone: list[int] = []
        try:
            for item in nxt:
                # item_key, inline; a (field, value) tuple is what a Match is (equal, same hash)
                value = item.get(field)
                if value is not None:
                    match: Any = (field, value)
                elif fallback is not None and (value := item.get(fallback)) is not None:
                    match = (fallback, value)
                else:
                    raise _Doubt  # an item without its key: an error
                if item.get("exclude") is True:
                    pos = positions.pop(match, None)
                    if pos is None or (len(item) > 2 and dropped_fields(item, field, fallback)):
                        raise _Doubt  # an exclusion that matches nothing, or gives more: a warning
                    base[pos] = _GONE
                    gone.append(pos)
                    continue
                pos = positions.get(match)
                direct = type(item) is dict and not whole
                if pos is None:
                    positions[match] = len(base)
                    if direct:
                        base.append(self._new_item(config, lean, item))
                    else:
                        base.append(self.descend(config, lean, self._fresh({}), item))
                else:
                    current = base[pos]
                    if id(current) not in owned:
                        current = self._own(current, plan)
                    if direct and type(current) is dict:
                        base[pos] = self.merge_mapping(config, lean, current, item)
                    else:
                        base[pos] = self.descend(config, lean, current, item)
        finally:
            if gone:
                _compact(base, positions, gone)
        return base

    def _new_item(self, config: Merger, trail: Trail, item: dict[str, Any]) -> dict[str, Any]:
        """``merge_mapping`` of a new keyed item into a fresh mapping, in a lean run: a copy of its values
        but the nulls when they are all scalars (the usual item), else the merge itself.

        Twin of :meth:`merge_mapping` into ``{}`` (the rule "null is no opinion, a scalar is set"); proved
        equal with the lean run by ``tests/test_twins.py::test_the_lean_merge_equals_the_recording_merge``."""
        new: dict[str, Any] = {}
        for name, value in item.items():
            if value is None:
                continue
            kind = type(value)
            if kind is dict or kind is list:
                return self.merge_mapping(config, trail, self._fresh({}), item)  # type: ignore[no-any-return]
            new[name] = value
        self.owned[id(new)] = new
        return new

    def set_scalar(self, config: Merger, trail: Trail, base: Any, nxt: Any) -> Any:
        if self.record:
            self.set_by[trail.out] = Origin(self.layer, trail.raw)
        return clone(nxt)

    def keep_on_null(self, config: Merger, trail: Trail, base: Any, nxt: Any) -> Any:
        return base if nxt is None else STRATEGY_END

    # -- driver ---------------------------------------------------------------------------------------------

    def run(self, start: MergeResult | None = None) -> MergeResult:
        acc: dict[str, Any] = self._fresh({})
        first = 0
        if start is not None:
            acc = self._fresh(dict(start.spec))  # its values are shared until changed (see _own)
            self.inherited = start.positions
            if self.record:  # a lean run's provenance is made from start's when it is asked for
                self.set_by.update(start.set_by)
                self.excluded.update(start.excluded)
            self.warnings.extend(start.warnings)
            first = len(start.layers)
        root = Trail((), (), self.plan)
        for index in range(first, len(self.layers)):
            self.layer = index
            layer = self.layers[index]
            if layer.spec:
                acc = self.descend(cast(Any, None), root, acc, layer.spec)  # config: see ``merger``
        positions = self.positions
        if start is not None and start.positions:  # the lists still shared with start keep theirs
            positions = {**start.positions, **positions}
        if self.record:
            return MergeResult(acc, self.layers, self.set_by, self.excluded, tuple(self.warnings), positions)
        replay = _Replay(self.plan, self.layers, start)
        provenance = Provenance(replay, "set_by"), Provenance(replay, "excluded")
        return MergeResult(acc, self.layers, *provenance, tuple(self.warnings), positions)


def _compact(base: list[Any], positions: dict[Any, int], gone: list[int]) -> None:
    """Drop the ``_GONE`` places ``gone`` of ``base`` and renumber ``positions``: what deleting each
    excluded item at once (and shifting the later ones) gives."""
    gone.sort()
    first = gone[0]
    for match, at in positions.items():
        if at > first:
            positions[match] = at - bisect_left(gone, at)
    base[:] = [value for value in base if value is not _GONE]


def merge_layers(plan: PlanNode, layers: Sequence[Layer], start: MergeResult | None = None) -> MergeResult:
    """Fold ``layers`` (lowest precedence first) into one spec; the layers are left unchanged.

    ``start``, the result of merging a prefix of ``layers``, saves merging that prefix again (many templates
    share their scope defaults); it is copied, never changed.
    """
    if start is not None and (
        len(layers) < len(start.layers) or any(a is not b for a, b in zip(layers, start.layers, strict=False))
    ):
        raise ValueError("start must be the merge of a prefix of layers (the same Layer objects)")
    # The lean run first; its twin, the recording run, words whatever it doubts (docs/architecture.md,
    # "Fast paths and their twins").
    try:
        return _Run(plan, layers, record=False).run(start)
    except _Doubt:  # something to warn about or refuse: the recording run words it
        return _Run(plan, layers).run(start)


_IDENTITY = "the item's identity key"
_ONCE = "each key once per list in one file"


def dropped_fields(item: Mapping[str, Any], field: str, fallback: str | None) -> tuple[str, ...]:
    """The fields of an excluding item besides ``exclude`` and its identity keys: an exclusion removes the
    item, so these are never used (both merge twins warn of them, ``WarningKind.EXCLUSION_WITH_FIELDS``)."""
    return tuple(str(name) for name in item if name not in ("exclude", field, fallback))


def check_keys(plan: PlanNode, spec: Any, path: Path = ()) -> list[tuple[str, Path, Path | None, str]]:
    """Keyed-list problems inside one layer: items without a key and keys given twice.

    Returns ``(message, path, other_path, expected)`` tuples with the layer's own paths (list items by
    position); ``other_path`` is the first position of a duplicate.  The fields of an item without its
    key, or whose key is an object or a list (no identity: it cannot be compared or hashed), are not looked
    into.

    Its path-free twin :func:`_keys_clean` answers first for a layer with nothing to say.
    """
    if _keys_clean(plan, spec):
        return []
    problems: list[tuple[str, Path, Path | None, str]] = []
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
                problems.append((f"keyed list item has {want} (its identity key)", here, None, _IDENTITY))
            walk.skip()
            continue
        if isinstance(match.value, Mapping | list | tuple | set):
            kind = "an object" if isinstance(match.value, Mapping) else "a list"
            at = (*here, match.field)
            message = f"the identity key {match.field!r} of a keyed list item is {kind}"
            problems.append((message, at, None, "text or a number"))
            walk.skip()
            continue
        seen = first.setdefault(here[:-1], {})
        if match in seen:
            problems.append((f"duplicate key {match} in one layer", here, seen[match], _ONCE))
        else:
            seen[match] = here
    return problems


def _keys_clean(plan: PlanNode, value: Any) -> bool:
    """Whether :func:`check_keys` finds nothing in ``value``: the same walk, without paths, stopping at the
    first doubt (``check_keys`` then walks again and says what it is).

    Twin of :func:`check_keys`' walk (docs/architecture.md, "Fast paths and their twins"): the same identity
    (:func:`item_key`) and the same rules; ``tests/test_twins.py::
    test_check_keys_says_the_same_with_and_without_its_clean_walk`` proves them equal."""
    if plan.whole:
        return True
    if not (type(value) is dict or isinstance(value, Mapping)):
        return plan.key is None or not isinstance(value, list)  # a keyed list at the root: the long way
    if not plan.children:
        return True
    children = plan.children
    for name, child in value.items():
        below = children.get(name)
        if below is None or below.whole:
            continue  # nothing keyed below a field the plan does not know (or replaces whole)
        if type(child) is dict or isinstance(child, Mapping):
            if not _keys_clean(below, child):
                return False
        elif below.key is not None and isinstance(child, list):
            key = below.key
            seen: set[Match] = set()
            for item in child:
                if not (type(item) is dict or isinstance(item, Mapping)):
                    continue
                match = item_key(item, key)
                try:
                    if match is None or match in seen:
                        return False
                    seen.add(match)
                except TypeError:  # an unhashable key: let the walk below meet it as it always did
                    return False
                if not _keys_clean(below, item):
                    return False
    return True


__all__ = [
    "Layer",
    "MergeResult",
    "Origin",
    "check_keys",
    "clone",
    "merge_layers",
]
