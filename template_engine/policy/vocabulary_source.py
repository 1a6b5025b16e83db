"""Extracts Run:ai's policy rule vocabulary from its OpenAPI document into ``vocabulary.json``.

``python -m template_engine.policy.vocabulary_source ../shared/reference/runai-openapi-subset.json`` rewrites
the vendored file; ``.ci/run`` (``--check``) and ``tests/test_policy_vocabulary_supplement.py`` check it still
matches the document.  The
extract keeps only what the rules need: for every field that may carry rules, its family (a rule object, a
keyed list's ``instances``/``attributes``, or a section of fields), the rule keys the family has with their
value kinds, and the allowed option values of enum families.

Run:ai documents rules on a few fields that its OpenAPI document does not list (``compute.migProfile``:
the policy reference's compute table, and its "Create a robust set of guidelines" example rules it with
``canEdit: false``).  :data:`SUPPLEMENT` names each of them with the family the document gives such a
field and the page that documents it; the extract adds them, and says so under ``supplements``, so the
generated file is never edited by hand.  A supplement the document comes to list is an error: remove it.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: The rule keys a rule object may have, by the JSON Schema that types them in Run:ai's document.
RULE_KEYS = frozenset({"canEdit", "required", "min", "max", "step", "options", "defaultFrom", "sourceOfRule"})

VOCABULARY_FILE = Path(__file__).with_name("vocabulary.json")

_POLICY_REFERENCE = (
    "https://github.com/run-ai/docs/blob/master/docs/platform-admin/workloads/policies/policy-reference.md"
)
_POLICY_EXAMPLES = (
    "https://github.com/run-ai/docs/blob/master/docs/platform-admin/workloads/policies/policy-examples.md"
)


@dataclass(frozen=True, slots=True)
class Supplement:
    """A field Run:ai's documentation gives rules that its OpenAPI document does not list."""

    path: tuple[str, ...]
    #: The rule family of the field, a schema of the document (``StringRules`` for a string field).
    family: str
    #: Where Run:ai documents the field and its rules.
    source: str


#: The documented fields beyond the pinned OpenAPI document, for both replicas (``ReplicaRulesV2``).
SUPPLEMENT: tuple[Supplement, ...] = (
    Supplement(
        ("compute", "migProfile"),
        "StringRules",
        f"{_POLICY_REFERENCE} (Compute fields: migProfile, a string); {_POLICY_EXAMPLES} "
        '("Create a robust set of guidelines": migProfile: {canEdit: false})',
    ),
)


def _ref(node: Mapping[str, Any]) -> str:
    return str(node["$ref"]).rsplit("/", 1)[-1]


class _Extractor:
    def __init__(self, schemas: Mapping[str, Any]) -> None:
        self.schemas = schemas

    def properties(self, node: Mapping[str, Any]) -> dict[str, Any]:
        if "$ref" in node:
            return self.properties(self.schemas[_ref(node)])
        found: dict[str, Any] = {}
        for part in node.get("allOf", []):
            found.update(self.properties(part))
        found.update(node.get("properties", {}))
        return found

    def family(self, node: Mapping[str, Any]) -> str:
        if "$ref" in node:
            return _ref(node)
        parts = [_ref(p) for p in node.get("allOf", []) if "$ref" in p]
        return "+".join(parts) if parts else "inline"

    def kind_of(self, name: str, schema: Mapping[str, Any], family: str) -> str:
        if name in ("canEdit", "required"):
            return "boolean"
        if name == "defaultFrom":
            return "defaultFrom"
        if name == "options":
            return "options"
        if name == "sourceOfRule":
            return "sourceOfRule"
        if schema.get("type") == "string" or "Quantity" in family:
            return "quantity"
        return str(schema.get("type", "number"))

    def options(self, schema: Mapping[str, Any]) -> list[str] | None:
        item = schema.get("items", {})
        value = self.properties(item).get("value", {})
        if "$ref" in value:
            target = self.schemas[_ref(value)]
            return [str(v) for v in target.get("enum", []) if v is not None] or None
        return list(value["enum"]) if "enum" in value else None

    def node(self, schema: Mapping[str, Any]) -> dict[str, Any]:
        family = self.family(schema)
        props = self.properties(schema)
        if "instances" in props:
            attributes = props.get("attributes")
            return {
                "kind": "items",
                "family": family,
                "attributes": self.fields(attributes) if attributes is not None else {},
            }
        if props and set(props) <= RULE_KEYS:
            keys = {name: self.kind_of(name, sub, family) for name, sub in sorted(props.items())}
            keys.pop("sourceOfRule", None)
            out: dict[str, Any] = {"kind": "rules", "family": family, "keys": keys}
            if "options" in props:
                allowed = self.options(props["options"])
                if allowed:
                    out["optionValues"] = allowed
            return out
        return {"kind": "section", "family": family, "fields": self.fields(schema)}

    def fields(self, schema: Mapping[str, Any]) -> dict[str, Any]:
        return {name: self.node(sub) for name, sub in sorted(self.properties(schema).items())}


def _supplemented(fields: dict[str, Any], extractor: _Extractor) -> dict[str, Any]:
    """``fields`` (a replica's, as extracted) with :data:`SUPPLEMENT` added, each section kept sorted."""
    out: dict[str, Any] = json.loads(json.dumps(fields))
    for entry in SUPPLEMENT:
        level = out
        for name in entry.path[:-1]:
            node = level.get(name)
            if node is None or node["kind"] != "section":
                raise ValueError(
                    f"supplement {'.'.join(entry.path)}: {name} is not a section of the document"
                )
            level = node["fields"]
        if entry.path[-1] in level:
            raise ValueError(
                f"supplement {'.'.join(entry.path)} is in the OpenAPI document now: remove it from SUPPLEMENT"
            )
        level[entry.path[-1]] = extractor.node({"$ref": f"#/components/schemas/{entry.family}"})
        level_sorted = dict(sorted(level.items()))
        level.clear()
        level.update(level_sorted)
    return out


def extract(document: Mapping[str, Any]) -> dict[str, Any]:
    schemas = document["components"]["schemas"]
    extractor = _Extractor(schemas)
    rules = extractor.properties(schemas["DistributedPolicyRulesV2"])
    return {
        "source": "DistributedPolicyRulesV2 of Run:ai's OpenAPI document",
        "supplements": [
            {"path": ".".join(e.path), "family": e.family, "source": e.source} for e in SUPPLEMENT
        ],
        "worker": _supplemented(extractor.fields(rules["worker"]), extractor),
        "master": _supplemented(extractor.fields(rules["master"]), extractor),
    }


def main(argv: list[str]) -> int:
    """``[--check] OPENAPI.json``: rewrite ``vocabulary.json``, or with ``--check`` exit 1 if it differs."""
    check = argv[:1] == ["--check"]
    document = json.loads(Path(argv[-1]).read_text(encoding="utf-8"))
    text = json.dumps(extract(document), indent=1, sort_keys=True) + "\n"
    if check:
        if VOCABULARY_FILE.read_text(encoding="utf-8") != text:
            print(f"{VOCABULARY_FILE} differs from what {argv[-1]} gives: rerun without --check")
            return 1
        return 0
    VOCABULARY_FILE.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
