"""Extracts Run:ai's description of every spec field from its OpenAPI document into ``descriptions.json``.

``python -m template_engine.lsp.descriptions_source ../shared/reference/runai-openapi-1.224.0.json``
rewrites the packaged file; ``tests/test_lsp_editing.py`` holds it equal to the extract of the copy in
``tests/fixtures/runai``.  The extract maps a field's path in a spec (``compute.cpuCoreLimit``; a list's
items as ``[]``: ``environmentVariables[].name``) to the description of its schema, from the specs of every
workload kind (``*SpecSpec``), the first found kept; completion shows them (:mod:`.complete`).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

DESCRIPTIONS_FILE = Path(__file__).with_name("descriptions.json")
#: How deep a spec's fields are followed (the document's schemas nest, and some refer to themselves).
MAX_DEPTH = 8


def _resolve(schemas: Mapping[str, Any], node: Any) -> list[Mapping[str, Any]]:
    """``node`` and the schemas it refers to or combines (``$ref``, ``allOf``, ``oneOf``, ``anyOf``)."""
    if not isinstance(node, Mapping):
        return []
    found = [node]
    ref = node.get("$ref")
    if isinstance(ref, str):
        found += _resolve(schemas, schemas.get(ref.rsplit("/", 1)[-1]))
    for key in ("allOf", "oneOf", "anyOf"):
        for part in node.get(key, ()):
            found += _resolve(schemas, part)
    return found


def _walk(schemas: Mapping[str, Any], node: Any, prefix: str, out: dict[str, str], depth: int) -> None:
    if depth > MAX_DEPTH:
        return
    for part in _resolve(schemas, node):
        for name, child in (part.get("properties") or {}).items():
            path = f"{prefix}.{name}" if prefix else name
            variants = _resolve(schemas, child)
            text = next((str(v["description"]) for v in variants if v.get("description")), None)
            if text and path not in out:
                out[path] = " ".join(text.split())
            _walk(schemas, child, path, out, depth + 1)
            for variant in variants:
                if "items" in variant:
                    _walk(schemas, variant["items"], f"{path}[]", out, depth + 1)


def extract(document: Mapping[str, Any]) -> dict[str, str]:
    schemas = document["components"]["schemas"]
    out: dict[str, str] = {}
    for name in sorted(schemas):
        if name.endswith("SpecSpec"):
            _walk(schemas, schemas[name], "", out, 0)
    return dict(sorted(out.items()))


def main(argv: list[str]) -> None:
    document = json.loads(Path(argv[0]).read_text(encoding="utf-8"))
    found = extract(document)
    DESCRIPTIONS_FILE.write_text(json.dumps(found, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"{DESCRIPTIONS_FILE}: {len(found)} fields")


if __name__ == "__main__":
    main(sys.argv[1:])
