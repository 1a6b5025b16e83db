"""The effective policy of a scope: the rules and imposed assets of its branch, with one owner per field."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from template_engine.errors import Problem
from template_engine.kinds import DISTRIBUTED, KIND_BY_NAME, WorkloadKind
from template_engine.org import Scope
from template_engine.policy.document import (
    AttributeDefault,
    FieldRules,
    ImposedAsset,
    PolicyDocument,
    policy_root,
)
from template_engine.policy.vocabulary import Replica


@dataclass(frozen=True, slots=True)
class EffectivePolicy:
    """Every rule object and imposed asset that governs compositions seen from one scope."""

    rules: tuple[FieldRules, ...] = ()
    imposed: tuple[ImposedAsset, ...] = ()
    #: One per attribute of a keyed list: the nearest scope's (a project's replaces its department's).
    attribute_defaults: tuple[AttributeDefault, ...] = ()
    #: The name of the workload kind of the policies (:attr:`kind`).
    kind_name: str = DISTRIBUTED.name

    @property
    def kind(self) -> WorkloadKind:
        """The workload kind the policies are of: its roles, vocabulary and Run:ai's shape."""
        return KIND_BY_NAME[self.kind_name]

    def for_replica(self, replica: Replica) -> tuple[FieldRules, ...]:
        return tuple(r for r in self.rules if r.replica == replica)

    def imposed_on(self, replica: Replica) -> tuple[ImposedAsset, ...]:
        return tuple(a for a in self.imposed if a.replica == replica)

    def defaults_for(self, replica: Replica) -> tuple[AttributeDefault, ...]:
        return tuple(d for d in self.attribute_defaults if d.replica == replica)

    @property
    def empty(self) -> bool:
        return not self.rules and not self.imposed and not self.attribute_defaults


def ownership_problems(branch: Iterable[PolicyDocument]) -> dict[str, list[Problem]]:
    """Rule objects for a field that a scope higher in the same branch already rules, by the lower file."""
    owners: dict[tuple[Replica, tuple[str, ...], str], FieldRules] = {}
    found: dict[str, list[Problem]] = {}
    for document in branch:
        for rules in document.rules:
            owner = owners.get(rules.owner_key)
            if owner is None:
                owners[rules.owner_key] = rules
                continue
            of_the = f" of the {rules.replica}" if document.kind.roled_policy else ""
            found.setdefault(document.file, []).append(
                Problem(
                    f"field {rules.field_text!r}{of_the} already has rules in {owner.location}",
                    (*policy_root(document.kind, "rules", rules.replica), *rules.path),
                    rules.location,
                    "one scope of a branch rules a field (remove it here or there)",
                    (owner.location,),
                )
            )
    return found


def effective(branch: Iterable[PolicyDocument], *, kind: WorkloadKind = DISTRIBUTED) -> EffectivePolicy:
    """The union of a branch's policies of ``kind`` (system first); ownership conflicts are the loader's to
    refuse.  A policy of another kind in the branch is a mistake of the caller (``ValueError``)."""
    rules: list[FieldRules] = []
    imposed: list[ImposedAsset] = []
    defaults: dict[tuple[Replica, tuple[str, ...], tuple[str, ...]], AttributeDefault] = {}
    for document in branch:
        if document.kind_name != kind.name:
            raise ValueError(f"{document.file} is a {document.kind_name} policy, not a {kind.name} one")
        rules.extend(document.rules)
        imposed.extend(document.imposed)
        for default in document.attribute_defaults:  # a nearer scope's replaces a higher one's
            defaults.pop(default.key, None)
            defaults[default.key] = default
    return EffectivePolicy(tuple(rules), tuple(imposed), tuple(defaults.values()), kind.name)


def attribute_defaults_shape(
    defaults: Iterable[AttributeDefault], *, kind: WorkloadKind = DISTRIBUTED
) -> dict[str, Any]:
    """Attribute defaults in Run:ai's form of ``kind``: ``{worker: {compute: {extendedResources: {attributes:
    {quantity: 3}}}}}`` (a one-role kind's without the role: ``{compute: ...}``)."""
    out: dict[str, Any] = {}
    for default in defaults:
        node: dict[str, Any] = out.setdefault(default.replica, {}) if kind.roled_policy else out
        for name in (*default.path, "attributes", *default.attribute[:-1]):
            node = node.setdefault(name, {})
        node[default.attribute[-1]] = default.value
    return out


def effective_shape(
    policy: EffectivePolicy,
    source_of: Callable[[Scope], Mapping[str, Any]],
    asset_id: Callable[[str], Any] = lambda name: name,
) -> dict[str, Any]:
    """Run:ai's ``effective`` shape of the policy's kind: ``defaults`` (the attribute defaults of keyed lists,
    as ``defaults.worker.<list>.attributes``), ``rules.worker``/``rules.master`` as nested rule objects, each
    with its ``sourceOfRule``, and ``imposedAssets`` (names here, ids in the service).  A one-role kind's
    (training, workspace, inference) is flat, as Run:ai's ``TrainingPolicyDefaultsAndRulesV2``: ``defaults.
    <list>.attributes``, ``rules.<field>`` and ``imposedAssets: [...]``; a distributed inference's is split
    by ``leader``/``worker``.  The value defaults are the caller's to add (a merge of the scopes' layers)."""
    kind = policy.kind
    defaults = attribute_defaults_shape(policy.attribute_defaults, kind=kind)
    out: dict[str, Any] = {"defaults": defaults, "rules": {}}
    out["imposedAssets"] = {}
    for rules in policy.rules:
        node: dict[str, Any] = (
            out["rules"].setdefault(rules.replica, {}) if kind.roled_policy else out["rules"]
        )
        for name in rules.path:
            node = node.setdefault(name, {})
        if rules.instances:
            node = node.setdefault("instances", {})
        elif rules.attribute:
            node = node.setdefault("attributes", {})
            for name in rules.attribute:
                node = node.setdefault(name, {})
        node.update({k: v for k, v in rules.written.items() if v is not None})
        node["sourceOfRule"] = dict(source_of(rules.scope))
    for replica in kind.roles:
        names = [asset_id(a.name) for a in policy.imposed_on(replica)]
        if names and kind.roled_policy:
            out["imposedAssets"][replica] = names
        elif names:
            out["imposedAssets"] = names
    return {k: v for k, v in out.items() if v}
