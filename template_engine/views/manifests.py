"""The manifests tab of the explain view: the objects the cluster runs, each value labelled by its source.

Pure, like :mod:`template_engine.views.model`: :func:`manifests_view` reads a composition's
:class:`~template_engine.cluster.mapping.Manifests` and its cluster refusals (the runnable issues that carry
an ``object_path``) and returns a :class:`ManifestsView`.  How a source is labelled is the caller's
(``label_of``): :func:`template_engine.views.model.explain_page` labels a spec field with the layer that set
it, exactly as the effective spec's tree does, a cluster setting as ``cluster setting <key>`` and a value the
mapping decides with its reason.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from template_engine.cluster.mapping import Manifests, Source
from template_engine.cluster.problems import ObjectPath, format_object_path
from template_engine.errors import CompositionWarning
from template_engine.runnable import RunnableIssue

__all__ = ["ManifestsView", "ObjectNode", "ObjectView", "RefusalView", "ValueLabel", "manifests_view"]


@dataclass(frozen=True, slots=True)
class ValueLabel:
    """Who set a value of an object: a kind (a CSS class suffix and the legend's key), its text label (shown
    next to the value) and the sentence of the hover text."""

    kind: str
    badge: str
    text: str


@dataclass(frozen=True, slots=True)
class RefusalView:
    """What the cluster refuses, at its place in an object, and the node of the tree that marks it."""

    object_path: str
    check: str
    message: str
    field: str
    anchor: str | None


ObjectShape = Literal["mapping", "list", "item", "value"]


@dataclass(slots=True)
class ObjectNode:
    """One place of an object: a mapping, a list, an item of a list, or a value (a list of plain values, such
    as ``args``, is one value)."""

    name: str
    path: str
    shape: ObjectShape
    value: str | None = None
    label: ValueLabel | None = None
    #: An item's ``name``, shown next to its index (``[0] pytorch``).
    hint: str | None = None
    refusals: list[RefusalView] = field(default_factory=list)
    children: list[ObjectNode] = field(default_factory=list)
    id: str = ""

    @property
    def kind(self) -> str:
        return self.label.kind if self.label is not None else "none"

    @property
    def container(self) -> bool:
        return self.shape != "value" and bool(self.children)

    @property
    def details(self) -> list[str]:
        lines = [self.label.text] if self.label is not None else []
        lines += [f"refused ({r.check}): {r.message}" for r in self.refusals]
        return lines

    @property
    def tooltip(self) -> str:
        return f"{self.path}: " + "; ".join(self.details)

    def walk(self) -> Iterable[ObjectNode]:
        yield self
        for child in self.children:
            yield from child.walk()


@dataclass(frozen=True, slots=True)
class ObjectView:
    """One object: its kind, name and tree."""

    kind: str
    name: str
    api_version: str
    nodes: tuple[ObjectNode, ...]
    id: str


@dataclass(frozen=True, slots=True)
class ManifestsView:
    """The objects of one composition, what the cluster refuses in them, and what they cannot hold."""

    objects: tuple[ObjectView, ...]
    refusals: tuple[RefusalView, ...]
    #: The not-representable warnings: fields of the combined specs that no object holds, and why.
    warnings: tuple[str, ...]

    def used_kinds(self) -> set[str]:
        return {node.kind for obj in self.objects for top in obj.nodes for node in top.walk() if node.label}


Labeller = Callable[[Source | None], ValueLabel]


def _scalars(value: list[Any]) -> bool:
    return all(not isinstance(item, (Mapping, list)) for item in value)


class _Builder:
    def __init__(self, manifests: Manifests, label_of: Labeller, text: Callable[[Any], str]) -> None:
        self.manifests = manifests
        self.label_of = label_of
        self.text = text
        self.count = 0
        #: Every node by its formatted object path (the first object of a kind, as refusals name it).
        self.by_path: dict[str, ObjectNode] = {}

    def node(self, index: int, kind: str, name: str, path: ObjectPath, value: Any, item: bool) -> ObjectNode:
        self.count += 1
        place = format_object_path(kind, path)
        out = ObjectNode(name, place, "value", id=f"o{self.count}")
        self.by_path.setdefault(place, out)
        explicit = self.manifests.origins[index].get(path)
        if isinstance(value, Mapping) and value:
            out.shape = "item" if item else "mapping"
            hint = value.get("name")
            out.hint = hint if item and isinstance(hint, str) else None
            out.children = [
                self.node(index, kind, str(k), (*path, str(k)), v, False) for k, v in value.items()
            ]
            out.label = self.label_of(explicit) if explicit is not None else None
        elif isinstance(value, list) and value and not _scalars(value):
            out.shape = "list"
            out.children = [
                self.node(index, kind, f"[{i}]", (*path, i), v, True) for i, v in enumerate(value)
            ]
            out.label = self.label_of(explicit) if explicit is not None else None
        else:
            out.value = self.text(value)
            out.label = self.label_of(self.manifests.source_of(index, path))
        return out

    def find(self, object_path: str) -> ObjectNode | None:
        """The node at ``object_path``, or at its nearest parent that the objects have."""
        for end in range(len(object_path), 0, -1):
            if end == len(object_path) or object_path[end] in ".[":
                found = self.by_path.get(object_path[:end])
                if found is not None:
                    return found
        return None


def manifests_view(
    manifests: Manifests,
    issues: Sequence[RunnableIssue],
    warnings: Sequence[CompositionWarning],
    label_of: Labeller,
    text: Callable[[Any], str],
    field_text: Callable[[RunnableIssue], str],
) -> ManifestsView:
    """The tab of ``manifests``: each value with ``label_of(its source)``, each cluster refusal among
    ``issues`` at its object path, and the not-representable ``warnings``; ``text`` writes a value and
    ``field_text`` the spec field an issue names."""
    builder = _Builder(manifests, label_of, text)
    objects = []
    for index, obj in enumerate(manifests.objects):
        kind = str(obj.get("kind", "object"))
        metadata = obj.get("metadata")
        name = metadata.get("name") if isinstance(metadata, Mapping) else None
        nodes = tuple(builder.node(index, kind, str(k), (str(k),), v, False) for k, v in obj.items())
        objects.append(
            ObjectView(kind, str(name or ""), str(obj.get("apiVersion", "")), nodes, f"obj{index + 1}")
        )
    refusals = []
    for issue in issues:
        if issue.object_path is None:
            continue
        node = builder.find(issue.object_path)
        refusal = RefusalView(
            issue.object_path,
            issue.check or "",
            issue.message,
            field_text(issue),
            node.id if node is not None else None,
        )
        if node is not None:
            node.refusals.append(refusal)
        refusals.append(refusal)
    texts = tuple(f"{w.replica} {w.one_line()}" for w in warnings)
    return ManifestsView(tuple(objects), tuple(refusals), texts)
