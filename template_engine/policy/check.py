"""Evaluating rules on a rendered combined spec against its policy side (POLICY.md "Rules").

Pure functions: a combined spec, the policy-side spec of the same replica (what the composition holds with
the request side left out), the replica's rule objects and the items imposed assets brought in; out come the
compliance issues, every one at once, in a stable order.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from decimal import ROUND_FLOOR, Decimal, InvalidOperation
from functools import partial
from typing import Any

from template_engine.errors import Location
from template_engine.kinds import DISTRIBUTED, WorkloadKind
from template_engine.merge.plan import PlanNode, item_key
from template_engine.paths import Match, Path, format_path, with_value_at
from template_engine.policy.bounds import value_bounds
from template_engine.policy.document import FieldRules, ImposedAsset
from template_engine.policy.spec_values import field_value, unset
from template_engine.policy.vocabulary import Replica
from template_engine.quantity import MAX_QUANTITY_LENGTH, parse_quantity

#: Run:ai's ``PolicyRuleEnum``, in the order issues of one field are reported.
RULE_ORDER = ("required", "canEdit", "min", "max", "step", "options", "canAdd", "locked")


@dataclass(frozen=True, slots=True)
class Compliance:
    """One broken rule: where, which rule, why, and the rule's (or imposed asset's) source."""

    replica: Replica
    path: Path
    rule: str
    message: str
    source: Location

    @property
    def field(self) -> str:
        return format_path(self.path)


def _plan_at(plan: PlanNode, path: Iterable[str]) -> PlanNode:
    for name in path:
        plan = plan.child(name)
    return plan


def _number(value: Any, kind: str) -> Decimal | None:
    if isinstance(value, bool):
        return None
    if kind == "quantity":
        return parse_quantity(value)
    if isinstance(value, int | float):
        try:
            return Decimal(str(value))
        except InvalidOperation:
            return None
    return None


def _shown(value: Decimal | None, written: Any) -> str:
    return str(written) if written is not None else str(value)


class _Checker:
    def __init__(
        self,
        replica: Replica,
        combined: Mapping[str, Any],
        policy_side: Mapping[str, Any],
        plan: PlanNode,
        derived: Collection[Path] = (),
        attribute_defaults: Mapping[tuple[tuple[str, ...], tuple[str, ...]], Any] | None = None,
    ) -> None:
        self.replica = replica
        self.combined = combined
        self.policy_side = policy_side
        self.plan = plan
        self.derived = frozenset(derived)
        self.attribute_defaults = attribute_defaults or {}
        self.issues: list[Compliance] = []

    def add(self, path: Path, rule: str, message: str, source: Location) -> None:
        self.issues.append(Compliance(self.replica, path, rule, message, source))

    def value_rules(
        self, rules: FieldRules, value: Any, policy_value: Any, path: Path, item_known: bool
    ) -> None:
        where = rules.policy
        if rules.required and unset(value):
            self.add(path, "required", f"{format_path(path)} is required by the {where}", rules.location)
        same = (unset(value) and unset(policy_value)) or value == policy_value
        # A value a defaultFrom rule set is the policy's own doing, not an edit of the request side.
        if rules.locks_value and item_known and not same and path not in self.derived:
            shown = "no value" if unset(policy_value) else repr(policy_value)
            self.add(
                path,
                "canEdit",
                f"{format_path(path)} cannot be changed from {shown} (canEdit is false in the {where})",
                rules.location,
            )
        if unset(value) or rules.family is None:
            return
        kind = rules.family.value_kind
        if kind in ("integer", "number", "quantity"):
            number = _number(value, kind)
            if number is None:
                return
            low, high = rules.minimum, rules.maximum
            if low is not None and number < low:
                shown = _shown(low, rules.written.get("min"))
                self.add(
                    path,
                    "min",
                    f"{format_path(path)} is {value}, below the minimum {shown} of the {where}",
                    rules.location,
                )
            if high is not None and number > high:
                shown = _shown(high, rules.written.get("max"))
                self.add(
                    path,
                    "max",
                    f"{format_path(path)} is {value}, above the maximum {shown} of the {where}",
                    rules.location,
                )
            if rules.step is not None and (number - (low or 0)) % rules.step != 0:
                base = f"{rules.written.get('min')} + " if low is not None else ""
                self.add(
                    path,
                    "step",
                    f"{format_path(path)} is {value}, not {base}a multiple of {rules.written.get('step')} "
                    f"({where})",
                    rules.location,
                )
        if rules.options is not None:
            values = value if isinstance(value, list) else [value]
            for element in values:
                if element not in rules.options:
                    allowed = ", ".join(rules.options)
                    self.add(
                        path,
                        "options",
                        f"{format_path(path)} is {element!r}, not one of the options of the {where}: "
                        f"{allowed}",
                        rules.location,
                    )

    def field(self, rules: FieldRules) -> None:
        value, before = field_value(self.combined, rules.path), field_value(self.policy_side, rules.path)
        self.value_rules(rules, value, before, rules.path, True)

    def keyed(self, rules: FieldRules) -> None:
        node = _plan_at(self.plan, rules.path)
        combined = _items(field_value(self.combined, rules.path), node)
        policy = _items(field_value(self.policy_side, rules.path), node)
        list_path: Path = rules.path
        if rules.instances:
            where = rules.policy
            for key in rules.locked:
                match = next((m for m in (*combined, *policy) if str(m.value) == key), None)
                if match is None:
                    continue
                before, after = policy.get(match), combined.get(match)
                if before != after:
                    what = "excluded" if after is None else "added" if before is None else "changed"
                    self.add(
                        (*list_path, match),
                        "locked",
                        f"{format_path((*list_path, match))} is locked by the {where}: the request side "
                        f"{what} it{_changes(before, after)}",
                        rules.location,
                    )
            if rules.can_add is False:
                for match in combined:
                    if match not in policy:
                        self.add(
                            (*list_path, match),
                            "canAdd",
                            f"{format_path((*list_path, match))} is added, but the {where} allows no new "
                            "items (canAdd is false)",
                            rules.location,
                        )
            return
        # An item the request side added has, on the policy side, the attribute default (if any).
        default = self.attribute_defaults.get((rules.path, rules.attribute))
        for match, item in combined.items():
            before = policy.get(match)
            self.value_rules(
                rules,
                field_value(item, rules.attribute),
                field_value(before, rules.attribute) if before is not None else default,
                (*list_path, match, *rules.attribute),
                True,
            )

    def imposed(self, protected: Mapping[tuple[Path, Match], ImposedAsset]) -> None:
        for (list_path, match), asset in protected.items():
            node = _plan_at(self.plan, [str(p) for p in list_path])
            before = _items(field_value(self.policy_side, [str(p) for p in list_path]), node).get(match)
            after = _items(field_value(self.combined, [str(p) for p in list_path]), node).get(match)
            if before != after:
                what = "excluded" if after is None else "changed"
                self.add(
                    (*list_path, match),
                    "locked",
                    f"{format_path((*list_path, match))} comes from data source {asset.name!r}, imposed by "
                    f"the {asset.policy}: the request side {what} it{_changes(before, after)}",
                    asset.location,
                )


def _changes(before: Any, after: Any) -> str:
    """What the request side changed in a locked item, for the message: `` (mountPath '/datasets' ->
    '/mnt/datasets')``, each attribute that differs with its value before and after (``not set`` when one
    side lacks it); empty unless both sides are items."""
    if not isinstance(before, Mapping) or not isinstance(after, Mapping):
        return ""

    def shown(item: Mapping[str, Any], key: str) -> str:
        return repr(item[key]) if key in item else "not set"

    keys = [k for k in (*before, *(k for k in after if k not in before)) if before.get(k) != after.get(k)]
    return (
        " (" + ", ".join(f"{k} {shown(before, k)} -> {shown(after, k)}" for k in keys) + ")" if keys else ""
    )


def _items(value: Any, node: PlanNode) -> dict[Match, Any]:
    if not isinstance(value, list) or node.key is None:
        return {}
    out: dict[Match, Any] = {}
    for item in value:
        if isinstance(item, Mapping):
            match = item_key(item, node.key)
            if match is not None:
                out[match] = item
    return out


def check_rules(
    replica: Replica,
    combined: Mapping[str, Any],
    policy_side: Mapping[str, Any],
    rules: Iterable[FieldRules],
    plan: PlanNode,
    protected: Mapping[tuple[Path, Match], ImposedAsset] | None = None,
    derived: Collection[Path] = (),
    attribute_defaults: Mapping[tuple[tuple[str, ...], tuple[str, ...]], Any] | None = None,
) -> list[Compliance]:
    """Every rule of ``rules`` that ``combined`` breaks, in a stable order (field, then rule).

    ``derived``: the paths whose value a ``defaultFrom`` rule or an attribute default set (see
    :func:`apply_default_from`); the policy set them, so ``canEdit: false`` holds there whatever the policy
    side would have derived.  ``attribute_defaults``: the value of each attribute default by (list path,
    attribute), the policy-side value of that attribute of an item the request side added."""
    checker = _Checker(replica, combined, policy_side, plan, derived, attribute_defaults)
    for rules_of_field in rules:
        if rules_of_field.instances or rules_of_field.attribute:
            checker.keyed(rules_of_field)
        else:
            checker.field(rules_of_field)
    checker.imposed(protected or {})
    return sorted(checker.issues, key=lambda i: (format_path(i.path), RULE_ORDER.index(i.rule)))


# -- defaultFrom ---------------------------------------------------------------------------------------------

#: A quantity as written: its number, then its exponent (``1e3``) or suffix (``Gi``), kept as written.
_QUANTITY_PARTS = re.compile(r"\s*([+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))((?:[eE][-+]?[0-9]+)|[a-zA-Z]*)\s*")


def _times(value: Any, factor: Decimal, kind: str) -> Any:
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        if kind != "quantity":  # an integer or a number is never derived from a quantity's text
            return None
        if parse_quantity(value) is None:  # bounded and checked before it is taken apart
            return None
        parts = _QUANTITY_PARTS.fullmatch(value)
        if parts is None:
            return None
        number = Decimal(parts.group(1)) * factor
        return f"{_plain(number)}{parts.group(2)}"
    if not isinstance(value, int | float):
        return None
    number = Decimal(str(value)) * factor
    if kind == "integer":
        return int(number.to_integral_value(ROUND_FLOOR))
    return int(number) if number == number.to_integral_value() else float(number)


def _plain(number: Decimal) -> str:
    if number == number.to_integral_value():
        return format(number.to_integral_value(), "f")
    return format(number.normalize(), "f")


def apply_default_from(
    spec: Mapping[str, Any],
    rules: Iterable[FieldRules],
    plan: PlanNode,
    replica: Replica = "worker",
    *,
    kind: WorkloadKind = DISTRIBUTED,
) -> tuple[dict[str, Any], dict[Path, FieldRules], tuple[Compliance, ...]]:
    """``spec`` with every ``defaultFrom`` applied (a copy), which rule set which path, and the values a rule
    computed out of the field's bounds (not set: each a ``min``/``max`` issue naming the rule): the bounds of
    ``kind``'s spec model of ``replica``.

    A rule whose sibling is itself set by another ``defaultFrom`` rule sees that value, whatever the order of
    the rules: the rules are applied again until none sets anything (each sets a field at most once, since it
    only fills a field without a value, so this ends after at most one round per rule).
    """
    pending = [r for r in rules if r.default_from is not None and r.family is not None]
    out: dict[str, Any] = dict(spec)
    applied: dict[Path, FieldRules] = {}
    refused: dict[Path, Compliance] = {}
    for _round in range(len(pending)):
        before = len(applied)
        for rule in pending:
            out = _apply_one(out, rule, plan, applied, _Refusals(replica, rule, refused, kind))
        if len(applied) == before:
            break
    return out, applied, tuple(refused.values())


@dataclass(frozen=True, slots=True)
class _Refusals:
    """Where a ``defaultFrom`` rule's out-of-bounds values are noted (by path: once, whatever the round)."""

    replica: Replica
    rule: FieldRules
    found: dict[Path, Compliance]
    kind: WorkloadKind

    def held(self, path: Path, value: Any, computed: Decimal | None) -> bool:
        """Whether ``value`` (``computed`` before its conversion; ``None`` for a quantity) is within the
        field's bounds, as a value written directly must be (a quantity: one that parses); if not, an issue
        naming the rule, the field, the value and the bound."""
        assert self.rule.family is not None and self.rule.default_from is not None
        kind = self.rule.family.value_kind
        number = _number(value, kind)
        if kind == "quantity" or computed is None:
            if number is not None:
                return True
            expected, rule = f"a quantity of at most {MAX_QUANTITY_LENGTH} characters", "max"
            shown = repr(value) if len(str(value)) <= 40 else repr(f"{str(value)[:37]}...")
        else:
            bounds = value_bounds(self.replica, self.rule.path, self.rule.attribute, kind, workload=self.kind)
            if bounds is None or (number is not None and number.is_finite() and bounds.holds(number)):
                return True
            expected, rule = bounds.expected, "min" if computed < bounds.low else "max"
            shown = str(value) if abs(computed) < 10**16 else f"{computed:.4e}"
        source = self.rule.default_from
        self.found[path] = Compliance(
            self.replica,
            path,
            rule,
            f"{format_path(path)} would be {shown} by the defaultFrom rule of the {self.rule.policy} "
            f"({source.field} x {source.factor}), out of the field's bounds: expected {expected}; "
            "it is left unset",
            self.rule.location,
        )
        return False


def _apply_one(
    out: dict[str, Any],
    rule: FieldRules,
    plan: PlanNode,
    applied: dict[Path, FieldRules],
    refusals: _Refusals,
) -> dict[str, Any]:
    """``out`` with the ``defaultFrom`` ``rule`` applied wherever it fills a field (noted in ``applied``)."""
    assert rule.default_from is not None and rule.family is not None
    kind = rule.family.value_kind
    source, factor = rule.default_from.field, rule.default_from.factor
    if not rule.attribute:
        filled, done = _fill(
            out, rule.path, source, factor, kind, lambda v, c: refusals.held(rule.path, v, c)
        )
        if done:
            applied[rule.path] = rule
        return filled
    node = _plan_at(plan, rule.path)
    items = field_value(out, rule.path)
    if not isinstance(items, list) or node.key is None:
        return out
    new_items: list[Any] = []
    changed = False
    for item in items:
        if isinstance(item, Mapping):
            known = item_key(item, node.key)
            at: Path = (*rule.path, known, *rule.attribute) if known is not None else rule.path
            filled, done = _fill(dict(item), rule.attribute, source, factor, kind, partial(refusals.held, at))
            match = item_key(filled, node.key)
            if done and match is not None:
                applied[(*rule.path, match, *rule.attribute)] = rule
                item, changed = filled, True
        new_items.append(item)
    return with_value_at(out, rule.path, new_items) if changed else out


def _fill(
    data: dict[str, Any],
    path: tuple[str, ...],
    sibling: str,
    factor: Decimal,
    kind: str,
    held: Callable[[Any, Decimal | None], bool],
) -> tuple[dict[str, Any], bool]:
    section = field_value(data, path[:-1]) if len(path) > 1 else data
    if not isinstance(section, Mapping):
        return data, False
    if not unset(section.get(path[-1])) or unset(section.get(sibling)):
        return data, False
    value = _times(section[sibling], factor, kind)
    if value is None:
        return data, False
    computed = Decimal(str(section[sibling])) * factor if kind != "quantity" else None
    if not held(value, computed):
        return data, False
    return with_value_at(data, path, value), True
