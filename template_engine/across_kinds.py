"""Where the kinds differ: one field of a view's policy side, and the policy rules on it, for each workload
kind side by side (issue 32, "Where kinds differ").

The policy side of a kind is what every template of that kind seen from the view starts from: the scope
defaults for the kind (the shared ``defaults.yaml`` projected onto its fields, then its own policy's value
defaults) and the data sources its policies impose (``layers.policy_side_layers``, merged by the kind's
plan), governed by its effective policy (``layers.effective_policy``).  A kind is compared by the role a
template's ``spec`` holds (a distributed training's worker; docs/decisions.md, "Where kinds differ").

Pure: an :class:`~template_engine.org.Org` in, plain values out; ``template-engine kinds`` and the report's
"Where kinds differ" pages show them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from template_engine.errors import Location, Problem, TemplateEngineError
from template_engine.explain import rule_text
from template_engine.kinds import TEMPLATE_KINDS, WorkloadKind
from template_engine.layers import NotApplied, effective_policy, not_applied, policy_side_layers
from template_engine.merge.engine import MergeResult, merge_layers
from template_engine.org import Org, View
from template_engine.paths import Match, Path, format_path, is_prefix
from template_engine.policy.document import FieldRules, ImposedAsset
from template_engine.walk import items, steps

__all__ = [
    "FieldAcrossKinds",
    "KindPolicySide",
    "KindSide",
    "article",
    "differing_fields",
    "field_across_kinds",
]

#: A value no layer of the policy side sets.
_UNSET: Any = object()


@dataclass(frozen=True, slots=True)
class KindSide:
    """One field of the policy side of one kind: whether the kind has it, its value and who set it, the data
    sources imposed at or below it, the rules on it."""

    kind: WorkloadKind
    #: Whether the kind's spec has the field (``backoffLimit``: an inference's has not).
    has_field: bool
    #: The value (``None`` when no layer sets it, see :attr:`is_set`).
    value: Any = None
    is_set: bool = False
    #: Where the value was set (the layer and its place): one place, or each layer's that set part of it (a
    #: keyed list's items, a mapping's fields), lowest layer first.
    locations: tuple[Location, ...] = ()
    #: The data sources the kind's policies impose at or below the field.
    imposed: tuple[ImposedAsset, ...] = ()
    #: The rules of the kind's effective policy on the field, at or below it.
    rules: tuple[FieldRules, ...] = ()
    #: What a layer gives there that the kind lacks, left out (when :attr:`has_field` is false).
    not_applied: tuple[NotApplied, ...] = ()
    #: What stopped the policy side of the kind (a broken policy, an imposed asset out of scope...).
    problems: tuple[Problem, ...] = ()

    @property
    def name(self) -> str:
        return self.kind.name

    def signature(self) -> tuple[Any, ...]:
        """What two kinds must share to be alike at the field: the places things are written aside."""
        value = json.dumps(self.value, sort_keys=True, default=str) if self.is_set else None
        rules = tuple(sorted((r.field_text, json.dumps(dict(r.written), sort_keys=True)) for r in self.rules))
        imposed = tuple(sorted(a.name for a in self.imposed))
        return self.has_field, value, imposed, rules, tuple(p.one_line() for p in self.problems)

    def summary(self) -> str:
        """``not a field of an inference``, ``not set``, or the value; then ``imposed passwd``."""
        if self.problems:
            return "fails: " + "; ".join(p.one_line() for p in self.problems)
        if not self.has_field:
            return f"not a field of {article(self.kind.noun)}"
        parts = [_short(self.value) if self.is_set else "not set"]
        if self.imposed:
            parts.append("imposed " + ", ".join(a.name for a in self.imposed))
        names = dict.fromkeys(name for rules in self.rules for name in _rule_names(rules))
        if names:
            parts.append("rules " + ", ".join(names))
        return "; ".join(parts)

    def rule_lines(self) -> list[str]:
        return [line for rules in self.rules for line in rule_text(rules)]

    def imposed_lines(self) -> list[str]:
        """``passwd (imposed by the system training policy, system/training-policy.yaml:3)``."""
        return [
            f"{a.name} (imposed by the {a.scope} {self._policy()}, {a.location.place()})"
            for a in self.imposed
        ]

    def _policy(self) -> str:
        return "policy" if self.kind.is_distributed else f"{self.kind.name} policy"

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "kind": self.kind.name,
            "workloadType": self.kind.workload_type,
            "role": self.kind.primary,
            "hasField": self.has_field,
        }
        if self.is_set:
            out["value"] = self.value
        if self.locations:
            out["setBy"] = [location.to_dict() for location in self.locations]
        out["imposed"] = [
            {"name": a.name, "scope": str(a.scope), **a.location.to_dict()} for a in self.imposed
        ]
        out["rules"] = self.rule_lines()
        if self.not_applied:
            out["notApplied"] = [{"message": n.message(), **n.location.to_dict()} for n in self.not_applied]
        if self.problems:
            out["problems"] = [p.to_dict() for p in self.problems]
        return out


@dataclass(frozen=True, slots=True)
class FieldAcrossKinds:
    """One field of a view's policy side, kind by kind (:data:`~template_engine.kinds.TEMPLATE_KINDS`'
    order)."""

    path: Path
    sides: tuple[KindSide, ...]

    @property
    def field(self) -> str:
        return format_path(self.path)

    @property
    def differs(self) -> bool:
        return len({side.signature() for side in self.sides}) > 1

    def groups(self) -> list[tuple[tuple[KindSide, ...], str]]:
        """The kinds that are alike at the field, each group with what they share (first appearance order):
        ``(training, workspace): imposed passwd``, ``(distributed, inference): not set``."""
        found: dict[tuple[Any, ...], list[KindSide]] = {}
        for side in self.sides:
            found.setdefault(side.signature(), []).append(side)
        return [
            (
                tuple(group),
                group[0].summary() if len(group) == 1 or group[0].has_field else "not a field of their specs",
            )
            for group in found.values()
        ]

    def to_dict(self) -> dict[str, Any]:
        return {
            "field": self.field,
            "differs": self.differs,
            "kinds": [side.to_dict() for side in self.sides],
        }


@dataclass(frozen=True, slots=True)
class KindPolicySide:
    """The policy side of one kind seen from a view, once: its merge, its imposed data sources and its
    policy's rules (or what stopped it), read by every field asked of it."""

    kind: WorkloadKind
    merged: MergeResult | None
    imposed: tuple[ImposedAsset, ...]
    rules: tuple[FieldRules, ...]
    not_applied: tuple[NotApplied, ...]
    problems: tuple[Problem, ...] = ()

    @staticmethod
    def of(org: Org, view: View, kind: WorkloadKind) -> KindPolicySide:
        role = kind.primary
        left_out = _not_applied(org, view, kind)
        try:
            merged = merge_layers(kind.plan(), policy_side_layers(org, view, False, kind))
            policy = effective_policy(org, view, kind)
        except TemplateEngineError as exc:
            return KindPolicySide(kind, None, (), (), left_out, tuple(exc.problems))
        return KindPolicySide(kind, merged, policy.imposed_on(role), policy.for_replica(role), left_out)

    def at(self, path: Path) -> KindSide:
        """The field at ``path`` for this kind."""
        has_field = bool(path) and path[0] in self.kind.fields()
        if self.merged is None:
            return KindSide(self.kind, has_field, problems=self.problems)
        left_out = tuple(n for n in self.not_applied if not has_field and n.field == path[0])
        value = _at(self.merged.spec, path, self.kind)
        is_set = value is not _UNSET
        return KindSide(
            self.kind,
            has_field,
            value if is_set else None,
            is_set,
            _places(self.merged, path) if is_set else (),
            tuple(a for a in self.imposed if _imposed_at(self.merged, a, path)),
            tuple(r for r in self.rules if _governs(r, path)),
            left_out,
        )

    def paths(self) -> set[Path]:
        """Every place the kind's policy side has something: each value (a keyed list's item as a whole),
        each ruled field; and the fields it was given but lacks."""
        out: set[Path] = {(n.field,) for n in self.not_applied}
        if self.merged is None:
            return out
        walk = steps(self.merged.spec, self.kind.plan())
        for step in walk:
            if step.item:
                walk.skip()
                out.add(step.path)
            elif not isinstance(step.value, Mapping | list) or not step.value:
                out.add(step.path)
        out.update(tuple(r.path) for r in self.rules)
        return out


def _places(merged: MergeResult, path: Path) -> tuple[Location, ...]:
    """Where the value at ``path`` was set: its own place (or a parent's, set whole), else the place of what
    each layer set below it (its shallowest), lowest layer first."""
    found = merged.locate(path)
    if found is not None:
        return (found,)
    below: dict[int, Path] = {}
    for place, origin in merged.set_by.items():
        if is_prefix(path, place) and (origin.layer not in below or len(place) < len(below[origin.layer])):
            below[origin.layer] = place
    return tuple(merged.location(merged.set_by[below[layer]]) for layer in sorted(below))


def _not_applied(org: Org, view: View, kind: WorkloadKind) -> tuple[NotApplied, ...]:
    try:
        return not_applied(org, None, view, kind)
    except TemplateEngineError:
        return ()  # the same problem stops the merge: KindPolicySide.of says it


def _governs(rules: FieldRules, path: Path) -> bool:
    """Whether ``rules`` govern ``path`` or something below it: a field's rules its value; a keyed list's
    ``instances`` the list and the items they lock; its ``attributes`` the list and every item (as
    ``explain._governing`` hangs rules on a composition's values)."""
    ruled: Path = tuple(rules.path)
    if is_prefix(path, ruled):
        return True
    if not is_prefix(ruled, path):
        return False
    rest = path[len(ruled) :]
    if rules.instances:
        return isinstance(rest[0], Match) and str(rest[0].value) in rules.locked
    if rules.attribute:
        attribute: Path = rules.attribute
        tail = rest[1:]
        return isinstance(rest[0], Match) and (is_prefix(tail, attribute) or is_prefix(attribute, tail))
    return True


def _imposed_at(merged: MergeResult, imposed: ImposedAsset, path: Path) -> bool:
    """Whether the item a data source imposes (its layer's label names it) lies at or below ``path``."""
    for item_path, origin in merged.set_by.items():
        if not item_path or not isinstance(item_path[-1], Match):
            continue
        label = merged.layers[origin.layer].label
        mine = label.startswith(f"datasource asset {imposed.name} (imposed by")
        if mine and (is_prefix(path, item_path) or is_prefix(item_path, path)):
            return True
    return False


def _at(spec: Any, path: Path, kind: WorkloadKind) -> Any:
    """The value at ``path`` of a merged spec (a keyed item by its identity), or :data:`_UNSET`."""
    value = spec
    node = kind.plan()
    for segment in path:
        if isinstance(segment, str):
            if not isinstance(value, Mapping) or value.get(segment) is None:
                return _UNSET
            value, node = value[segment], node.child(segment)
        elif isinstance(value, list):  # a keyed list's plan node holds its items' fields: it stays
            value = next((item for key, item in items(value, node) if key == segment), _UNSET)
            if value is _UNSET:
                return _UNSET
        else:
            return _UNSET
    return value


def article(noun: str) -> str:
    """``a training``, ``an inference``."""
    return f"{'an' if noun[:1] in 'aeiou' else 'a'} {noun}"


def _rule_names(rules: FieldRules) -> list[str]:
    """The rule keys of a rule object (``max``, ``canEdit``; ``locked`` for a list's instances)."""
    if rules.instances:
        return [name for name, given in (("locked", rules.locked), ("canAdd", rules.can_add)) if given]
    return [name for name, value in rules.written.items() if value is not None]


def _short(value: Any) -> str:
    """A value in a few characters: a scalar as JSON, a mapping as ``set``, a list by its length."""
    if isinstance(value, Mapping):
        return "set"
    if isinstance(value, list):
        return f"{len(value)} item{'s' * (len(value) != 1)}"
    return _show(value, 30)


def _show(value: Any, width: int = 60) -> str:
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)
    return text if len(text) <= width else text[: width - 3] + "..."


def sides(org: Org, view: View) -> tuple[KindPolicySide, ...]:
    """The policy side of every kind with templates, seen from ``view``."""
    return tuple(KindPolicySide.of(org, view, kind) for kind in TEMPLATE_KINDS)


def field_across_kinds(org: Org, view: View, path: Path) -> FieldAcrossKinds:
    """The field at ``path`` of ``view``'s policy side, kind by kind."""
    return FieldAcrossKinds(path, tuple(side.at(path) for side in sides(org, view)))


def differing_fields(org: Org, view: View) -> list[FieldAcrossKinds]:
    """Every field where the kinds' policy sides differ, seen from ``view``, in path order."""
    found = sides(org, view)
    paths: set[Path] = set()
    for side in found:
        paths |= side.paths()
    out = []
    for path in sorted(paths, key=format_path):
        across = FieldAcrossKinds(path, tuple(side.at(path) for side in found))
        if across.differs:
            out.append(across)
    return out
