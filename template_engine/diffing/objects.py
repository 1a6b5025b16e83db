"""Object-by-object difference of two compositions' cluster objects (``Composition.manifests``).

Beside the field changes of the effective specs (:mod:`~.fields`), a pair lists what changes in the objects
the cluster would run: ``PyTorchJob.spec.pytorchReplicaSpecs.Worker.template.spec.containers[0].resources
.limits.cpu: 8 -> 16``.  The paths are those of the objects (:func:`~template_engine.cluster.problems
.format_object_path`, as the cluster's refusals name them), so a change that only the objects show (a
``cluster.yaml`` setting: the namespace, the queue, a priority class) is listed too.

Objects are matched by kind and name: the job is named by its kind alone (``PyTorchJob``), every other
object by kind and name (``PersistentVolumeClaim/scratch``).  Inside an object, a list whose items are
mappings with distinct values of an identity field (``name``, else ``containerPort``, else ``mountPath``:
containers, env, volumes, ports, mounts) is matched by it, so adding one item lists that item and not
every item after it; the index in the path is the item's place on
the side it is found (the new side, or the old one for a removed item).  Every other list is compared as a
whole value.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from template_engine.cluster.problems import ObjectPath, format_object_path
from template_engine.diffing.fields import Kind, _inline, same

_MISSING: Any = object()


@dataclass(frozen=True, slots=True)
class ObjectChange:
    """One changed value of one object: ``object`` (``PyTorchJob``, ``PersistentVolumeClaim/scratch``) and
    the path inside it."""

    object: str
    path: ObjectPath
    kind: Kind
    old: Any = None
    new: Any = None

    @property
    def field(self) -> str:
        return format_object_path(self.object, self.path)

    def render(self) -> str:
        if self.kind == "removed":
            return f"{self.field}: removed (was {_inline(self.old)})"
        if self.kind == "added":
            return f"{self.field}: added {_inline(self.new)}"
        if self.kind == "reordered":
            return f"{self.field}: order {_inline(self.old)} -> {_inline(self.new)}"
        return f"{self.field}: {_inline(self.old)} -> {_inline(self.new)}"

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"object": self.field, "change": self.kind}
        if self.kind != "added":
            out["old"] = self.old
        if self.kind != "removed":
            out["new"] = self.new
        return out


def _label(index: int, obj: Mapping[str, Any]) -> str:
    kind = str(obj.get("kind", "object"))
    if index == 0:
        return kind  # the job: one per composition
    metadata = obj.get("metadata")
    name = metadata.get("name") if isinstance(metadata, Mapping) else None
    return f"{kind}/{name}" if name is not None else f"{kind}[{index}]"


def _by_label(objects: Sequence[Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    out: dict[str, Mapping[str, Any]] = {}
    for index, obj in enumerate(objects):
        label = _label(index, obj)
        while label in out:  # two objects of one kind and name: kept apart by place
            label += "'"
        out[label] = obj
    return out


#: The fields that identify a list's items, tried in order (Kubernetes' own list keys: containers, env,
#: volumes and mounts by name, ports by ``containerPort``, mounts by ``mountPath``).
_IDENTITY = ("name", "containerPort", "mountPath")


def _by_key(values: Any, key: str) -> dict[Any, int] | None:
    """The places of a list's items by ``key``, when every item is a mapping with a distinct value of it."""
    if not isinstance(values, list) or not values:
        return None
    out: dict[Any, int] = {}
    for index, item in enumerate(values):
        name = item.get(key) if isinstance(item, Mapping) else None
        if not isinstance(name, str | int) or isinstance(name, bool) or name in out:
            return None
        out[name] = index
    return out


def _identities(old: Any, new: Any) -> tuple[dict[Any, int], dict[Any, int]] | None:
    """Both lists' items by the first of :data:`_IDENTITY` that identifies the items of both."""
    for key in _IDENTITY:
        before, after = _by_key(old, key), _by_key(new, key)
        if before is not None and after is not None:
            return before, after
    return None


def _walk(old: Any, new: Any, path: ObjectPath) -> Iterator[tuple[Kind, ObjectPath, Any, Any]]:
    if same(old, new):
        return
    if old is _MISSING:
        yield "added", path, None, new
        return
    if new is _MISSING:
        yield "removed", path, old, None
        return
    if isinstance(old, Mapping) and isinstance(new, Mapping):
        for key in sorted(set(old) | set(new), key=str):
            yield from _walk(old.get(key, _MISSING), new.get(key, _MISSING), (*path, key))
        return
    matched = _identities(old, new)
    if matched is None:
        yield "changed", path, old, new
        return
    before, after = matched
    for name, index in before.items():
        if name not in after:
            yield "removed", (*path, index), old[index], None
    for name, index in after.items():
        if name not in before:
            yield "added", (*path, index), None, new[index]
        else:
            yield from _walk(old[before[name]], new[index], (*path, index))
    kept_old = [name for name in before if name in after]
    kept_new = [name for name in after if name in before]
    if kept_old != kept_new:
        yield "reordered", path, kept_old, kept_new


def diff_objects(
    old: Sequence[Mapping[str, Any]] | None, new: Sequence[Mapping[str, Any]] | None
) -> list[ObjectChange]:
    """Every value that differs between two lists of objects (``Manifests.objects``); ``None``: no objects
    on that side (it does not compose).  Objects are listed in the new side's order, then the removed
    ones."""
    before, after = _by_label(old or ()), _by_label(new or ())
    changes: list[ObjectChange] = []
    for label in [*after, *(name for name in before if name not in after)]:
        for kind, path, was, now in _walk(before.get(label, _MISSING), after.get(label, _MISSING), ()):
            changes.append(ObjectChange(label, path, kind, was, now))
    return changes
