"""Run:ai's attribute defaults of keyed lists, applied to a rendered combined spec.

Run:ai's policy reference ("Itemized"): an item's own value of an attribute beats the attribute default, and
the attribute default fills every item that has none: an item the request side added, and an inherited one
that lacks the attribute.  Pure: a spec and the replica's attribute defaults in, a copy and which default set
which path out (their origin for ``explain``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from template_engine.merge.engine import clone
from template_engine.merge.plan import PlanNode, item_key
from template_engine.paths import Path
from template_engine.policy.document import AttributeDefault


def _missing(value: Any) -> bool:
    return value is None or value == "" or value == [] or value == {}


def _get(data: Any, path: Iterable[str]) -> Any:
    for name in path:
        if not isinstance(data, Mapping):
            return None
        data = data.get(name)
    return data


def _set(data: Mapping[str, Any], path: tuple[str, ...], value: Any) -> dict[str, Any]:
    """A copy of ``data`` with ``path`` set; the mappings on the way keep their keys sorted, as rendered."""
    out = dict(data)
    if len(path) == 1:
        out[path[0]] = value
    else:
        inner = out.get(path[0])
        out[path[0]] = _set(inner if isinstance(inner, Mapping) else {}, path[1:], value)
    return dict(sorted(out.items()))


def apply_attribute_defaults(
    spec: Mapping[str, Any], defaults: Iterable[AttributeDefault], plan: PlanNode
) -> tuple[dict[str, Any], dict[Path, AttributeDefault]]:
    """``spec`` (a copy) with each attribute default written into every item of its list that has no value
    for the attribute, and the path of each value so set with the default that set it."""
    out: dict[str, Any] = dict(spec)
    applied: dict[Path, AttributeDefault] = {}
    for default in defaults:
        node = plan
        for name in default.path:
            node = node.child(name)
        items = _get(out, default.path)
        if not isinstance(items, list) or node.key is None:
            continue
        new_items: list[Any] = []
        changed = False
        for item in items:
            if isinstance(item, Mapping) and _missing(_get(item, default.attribute)):
                match = item_key(item, node.key)
                if match is not None:
                    item = _set(item, default.attribute, clone(default.value))
                    applied[(*default.path, match, *default.attribute)] = default
                    changed = True
            new_items.append(item)
        if changed:
            out = _set(out, default.path, new_items)
    return out, applied
