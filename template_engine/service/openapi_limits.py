"""The limits the service enforces, stated in its OpenAPI document (issue 30), so that the document accepts
nothing the service refuses:

* every text of a spec has its bound (:data:`~template_engine.loader.values.TEXT_BOUNDS`, else
  :data:`~template_engine.loader.values.LONGEST_TEXT`) as ``maxLength``.  Where the bound is under the
  longest (a label's 63), the loader lets a text holding an expression reach the longest (it is rendered
  later); the document says the field's bound: it may refuse such an expression the service takes, never
  the reverse (a schema cannot tell an expression that renders from one that does not, and a generator
  writing ``{{`` texts up to 4,096 would write broken expressions the service refuses);
* no text of a request body holds a NUL character (``not: {pattern: "\\u0000"}``): the service refuses
  one anywhere in a body;
* ``filterBy`` and ``assetIds`` carry their exact grammar (:attr:`.listing.Listing.pattern`,
  :data:`.asset_queries.IDS_PATTERN`, declared with the parameters themselves).

``tests/service/test_openapi_limits.py`` compares the document with the service.
"""

from __future__ import annotations

from typing import Any

from template_engine.kinds import TEMPLATE_KINDS
from template_engine.loader.values import LONGEST_TEXT, TEXT_BOUNDS

#: The components a spec's fields start from (shapes of :data:`TEXT_BOUNDS` are paths in a spec): the
#: distributed ones and each template kind's spec (``TrainingSpec``...).
SPEC_COMPONENTS = tuple(
    dict.fromkeys(
        ("WorkerSpec", "MasterSpec", "WorkloadMasterSpec", *(k.spec_model.__name__ for k in TEMPLATE_KINDS))
    )
)
NUL = {"pattern": "\\u0000"}


def _bound(node: dict[str, Any], shape: tuple[str, ...]) -> None:
    row = TEXT_BOUNDS.get(shape)
    bound = row[0] if row is not None else LONGEST_TEXT
    node["maxLength"] = min(node.get("maxLength", bound), bound)


def _texts(node: Any, shape: tuple[str, ...], components: dict[str, Any], seen: set[Any]) -> None:
    """Bound each text below ``node``, a schema found at ``shape`` in a spec (``*``: an item)."""
    if not isinstance(node, dict):
        return
    ref = node.get("$ref")
    if isinstance(ref, str):
        name = ref.rsplit("/", 1)[-1]
        if (name, shape) not in seen:
            seen.add((name, shape))
            _texts(components.get(name), shape, components, seen)
        return
    for key in ("anyOf", "oneOf", "allOf"):
        for sub in node.get(key, ()):
            _texts(sub, shape, components, seen)
    if node.get("type") == "string" and "enum" not in node:
        _bound(node, shape)
    for name, sub in (node.get("properties") or {}).items():
        _texts(sub, (*shape, name), components, seen)
    if "items" in node:
        _texts(node["items"], (*shape, "*"), components, seen)


def _no_nul(node: Any) -> None:
    """Every text schema below ``node`` refuses a NUL character."""
    if isinstance(node, dict):
        if node.get("type") == "string" and "enum" not in node and "not" not in node:
            node["not"] = dict(NUL)
        for value in node.values():
            _no_nul(value)
    elif isinstance(node, list):
        for item in node:
            _no_nul(item)


def state_limits(document: dict[str, Any]) -> None:
    """Write the service's limits into its OpenAPI ``document`` (in place)."""
    components = document.setdefault("components", {}).setdefault("schemas", {})
    seen: set[Any] = set()
    for name in SPEC_COMPONENTS:
        if name in components:
            seen.add((name, ()))
            _texts(components[name], (), components, seen)
    _no_nul(components)
    for operations in document.get("paths", {}).values():
        for operation in operations.values():
            body = operation.get("requestBody") if isinstance(operation, dict) else None
            if body is not None:
                _no_nul(body)
