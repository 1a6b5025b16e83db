"""The merge plan: which lists are keyed by what, read once from the markers on the models."""

from __future__ import annotations

import types
import typing
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from template_engine.models.markers import MergeKey, ReplaceWhole
from template_engine.models.spec import WorkerSpec
from template_engine.paths import Match


@dataclass(slots=True)
class PlanNode:
    """Merge policy for one field and, through ``children``, for the fields below it."""

    key: MergeKey | None = None
    whole: bool = False
    children: dict[str, PlanNode] = field(default_factory=dict)

    def child(self, name: str) -> PlanNode:
        return self.children.get(name, _LEAF)


_LEAF = PlanNode()


def item_key(item: typing.Mapping[str, Any], key: MergeKey) -> Match | None:
    """The identity of a keyed list item, or ``None`` when it has neither key nor fallback."""
    value = item.get(key.field)
    if value is not None:
        return Match(key.field, value)
    if key.fallback is not None:
        value = item.get(key.fallback)
        if value is not None:
            return Match(key.fallback, value)
    return None


def models_in(annotation: Any) -> list[type[BaseModel]]:
    """The pydantic models an annotation refers to, through ``X | None``, ``list[X]`` and ``Annotated``."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return models_in(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType, list, tuple):
        found: list[type[BaseModel]] = []
        for arg in typing.get_args(annotation):
            found.extend(models_in(arg))
        return found
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return []


def build_plan(model: type[BaseModel]) -> PlanNode:
    """Walk ``model``'s fields and collect the merge markers into a tree of :class:`PlanNode`."""
    root = PlanNode()
    for name, info in model.model_fields.items():
        node = PlanNode()
        for marker in info.metadata:
            if isinstance(marker, MergeKey):
                node.key = marker
            elif isinstance(marker, ReplaceWhole):
                node.whole = True
        if not node.whole:
            for sub in models_in(info.annotation):
                node.children.update(build_plan(sub).children)
        if node.key is not None or node.whole or node.children:
            root.children[name] = node
    return root


#: How every spec merges (worker and master alike: a master spec is a worker spec without the worker-only
#: fields), read once from the markers on the models.
SPEC_PLAN: PlanNode = build_plan(WorkerSpec)


def keyed_lists(node: PlanNode, prefix: tuple[str, ...] = ()) -> dict[tuple[str, ...], MergeKey]:
    """Every keyed list under ``node`` by its field names (for docs and tests)."""
    out: dict[tuple[str, ...], MergeKey] = {}
    for name, child in node.children.items():
        here = (*prefix, name)
        if child.key is not None:
            out[here] = child.key
        out.update(keyed_lists(child, here))
    return out
