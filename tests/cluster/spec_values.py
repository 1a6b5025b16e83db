"""Combined specs generated from the spec models (``template_engine/models/spec.py``), for the cluster proofs.

Each field's values follow its type in the model: a ``Literal`` gives its members, a number stays within its
``ge``/``le``, a keyed list has items unique by their key (always given, as in a combined spec), a nested
model
is built the same way.  A string takes the values its path admits: Run:ai's rules of
``template_engine/loader/values.py`` (names, quantities, URL paths, UUIDs), the model's pattern
(``defaultMode``), else a few free strings.  A combined spec holds no ``exclude`` (the merge removed them) and
no ``null`` (pruned).

:func:`specs` is the hypothesis strategy; :func:`leaf_paths` the set leaves of a spec as the walk names them
(keyed items by :class:`~template_engine.paths.Match`, other list items by position); :func:`model_leaves`
every leaf field of a model, ``[]`` standing for the items of a list.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Iterator, Mapping
from typing import Any

from annotated_types import Ge, Le, MaxLen, MinLen
from hypothesis import strategies as st
from pydantic import BaseModel

from template_engine.merge.plan import SPEC_PLAN, PlanNode
from template_engine.paths import Path
from template_engine.runnable import REQUIRED_ITEM_FIELDS, VALUE_SOURCES
from template_engine.walk import items

NAMES = ["data", "cfg-1", "a"]
QUANTITIES = ["1Gi", "512Mi", "20M", "2", "100m"]
FREE = ["a", "data", "x-1", "/mnt/a", "A b", "nvcr.io/nvidia/pytorch:24.05-py3"]
#: Strings by the field's name or path (``*``: any item), most specific first.
STRINGS: dict[tuple[str, ...], list[str]] = {
    ("environmentVariables", "*", "secret", "name"): NAMES,
    ("environmentVariables", "*", "configMap", "name"): NAMES,
    ("imagePullSecrets", "*", "name"): NAMES,
    ("storage", "configMapVolume", "*", "configMap"): NAMES,
    ("storage", "pvc", "*", "claimInfo", "storageClass"): NAMES,
    ("storage", "s3", "*", "accessKeySecret"): NAMES,
    ("compute", "cpuMemoryRequest"): QUANTITIES,
    ("compute", "cpuMemoryLimit"): QUANTITIES,
    ("compute", "gpuMemoryRequest"): QUANTITIES,
    ("compute", "gpuMemoryLimit"): QUANTITIES,
    ("compute", "extendedResources", "*", "quantity"): QUANTITIES,
    ("compute", "extendedResources", "*", "resource"): ["acme.io/fpga", "example.com/dongle"],
    ("compute", "migProfile"): ["1g.5gb", "mig-2g.10gb"],
    ("storage", "emptyDirVolume", "*", "sizeLimit"): QUANTITIES,
    ("storage", "pvc", "*", "claimInfo", "size"): QUANTITIES,
    ("storage", "pvc", "*", "claimName"): NAMES,
    ("probes", "readiness", "handler", "httpGet", "path"): ["/", "/healthz"],
    ("storage", "dataVolume", "*", "id"): ["3f2b8c1e-6a4d-4e5f-9a0b-1c2d3e4f5a6b"],
    ("storage", "pvc", "*", "claimInfo", "addedAttrValues", "*", "key"): ["attr", "a.b"],
    ("storage", "configMapVolume", "*", "defaultMode"): ["0644", "0400"],
    ("storage", "secretVolume", "*", "defaultMode"): ["0644", "0400"],
    ("labels", "*", "name"): ["acme.io/team", "tier"],
    ("annotations", "*", "name"): ["acme.io/owner", "note"],
    ("security", "supplementalGroups"): ["1000", "1000,2000", "staff"],
    ("command",): ["python train.py --epochs 3", "bash -c 'echo hi'", "echo 'unbalanced"],
    ("args",): ["--lr 0.1", "-v"],
    ("image",): ["python:3.11", "nvcr.io/nvidia/pytorch:24.05-py3"],
    ("priorityClass",): ["train", "build", "inference", "nightly"],
}
#: The free strings of a field by its last name.
BY_NAME: dict[str, list[str]] = {
    "path": ["/mnt/a", "/data"],
    "mountPath": ["/mnt/b", "/work"],
    "name": ["n1", "n2", "n3"],
}
INTEGERS = [-1, 0, 1, 2, 3, 8, 100, 8080, 65535]
FLOATS = [0.0, 0.25, 0.5, 1.0, 2.0, 3.5]


def _core(annotation: Any) -> Any:
    """The type under ``X | None`` and ``Annotated``."""
    while True:
        origin = typing.get_origin(annotation)
        if origin is typing.Annotated:
            annotation = typing.get_args(annotation)[0]
        elif origin in (typing.Union, types.UnionType):
            args = [a for a in typing.get_args(annotation) if a is not type(None)]
            if len(args) != 1:
                return annotation
            annotation = args[0]
        else:
            return annotation


def _bounds(annotation: Any, metadata: list[Any]) -> tuple[float, float]:
    low, high = float("-inf"), float("inf")
    found = list(metadata)
    stack = [annotation]
    while stack:  # the bounds of Int32/Int64 inside the annotation
        a = stack.pop()
        if typing.get_origin(a) is typing.Annotated:
            for extra in typing.get_args(a)[1:]:
                found += getattr(extra, "metadata", [extra])
        stack += list(typing.get_args(a))
    for item in found:
        if isinstance(item, Ge):
            low = max(low, float(item.ge))  # type: ignore[arg-type]
        if isinstance(item, Le):
            high = min(high, float(item.le))  # type: ignore[arg-type]
    return low, high


def _strings(path: tuple[str, ...], metadata: list[Any]) -> list[str]:
    found = STRINGS.get(path) or BY_NAME.get(path[-1], FREE)
    low = max((m.min_length for m in metadata if isinstance(m, MinLen)), default=0)
    high = min((m.max_length for m in metadata if isinstance(m, MaxLen)), default=10**6)
    return [s for s in found if low <= len(s) <= high]


def scalar_values(annotation: Any, metadata: list[Any], path: tuple[str, ...]) -> list[Any]:
    """The values a scalar field takes (``path``: its names, ``*`` for list items)."""
    core = _core(annotation)
    if typing.get_origin(core) is typing.Literal:
        return list(typing.get_args(core))
    if core is bool:
        return [True, False]
    if core in (int, float):
        low, high = _bounds(annotation, metadata)
        return [v for v in (INTEGERS if core is int else FLOATS) if low <= v <= high]
    if core is str:
        return _strings(path, metadata)
    args = set(typing.get_args(core))
    if str in args:  # str | Int64 (an extended resource's quantity)
        return [*_strings(path, metadata), 1, 4]
    raise TypeError(f"no values for {path}: {annotation!r}")


def _list_item(annotation: Any) -> Any:
    core = _core(annotation)
    return typing.get_args(core)[0] if typing.get_origin(core) is list else None


def _is_model(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


def model_strategy(
    model: type[BaseModel], path: tuple[str, ...], node: PlanNode, needed: tuple[str, ...] = ()
) -> st.SearchStrategy[Any]:
    """A mapping of ``model``'s fields, each perhaps left out (required ones, and ``needed``, given)."""
    required: dict[str, st.SearchStrategy[Any]] = {}
    optional: dict[str, st.SearchStrategy[Any]] = {}
    for name, info in model.model_fields.items():
        if name == "exclude":
            continue
        strategy = field_strategy(info.annotation, info.metadata, (*path, name), node.child(name))
        (required if info.is_required() or name in needed else optional)[name] = strategy
    return st.fixed_dictionaries(required, optional=optional)


def field_strategy(
    annotation: Any, metadata: list[Any], path: tuple[str, ...], node: PlanNode
) -> st.SearchStrategy[Any]:
    core = _core(annotation)
    if _is_model(core):
        return model_strategy(core, path, node)
    item = _list_item(annotation)
    if item is not None:
        if _is_model(item):
            # an item has what runnable.py requires of it; an environment variable, one source of its value
            element = model_strategy(item, (*path, "*"), node, REQUIRED_ITEM_FIELDS.get(path, ()))
            if path == ("environmentVariables",):
                element = element.map(_one_source)
            key = node.key
            if key is not None:  # a combined spec's items are unique by their key, and have it
                element = element.filter(lambda i, k=key: i.get(k.field) is not None)
                return st.lists(element, min_size=1, max_size=3, unique_by=lambda i, k=key: i[k.field])
            return st.lists(element, min_size=1, max_size=2)
        return st.lists(
            st.sampled_from(scalar_values(item, [], (*path, "*"))), min_size=1, max_size=3, unique=True
        )
    return st.sampled_from(scalar_values(annotation, metadata, path))


def _one_source(item: dict[str, Any]) -> dict[str, Any]:
    sources = [k for k in VALUE_SOURCES if k in item]
    kept = {k: v for k, v in item.items() if k not in VALUE_SOURCES or k == sources[0]}
    return kept if sources else {**kept, "value": "1"}


def specs(model: type[BaseModel]) -> st.SearchStrategy[dict[str, Any]]:
    return typing.cast(st.SearchStrategy[dict[str, Any]], model_strategy(model, (), SPEC_PLAN))


def model_leaves(model: type[BaseModel], path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    """Every leaf field of ``model`` (``[]``: the items of a list), ``exclude`` left out."""
    for name, info in model.model_fields.items():
        if name == "exclude":
            continue
        core = _core(info.annotation)
        item = _list_item(info.annotation)
        if _is_model(core):
            yield from model_leaves(core, (*path, name))
        elif item is not None and _is_model(item):
            yield from model_leaves(item, (*path, f"{name}[]"))
        else:
            yield (*path, name)


def leaf_paths(value: Any, node: PlanNode = SPEC_PLAN, path: Path = ()) -> Iterator[Path]:
    """The path of every set leaf of a spec: mappings by key, lists by :func:`~template_engine.walk.items`."""
    if isinstance(value, Mapping):
        for key, child in value.items():
            yield from leaf_paths(child, node.child(key), (*path, key))
    elif isinstance(value, list):
        for segment, child in items(value, node):
            yield from leaf_paths(child, node, (*path, segment))
    else:
        yield path


def table_name(path: Path) -> str:
    """``path`` as :data:`~template_engine.cluster.mapping.NOT_REPRESENTABLE` names it: list items ``[]``."""
    text = ""
    for segment in path:
        if isinstance(segment, str):
            text += f".{segment}" if text else segment
        else:
            text += "[]"
    return text
