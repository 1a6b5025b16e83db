"""What a number in a policy rule may be: what the ruled field can hold, within Run:ai's schema of the rule.

A rule's ``min`` and ``max`` are values of the field it rules, so they are held to the bounds the spec models
put on that field: read here from the models' annotations (``Int32``, ``Int64``, ``Field(ge=1, le=65535)``
in ``models/spec.py`` and ``models/spec_items.py``), never from a second table.
Run:ai's schema of the rule itself narrows them further: ``IntegerRules`` (and ``IntegerRulesOptional``) give
``min``, ``max`` and ``step`` ``format: int32``, so the rules of an int64 field (``backoffLimit``,
``security.runAsUid``) are int32; ``NumberRules`` give ``type: number`` and ``DefaultFromRule.factor``
``format: double``: finite, within a float's range (``tests/test_policy_bounds.py`` reads these formats from
Run:ai's document).
"""

from __future__ import annotations

import sys
import types
import typing
from dataclasses import dataclass
from decimal import Decimal
from functools import cache
from typing import Any

from annotated_types import Ge, Le
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from template_engine.kinds import DISTRIBUTED, WorkloadKind
from template_engine.models.spec_items import INT32_MAX, INT32_MIN
from template_engine.policy.vocabulary import Replica

#: Run:ai's ``format: int32`` of ``IntegerRules.min``, ``max`` and ``step``.
RULE_INTEGER = (Decimal(INT32_MIN), Decimal(INT32_MAX))
#: Run:ai's ``type: number`` (a double) of ``NumberRules`` and of ``DefaultFromRule.factor``.
FLOAT_MAX = Decimal(sys.float_info.max)
RULE_NUMBER = (-FLOAT_MAX, FLOAT_MAX)


@dataclass(frozen=True, slots=True)
class Bounds:
    """The closed range ``low``..``high`` a rule number may take, and whether it is a whole number."""

    low: Decimal
    high: Decimal
    integer: bool

    def holds(self, number: Decimal) -> bool:
        return self.low <= number <= self.high

    @property
    def expected(self) -> str:
        what = "a whole number" if self.integer else "a number"
        if self.high == FLOAT_MAX and self.low == -FLOAT_MAX:
            return f"{what} within a float's range (at most {_text(FLOAT_MAX)} either way)"
        if self.high == FLOAT_MAX:
            return f"{what} from {_text(self.low)} up (at most {_text(FLOAT_MAX)})"
        return f"{what} from {_text(self.low)} to {_text(self.high)}"


def _text(number: Decimal) -> str:
    if number == FLOAT_MAX:
        return "1.797e308"
    if number == -FLOAT_MAX:
        return "-1.797e308"
    return str(int(number)) if number == number.to_integral_value() else str(number)


def _unwrap(annotation: Any) -> tuple[Any, list[Any]]:
    """The type under ``X | None``, ``list[X]`` and ``Annotated[X, ...]``, with the constraints on the way."""
    found: list[Any] = []
    while True:
        origin = typing.get_origin(annotation)
        if origin is typing.Annotated:
            annotation, *extra = typing.get_args(annotation)
            for item in extra:
                found.extend(item.metadata if isinstance(item, FieldInfo) else [item])
        elif origin is list:
            annotation = typing.get_args(annotation)[0]
        elif origin in (typing.Union, types.UnionType):
            parts = [a for a in typing.get_args(annotation) if a is not type(None)]
            if len(parts) != 1:
                return annotation, found
            annotation = parts[0]
        else:
            return annotation, found


def _field(replica: Replica, names: tuple[str, ...], workload: WorkloadKind) -> tuple[Any, list[Any]] | None:
    model: Any = workload.spec_models[replica]
    leaf: tuple[Any, list[Any]] | None = None
    for name in names:
        if not (isinstance(model, type) and issubclass(model, BaseModel)) or name not in model.model_fields:
            return None
        info = model.model_fields[name]
        model, found = _unwrap(info.annotation)
        leaf = model, [*info.metadata, *found]
    return leaf


def _narrowed(
    replica: Replica,
    names: tuple[str, ...],
    low: Decimal,
    high: Decimal,
    integer: bool,
    workload: WorkloadKind,
) -> Bounds:
    """``low``..``high`` narrowed by ``workload``'s spec model's bounds of the field at ``names``."""
    found = _field(replica, names, workload)
    for constraint in found[1] if found is not None else []:
        if isinstance(constraint, Ge):
            low = max(low, Decimal(str(constraint.ge)))
        elif isinstance(constraint, Le):
            high = min(high, Decimal(str(constraint.le)))
    return Bounds(low, high, integer)


@cache
def field_bounds(
    replica: Replica,
    path: tuple[str, ...],
    attribute: tuple[str, ...],
    kind: str,
    *,
    workload: WorkloadKind = DISTRIBUTED,
) -> Bounds | None:
    """The bounds of a rule number of the ``kind`` (``integer``/``number``) field at ``path`` (and
    ``attribute`` of a keyed list's items): the model's bounds of the field within Run:ai's schema of the
    rule.  ``None`` for other kinds.  ``workload``: the workload kind whose spec models hold the field (its
    ``replica`` role's)."""
    if kind not in ("integer", "number"):
        return None
    low, high = RULE_INTEGER if kind == "integer" else RULE_NUMBER
    return _narrowed(replica, (*path, *attribute), low, high, kind == "integer", workload)


@cache
def value_bounds(
    replica: Replica,
    path: tuple[str, ...],
    attribute: tuple[str, ...],
    kind: str,
    *,
    workload: WorkloadKind = DISTRIBUTED,
) -> Bounds | None:
    """The bounds of a value of the ``kind`` (``integer``/``number``) field at ``path`` (and ``attribute``):
    the spec model's (``Int32``, ``Field(ge=0)``), within a float's range; what a value ``defaultFrom``
    computes is held to, as one written directly is.  ``None`` for other kinds."""
    if kind not in ("integer", "number"):
        return None
    low, high = RULE_NUMBER
    return _narrowed(replica, (*path, *attribute), low, high, kind == "integer", workload)


def model_type(
    replica: Replica,
    path: tuple[str, ...],
    attribute: tuple[str, ...],
    *,
    workload: WorkloadKind = DISTRIBUTED,
) -> Any:
    """The Python type the spec model gives the field (``int``, ``float``), or ``None`` when it has none."""
    found = _field(replica, (*path, *attribute), workload)
    return found[0] if found is not None else None


__all__ = ["FLOAT_MAX", "RULE_INTEGER", "RULE_NUMBER", "Bounds", "field_bounds", "model_type", "value_bounds"]
