"""Which fields may carry policy rules, and which rules each may have: Run:ai's vocabulary as typed nodes.

Read once from ``vocabulary.json`` (extracted from Run:ai's OpenAPI document by ``vocabulary_source``): the
distributed kind's at the top level of the file (``worker``, ``master``), every other kind's under ``kinds``
(issue 32), each kind's read on first use.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Literal, TypeAlias

from template_engine.errors import Replica as Replica
from template_engine.kinds import DISTRIBUTED, WorkloadKind

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
def _raw() -> Mapping[str, Any]:
    loaded: Mapping[str, Any] = json.loads(
        Path(__file__).with_name("vocabulary.json").read_text(encoding="utf-8")
    )
    return loaded


def _root(replica: Replica, raw: Mapping[str, Any]) -> Section:
    return Section(replica, {k: _node(v) for k, v in raw.items()})


@cache
def vocabulary() -> Mapping[Replica, Section]:
    """The root section of rules for each replica of a distributed training."""
    raw = _raw()
    return {replica: _root(replica, raw[replica]) for replica in REPLICAS}


@cache
def _kind_vocabulary(name: str, roles: tuple[Replica, ...]) -> Mapping[Replica, Section]:
    found = _raw().get("kinds", {}).get(name)
    if found is None:
        raise KeyError(f"vocabulary.json has no rules of the {name} kind: run policy/vocabulary_source.py")
    return {role: _root(role, found[role]) for role in roles}


def kind_vocabulary(kind: WorkloadKind) -> Mapping[Replica, Section]:
    """The root section of rules for each role of ``kind``: a distributed training's :func:`vocabulary`; a
    one-role kind's flat ``rules`` (Run:ai's ``TrainingPolicyRulesV2``...) under ``worker``; a distributed
    inference's ``leader`` and ``worker``."""
    if kind.name == DISTRIBUTED.name:  # the file's top level, as before the other kinds
        return vocabulary()
    return _kind_vocabulary(kind.name, kind.roles)
