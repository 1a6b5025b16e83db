"""Extracts Run:ai's policy rule vocabulary from its OpenAPI document into ``vocabulary.json``.

``python -m template_engine.policy.vocabulary_source ../shared/reference/runai-openapi-1.224.0.json`` rewrites
the vendored file; ``.ci/run`` (``--check``, against the subset document: the distributed sections) and
``tests/test_policy_vocabulary_supplement.py`` (both documents) check it still matches the document.  Every
kind's vocabulary is extracted from its own policy schemas (:data:`KIND_SCHEMAS`).  The extract keeps only
what the rules need: for every field that may carry rules, its family (a rule object, a keyed list's
``instances``/``attributes``, or a section of fields), the rule keys the family has with their value kinds,
and the allowed option values of enum families.

Run:ai documents rules on a few fields that its OpenAPI document does not list (``compute.migProfile``: the
policy reference's compute table, and its "Create a robust set of guidelines" example rules it with ``canEdit:
false``).  :data:`SUPPLEMENT` names each of them with the family the document gives such a field and the page
that documents it; the extract adds them, and says so under ``supplements``, so the generated file is never
edited by hand.  A supplement the document comes to list is an error: remove it.
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


#: The documented fields beyond the pinned OpenAPI document, for every role of every kind (Run:ai's policy
#: reference documents its fields once, for every workload type).
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


#: The policy rules of each other workload kind: its name (``kinds.py``), the schema of its ``rules`` in
#: Run:ai's document, and its roles: ``None`` for a flat ``rules`` (read under the role ``worker``, as
#: Run:ai's ``ReplicaType`` names a one-role workload's replica), else the properties of the schema that hold
#: each role's rules.  The distributed kind's are the file's top-level ``worker`` and ``master``.
KIND_SCHEMAS: tuple[tuple[str, str, tuple[str, ...] | None], ...] = (
    ("training", "TrainingPolicyRulesV2", None),
    ("workspace", "WorkspacePolicyRulesV2", None),
    ("inference", "InferencePolicyRulesV2", None),
    ("distributed-inference", "DistributedInferenceRulesV2", ("leader", "worker")),
)


def _kind_sections(schemas: Mapping[str, Any], extractor: _Extractor) -> dict[str, Any]:
    """The rule vocabulary of each kind of :data:`KIND_SCHEMAS` the document has, by kind name."""
    out: dict[str, Any] = {}
    for name, schema, roles in KIND_SCHEMAS:
        if schema not in schemas:
            continue
        if roles is None:
            sections = {"worker": extractor.fields(schemas[schema])}
        else:
            found = extractor.properties(schemas[schema])
            sections = {role: extractor.fields(found[role]) for role in roles}
        out[name] = {
            "source": f"{schema} of Run:ai's OpenAPI document",
            **{role: _supplemented(fields, extractor) for role, fields in sections.items()},
        }
    return out


def extract(document: Mapping[str, Any]) -> dict[str, Any]:
    """The vocabulary the document gives: the distributed kind's at the top level (``worker``, ``master``),
    and under ``kinds`` each other kind's whose schema the document has (see :data:`KIND_SCHEMAS`)."""
    schemas = document["components"]["schemas"]
    extractor = _Extractor(schemas)
    rules = extractor.properties(schemas["DistributedPolicyRulesV2"])
    out: dict[str, Any] = {
        "source": "DistributedPolicyRulesV2 of Run:ai's OpenAPI document",
        "supplements": [
            {"path": ".".join(e.path), "family": e.family, "source": e.source} for e in SUPPLEMENT
        ],
        "worker": _supplemented(extractor.fields(rules["worker"]), extractor),
        "master": _supplemented(extractor.fields(rules["master"]), extractor),
    }
    kinds = _kind_sections(schemas, extractor)
    if kinds:
        out["kinds"] = kinds
    return out


def updated(current: Mapping[str, Any], extracted: Mapping[str, Any]) -> dict[str, Any]:
    """``current`` (the vocabulary file) with what ``extracted`` gives replaced: the kinds a document lacks
    (Run:ai's subset document has only the distributed policy's schemas) are kept as they are."""
    kinds = {**current.get("kinds", {}), **extracted.get("kinds", {})}
    out = {**current, **extracted}
    if kinds:
        out["kinds"] = dict(sorted(kinds.items()))
    return out


def _text(vocabulary: Mapping[str, Any]) -> str:
    return json.dumps(vocabulary, indent=1, sort_keys=True) + "\n"


def main(argv: list[str]) -> int:
    """``[--check] OPENAPI.json``: rewrite ``vocabulary.json``, or with ``--check`` exit 1 if it differs.

    Only what the document gives is rewritten or checked: a kind whose schema it lacks stays as the file has
    it (and is said to be so)."""
    check = argv[:1] == ["--check"]
    document = json.loads(Path(argv[-1]).read_text(encoding="utf-8"))
    extracted = extract(document)
    current = json.loads(VOCABULARY_FILE.read_text(encoding="utf-8")) if VOCABULARY_FILE.exists() else {}
    kept = sorted(set(current.get("kinds", {})) - set(extracted.get("kinds", {})))
    text = _text(updated(current, extracted))
    if kept:
        print(
            f"{argv[-1]} has no policy schemas of: {', '.join(kept)} "
            f"(kept as {VOCABULARY_FILE.name} has them)"
        )
    if check:
        if VOCABULARY_FILE.read_text(encoding="utf-8") != text:
            print(f"{VOCABULARY_FILE} differs from what {argv[-1]} gives: rerun without --check")
            return 1
        return 0
    VOCABULARY_FILE.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
