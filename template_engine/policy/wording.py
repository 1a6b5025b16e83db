"""What a rule object of a policy says, in words: one phrase per rule, the one wording of ``explain``'s
``[governed by ...]`` and of the service UI's policy page.

A phrase per key of :data:`~template_engine.policy.check.RULE_ORDER` (Run:ai's ``IntegerRules``,
``StringRules``, ``InstancesRules``... of a ``policy.yaml``): ``required``, ``cannot be edited`` (with
``(the default for this field)`` when the field's family locks it unless the rule says otherwise),
``between 1 and 16``, ``in steps of 2``, ``one of ClusterIP, NodePort``, ``default 60 x
terminationGracePeriodSeconds``, ``no items can be added``, ``locked: PIP_INDEX_URL``.  A bound is shown as
the policy wrote it (``1Ti``, not its bytes).
"""

from __future__ import annotations

from typing import Any

from template_engine.policy.document import FieldRules


def _bound(rules: FieldRules, key: str, value: Any) -> str:
    """A bound as the policy wrote it (``1Ti``, not its bytes), else the number the engine read."""
    written = rules.written.get(key)
    if isinstance(written, str | int | float) and not isinstance(written, bool):
        return str(written)
    return format(value, "f") if hasattr(value, "as_tuple") else str(value)


def rule_phrases(rules: FieldRules) -> tuple[str, ...]:
    """What ``rules`` says, one phrase per rule, in :data:`~template_engine.policy.check.RULE_ORDER`
    (empty: a rule object that constrains nothing)."""
    out: list[str] = []
    if rules.required is not None:
        out.append("required" if rules.required else "not required")
    if rules.can_edit is not None:
        out.append("can be edited" if rules.can_edit else "cannot be edited")
    elif rules.locks_value:
        out.append("cannot be edited (the default for this field)")
    low, high = rules.minimum, rules.maximum
    if low is not None and high is not None:
        out.append(f"between {_bound(rules, 'min', low)} and {_bound(rules, 'max', high)}")
    elif low is not None:
        out.append(f"at least {_bound(rules, 'min', low)}")
    elif high is not None:
        out.append(f"at most {_bound(rules, 'max', high)}")
    if rules.step is not None:
        out.append(f"in steps of {_bound(rules, 'step', rules.step)}")
    if rules.options is not None:
        out.append("one of " + ", ".join(rules.options) if rules.options else "no value allowed")
    if rules.default_from is not None:
        factor = rules.default_from.factor
        times = "" if factor == 1 else f"{format(factor, 'f')} x "
        out.append(f"default {times}{rules.default_from.field}")
    if rules.can_add is not None:
        out.append("items can be added" if rules.can_add else "no items can be added")
    if rules.locked:
        out.append("locked: " + ", ".join(rules.locked))
    return tuple(out)
