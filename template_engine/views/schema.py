"""The JSON Schema of each document kind of a templates folder, for editors (``template-engine schema``).

The schemas of org, defaults, template, asset and cluster documents are the pydantic models' own
(``model_json_schema()``); a policy has no model (``policy/document.py`` reads it against Run:ai's rule
vocabulary), so its schema is generated from ``policy/vocabulary.json``: every field that may carry rules,
the rules each may have, option values, ``defaultFrom`` siblings and the bounds of a rule's numbers
(``policy/bounds.py``: what the ruled field can hold, within Run:ai's schema of the rule).  The schemas
check shape and field names (typos); the reference rules ``validate`` applies besides (a name that matches
its file, an asset that exists...) are not expressible here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from template_engine.cluster.settings import ClusterSettings
from template_engine.kinds import DISTRIBUTED, KINDS, TEMPLATE_KINDS, WorkloadKind
from template_engine.models.documents import (
    ComputeAsset,
    DatasourceAsset,
    EnvironmentAsset,
    LayerDocument,
    OrgDocument,
    TemplateDocument,
)
from template_engine.policy.bounds import FLOAT_MAX, RULE_INTEGER, Bounds, field_bounds
from template_engine.policy.vocabulary import (
    REPLICAS,
    ItemsFamily,
    Node,
    Replica,
    RuleFamily,
    Section,
    kind_vocabulary,
    vocabulary,
)

__all__ = ["SCHEMA_KINDS", "SchemaKind", "json_schema", "policy_schema"]

DIALECT = "https://json-schema.org/draft/2020-12/schema"


@dataclass(frozen=True, slots=True)
class SchemaKind:
    """A document kind: its name, the files it describes, and its model (``None``: the policy)."""

    name: str
    files: str
    model: type[BaseModel] | None


#: Every document kind, in the order ``template-engine schema`` lists them.
def _assets(folder: str) -> str:
    """The files of an asset kind: the tenant's, a department's, a project's (``loader/layout.py``)."""
    where = f"assets/{folder}/NAME.yaml"
    return f"{where}, departments/D/{where}, projects/P/{where}"


SCHEMA_KINDS: Mapping[str, SchemaKind] = {
    kind.name: kind
    for kind in (
        SchemaKind("org", "org.yaml", OrgDocument),
        SchemaKind(
            "defaults",
            "system/defaults.yaml, departments/D/defaults.yaml, projects/P/defaults.yaml",
            LayerDocument,
        ),
        SchemaKind(
            "template",
            "system/templates/NAME.yaml, departments/D/templates/NAME.yaml, projects/P/templates/NAME.yaml",
            TemplateDocument,
        ),
        *(
            SchemaKind(
                f"{kind.name}-template",
                f"a template with kind: {kind.name} in system/templates/, departments/D/templates/ or "
                "projects/P/templates/",
                kind.template_model,
            )
            for kind in TEMPLATE_KINDS
            if kind is not DISTRIBUTED and kind.template_model is not None
        ),
        SchemaKind("environment", _assets("environments"), EnvironmentAsset),
        SchemaKind("compute", _assets("computes"), ComputeAsset),
        SchemaKind("datasource", _assets("datasources"), DatasourceAsset),
        SchemaKind("policy", "system/policy.yaml, departments/D/policy.yaml, projects/P/policy.yaml", None),
        *(
            SchemaKind(
                kind.policy_file.removesuffix(".yaml"),
                ", ".join(
                    f"{where}{kind.policy_file}" for where in ("system/", "departments/D/", "projects/P/")
                ),
                None,
            )
            for kind in KINDS
            if kind is not DISTRIBUTED
        ),
        SchemaKind("cluster", "cluster.yaml", ClusterSettings),
    )
}


def json_schema(name: str) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of one document kind of :data:`SCHEMA_KINDS`."""
    kind = SCHEMA_KINDS[name]
    if kind.model is None:
        body = policy_schema(_POLICY_KINDS.get(name, DISTRIBUTED))
    else:
        body = kind.model.model_json_schema()
        body["title"] = f"template-engine {name} document"
    description = f"{body.get('description') or ''} Files: {kind.files}.".strip()
    return {"$schema": DIALECT, **body, "description": description}


# -- the policy, from the vocabulary -------------------------------------------------------------------------


def _nullable(kind: str) -> list[str]:
    return [kind, "null"]


_QUANTITY = {
    "type": ["string", "integer", "null"],
    "description": "a quantity: 64Gi, 900G, 500m, or a number",
}


def _json_number(number: Any) -> int | float:
    """A bound as JSON writes it: a whole number exactly, a double's largest as a double."""
    whole = number == number.to_integral_value() and number.copy_abs() < FLOAT_MAX
    return int(number) if whole else float(number)


def _rule_value(
    key: str,
    kind: str,
    family: RuleFamily,
    siblings: Mapping[str, Node],
    bounds: Bounds | None,
    prefix: str,
) -> dict[str, Any]:
    if kind == "boolean":
        return {"type": _nullable("boolean")}
    if kind in ("integer", "number"):
        out: dict[str, Any] = {"type": _nullable(kind)}
        if key == "step":
            out["exclusiveMinimum"] = 0
            out["maximum"] = _json_number(RULE_INTEGER[1] if kind == "integer" else FLOAT_MAX)
        elif bounds is not None:
            out["minimum"], out["maximum"] = _json_number(bounds.low), _json_number(bounds.high)
        return out
    if kind == "quantity":
        return dict(_QUANTITY)
    if kind == "options":
        value: dict[str, Any] = {"type": "string"}
        if family.option_values:
            value["enum"] = list(family.option_values)
        return {
            "type": _nullable("array"),
            "minItems": 1,
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["value"],
                "properties": {"value": value, "displayed": {"type": "string"}},
            },
        }
    if kind == "defaultFrom":
        numeric = ("integer", "number", "quantity")
        allowed = sorted(
            name
            for name, node in siblings.items()
            if isinstance(node, RuleFamily)
            and node.value_kind in numeric
            and (family.value_kind == "quantity" or node.value_kind != "quantity")
        )
        # The bare sibling, or its full path as Run:ai's policy reference writes it (compute.cpuCoreLimit).
        spelled = allowed + ([f"{prefix}.{name}" for name in allowed] if prefix else [])
        return {
            "type": _nullable("object"),
            "additionalProperties": False,
            "required": ["field"],
            "properties": {
                "field": {"type": "string", "enum": spelled, "description": "a numeric sibling field"},
                "factor": {"type": "number", "exclusiveMinimum": 0, "maximum": float(FLOAT_MAX)},
            },
        }
    return {}


def _rules(
    family: RuleFamily, siblings: Mapping[str, Node], field: str, bounds: Bounds | None, prefix: str = ""
) -> dict[str, Any]:
    others = {k: v for k, v in siblings.items() if k != field}
    properties = {
        key: _rule_value(key, kind, family, others, bounds, prefix)
        for key, kind in sorted(family.keys.items())
    }
    return {
        "type": _nullable("object"),
        "description": f"{family.family}: the rules of a {family.value_kind} field",
        "additionalProperties": False,
        "properties": properties,
    }


def _attributes(
    known: Mapping[str, Node],
    top: Mapping[str, Node],
    replica: Replica,
    path: tuple[str, ...],
    attribute: tuple[str, ...] = (),
    workload: WorkloadKind = DISTRIBUTED,
) -> dict[str, Any]:
    properties: dict[str, Any] = {}
    for name, node in sorted(known.items()):
        here = (*attribute, name)
        if isinstance(node, RuleFamily):
            bounds = field_bounds(replica, path, here, node.value_kind, workload=workload)
            properties[name] = _rules(node, top, name, bounds, ".".join(path) if not attribute else "")
        elif isinstance(node, Section):
            properties[name] = _attributes(node.fields, top, replica, path, here, workload)
        else:
            properties[name] = {"type": _nullable("object")}
    return {"type": _nullable("object"), "additionalProperties": False, "properties": properties}


def _node(
    node: Node,
    name: str,
    siblings: Mapping[str, Node],
    replica: Replica,
    path: tuple[str, ...],
    workload: WorkloadKind = DISTRIBUTED,
) -> dict[str, Any]:
    if isinstance(node, RuleFamily):
        bounds = field_bounds(replica, path, (), node.value_kind, workload=workload)
        return _rules(node, siblings, name, bounds, ".".join(path[:-1]))
    if isinstance(node, ItemsFamily):
        properties: dict[str, Any] = {
            "instances": {
                "type": _nullable("object"),
                "additionalProperties": False,
                "properties": {
                    "canAdd": {"type": _nullable("boolean")},
                    "locked": {"type": _nullable("array"), "items": {"type": "string", "minLength": 1}},
                },
            }
        }
        if node.attributes:
            properties["attributes"] = _attributes(
                node.attributes, node.attributes, replica, path, (), workload
            )
        return {
            "type": _nullable("object"),
            "description": f"{node.family}: a keyed list (instances, attributes)",
            "additionalProperties": False,
            "properties": properties,
        }
    return _section(node, replica, path, workload)


def _section(
    section: Section, replica: Replica, path: tuple[str, ...] = (), workload: WorkloadKind = DISTRIBUTED
) -> dict[str, Any]:
    return {
        "type": _nullable("object"),
        "additionalProperties": False,
        "properties": {
            name: _node(child, name, section.fields, replica, (*path, name), workload)
            for name, child in sorted(section.fields.items())
        },
    }


def _default_attributes(known: Mapping[str, Node]) -> dict[str, Any]:
    properties: dict[str, Any] = {}
    for name, node in sorted(known.items()):
        if isinstance(node, Section):
            properties[name] = _default_attributes(node.fields)
        elif name != "exclude":
            properties[name] = {"description": "the default of this attribute for every item"}
    return {"type": _nullable("object"), "additionalProperties": False, "properties": properties}


def _defaults_section(section: Section) -> dict[str, Any] | None:
    """The attribute defaults a policy's ``defaults.<replica>`` may give: the keyed lists with attributes,
    in the sections that hold them (``None`` for a section without any)."""
    properties: dict[str, Any] = {}
    for name, child in sorted(section.fields.items()):
        if isinstance(child, ItemsFamily) and child.attributes:
            properties[name] = {
                "type": _nullable("object"),
                "description": f"{child.family}: the default of an attribute for every item",
                "additionalProperties": False,
                "properties": {"attributes": _default_attributes(child.attributes)},
            }
        elif isinstance(child, Section):
            inner = _defaults_section(child)
            if inner is not None:
                properties[name] = inner
    if not properties:
        return None
    return {"type": _nullable("object"), "additionalProperties": False, "properties": properties}


#: The workload kind of each policy schema but ``policy`` (distributed), by the schema's name.
_POLICY_KINDS: Mapping[str, WorkloadKind] = {
    kind.policy_file.removesuffix(".yaml"): kind for kind in KINDS if kind is not DISTRIBUTED
}


def policy_schema(kind: WorkloadKind = DISTRIBUTED) -> dict[str, Any]:
    """The schema of ``policy.yaml``: ``defaults.{worker,master}`` (attribute defaults of keyed lists),
    ``rules.{worker,master}`` (Run:ai's vocabulary), ``imposedAssets``; of another kind's policy file, in its
    shape (:func:`_kind_policy_schema`)."""
    names = {"type": _nullable("array"), "items": {"type": "string", "minLength": 1}, "uniqueItems": True}
    if kind is not DISTRIBUTED:
        return _kind_policy_schema(kind, names)
    return {
        "title": "template-engine policy document",
        "description": "Rules for the fields of combinedSpec (worker) and combinedMasterSpec (master), in "
        "Run:ai's vocabulary (DistributedPolicyRulesV2), the default of a keyed list's attribute for every "
        "item (defaults), and the data source assets imposed on every composition in scope.",
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "defaults": {
                "type": _nullable("object"),
                "additionalProperties": False,
                "properties": {replica: _defaults_section(vocabulary()[replica]) for replica in REPLICAS},
            },
            "rules": {
                "type": _nullable("object"),
                "additionalProperties": False,
                "properties": {replica: _section(vocabulary()[replica], replica) for replica in REPLICAS},
            },
            "imposedAssets": {
                "type": _nullable("object"),
                "additionalProperties": False,
                "properties": {replica: dict(names) for replica in REPLICAS},
            },
        },
    }


def _kind_policy_schema(kind: WorkloadKind, names: Mapping[str, Any]) -> dict[str, Any]:
    """The schema of a policy file of ``kind`` (``training-policy.yaml``...): its rules in the kind's own
    vocabulary, flat for a kind of one role and by role for a distributed inference; its ``defaults`` are
    value defaults of the kind's spec (with attribute defaults of keyed lists), checked by ``validate``."""
    sections = kind_vocabulary(kind)
    defaults = {
        "type": _nullable("object"),
        "description": f"Value defaults of {kind.a_noun}'s spec (and attribute defaults of keyed lists).",
    }

    def by_role(make: Any) -> dict[str, Any]:
        if not kind.roled_policy:
            return dict(make(kind.primary))
        return {
            "type": _nullable("object"),
            "additionalProperties": False,
            "properties": {role: make(role) for role in kind.roles},
        }

    return {
        "title": f"template-engine {kind.name} policy document",
        "description": f"Rules of {kind.a_noun}'s fields in Run:ai's vocabulary, its own defaults, and the "
        "data source assets imposed on every composition of the kind in scope.",
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "defaults": by_role(lambda role: defaults),
            "rules": by_role(lambda role: _section(sections[role], role, (), kind)),
            "imposedAssets": by_role(lambda role: dict(names)),
        },
    }
