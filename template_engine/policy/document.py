"""A ``policy.yaml`` read into typed rules: one :class:`FieldRules` per rule object, and the imposed assets.

Every problem names the file, line and path, with a did-you-mean hint for a misspelt field or rule key.

The policy of every workload kind is read here (issue 32), in Run:ai's shape of the kind: a distributed
training's ``defaults``, ``rules`` and ``imposedAssets`` split by ``worker``/``master``, a distributed
inference's by ``leader``/``worker``, and the one-role kinds' (training, workspace, inference) flat, read
under the role ``worker``.  The vocabulary, the spec models and the messages of a role are the kind's.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, TypeAlias

from template_engine.errors import Location, Problem
from template_engine.kinds import DISTRIBUTED, KIND_BY_NAME, KINDS, WorkloadKind, kind_note, kinds_with_field
from template_engine.org import Scope
from template_engine.paths import Path, format_path
from template_engine.policy.attribute_defaults import (
    AttributeDefault,
    policy_name,
    read_attribute_defaults,
    read_role_defaults,
)
from template_engine.policy.bounds import FLOAT_MAX, RULE_INTEGER, Bounds, field_bounds
from template_engine.policy.vocabulary import (
    ItemsFamily,
    Node,
    Replica,
    RuleFamily,
    Section,
    kind_vocabulary,
)
from template_engine.quantity import parse_quantity


@dataclass(frozen=True, slots=True)
class DefaultFrom:
    """``defaultFrom: {field, factor}``: an unset field becomes its sibling ``field`` times ``factor``."""

    field: str
    factor: Decimal = Decimal(1)


@dataclass(frozen=True, slots=True)
class FieldRules:
    """The rule object of one field (or of one attribute of a keyed list's items, or of its instances)."""

    replica: Replica
    path: tuple[str, ...]
    scope: Scope
    location: Location
    written: Mapping[str, Any]
    family: RuleFamily | None = None  # None for ``instances``
    attribute: tuple[str, ...] = ()
    instances: bool = False
    required: bool | None = None
    can_edit: bool | None = None
    minimum: Decimal | None = None
    maximum: Decimal | None = None
    step: Decimal | None = None
    options: tuple[str, ...] | None = None
    default_from: DefaultFrom | None = None
    locked: tuple[str, ...] = ()
    can_add: bool | None = None
    #: The workload kind of the policy the rules are written in (its name).
    kind_name: str = "distributed"

    @property
    def policy(self) -> str:
        """The policy that writes the rules, as messages name it (:func:`policy_name`)."""
        return policy_name(self.scope, self.kind_name)

    @property
    def owner_key(self) -> tuple[Replica, tuple[str, ...], str]:
        """What one owner per branch is counted on: the field, a list's instances, or one attribute."""
        if self.instances:
            return self.replica, self.path, "instances"
        if self.attribute:
            return self.replica, self.path, "attributes." + ".".join(self.attribute)
        return self.replica, self.path, ""

    @property
    def field_text(self) -> str:
        """``compute.gpuDevicesRequest``, ``ports.instances``, ``ports.attributes.serviceType``."""
        text = ".".join(self.path)
        part = self.owner_key[2]
        return f"{text}.{part}" if part else text

    @property
    def locks_value(self) -> bool:
        """``canEdit: false``, given or by default (arrays and arbitrary objects)."""
        if self.can_edit is not None:
            return not self.can_edit
        return self.family is not None and not self.family.can_edit_default


@dataclass(frozen=True, slots=True)
class ImposedAsset:
    """A data source asset a policy imposes on a replica, and where the policy names it."""

    name: str
    replica: Replica
    scope: Scope
    location: Location
    #: The workload kind of the policy that imposes it (its name).
    kind_name: str = "distributed"

    @property
    def policy(self) -> str:
        """The policy that imposes it, as messages name it (:func:`policy_name`)."""
        return policy_name(self.scope, self.kind_name)


#: What set a value in the policy step: a ``defaultFrom`` rule or an attribute default.
Origin: TypeAlias = FieldRules | AttributeDefault


def origin_text(origin: Origin, path: Path) -> str:
    """The layer an origin is shown as: ``defaultFrom rule of the department research policy: compute.
    cpuCoreLimit = cpuCoreRequest x 2``, ``attribute default of the system policy: compute.
    extendedResources[resource=added/cpu].quantity = 3``."""
    if isinstance(origin, AttributeDefault):
        return f"attribute default of the {origin.policy}: {format_path(path)} = {origin.value!r}"
    assert origin.default_from is not None
    rule = origin.default_from
    return f"defaultFrom rule of the {origin.policy}: {format_path(path)} = {rule.field} x {rule.factor}"


def origin_kind(origin: Origin) -> str:
    """``defaultFrom rule`` or ``attribute default``: what kind of policy part set a value."""
    return "attribute default" if isinstance(origin, AttributeDefault) else "defaultFrom rule"


@dataclass(frozen=True, slots=True)
class PolicyDocument:
    scope: Scope
    file: str
    rules: tuple[FieldRules, ...] = ()
    imposed: tuple[ImposedAsset, ...] = ()
    data: Mapping[str, Any] = field(default_factory=dict)
    attribute_defaults: tuple[AttributeDefault, ...] = ()
    #: The name of the workload kind the policy is of (:attr:`kind`; a name, so that a copy of the document,
    #: deep or pickled, is equal to it).
    kind_name: str = DISTRIBUTED.name
    #: The value defaults of each role, as a spec of the role (checked against its spec model), for the kinds
    #: whose policy holds them (every kind but a distributed training: its value defaults are the scope's
    #: ``defaults.yaml``).  A keyed list's ``instances`` are its items here.
    value_defaults: Mapping[Replica, Mapping[str, Any]] = field(default_factory=dict)
    #: Where each role's value defaults sit in the file: ``("defaults",)`` for a one-role kind,
    #: ``("defaults", "leader")``... for a distributed inference (a merge layer's ``root``).
    value_default_roots: Mapping[Replica, Path] = field(default_factory=dict)
    #: The file's line map, kept when it has value defaults (a merge layer's ``lines``).
    lines: Mapping[Path, tuple[int, int]] = field(default_factory=dict)

    @property
    def kind(self) -> WorkloadKind:
        """The workload kind the policy is of: its roles, vocabulary and shape."""
        return KIND_BY_NAME[self.kind_name]

    def value_default_root(self, role: Replica) -> Path:
        """Where ``role``'s value defaults sit in the file."""
        return self.value_default_roots.get(
            role, ("defaults", role) if self.kind.roled_policy else ("defaults",)
        )


def policy_root(kind: WorkloadKind, section: str, role: Replica) -> Path:
    """Where ``role``'s part of a policy ``section`` (``defaults``, ``rules``, ``imposedAssets``) sits:
    ``("rules", "worker")`` in a policy split by role, ``("rules",)`` in a flat one."""
    return (section, role) if kind.roled_policy else (section,)


class _Reader:
    def __init__(
        self, file: str, lines: Mapping[Path, tuple[int, int]], scope: Scope, kind: WorkloadKind = DISTRIBUTED
    ) -> None:
        self.file = file
        self.lines = lines
        self.scope = scope
        self.kind = kind
        self.vocabulary = kind_vocabulary(kind)
        self.problems: list[Problem] = []
        self.rules: list[FieldRules] = []
        self.imposed: list[ImposedAsset] = []
        self.attribute_defaults: list[AttributeDefault] = []
        self.value_defaults: dict[Replica, dict[str, Any]] = {}
        self.value_default_roots: dict[Replica, Path] = {}

    def at(self, path: Path) -> Location:
        probe = path
        while probe and probe not in self.lines:
            probe = probe[:-1]
        pos = self.lines.get(probe)
        return Location(self.file, pos[0], pos[1]) if pos else Location(self.file)

    def fail(self, message: str, path: Path, expected: str | None) -> None:
        self.problems.append(Problem(message, path, self.at(path), expected))

    def mapping(self, value: Any, path: Path, what: str) -> Mapping[str, Any] | None:
        if value is None:
            return None
        if not isinstance(value, Mapping):
            self.fail(f"{what} must be a mapping, not {_shape(value)}", path, f"{what} as `key: value` lines")
            return None
        return value

    def unknown(self, name: str, allowed: list[str], path: Path, what: str) -> None:
        flat = self.names_a_role(name, path, what)
        close = difflib.get_close_matches(name, allowed, n=1) if not flat else []
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        if flat:  # a kind of one role: its module is imported for such a policy only (start-up)
            from template_engine.policy.value_defaults import flat_note

            note = ": " + flat_note(self.kind)
        else:
            note = self.note(path, what)
        self.fail(
            f"unknown {what} {name!r}{hint}{note}",
            path,
            "one of: " + ", ".join(sorted(allowed)),
        )

    def field_path(self, path: Path) -> tuple[str, ...]:
        """The field names of ``path`` within its role's part of the policy."""
        return tuple(str(p) for p in path[len(policy_root(self.kind, str(path[0]), self.kind.primary)) :])

    def names_a_role(self, name: str, path: Path, what: str) -> bool:
        """Whether an unknown top-level field of a flat policy is a role's name (``rules.worker``)."""
        return (
            what.startswith("field for ")
            and not self.kind.roled_policy
            and len(self.field_path(path)) == 1
            and name in _ROLE_NAMES
        )

    def note(self, path: Path, what: str) -> str:
        """For another kind than a distributed training's, an unknown field said with the kind (``: a
        training has no such field (a distributed training has it)``)."""
        if self.kind.name == DISTRIBUTED.name or not what.startswith("field for "):
            return ""
        having = kinds_with_field if what == "field for defaults" else _kinds_with_rules
        return ": " + kind_note(self.kind, self.field_path(path), having)

    # -- the document

    def document(self, data: Any) -> None:
        top = self.mapping(data, (), "a policy")
        if top is None:
            return
        for key in top:
            if key not in SECTIONS:
                self.unknown(str(key), list(SECTIONS), (key,), "policy section")
        for replica, section, path in self.by_role(top, "defaults"):
            self.defaults(replica, section, path)
        for replica, section, path in self.by_role(top, "rules"):
            self.section(replica, self.vocabulary[replica], section, (), path)
        if self.kind.roled_policy:
            imposed = self.mapping(top.get("imposedAssets"), ("imposedAssets",), "imposedAssets") or {}
            for name, value in imposed.items():
                role = self.role(name, "imposedAssets")
                if role is not None:
                    self.imposed_list(role, value, ("imposedAssets", role))
        else:
            self.imposed_list(self.kind.primary, top.get("imposedAssets"), ("imposedAssets",))

    def by_role(self, top: Mapping[str, Any], name: str) -> list[tuple[Replica, Mapping[str, Any], Path]]:
        """Each role's part of the section ``name`` of the policy, with its path: a mapping per role
        (``rules.worker``), or the whole section for the one role of a flat policy."""
        found = self.mapping(top.get(name), (name,), name)
        if found is None:
            return []
        if not self.kind.roled_policy:
            return [(self.kind.primary, found, (name,))]
        out: list[tuple[Replica, Mapping[str, Any], Path]] = []
        for key, value in found.items():
            role = self.role(key, name)
            section = self.mapping(value, (name, key), f"{name}.{key}") if role is not None else None
            if role is not None and section is not None:
                out.append((role, section, (name, role)))
        return out

    def role(self, name: Any, section: str) -> Replica | None:
        """The role of the kind ``name`` is in ``section`` of a policy split by role, or ``None`` (told)."""
        for role in self.kind.roles:
            if role == name:
                return role
        self.unknown(str(name), list(self.kind.roles), (section, name), "replica")
        return None

    def defaults(self, replica: Replica, data: Mapping[str, Any], path: Path) -> None:
        """A role's defaults: a distributed training's attribute defaults only (its value defaults are the
        scope's ``defaults.yaml``); any other kind's value defaults too, checked against the role's spec."""
        if self.kind.name == DISTRIBUTED.name:
            self.attribute_defaults.extend(read_attribute_defaults(self, replica, data, path, kind=self.kind))
            return
        found, values = read_role_defaults(self, replica, data, path, kind=self.kind)
        self.attribute_defaults.extend(found)
        if values:
            from template_engine.policy.value_defaults import value_default_problems

            problems = value_default_problems(self.kind, replica, values, path, self.file, self.lines)
            self.problems.extend(problems)
            self.value_defaults[replica] = values
            self.value_default_roots[replica] = path

    def imposed_list(self, replica: Replica, value: Any, path: Path) -> None:
        if value is None:
            return
        if not isinstance(value, list):
            what = ".".join(str(p) for p in path)
            self.fail(f"{what} must be a list of data source names", path, "[name, ...]")
            return
        seen: set[str] = set()
        for index, name in enumerate(value):
            here = (*path, index)
            if not isinstance(name, str) or not name:
                self.fail(f"an imposed asset must be a data source name, not {_shape(name)}", here, "a name")
            elif name in seen:
                self.fail(f"data source {name!r} is imposed twice", here, "each name once")
            else:
                seen.add(name)
                self.imposed.append(ImposedAsset(name, replica, self.scope, self.at(here), self.kind.name))

    def section(
        self,
        replica: Replica,
        node: Section,
        data: Mapping[str, Any],
        field_path: tuple[str, ...],
        path: Path,
    ) -> None:
        for name, value in data.items():
            here = (*path, name)
            child = node.fields.get(str(name))
            if child is None:
                self.unknown(str(name), list(node.fields), here, "field for rules")
                continue
            self.node(replica, child, value, (*field_path, str(name)), here, node)

    def node(
        self,
        replica: Replica,
        node: Node,
        value: Any,
        field_path: tuple[str, ...],
        path: Path,
        parent: Section | ItemsFamily,
    ) -> None:
        what = ".".join(field_path)
        data = self.mapping(value, path, what)
        if data is None:
            return
        if isinstance(node, Section):
            self.section(replica, node, data, field_path, path)
        elif isinstance(node, ItemsFamily):
            self.items(replica, node, data, field_path, path)
        else:
            bounds = field_bounds(replica, field_path, (), node.value_kind, workload=self.kind)
            rules = self.rule_object(node, data, path, parent, bounds, field_path)
            if rules is not None:
                self.rules.append(
                    FieldRules(
                        replica,
                        field_path,
                        self.scope,
                        self.at(path),
                        data,
                        node,
                        **rules,
                        kind_name=self.kind.name,
                    )
                )

    def items(
        self,
        replica: Replica,
        node: ItemsFamily,
        data: Mapping[str, Any],
        field_path: tuple[str, ...],
        path: Path,
    ) -> None:
        allowed = ["instances", "attributes"] if node.attributes else ["instances"]
        for key in data:
            if key not in allowed:
                self.unknown(str(key), allowed, (*path, key), f"part of the rules of {'.'.join(field_path)}")
        instances = self.mapping(data.get("instances"), (*path, "instances"), "instances")
        if instances is not None:
            self.instances(replica, instances, field_path, (*path, "instances"))
        attributes = self.mapping(data.get("attributes"), (*path, "attributes"), "attributes")
        if attributes is not None and node.attributes:
            self.attributes(replica, node.attributes, attributes, field_path, (), (*path, "attributes"), node)

    def attributes(
        self,
        replica: Replica,
        known: Mapping[str, Node],
        data: Mapping[str, Any],
        field_path: tuple[str, ...],
        attribute: tuple[str, ...],
        path: Path,
        parent: ItemsFamily,
    ) -> None:
        for name, value in data.items():
            here = (*path, name)
            child = known.get(str(name))
            if child is None:
                self.unknown(str(name), list(known), here, "attribute for rules")
                continue
            rules = self.mapping(value, here, ".".join((*field_path, *attribute, str(name))))
            if rules is None:
                continue
            if isinstance(child, Section):
                self.attributes(
                    replica, child.fields, rules, field_path, (*attribute, str(name)), here, parent
                )
            elif isinstance(child, RuleFamily):
                bounds = field_bounds(
                    replica, field_path, (*attribute, str(name)), child.value_kind, workload=self.kind
                )
                parsed = self.rule_object(
                    child, rules, here, parent, bounds, (*field_path, *attribute, str(name))
                )
                if parsed is not None:
                    self.rules.append(
                        FieldRules(
                            replica,
                            field_path,
                            self.scope,
                            self.at(here),
                            rules,
                            child,
                            attribute=(*attribute, str(name)),
                            **parsed,
                            kind_name=self.kind.name,
                        )
                    )

    def instances(
        self, replica: Replica, data: Mapping[str, Any], field_path: tuple[str, ...], path: Path
    ) -> None:
        can_add: bool | None = None
        locked: tuple[str, ...] = ()
        ok = True
        for key, value in data.items():
            here = (*path, key)
            if key == "canAdd":
                if value is not None and not isinstance(value, bool):
                    self.fail(f"canAdd must be true or false, not {_shape(value)}", here, "true or false")
                    ok = False
                else:
                    can_add = value
            elif key == "locked":
                if value is None:
                    continue
                if not isinstance(value, list) or not all(isinstance(k, str) and k for k in value):
                    self.fail("locked must be a list of item keys", here, "[KEY, ...]")
                    ok = False
                else:
                    locked = tuple(value)
            else:
                self.unknown(str(key), ["canAdd", "locked"], here, "instances rule")
                ok = False
        if ok:
            self.rules.append(
                FieldRules(
                    replica, field_path, self.scope, self.at(path), data, None, instances=True,
                    can_add=can_add, locked=locked, kind_name=self.kind.name,
                )
            )  # fmt: skip

    def rule_object(
        self,
        family: RuleFamily,
        data: Mapping[str, Any],
        path: Path,
        parent: Section | ItemsFamily,
        bounds: Bounds | None,
        field_path: tuple[str, ...],
    ) -> dict[str, Any] | None:
        out: dict[str, Any] = {}
        ok = True
        for key, value in data.items():
            here = (*path, key)
            kind = family.keys.get(str(key))
            if kind is None:
                kind_text = family.value_kind
                self.unknown(
                    str(key), list(family.keys), here, f"rule for {_article(kind_text)} {kind_text} field"
                )
                ok = False
                continue
            if value is None:
                continue
            parsed = self.rule_value(str(key), kind, value, here, family, parent, bounds, field_path)
            if parsed is _BAD:
                ok = False
            else:
                out[_ATTRIBUTE[str(key)]] = parsed
        if not ok:
            return None
        low, high = out.get("minimum"), out.get("maximum")
        if low is not None and high is not None and low > high:
            self.fail(f"min {data.get('min')} is above max {data.get('max')}", (*path, "min"), "min <= max")
            return None
        return out

    def rule_value(
        self,
        key: str,
        kind: str,
        value: Any,
        path: Path,
        family: RuleFamily,
        parent: Section | ItemsFamily,
        bounds: Bounds | None,
        field_path: tuple[str, ...],
    ) -> Any:
        if kind == "boolean":
            if isinstance(value, bool):
                return value
            self.fail(f"{key} must be true or false, not {_shape(value)}", path, "true or false")
            return _BAD
        if kind in ("integer", "number", "quantity"):
            number = _number(value, kind)
            if number is None:
                expected = {"integer": "a whole number", "number": "a number"}.get(
                    kind, "a quantity (64Gi, 500m)"
                )
                self.fail(f"{key} must be {expected}, not {_short(value)}", path, expected)
                return _BAD
            if key == "step" and number <= 0:
                self.fail(f"step must be above 0, not {_short(value)}", path, "a number above 0")
                return _BAD
            if bounds is not None:
                if key == "step":  # a difference of two values: within Run:ai's schema of the rule
                    high = RULE_INTEGER[1] if bounds.integer else FLOAT_MAX
                    bounds = Bounds(Decimal(1) if bounds.integer else Decimal(0), high, bounds.integer)
                if not bounds.holds(number):
                    depth = len(policy_root(self.kind, "rules", self.kind.primary))
                    field_text = ".".join(str(p) for p in path[depth:-1])
                    what = "Run:ai's bounds of a step" if key == "step" else f"what {field_text} can hold"
                    self.fail(f"{key} {_short(value)} is outside {what}", path, bounds.expected)
                    return _BAD
            return number
        if kind == "options":
            return self.options(value, path, family)
        if kind == "defaultFrom":
            return self.default_from(value, path, parent, family, field_path)
        return value

    def options(self, value: Any, path: Path, family: RuleFamily) -> Any:
        if not isinstance(value, list) or not value:
            self.fail("options must be a non-empty list of {value: ...}", path, "[{value: X}, ...]")
            return _BAD
        found: list[str] = []
        for index, option in enumerate(value):
            here = (*path, index)
            if not isinstance(option, Mapping) or not isinstance(option.get("value"), str):
                self.fail("an option must be {value: TEXT} (and an optional displayed)", here, "{value: X}")
                return _BAD
            extra = set(option) - {"value", "displayed"}
            if extra:
                self.unknown(str(sorted(extra)[0]), ["value", "displayed"], here, "option field")
                return _BAD
            allowed = family.option_values
            if allowed is not None and option["value"] not in allowed:
                self.fail(
                    f"option {option['value']!r} is not a value of this field",
                    here,
                    "one of: " + ", ".join(allowed),
                )
                return _BAD
            found.append(option["value"])
        return tuple(found)

    def default_from(
        self,
        value: Any,
        path: Path,
        parent: Section | ItemsFamily,
        family: RuleFamily,
        field_path: tuple[str, ...],
    ) -> Any:
        if not isinstance(value, Mapping) or not isinstance(value.get("field"), str):
            self.fail("defaultFrom must be {field: SIBLING, factor: N}", path, "{field: NAME, factor: N}")
            return _BAD
        extra = set(value) - {"field", "factor"}
        if extra:
            self.unknown(str(sorted(extra)[0]), ["field", "factor"], path, "defaultFrom field")
            return _BAD
        siblings = parent.fields if isinstance(parent, Section) else parent.attributes
        numeric = ("integer", "number", "quantity")
        names = sorted(
            n for n, s in siblings.items() if isinstance(s, RuleFamily) and s.value_kind in numeric
        )
        # Run:ai's spelling is the sibling's full path from the replica (``compute.cpuCoreLimit``, its
        # policy reference's only example); the bare sibling name (``cpuCoreLimit``) is read the same.
        prefix = ".".join(field_path[:-1])
        written: str = value["field"]
        name = written[len(prefix) + 1 :] if prefix and written.startswith(prefix + ".") else written
        expected = "one of: " + ", ".join(f"{prefix}.{n}" if prefix else n for n in names)
        if "." in name:
            where = f"the section {prefix}" if prefix else "the top level of the replica"
            self.fail(
                f"defaultFrom names {written!r}, which is not a field of {where}: Run:ai reads the value "
                "from the same section (or, for a list's attribute, the same item)",
                (*path, "field"),
                expected,
            )
            return _BAD
        sibling = siblings.get(name)
        if not isinstance(sibling, RuleFamily) or sibling.value_kind not in numeric:
            self.fail(
                f"defaultFrom names {written!r}, which is not a numeric field of the same section",
                (*path, "field"),
                expected,
            )
            return _BAD
        if name == path[-2]:
            self.fail(f"defaultFrom names {written!r}, the field itself", (*path, "field"), "another field")
            return _BAD
        if sibling.value_kind == "quantity" and family.value_kind != "quantity":
            self.fail(
                f"defaultFrom names {written!r}, a quantity: {_article(family.value_kind)} "
                f"{family.value_kind} field cannot be derived from it",
                (*path, "field"),
                "an integer or number field of the same section",
            )
            return _BAD
        factor = _number(value.get("factor", 1), "number")
        if factor is None or not 0 < factor <= FLOAT_MAX:
            self.fail(
                f"defaultFrom factor must be a number above 0, not {_short(value.get('factor'))}",
                (*path, "factor"),
                "a number above 0, at most 1.797e308 (Run:ai's factor is a double)",
            )
            return _BAD
        return DefaultFrom(name, factor)


_BAD = object()
#: The sections of a ``policy.yaml`` (Run:ai's ``DistributedPolicyDefaultsAndRulesV2``, and every other
#: kind's ``...PolicyDefaultsAndRulesV2``).
SECTIONS = ("defaults", "rules", "imposedAssets")
#: The roles of every kind: what a flat policy's ``rules.worker`` was meant to be.
_ROLE_NAMES = frozenset(role for kind in KINDS for role in kind.roles)


def _has_rules(section: Section, field_path: tuple[str, ...]) -> bool:
    node: Node = section
    for name in field_path:
        if not isinstance(node, Section) or name not in node.fields:
            return False
        node = node.fields[name]
    return True


def _kinds_with_rules(field_path: tuple[str, ...]) -> tuple[WorkloadKind, ...]:
    """The kinds a role of which may have rules on the field at ``field_path``."""
    return tuple(k for k in KINDS if any(_has_rules(s, field_path) for s in kind_vocabulary(k).values()))


_ATTRIBUTE = {
    "required": "required",
    "canEdit": "can_edit",
    "min": "minimum",
    "max": "maximum",
    "step": "step",
    "options": "options",
    "defaultFrom": "default_from",
}


def _number(value: Any, kind: str) -> Decimal | None:
    if isinstance(value, bool):
        return None
    if kind == "integer":
        return Decimal(value) if isinstance(value, int) else None
    if kind == "number":
        return Decimal(str(value)) if isinstance(value, int | float) else None
    return parse_quantity(value) if isinstance(value, str | int) else None


def _short(value: Any) -> str:
    """``value`` as written, or how many digits it has when it is too long to quote."""
    text = repr(value)
    if len(text) <= 40:
        return text
    if isinstance(value, int) and not isinstance(value, bool):
        return f"(a {len(str(abs(value)))}-digit {'negative ' if value < 0 else ''}number)"
    return text[:37] + "..."


def _article(word: str) -> str:
    return "an" if word[:1] in ("a", "e", "i", "o", "u") else "a"


def _shape(value: Any) -> str:
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return repr(value)


def read_policy(
    data: Any,
    file: str,
    lines: Mapping[Path, tuple[int, int]],
    scope: Scope,
    *,
    kind: WorkloadKind = DISTRIBUTED,
) -> tuple[PolicyDocument | None, list[Problem]]:
    """The typed policy of ``kind`` of one file, or ``None`` with every problem of the file."""
    reader = _Reader(file, lines, scope, kind)
    reader.document(data)
    if reader.problems:
        return None, reader.problems
    owners: dict[tuple[Replica, tuple[str, ...], str], FieldRules] = {}
    for rules in reader.rules:
        owners.setdefault(rules.owner_key, rules)
    mapping = data if isinstance(data, Mapping) else {}
    document = PolicyDocument(
        scope,
        file,
        tuple(reader.rules),
        tuple(reader.imposed),
        mapping,
        tuple(reader.attribute_defaults),
        kind.name,
        reader.value_defaults,
        reader.value_default_roots,
        lines if reader.value_defaults else {},
    )
    return document, []


__all__ = [
    "SECTIONS",
    "AttributeDefault",
    "DefaultFrom",
    "FieldRules",
    "ImposedAsset",
    "Origin",
    "PolicyDocument",
    "format_path",
    "origin_kind",
    "origin_text",
    "policy_root",
    "read_policy",
]
