"""Provenance: which layer and file set each field and list item, and which layer excluded what."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal

from template_engine.compose import Composition
from template_engine.errors import Location
from template_engine.layers import NotApplied
from template_engine.merge.engine import MergeResult
from template_engine.merge.plan import SPEC_PLAN, PlanNode
from template_engine.paths import Match, Path, format_path, is_prefix
from template_engine.policy.document import FieldRules, origin_text
from template_engine.policy.vocabulary import Replica
from template_engine.policy.wording import rule_phrases
from template_engine.walk import steps

Action = Literal["set", "added", "excluded", "derived", "unset"]


@dataclass(frozen=True, slots=True)
class Replaced:
    """A value a lower layer wrote at an entry's path, which the entry's layer overrode (or, for an
    exclusion, removed): "why isn't my default applied?"."""

    value: Any
    location: Location

    def to_dict(self) -> dict[str, Any]:
        return {"value": self.value, **self.location.to_dict()}

    def render(self) -> str:
        """``2 (project nlp defaults, projects/nlp/defaults.yaml:5)``, as an entry names its own layer."""
        return f"{_show(self.value)} ({self.location.layer or 'unknown layer'}, {self.location.place()})"


@dataclass(frozen=True, slots=True)
class Entry:
    """One line of an explanation."""

    replica: Literal["worker", "master"]
    path: Path
    action: Action
    value: Any
    location: Location | None
    #: The policy rules that govern this field (POLICY.md): ``max 8 (system policy, system/policy.yaml:5)``.
    rules: tuple[str, ...] = ()
    #: What lower layers wrote here, lowest first: the values this one overrode (an exclusion: removed).
    replaced: tuple[Replaced, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "replica": self.replica,
            "field": format_path(self.path),
            "action": self.action,
        }
        if self.action in ("set", "derived"):
            out["value"] = self.value
        if self.location is not None:
            out["layer"] = self.location.layer
            out.update(self.location.to_dict())
        if self.rules:
            out["rules"] = list(self.rules)
        if self.replaced:
            out["overrode" if self.action != "excluded" else "removed"] = [r.to_dict() for r in self.replaced]
        return out

    def render(self) -> str:
        where = f"{self.location.layer}, {self.location.place()}" if self.location else "no layer"
        field = f"{self.replica:6} {format_path(self.path)}"
        governed = f"  [governed by {'; '.join(self.rules)}]" if self.rules else ""
        if self.replaced:
            verb = "removed" if self.action == "excluded" else "overrode"
            governed = f"  [{verb} {'; '.join(r.render() for r in self.replaced)}]{governed}"
        if self.action == "excluded":
            return f"{field}  excluded by {where}{governed}"
        if self.action == "added":
            return f"{field}  item added by {where}{governed}"
        if self.action == "unset":
            return f"{field}  not set by any layer{governed}"
        return f"{field} = {_show(self.value)}  ({where}){governed}"


def _show(value: Any) -> str:
    import json

    return json.dumps(value, sort_keys=True)


def written_by_layer(result: MergeResult, plan: PlanNode = SPEC_PLAN) -> dict[Path, list[tuple[int, Any]]]:
    """What each layer wrote at each path (an item without its ``exclude`` flag), by layer position; ``plan``
    the merge plan of the composition's kind (``WorkloadKind.plan()``)."""
    out: dict[Path, list[tuple[int, Any]]] = {}
    for index, layer in enumerate(result.layers):
        walk = steps(layer.spec, plan)
        for step in walk:
            value = step.value
            if step.item and isinstance(value, Mapping):
                if value.get("exclude") is True:  # an exclusion writes no value
                    walk.skip()
                    continue
                value = {k: v for k, v in value.items() if k != "exclude"}
            elif (
                len(step.path) >= 2
                and isinstance(step.path[-2], Match)
                and step.path[-1] in ("exclude", step.path[-2].field)
            ):  # the flag, and the key that names the item
                continue
            if value is None:
                continue
            out.setdefault(step.path, []).append((index, value))
    return out


def replaced_below(
    result: MergeResult, written: Mapping[Path, list[tuple[int, Any]]], path: Path, layer: int
) -> tuple[Replaced, ...]:
    """The values the layers below position ``layer`` wrote at ``path`` (:func:`written_by_layer`), lowest
    first, each where its layer writes it: what the value set (or the exclusion made) at ``layer``
    replaced.  The CLI's ``explain`` and the explain view's hover both read it."""
    return tuple(
        Replaced(value, result.layers[index].location(_raw(result, index, path)))
        for index, value in written.get(path, ())
        if index < layer
    )


def _raw(result: MergeResult, layer: int, path: Path) -> Path:
    """The path of ``path`` inside one layer's document (items by position), for its line number."""
    raw: list[str | int] = []
    value: Any = result.layers[layer].spec
    for segment in path:
        if isinstance(segment, Match):
            position = next(
                (
                    i
                    for i, item in enumerate(value or ())
                    if isinstance(item, Mapping) and item.get(segment.field) == segment.value
                ),
                None,
            )
            if position is None:
                break
            raw.append(position)
            value = value[position]
        elif isinstance(segment, str) and isinstance(value, Mapping) and segment in value:
            raw.append(segment)
            value = value[segment]
        else:
            break
    return tuple(raw)


def _entries(
    replica: Literal["worker", "master"],
    spec: Mapping[str, Any] | None,
    result: MergeResult | None,
    derived: bool,
    plan: PlanNode = SPEC_PLAN,
) -> list[Entry]:
    if spec is None or result is None:
        return []
    excluded = dict(result.excluded)
    written = written_by_layer(result, plan)

    def below(path: Path, removed: bool = False) -> tuple[Replaced, ...]:
        found = result.excluded.get(path) if removed else result.set_by.get(path) or result.origin_of(path)
        return replaced_below(result, written, path, found.layer) if found is not None else ()

    out = []
    # Every scalar, whole-replaced value and keyed item, by field name.
    for path, value, _, is_item in steps(spec, plan, sort=True):
        if is_item:
            gone = excluded.pop(path, None)
            if gone is not None:  # excluded below, then given again above: tell it in that order
                out.append(Entry(replica, path, "excluded", None, result.location(gone)))
            origin = result.set_by.get(path)
            out.append(Entry(replica, path, "added", None, result.location(origin) if origin else None))
        else:
            action: Action = "derived" if derived else "set"
            out.append(Entry(replica, path, action, value, result.locate(path), replaced=below(path)))
    for path, origin in excluded.items():
        removed = below(path, removed=True)
        out.append(Entry(replica, path, "excluded", None, result.location(origin), replaced=removed))
    return out


def rule_text(rules: FieldRules) -> list[str]:
    """Each rule of a rule object as ``phrase (source)`` (:func:`~.policy.wording.rule_phrases`)."""
    where = f"{rules.policy}, {rules.location.place()}"
    return [f"{phrase} ({where})" for phrase in rule_phrases(rules)]


def _governing(composition: Composition, replica: Replica, path: Path) -> tuple[str, ...]:
    """The rules of the composition's policy that govern ``path`` of ``replica``."""
    found: list[str] = []
    for rules in composition.policy.for_replica(replica):
        n = len(rules.path)
        if tuple(path[:n]) != rules.path:
            continue
        rest = path[n:]
        if rules.instances:
            key = rest[0] if len(rest) == 1 else None
            if isinstance(key, Match) and (rules.can_add is not None or str(key.value) in rules.locked):
                found += rule_text(rules)
        elif rules.attribute:
            if len(rest) >= 1 and isinstance(rest[0], Match) and tuple(rest[1:]) == rules.attribute:
                found += rule_text(rules)
        elif not rest:
            found += rule_text(rules)
    return tuple(found)


def _with_policy(composition: Composition, entries: list[Entry]) -> list[Entry]:
    if composition.policy.empty:
        return entries
    out = []
    for entry in entries:
        origin = composition.policy_origins.get((entry.replica, entry.path))
        if origin is not None and entry.action in ("set", "derived"):
            layer = origin_text(origin, entry.path)
            # set by the policy (derived by defaultFrom, or filled by an attribute default): it overrides no
            # lower layer's value (the explain view says so too)
            entry = replace(entry, location=replace(origin.location, layer=layer, kind="policy"), replaced=())
        rules = _governing(composition, entry.replica, entry.path)
        out.append(replace(entry, rules=rules) if rules else entry)
    return out


def explain(composition: Composition, field: Path = ()) -> list[Entry]:
    """Every entry of both replicas, narrowed to ``field`` and what is below it."""
    plan = composition.kind.plan()
    entries = _entries("worker", composition.combined_spec, composition.worker, False, plan)
    entries += _entries(
        "master",
        composition.combined_master_spec,
        composition.master,
        composition.master_same_as_worker,
        plan,
    )
    entries = _with_policy(composition, entries)
    found = [e for e in entries if is_prefix(field, e.path)]
    if not found and field:
        # A value set but omitted from the output (an empty list or mapping replaces the lower value).
        for replica, result in (("worker", composition.worker), ("master", composition.master)):
            origin = result.set_by.get(field) if result is not None else None
            if result is not None and origin is not None:
                found.append(Entry(replica, field, "set", [], result.location(origin)))  # type: ignore[arg-type]
    if not found and field:
        # Nothing sets it, but a policy governs it (``required``, say): that is the explanation.
        for replica, spec in (
            ("worker", composition.combined_spec),
            ("master", composition.combined_master_spec),
        ):
            rules = _governing(composition, replica, field) if spec is not None else ()  # type: ignore[arg-type]
            if rules:
                found.append(Entry(replica, field, "unset", None, None, rules))  # type: ignore[arg-type]
    return found


@dataclass(frozen=True, slots=True)
class NotAppliedEntry:
    """A field a layer gives that the composition's kind does not have (``Composition.not_applied``): left
    out, and said, so that nothing is dropped silently (issue 32)."""

    found: NotApplied

    @property
    def path(self) -> Path:
        return (self.found.field,)

    def to_dict(self) -> dict[str, Any]:
        return {
            "field": self.found.field,
            "kind": self.found.kind.name,
            "message": self.found.message(),
            **self.found.location.to_dict(),
        }

    def render(self) -> str:
        """``worker backoffLimit  not applied (system defaults, system/defaults.yaml:63): backoffLimit is not
        applied to a inference: ...``, as an entry names its layer and place."""
        where = self.found.location
        layer = f"{where.layer}, " if where.layer else ""
        role = f"{self.found.kind.primary:6} {self.found.field}"
        return f"{role}  not applied ({layer}{where.place()}): {self.found.message()}"


def not_applied(composition: Composition, field: Path = ()) -> list[NotAppliedEntry]:
    """What the composition's layers give that its kind lacks, narrowed to ``field`` (a path at or below a
    field a kind lacks names it too: ``explain backoffLimit``, ``servingPort.container`` of a training)."""
    return [
        NotAppliedEntry(found)
        for found in composition.not_applied
        if is_prefix(field, (found.field,)) or is_prefix((found.field,), field)
    ]
