"""Run:ai's attribute defaults of keyed lists: read from a policy's ``defaults``, and applied to a rendered
combined spec.

A policy's ``defaults.worker`` (``defaults.master``) holds, for a keyed list, the default of an attribute for
every item (``compute.extendedResources: {attributes: {quantity: 3}}``); the default items themselves are the
scope's defaults, in its ``defaults.yaml``.  The policy of another kind (a training's flat ``defaults``, a
distributed inference's ``defaults.leader``) holds its value defaults beside them, as Run:ai's does
(:func:`read_role_defaults`): plain values, and a keyed list's items as a list or as ``instances``.  Run:ai's
policy reference ("Itemized"): an item's own value of an attribute beats the attribute default, and the
attribute default fills every item that has none: an item the request side added, and an inherited one that
lacks the attribute.  Pure: a spec and the replica's attribute defaults in, a copy and which default set which
path out (their origin for ``explain``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from pydantic import BaseModel, ValidationError

from template_engine.errors import Location
from template_engine.kinds import DISTRIBUTED, WorkloadKind
from template_engine.merge.engine import clone
from template_engine.merge.plan import PlanNode, item_key
from template_engine.org import Scope
from template_engine.paths import Path, with_value_at
from template_engine.policy.spec_values import field_value, unset
from template_engine.policy.vocabulary import ItemsFamily, Node, Replica, RuleFamily, Section, kind_vocabulary


def policy_name(scope: Scope, kind_name: str) -> str:
    """A policy as messages name it: ``system policy`` (a distributed training's, as it always was named),
    ``project vision training policy``."""
    return f"{scope} policy" if kind_name == "distributed" else f"{scope} {kind_name} policy"


@dataclass(frozen=True, slots=True)
class AttributeDefault:
    """Run:ai's attribute default of a keyed list (``defaults.worker.compute.extendedResources.attributes``):
    the value every item of the combined list gets for ``attribute`` when it has none of its own."""

    replica: Replica
    path: tuple[str, ...]
    attribute: tuple[str, ...]
    value: Any
    scope: Scope
    location: Location
    #: The workload kind of the policy that writes it (its name).
    kind_name: str = "distributed"

    @property
    def policy(self) -> str:
        """The policy that writes it, as messages name it: ``system policy``, ``system training policy``."""
        return (
            f"{self.scope} policy"
            if self.kind_name == "distributed"
            else f"{self.scope} {self.kind_name} policy"
        )

    @property
    def key(self) -> tuple[Replica, tuple[str, ...], tuple[str, ...]]:
        """What a nearer scope's attribute default of the same attribute replaces."""
        return self.replica, self.path, self.attribute

    @property
    def field_text(self) -> str:
        """``compute.extendedResources.attributes.quantity``."""
        return ".".join((*self.path, "attributes", *self.attribute))


class _Reader(Protocol):
    """What reading a policy needs to say where a problem is (``policy.document``'s reader)."""

    scope: Scope

    def at(self, path: Path) -> Location: ...
    def fail(self, message: str, path: Path, expected: str | None) -> None: ...
    def unknown(self, name: str, allowed: list[str], path: Path, what: str) -> None: ...
    def mapping(self, value: Any, path: Path, what: str) -> Mapping[str, Any] | None: ...


def read_attribute_defaults(
    reader: _Reader,
    replica: Replica,
    data: Mapping[str, Any],
    path: Path,
    *,
    kind: WorkloadKind = DISTRIBUTED,
) -> list[AttributeDefault]:
    """The attribute defaults of ``data`` (a distributed policy's ``defaults.<replica>``: nothing else); each
    problem told to ``reader``."""
    out: list[AttributeDefault] = []
    _Walk(reader, out, None, replica, kind).section(kind_vocabulary(kind)[replica], data, (), path, None)
    return out


def read_role_defaults(
    reader: _Reader, replica: Replica, data: Mapping[str, Any], path: Path, *, kind: WorkloadKind
) -> tuple[list[AttributeDefault], dict[str, Any]]:
    """The attribute defaults of ``data`` (a one-role kind's flat ``defaults``, or a distributed inference's
    ``defaults.<role>``) and its value defaults: the rest, as a spec of the role (a keyed list's
    ``instances`` as the list), for the caller to check against the role's spec model.  A field the role's
    vocabulary lacks is kept among the value defaults: the spec model says whether the role has it."""
    out: list[AttributeDefault] = []
    values: dict[str, Any] = {}
    _Walk(reader, out, values, replica, kind).section(kind_vocabulary(kind)[replica], data, (), path, values)
    return out, values


@dataclass(slots=True)
class _Walk:
    """One walk of a role's defaults: the attribute defaults found (``out``), and the value defaults when the
    kind's policy holds them (``values``: ``None`` for a distributed policy, whose value defaults are the
    scope's ``defaults.yaml``)."""

    reader: _Reader
    out: list[AttributeDefault]
    values: dict[str, Any] | None
    replica: Replica
    kind: WorkloadKind

    def section(
        self,
        node: Section,
        data: Mapping[str, Any],
        field_path: tuple[str, ...],
        path: Path,
        values: dict[str, Any] | None,
    ) -> None:
        for name, value in data.items():
            self.field(node, str(name), value, field_path, (*path, name), values)

    def field(
        self,
        node: Section,
        name: str,
        value: Any,
        field_path: tuple[str, ...],
        here: Path,
        values: dict[str, Any] | None,
    ) -> None:
        reader, replica = self.reader, self.replica
        child = node.fields.get(name)
        if value is None:
            return
        if values is not None and (child is None or isinstance(child, RuleFamily)):
            values[name] = value  # a plain value (or a field without rules): the spec model checks it
        elif child is None:
            reader.unknown(name, list(node.fields), here, "field for defaults")
        elif isinstance(child, Section):
            inner = reader.mapping(value, here, ".".join((*field_path, name)))
            if inner is not None:
                nested: dict[str, Any] | None = {} if values is not None else None
                self.section(child, inner, (*field_path, name), here, nested)
                if values is not None and nested:
                    values[name] = nested
        elif isinstance(child, ItemsFamily):
            if values is not None and isinstance(value, list):
                values[name] = value  # the default items, as a spec writes them
            else:
                items = _items(
                    reader,
                    self.out,
                    replica,
                    child,
                    value,
                    (*field_path, name),
                    here,
                    self.kind,
                    values is not None,
                )
                if values is not None and items is not None:
                    values[name] = items
        else:
            reader.fail(
                f"a policy's defaults hold only the attribute defaults of keyed lists: the default of "
                f"{'.'.join((*field_path, str(name)))} is the scope's, in its defaults.yaml",
                here,
                f"spec.{'.'.join((*field_path, str(name)))} in the defaults.yaml beside this policy",
            )


def _items(
    reader: _Reader,
    out: list[AttributeDefault],
    replica: Replica,
    node: ItemsFamily,
    value: Any,
    field_path: tuple[str, ...],
    path: Path,
    kind: WorkloadKind,
    values: bool = False,
) -> Any:
    """The attribute defaults of a keyed list's defaults (into ``out``); with ``values``, its ``instances``
    (the default items, as Run:ai writes them), returned; else they are refused (the scope's defaults)."""
    what = ".".join(field_path)
    data = reader.mapping(value, path, what)
    if data is None:
        return None
    items: Any = None
    for key, given in data.items():
        here = (*path, key)
        if key == "instances":
            if values:
                items = given
            elif given is not None:
                reader.fail(
                    f"the default items of {what} are the scope's defaults, in its defaults.yaml; a "
                    "policy's defaults hold the attribute defaults of every item",
                    here,
                    f"spec.{what}: [items] in the defaults.yaml beside this policy",
                )
        elif key == "attributes":
            attributes = reader.mapping(given, here, f"{what}.attributes")
            if attributes is not None and not node.attributes:
                reader.fail(f"the items of {what} have no attributes to default", here, "instances only")
            elif attributes is not None:
                _attributes(reader, out, replica, node.attributes, attributes, field_path, (), here, kind)
        else:
            reader.unknown(str(key), ["attributes", "instances"], here, f"part of the defaults of {what}")
    return items


def _attributes(
    reader: _Reader,
    out: list[AttributeDefault],
    replica: Replica,
    known: Mapping[str, Node],
    data: Mapping[str, Any],
    field_path: tuple[str, ...],
    attribute: tuple[str, ...],
    path: Path,
    kind: WorkloadKind,
) -> None:
    for name, value in data.items():
        here = (*path, name)
        child = known.get(str(name))
        if value is None:
            continue
        if name == "exclude" and not attribute:  # a layer's directive, not a value an item holds
            reader.fail(
                "exclude has no default: a layer excludes an item by its key",
                here,
                "a default of another attribute",
            )
        elif child is None:
            reader.unknown(str(name), [k for k in known if k != "exclude"], here, "attribute for defaults")
        elif isinstance(child, Section):
            inner = reader.mapping(value, here, ".".join((*field_path, *attribute, str(name))))
            if inner is not None:
                _attributes(
                    reader, out, replica, child.fields, inner, field_path, (*attribute, str(name)), here, kind
                )
        elif isinstance(child, RuleFamily):
            what = ".".join((*attribute, str(name)))
            problem = _default_problem(kind.spec_models[replica], field_path, (*attribute, str(name)), value)
            if problem is not None:
                reader.fail(
                    f"the default of attribute {what} is not a value of it: {problem}, not {_short(value)}",
                    here,
                    f"a value an item of {'.'.join(field_path)} may have for {what}",
                )
            else:
                out.append(
                    AttributeDefault(
                        replica,
                        field_path,
                        (*attribute, str(name)),
                        value,
                        reader.scope,
                        reader.at(here),
                        kind.name,
                    )
                )


def _default_problem(
    model: type[BaseModel], field_path: tuple[str, ...], attribute: tuple[str, ...], value: Any
) -> str | None:
    """Why ``value`` cannot be attribute ``attribute`` of an item of the list ``field_path``, by the spec
    models (a quantity of ``extendedResources`` is a string or a whole number, as an item's own); ``None``
    when it can."""
    data: Any = value
    for name in reversed(attribute):
        data = {name: data}
    data = [data]
    for name in reversed(field_path):
        data = {name: data}
    try:
        model.model_validate(data)
    except ValidationError as exc:
        return str(exc.errors()[0]["msg"])
    return None


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def apply_attribute_defaults(
    spec: Mapping[str, Any], defaults: Iterable[AttributeDefault], plan: PlanNode
) -> tuple[dict[str, Any], dict[Path, AttributeDefault]]:
    """``spec`` (a copy) with each attribute default written into every item of its list that has no value
    for the attribute, and the path of each value so set with the default that set it."""
    out: dict[str, Any] = dict(spec)
    applied: dict[Path, AttributeDefault] = {}
    for default in defaults:
        node = plan
        for name in default.path:
            node = node.child(name)
        items = field_value(out, default.path)
        if not isinstance(items, list) or node.key is None:
            continue
        new_items: list[Any] = []
        changed = False
        for item in items:
            if isinstance(item, Mapping) and unset(field_value(item, default.attribute)):
                match = item_key(item, node.key)
                if match is not None:
                    item = with_value_at(item, default.attribute, clone(default.value))
                    applied[(*default.path, match, *default.attribute)] = default
                    changed = True
            new_items.append(item)
        if changed:
            out = with_value_at(out, default.path, new_items)
    return out, applied
