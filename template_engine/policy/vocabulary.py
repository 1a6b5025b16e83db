"""Which fields may carry policy rules, and which rules each may have: Run:ai's vocabulary as typed nodes.

Read once from ``vocabulary.json`` (extracted from Run:ai's OpenAPI document by ``vocabulary_source``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Literal, TypeAlias

from template_engine.errors import Replica as Replica

REPLICAS: tuple[Replica, ...] = ("worker", "master")

#: The kind of value a rule family governs, from its family name.
ValueKind: TypeAlias = Literal["integer", "number", "quantity", "string", "boolean", "array", "arbitrary"]

_KIND_OF_FAMILY: dict[str, ValueKind] = {
    "IntegerRules": "integer",
    "IntegerRulesOptional": "integer",
    "NumberRules": "number",
    "QuantityRules": "quantity",
    "BooleanRules": "boolean",
    "ArrayRules": "array",
    "ArbitraryRules": "arbitrary",
}


@dataclass(frozen=True, slots=True)
class RuleFamily:
    """A field's rule object: the rule keys it may hold (key -> kind of value) and, for enums, the values."""

    family: str
    keys: Mapping[str, str]
    option_values: tuple[str, ...] | None

    @property
    def value_kind(self) -> ValueKind:
        return _KIND_OF_FAMILY.get(self.family, "string")

    @property
    def can_edit_default(self) -> bool:
        """``canEdit`` is true unless set, except for arrays and arbitrary objects (Run:ai's defaults)."""
        return self.value_kind not in ("array", "arbitrary")


@dataclass(frozen=True, slots=True)
class ItemsFamily:
    """A keyed list: ``instances`` (canAdd, locked) and ``attributes`` (a rule object per item attribute)."""

    family: str
    attributes: Mapping[str, Node]


@dataclass(frozen=True, slots=True)
class Section:
    """A group of fields (``compute``, ``security``, ``storage``)."""

    family: str
    fields: Mapping[str, Node]


Node: TypeAlias = RuleFamily | ItemsFamily | Section


def _node(raw: Mapping[str, Any]) -> Node:
    if raw["kind"] == "rules":
        values = raw.get("optionValues")
        return RuleFamily(raw["family"], dict(raw["keys"]), tuple(values) if values else None)
    if raw["kind"] == "items":
        return ItemsFamily(raw["family"], {k: _node(v) for k, v in raw["attributes"].items()})
    return Section(raw["family"], {k: _node(v) for k, v in raw["fields"].items()})


@cache
def vocabulary() -> Mapping[Replica, Section]:
    """The root section of rules for each replica."""
    raw = json.loads(Path(__file__).with_name("vocabulary.json").read_text(encoding="utf-8"))
    return {replica: Section(replica, {k: _node(v) for k, v in raw[replica].items()}) for replica in REPLICAS}
