"""Every field of the spec models is mapped into the objects or listed as not representable (issue 18).

The walk builds, for each field of ``WorkerSpec`` and ``MasterSpec`` (list items too), a spec that sets it
to a valid value, renders the objects, and asks whether the field reached them: some value of the objects
has it (or the item or section holding it) as its source, or a not-representable warning names it, or
``NOT_REPRESENTABLE`` lists it, or ``CHOOSERS`` says which field it chooses the writing of.  A new field
that is none of these fails here, with its path.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Iterator
from typing import Any, Literal

import pytest
from pydantic import BaseModel

from template_engine.cluster.mapping import CHOOSERS, NOT_REPRESENTABLE, SpecSource, manifests_of
from template_engine.merge.plan import SPEC_PLAN, PlanNode, item_key
from template_engine.models.spec import MasterSpec, WorkerSpec
from template_engine.paths import Match, Path

#: Values that a field of this name must hold to be written at all (a quantity, an octal mode...).
SPECIAL: dict[str, Any] = {
    "cpuMemoryRequest": "1Gi",
    "cpuMemoryLimit": "2Gi",
    "gpuMemoryRequest": "1Gi",
    "gpuMemoryLimit": "2Gi",
    "sizeLimit": "1Gi",
    "size": "1Gi",
    "defaultMode": "0644",
    "quantity": "1",
    "supplementalGroups": "1000",
    "gpuDevicesRequest": 2,
    "gpuPortionRequest": 0.5,
    "numWorkers": 2,
}
#: Context a field needs to mean something (the GPU request type that reads it, a claim to create...).
CONTEXT: dict[tuple[str, ...], dict[str, Any]] = {
    ("compute", "gpuPortionRequest"): {"gpuRequestType": "portion"},
    ("compute", "gpuMemoryRequest"): {"gpuRequestType": "memory"},
    ("podAffinity", "key"): {"type": "Required"},
    ("ports", "name"): {"container": 7},
    ("extendedResources", "resource"): {"quantity": "1"},
}
#: Worker-only fields a framework reads, and the framework the walk renders them with.
FRAMEWORK_OF = {
    "minReplicas": "PyTorch",
    "maxReplicas": "PyTorch",
    "slotsPerWorker": "MPI",
    "sshAuthMountPath": "MPI",
    "mpiLauncherCreationPolicy": "MPI",
}


def _unwrap(annotation: Any) -> Any:
    if typing.get_origin(annotation) is typing.Annotated:
        annotation = typing.get_args(annotation)[0]
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        return _unwrap(args[0])
    return annotation


def _value(name: str, annotation: Any) -> Any:
    if name in SPECIAL:
        return SPECIAL[name]
    kind = _unwrap(annotation)
    if typing.get_origin(kind) is Literal:
        return typing.get_args(kind)[0]
    if kind is bool:
        return True
    if kind is int:
        return 1
    if kind is float:
        return 1.0
    if kind is str:
        return "x"
    if typing.get_origin(kind) is list:
        item = _unwrap(typing.get_args(kind)[0])
        if item is str:
            return ["x"]
        if typing.get_origin(item) is Literal:
            return [typing.get_args(item)[0]]
    raise AssertionError(f"no value for {name}: {annotation}")


def _fields(model: type[BaseModel], path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    """Every leaf field of ``model``, by its path of names (a list of models is walked into its items)."""
    for name, info in model.model_fields.items():
        kind = _unwrap(info.annotation)
        inner = typing.get_args(kind)[0] if typing.get_origin(kind) is list else kind
        inner = _unwrap(inner)
        if isinstance(inner, type) and issubclass(inner, BaseModel):
            yield from _fields(inner, (*path, name))
        elif name != "exclude":  # a merge marker: never in a combined spec
            yield (*path, name), info.annotation


def _build(model: type[BaseModel], path: tuple[str, ...], leaf: Any, plan: PlanNode) -> Any:
    """A value of ``model`` that sets the field at ``path`` (items get their key, and what runnable needs)."""
    name, rest = path[0], path[1:]
    info = model.model_fields[name]
    kind = _unwrap(info.annotation)
    node = plan.child(name)
    if not rest:
        return {name: leaf}
    is_list = typing.get_origin(kind) is list
    inner = _unwrap(typing.get_args(kind)[0]) if is_list else kind
    value = _build(inner, rest, leaf, node)
    value = {**CONTEXT.get((name, rest[0]), {}), **value}
    if is_list:
        key = node.key
        if key is not None and key.field not in value:
            value[key.field] = SPECIAL.get(key.field, 7 if key.field == "container" else "k")
        return {name: [value]}
    return {name: value}


def _normal(path: Path) -> str:
    out: list[str] = []
    for step in path:
        if isinstance(step, Match | int):
            out[-1] += "[]"
        else:
            out.append(str(step))
    return ".".join(out)


def _covered(field: str, known: str) -> bool:
    return field == known or field.startswith((known + ".", known + "[")) or known.startswith(field + ".")


CASES = [("worker", path, ann) for path, ann in _fields(WorkerSpec)] + [
    ("master", path, ann) for path, ann in _fields(MasterSpec)
]


def test_the_walk_sees_every_field() -> None:
    assert len({p for _, p, _ in CASES}) > 120


@pytest.mark.parametrize(
    ("replica", "path", "annotation"), CASES, ids=[f"{r}-{'.'.join(p)}" for r, p, _ in CASES]
)
def test_every_field_is_mapped_or_not_representable(
    replica: str, path: tuple[str, ...], annotation: Any
) -> None:
    leaf = _value(path[-1], annotation)
    model = WorkerSpec if replica == "worker" else MasterSpec
    fragment = _build(model, path, leaf, SPEC_PLAN)
    framework = FRAMEWORK_OF.get(path[0], "PyTorch")
    workers: dict[str, Any] = {"distributedFramework": framework, "numWorkers": 2, "image": "i"}
    master: dict[str, Any] | None = None
    if replica == "worker":
        workers |= fragment
    else:
        master = {"image": "i", **fragment}
    result = manifests_of(workers, master, False, name="walk", project="p")
    field = _normal(_as_path(fragment, path))
    sources = [
        _normal(s.path)
        for table in result.origins
        for s in table.values()
        if isinstance(s, SpecSource) and s.replica == replica
    ]
    warned = [_normal(w.field) for w in result.warnings if w.replica == replica]
    listed = [*NOT_REPRESENTABLE, *CHOOSERS]
    item = field.rsplit(".", 1)[0]
    # the key names its item: where the item lands, so does it
    if item.endswith("[]") and _is_key(path) and any(known.startswith(item + ".") for known in sources):
        return
    assert any(_covered(field, known) for known in [*sources, *warned, *listed]), (
        f"{replica} {field}: neither in the objects nor in NOT_REPRESENTABLE or CHOOSERS"
    )


def _is_key(path: tuple[str, ...]) -> bool:
    node = SPEC_PLAN
    for name in path[:-1]:
        node = node.child(name)
    return node.key is not None and node.key.field == path[-1]


def _as_path(fragment: Any, path: tuple[str, ...]) -> Path:
    """The path of the field in ``fragment``, keyed list items by their key (as origins name them)."""
    out: list[Any] = []
    value: Any = fragment
    node = SPEC_PLAN
    for name in path:
        out.append(name)
        value = value[name]
        node = node.child(name)
        if isinstance(value, list):
            item = value[0]
            match = item_key(item, node.key) if node.key is not None else None
            out.append(match if match is not None else 0)
            value = item
    return tuple(out)
