"""A composition's policy step: the attribute defaults of keyed lists and ``defaultFrom`` on the rendered
combined specs, then every rule checked against the policy side (POLICY.md "Rules").  Pure: specs and rules
in, specs and compliance issues out."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from template_engine.merge.engine import clone
from template_engine.merge.plan import PlanNode
from template_engine.paths import Match, Path
from template_engine.policy.attribute_defaults import apply_attribute_defaults
from template_engine.policy.check import Compliance, apply_default_from, check_rules
from template_engine.policy.document import FieldRules, ImposedAsset, Origin
from template_engine.policy.effective import EffectivePolicy
from template_engine.policy.vocabulary import Replica

#: Items an imposed asset brought, by (keyed list path, item key): protected as if locked.
Protected = Mapping[tuple[Path, Match], ImposedAsset]


@dataclass(frozen=True, slots=True)
class PolicyOutcome:
    spec: dict[str, Any]
    master_spec: dict[str, Any] | None
    issues: tuple[Compliance, ...] = ()
    #: Values set by a ``defaultFrom`` rule or an attribute default, by (replica, path): their origin.
    origins: Mapping[tuple[Replica, Path], Origin] = field(default_factory=dict)


def apply_policy(
    policy: EffectivePolicy,
    plan: PlanNode,
    spec: Mapping[str, Any],
    policy_spec: Mapping[str, Any],
    master_spec: Mapping[str, Any] | None,
    policy_master_spec: Mapping[str, Any] | None,
    same_as_worker: bool,
    worker_only: frozenset[str],
    protected: Mapping[Replica, Protected],
) -> PolicyOutcome:
    """Apply ``policy`` to rendered combined specs whose policy sides are ``policy_spec`` (and
    ``policy_master_spec``).  A same-as-worker master is the worker after its ``defaultFrom`` rules, without
    worker-only fields; only ``rules.master`` is checked on it.

    The roles are the policy's kind's (:attr:`EffectivePolicy.kind`): ``spec`` is its first role's (a
    distributed training's worker, a training's one ``worker``, a distributed inference's leader), and
    ``master_spec`` its second role's, if it has one (a distributed inference's worker): a one-role kind has
    no master (``master_spec`` is not read, and the outcome's ``master_spec`` is ``None``);
    ``same_as_worker`` is a distributed training's alone.  Bounds of the values ``defaultFrom`` computes are
    the kind's spec models'."""
    kind = policy.kind
    first = kind.primary
    second: Replica | None = kind.roles[1] if len(kind.roles) > 1 else None
    if second is None:
        master_spec = None
    if second is None or not kind.is_distributed:  # only a distributed training's master may be its worker
        same_as_worker = False
    worker_rules = policy.for_replica(first)
    worker, worker_set, refused = _defaults(spec, policy, first, worker_rules, plan)
    worker_policy, _, _ = _defaults(policy_spec, policy, first, worker_rules, plan)
    origins: dict[tuple[Replica, Path], Origin] = {(first, p): r for p, r in worker_set.items()}
    issues = [*refused]
    issues += check_rules(
        first,
        worker,
        worker_policy,
        worker_rules,
        plan,
        protected.get(first),
        worker_set.keys(),
        _by_attribute(policy, first),
    )
    master: dict[str, Any] | None = None
    if second is None:
        return PolicyOutcome(worker, master, tuple(issues), origins)
    master_rules = policy.for_replica(second)
    master_set: Mapping[Path, Origin] = {}
    if same_as_worker:
        master = {k: clone(v) for k, v in worker.items() if k not in worker_only}  # shares nothing
        master_policy = {k: v for k, v in worker_policy.items() if k not in worker_only}
        master_set = {p: r for p, r in worker_set.items() if p[0] not in worker_only}
        origins.update({(second, p): r for p, r in master_set.items()})
    elif master_spec is not None:
        master, master_set, refused = _defaults(master_spec, policy, second, master_rules, plan)
        issues += refused
        master_policy, _, _ = _defaults(policy_master_spec or {}, policy, second, master_rules, plan)
        origins.update({(second, p): r for p, r in master_set.items()})
    else:
        master, master_policy = None, {}
    if master is not None:
        issues += check_rules(
            second,
            master,
            master_policy,
            master_rules,
            plan,
            protected.get(second),
            master_set.keys(),
            _by_attribute(policy, first if same_as_worker else second),
        )
    return PolicyOutcome(worker, master, tuple(issues), origins)


def _by_attribute(
    policy: EffectivePolicy, replica: Replica
) -> dict[tuple[tuple[str, ...], tuple[str, ...]], Any]:
    return {(d.path, d.attribute): d.value for d in policy.defaults_for(replica)}


def _defaults(
    spec: Mapping[str, Any],
    policy: EffectivePolicy,
    replica: Replica,
    rules: tuple[FieldRules, ...],
    plan: PlanNode,
) -> tuple[dict[str, Any], dict[Path, Origin], tuple[Compliance, ...]]:
    """``spec`` with the replica's attribute defaults, then its ``defaultFrom`` rules (which may read an
    attribute a default filled), and what set each value."""
    filled, by_default = apply_attribute_defaults(spec, policy.defaults_for(replica), plan)
    derived, by_rule, refused = apply_default_from(filled, rules, plan, replica, kind=policy.kind)
    return derived, {**by_default, **by_rule}, refused
