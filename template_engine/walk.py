"""One plan-guided walk of a spec: where each value sits, named the way the merge plan names it.

The merge plan tells three kinds of place apart: a mapping's field, named by its key; an item of a keyed list,
named by its identity (``environmentVariables[name=HOME]``, a :class:`~template_engine.paths.Match`); and
an item of any other list, named by its position.  :func:`items` is that rule, written once.  Everything that
reads or rewrites a spec under the plan goes through it, by one of two walks:

* :func:`steps`, for readers (provenance, key checks): the merge's units in order, as :class:`Step` values.
  A scalar, a value replaced whole and a list that is not keyed are leaves; an item of a keyed list is a
  step of its own, before its fields, and a reader may :meth:`Steps.skip` its fields.
* :func:`rebuild`, for writers (rendering, pruning, sorting): a transformed copy of every value, a whole-
  replaced one included, with a hook for strings and one after each keyed list.

Two walks of two values at once stay apart: the merge (:mod:`template_engine.merge.engine`, which must
refuse an item without its key rather than name it by position) and the field-by-field comparison
(:mod:`template_engine.diffing.fields`, which reads a keyed list's items through :func:`items`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, NamedTuple

from template_engine.merge.plan import PlanNode, item_key
from template_engine.paths import Match, Path, Segment

__all__ = ["Step", "Steps", "items", "rebuild", "steps"]


def items(values: Sequence[Any], node: PlanNode) -> Iterator[tuple[Match | int, Any]]:
    """``(segment, item)`` for each item of a list under ``node``: the item's identity in a keyed list (an
    item that is not a mapping, or has neither key nor fallback, keeps its position), else its position."""
    key = node.key
    if key is None:
        yield from enumerate(values)
        return
    for index, item in enumerate(values):
        match = item_key(item, key) if type(item) is dict or isinstance(item, Mapping) else None
        yield (index if match is None else match), item


def items_at(spec: Any, names: tuple[str, ...], plan: PlanNode) -> Iterator[tuple[Path, Mapping[str, Any]]]:
    """``(path, item)`` for each mapping item of the list at ``names`` of ``spec`` (``plan`` is the plan of
    ``spec``): a keyed list's items named by their key, as :func:`items` names them.  The one such reader:
    the runnable rules and the pod mapping read lists this way."""
    node, value = plan, spec
    for name in names:  # one pass down the plan and the spec (this is read for every pod of every pair)
        node = node.child(name)
        value = value.get(name) if isinstance(value, Mapping) else None
    if not isinstance(value, list):
        return
    key = node.key
    for index, item in enumerate(value):
        if type(item) is not dict and not isinstance(item, Mapping):  # the exact type first: cheaper
            continue
        match = item_key(item, key) if key is not None else None
        yield (*names, index if match is None else match), item


def keyed_path(spec: Any, path: Path, plan: PlanNode) -> Path:
    """``path`` (a path inside ``spec``, list items by position) as the merge names it: an item of a keyed
    list by its identity, any other (or one ``spec`` does not have) by its position, :func:`items`' rule.
    The one such naming: runnable issues, a submission's refused fields and the language server use it."""
    out: list[Segment] = []
    value, node = spec, plan
    for segment in path:
        if isinstance(segment, int):
            item = value[segment] if isinstance(value, list) and 0 <= segment < len(value) else None
            key = node.key
            match = item_key(item, key) if key is not None and isinstance(item, Mapping) else None
            out.append(segment if match is None else match)
            value = item
        else:
            out.append(segment)
            value = value.get(segment) if isinstance(value, Mapping) and isinstance(segment, str) else None
            node = node.child(str(segment))
    return tuple(out)


# -- readers ------------------------------------------------------------------------------------------------


class Step(NamedTuple):
    """One place of a spec: its path, its value and the plan node that says how it merges."""

    path: Path
    value: Any
    node: PlanNode
    #: An item of a keyed list (its fields follow as steps of their own), not a leaf.
    item: bool


class Steps:
    """The iterator :func:`steps` returns; :meth:`skip` right after an item leaves out that item's fields."""

    __slots__ = ("_skip", "_walk")

    def __init__(
        self, value: Any, plan: PlanNode, path: Path, sort: bool, by_position: bool, leaves: bool
    ) -> None:
        self._skip = False
        self._walk = self._steps(value, plan, path, sort, by_position, leaves)

    def __iter__(self) -> Iterator[Step]:
        return self._walk

    def __next__(self) -> Step:
        return next(self._walk)

    def skip(self) -> None:
        """Do not walk into the item of the step just returned."""
        self._skip = True

    def _steps(
        self, value: Any, plan: PlanNode, path: Path, sort: bool, by_position: bool, leaves: bool
    ) -> Iterator[Step]:
        make = tuple.__new__  # a Step without the NamedTuple constructor's own call
        #: Places still to visit, the next one last; ``True`` marks an item, announced before its fields.
        stack: list[tuple[Path, Any, PlanNode, bool]] = [(path, value, plan, False)]
        while stack:
            path, value, node, is_item = stack.pop()
            if is_item:
                self._skip = False
                yield make(Step, (path, value, node, True))
                if not self._skip:
                    stack.append((path, value, node, False))
            elif (type(value) is dict or isinstance(value, Mapping)) and not node.whole:
                names = sorted(value, reverse=True) if sort else reversed(list(value))
                if leaves:
                    stack.extend(((*path, name), value[name], node.child(name), False) for name in names)
                    continue
                for name in names:  # only what can hold a keyed list
                    child = value[name]
                    kind = type(child)
                    if kind is str or kind is int or kind is bool or child is None:
                        continue
                    below = node.child(name)
                    if not below.whole and (
                        isinstance(child, Mapping) or (below.key is not None and isinstance(child, list))
                    ):
                        stack.append(((*path, name), child, below, False))
            elif node.key is not None and isinstance(value, list) and not node.whole:
                found = enumerate(value) if by_position else items(value, node)
                stack.extend(reversed([((*path, segment), item, node, True) for segment, item in found]))
            elif leaves:  # a scalar, a value replaced whole or a list that is not keyed
                yield make(Step, (path, value, node, False))


def steps(
    value: Any,
    plan: PlanNode,
    path: Path = (),
    *,
    sort: bool = False,
    by_position: bool = False,
    leaves: bool = True,
) -> Steps:
    """Every place of ``value`` under ``plan``, depth first: mapping fields in their order (``sort``: by
    name), list items in theirs.  ``by_position`` names every list item by its position, as a document's
    line map does (keyed items are still steps of their own); without ``leaves`` only keyed items are."""
    return Steps(value, plan, path, sort, by_position, leaves)


# -- writers ------------------------------------------------------------------------------------------------

#: ``text(value, path)``: what a string becomes in the copy.
TextHook = Callable[[str, Path], Any]
#: ``keyed(path, node, segments, copied)``: called after each keyed list is copied, with the written items'
#: segments (their identity, as :func:`items` names them) and the copied items, in order.
KeyedHook = Callable[[Path, PlanNode, list[Match | int], list[Any]], None]


def _unchanged(text: str, path: Path) -> Any:
    return text


def rebuild(
    value: Any,
    plan: PlanNode,
    *,
    text: TextHook = _unchanged,
    keyed: KeyedHook | None = None,
    sort: bool = False,
    prune: bool = False,
) -> Any:
    """A copy of ``value``: every string through ``text``, mapping keys sorted (``sort``), and absent values
    and empty mappings and lists left out of mappings (``prune``).  Mappings become ``dict``, lists ``list``;
    other values are kept as they are."""

    def copy(value: Any, path: Path, node: PlanNode) -> Any:
        kind = type(value)  # exact types first: plain data is what specs are made of
        if kind is str:
            return text(value, path)
        if kind is dict:
            return mapping(value, path, node)
        if kind is list:
            return sequence(value, path, node)
        if value is None or kind is int or kind is bool or kind is float:
            return value
        if isinstance(value, str):
            return text(value, path)
        if isinstance(value, Mapping):
            return mapping(value, path, node)
        if isinstance(value, list):
            return sequence(value, path, node)
        return value

    def mapping(value: Mapping[str, Any], path: Path, node: PlanNode) -> dict[str, Any]:
        out = {}
        for name in sorted(value) if sort else value:
            item = copy(value[name], (*path, name), node.child(name))
            if prune and (item is None or item == {} or item == []):
                continue
            out[name] = item
        return out

    def sequence(value: list[Any], path: Path, node: PlanNode) -> list[Any]:
        if node.key is None:
            return [copy(item, (*path, index), node) for index, item in enumerate(value)]
        segments = [segment for segment, _ in items(value, node)]
        copied = [copy(item, (*path, seg), node) for seg, item in zip(segments, value, strict=True)]
        if keyed is not None:
            keyed(path, node, segments, copied)
        return copied

    return copy(value, (), plan)
