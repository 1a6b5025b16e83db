"""The fast twin of :mod:`~template_engine.cluster.schemas`' validators: one yes-or-no, in Rust.

``schemas._crd_validator`` (``jsonschema`` with Kubernetes' keywords) says *every* reason a job object is
refused, with its path; it is the one explanation. Most objects are valid, and for them a yes is all
``check`` needs: :func:`structural_schema` rewrites a CRD's ``openAPIV3Schema`` once into a plain JSON Schema
that means what the full validator's keywords mean (``schemas._keywords``, whose docstring names this twin),
and ``jsonschema_rs`` compiles it. An object the fast validator accepts has no problem; one it refuses is
explained by the full validator, so every message, path and check name is the full validator's. The two are
proved equal by ``tests/cluster/test_fast_schemas.py`` (hypothesis: generated objects around valid ones).

Each Kubernetes extension, as the full validator reads it, spelt in JSON Schema:

- unknown fields (pruning/algorithm.go): ``additionalProperties: false`` where ``properties`` is given alone,
  and on a bare ``type: object``; the resource root keeps ``apiVersion``, ``kind`` and ``metadata`` (checked
  beside the schema by ``schemas.schema_problems``);
- pruned nulls (prunenulls.go): a property without a ``default`` also takes ``null`` unless it is required;
- ``required`` leaves out a field with a ``default`` (defaulting runs first);
- ``x-kubernetes-int-or-string``: ``type: [integer, string]`` (its ``anyOf`` dropped); integers as Draft 7
  has them (``2.0`` is one, as go-openapi reads it);
- ``int32``/``int64``: ``minimum``/``maximum``; ``date-time``: ``schemas.DATE_TIME_PATTERN``;
- ``x-kubernetes-list-type`` ``map``/``set``: a keyword that calls the full validator's own rule
  (``schemas.list_duplicates``);
- a CEL rule other than the transition rule ``self == oldSelf``: the node refuses everything.

Anything else (``nullable``, ``x-kubernetes-preserve-unknown-fields``, embedded resources, a keyword
outside the vendored CRDs' vocabulary) makes :func:`structural_schema` decline: the kind then has no fast
validator and every object of it goes to the full one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

#: The keywords the vendored CRDs use; a schema with any other is declined.
_VOCABULARY = frozenset(
    {
        "type",
        "properties",
        "required",
        "items",
        "format",
        "anyOf",
        "default",
        "additionalProperties",
        "pattern",
        "enum",
        "description",
        "x-kubernetes-list-type",
        "x-kubernetes-list-map-keys",
        "x-kubernetes-map-type",
        "x-kubernetes-int-or-string",
        "x-kubernetes-validations",
    }
)
_META_FIELDS = ("apiVersion", "kind", "metadata")
#: The keyword :func:`structural_schema` writes for a list-type ``map`` or ``set``.
LIST_KEYWORD = "x-template-engine-list"
_NEVER: Mapping[str, Any] = {"not": {}}


class _Declined(Exception):
    """The schema says something this rewriting does not know how to say."""


def structural_schema(
    root: Mapping[str, Any], int_ranges: Mapping[str, tuple[int, int]], date_time: str
) -> dict[str, Any] | None:
    """``root`` (a CRD's ``openAPIV3Schema``) as a plain JSON Schema of the same meaning, or ``None``."""
    try:
        return _Rewrite(int_ranges, date_time).node(root, root=True)
    except _Declined:
        return None


class _Rewrite:
    def __init__(self, int_ranges: Mapping[str, tuple[int, int]], date_time: str) -> None:
        self.int_ranges = int_ranges
        self.date_time = date_time

    def node(
        self, schema: Any, *, root: bool = False, null_ok: bool = False, not_null: bool = False
    ) -> dict[str, Any]:
        """One schema node; ``null_ok``: a ``null`` here is pruned; ``not_null``: a required field."""
        if not isinstance(schema, Mapping) or not set(schema) <= _VOCABULARY:
            raise _Declined
        rules = schema.get("x-kubernetes-validations", [])
        if any("oldSelf" not in str(rule.get("rule", "")) for rule in rules):
            return {"type": "null"} if null_ok else dict(_NEVER)
        out: dict[str, Any] = {}
        self._types(schema, out)
        self._object(schema, out, root)
        if "items" in schema:
            if not isinstance(schema["items"], Mapping):
                raise _Declined
            out["items"] = self.node(schema["items"])
        self._list_type(schema, out)
        if "enum" in schema:
            if not all(isinstance(v, str) for v in schema["enum"]):
                raise _Declined
            out["enum"] = list(schema["enum"])
        if null_ok:
            if "type" in out:
                out["type"] = [*_as_list(out["type"]), "null"]
            if "enum" in out:
                out["enum"].append(None)
        elif not_null and "type" not in out:
            out["not"] = {"type": "null"}
        return out

    def _types(self, schema: Mapping[str, Any], out: dict[str, Any]) -> None:
        if schema.get("x-kubernetes-int-or-string", False):
            if "type" in schema:
                raise _Declined
            out["type"] = ["integer", "string"]
        else:
            if "type" in schema:
                out["type"] = schema["type"]
            if "anyOf" in schema:
                out["anyOf"] = [self.node(branch) for branch in schema["anyOf"]]
        if "pattern" in schema:
            out["pattern"] = schema["pattern"]
        fmt = str(schema.get("format", ""))
        if fmt in self.int_ranges:
            if schema.get("type") != "integer":
                raise _Declined
            out["minimum"], out["maximum"] = self.int_ranges[fmt]
        elif fmt == "date-time":
            if "pattern" in out:
                raise _Declined
            out["pattern"] = self.date_time

    def _object(self, schema: Mapping[str, Any], out: dict[str, Any], root: bool) -> None:
        props = schema.get("properties")
        required = set(schema.get("required", []))
        if props is not None:
            out["properties"] = {
                name: self.node(
                    sub,
                    null_ok="default" not in sub and name not in required,
                    not_null="default" not in sub and name in required,
                )
                for name, sub in props.items()
                if not (root and name in _META_FIELDS)
            }
            if root:
                out["properties"].update({name: {} for name in _META_FIELDS})
        if required:
            known = props or {}
            out["required"] = sorted(n for n in required if "default" not in known.get(n, {}))
        extra = schema.get("additionalProperties")
        if root and extra is not None:
            raise _Declined
        if isinstance(extra, Mapping):
            out["additionalProperties"] = self.node(extra, null_ok="default" not in extra)
        elif extra is not None:
            out["additionalProperties"] = extra
        elif props is not None or (schema.get("type") == "object" and not root):
            out["additionalProperties"] = False

    def _list_type(self, schema: Mapping[str, Any], out: dict[str, Any]) -> None:
        kind = schema.get("x-kubernetes-list-type")
        if kind == "set":
            out[LIST_KEYWORD] = {"kind": "set"}
        elif kind == "map":
            names, defaults = list_map_keys(schema)
            out[LIST_KEYWORD] = {"kind": "map", "keys": names, "defaults": defaults}


def list_map_keys(schema: Mapping[str, Any]) -> tuple[list[str], dict[str, Any]]:
    """A list-type map's keys (``x-kubernetes-list-map-keys``) and the default of each key that has one
    (an item's schema: ``protocol: TCP`` of container ports), which a missing key takes before comparing."""
    items = schema.get("items")
    item_props = items.get("properties", {}) if isinstance(items, Mapping) else {}
    names = [str(name) for name in schema.get("x-kubernetes-list-map-keys", [])]
    defaults = {n: item_props[n]["default"] for n in names if "default" in item_props.get(n, {})}
    return names, defaults


def _as_list(types: Any) -> list[Any]:
    return list(types) if isinstance(types, list) else [types]


#: ``(kind, items, keys, defaults)`` -> the index and sentence of each duplicate: ``schemas.list_duplicates``.
Duplicates = Callable[[str, list[Any], list[str], Mapping[str, Any]], Iterator[tuple[int, str]]]


def list_keyword(duplicates: Duplicates) -> type:
    """The ``jsonschema_rs`` keyword class of :data:`LIST_KEYWORD`, calling the full validator's rule."""

    class ListType:
        def __init__(self, _parent: Any, value: Mapping[str, Any], _path: Any) -> None:
            self.kind = str(value["kind"])
            self.keys = list(value.get("keys", []))
            self.defaults = dict(value.get("defaults", {}))

        def validate(self, instance: Any) -> None:
            if isinstance(instance, list):
                for _index, message in duplicates(self.kind, instance, self.keys, self.defaults):
                    raise ValueError(message)

    return ListType


__all__ = ["LIST_KEYWORD", "list_keyword", "list_map_keys", "structural_schema"]
