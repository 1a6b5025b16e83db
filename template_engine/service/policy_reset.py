"""Run:ai's ``FieldsToReset`` of a policy ``PATCH``, for the policy of every kind: which parts of a request's
``policy`` a ``reset`` path clears (:func:`reset_targets`), and the clearing (:func:`reset_policy`).

A path is Run:ai's form (a role's field, ``worker.compute.gpuDevicesRequest``, or, for a flat policy, the
field itself) or the service's own (a path under ``defaults``, ``rules`` or ``imposedAssets``); a field is
one of the role's spec model or of the kind's rule vocabulary, and a typo is a 400 with a did-you-mean hint.
"""

from __future__ import annotations

import difflib
import types
import typing
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel

from template_engine.errors import Problem
from template_engine.kinds import DISTRIBUTED, WorkloadKind
from template_engine.paths import Path, format_path, parse_path
from template_engine.policy.vocabulary import Node, Replica, Section, kind_vocabulary
from template_engine.service.documents import clear_fields, field_paths
from template_engine.service.errors import bad_request

# -- reset: Run:ai's FieldsToReset -----------------------------------------------------------------------

#: The parts of a request's ``policy`` a reset path of the service's own form starts with.
REQUEST_ROOTS = ("defaults", "rules", "imposedAssets")


def _reset_expected(kind: WorkloadKind) -> str:
    """What a reset path of ``kind``'s policy is: Run:ai's ``FieldsToReset`` (a role's field, or a field
    of a flat policy), or a path of the service's own form."""
    if kind.roled_policy:
        roles = " or ".join(f"{role}.<field>" for role in kind.roles)
        example = f"{kind.primary}.compute.gpuDevicesRequest"
    else:
        roles, example = "<field>", "compute.gpuDevicesRequest"
    return (
        f"{roles} (Run:ai's FieldsToReset, such as {example}), "
        "or a path under defaults, rules or imposedAssets"
    )


def _group(annotation: Any) -> type[BaseModel] | None:
    """The model of a field that groups fields (``compute``, ``security``), through ``X | None`` and
    ``Annotated``; ``None`` for a value or a list (a reset names a list whole)."""
    if typing.get_origin(annotation) is typing.Annotated:
        return _group(typing.get_args(annotation)[0])
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        found = [_group(arg) for arg in typing.get_args(annotation) if arg is not type(None)]
        return found[0] if len(found) == 1 else None
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    return None


_Level = tuple[type[BaseModel] | None, Node | None]


def _fields(level: _Level) -> dict[str, _Level]:
    """The fields below ``level``: those of the spec model and those Run:ai's rule vocabulary has, each with
    the level below it (a group's model and vocabulary section, or ``(None, None)`` for a single field)."""
    model, section = level
    out: dict[str, _Level] = {}
    if model is not None:
        for name, info in model.model_fields.items():
            out[info.alias or name] = (_group(info.annotation), None)
    if isinstance(section, Section):
        for name, node in section.fields.items():
            below = out.get(name, (None, None))[0]
            out[name] = (below, node if isinstance(node, Section) else None)
    return out


def _field_problem(
    text: str, replica: Replica, rest: Path, where: Path, kind: WorkloadKind = DISTRIBUTED
) -> Problem | None:
    """A problem when ``rest`` names no field of ``replica``'s spec of ``kind`` (its model and Run:ai's rule
    vocabulary), with a did-you-mean hint; ``None`` when it names one."""
    level: _Level = (kind.spec_models[replica], kind_vocabulary(kind)[replica])
    who = replica if kind.roled_policy else kind.noun  # a flat policy's fields are the kind's

    def named(path: Path) -> str:
        return f"{replica}.{format_path(path)}" if kind.roled_policy else format_path(path)

    for depth, part in enumerate(rest):
        if not isinstance(part, str):
            return Problem(
                f"reset path {text!r} names an item: a reset clears a field's defaults and rules whole",
                where,
                None,
                named(rest[:depth]),
            )
        if level == (None, None):
            return Problem(
                f"reset path {text!r}: {format_path(rest[:depth])} of the {who} is a single field",
                where,
                None,
                named(rest[:depth]),
            )
        fields = _fields(level)
        if part not in fields:
            close = difflib.get_close_matches(part, list(fields), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            inside = f"{who}'s {format_path(rest[:depth])}" if depth else who
            return Problem(
                f"reset path {text!r}: the {inside} has no field {part!r}{hint}",
                where,
                None,
                "one of: " + ", ".join(sorted(fields)),
            )
        level = fields[part]
    return None


def reset_targets(texts: Sequence[str], kind: WorkloadKind = DISTRIBUTED) -> list[str]:
    """The paths of a request's ``policy`` that a PATCH's ``reset`` clears (Run:ai's ``FieldsToReset``,
    "fields in jsonpath format that is requested to clear their policy (default and rules)"), or a 400
    naming every path that names nothing.

    ``worker.<field>`` and ``master.<field>`` (Run:ai's form; ``worker`` alone is the whole replica) clear
    both ``defaults.<replica>.<field>`` and ``rules.<replica>.<field>``; the field must be one of the
    replica's spec (its model or Run:ai's rule vocabulary), a typo is a 400 with a did-you-mean hint.
    A path under ``defaults``, ``rules`` or ``imposedAssets`` (the service's own form) clears that part
    only, down to a keyed item (``defaults.worker.environmentVariables.instances[name=TZ]``).

    Another kind's (``kind``): its roles (a distributed inference's ``leader.<field>``), or for a one-role
    kind, whose policy is flat, the field itself (``compute.gpuDevicesRequest``)."""
    targets: list[str] = []
    expected = _reset_expected(kind)
    roles: tuple[str, ...] = kind.roles if kind.roled_policy else ()
    problems: list[Problem] = []
    for where, text, path in field_paths(texts, "reset", expected):
        if isinstance(path, Problem):
            problems.append(path)
            continue
        head = path[0]
        if head in REQUEST_ROOTS:
            targets.append(text)
        elif head in roles or not kind.roled_policy:
            replica: Replica = next((r for r in kind.roles if r == head), kind.primary)
            rest = path[1:] if kind.roled_policy else path
            problem = _field_problem(text, replica, rest, where, kind)
            if problem is not None:
                problems.append(problem)
            else:
                targets += [format_path(("defaults", *path)), format_path(("rules", *path))]
        else:
            close = difflib.get_close_matches(str(head), [*roles, *REQUEST_ROOTS], n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            message = f"reset path {text!r} names no field{hint}"
            problems.append(Problem(message, where, None, expected))
    if problems:
        raise bad_request(problems)
    return targets


def _prune(doc: dict[str, Any], path: Path) -> None:
    """Remove the objects along ``path`` that a reset left empty (``rules.worker.compute`` once its last
    field is cleared), deepest first."""
    parents: list[tuple[dict[str, Any], str]] = []
    node: Any = doc
    for part in path[:-1]:
        if not isinstance(part, str) or not isinstance(node, dict) or not isinstance(node.get(part), dict):
            break
        parents.append((node, part))
        node = node[part]
    for parent, key in reversed(parents):
        if parent[key] == {}:
            del parent[key]


def reset_policy(current: Mapping[str, Any], targets: Sequence[str]) -> dict[str, Any]:
    """``current`` (a request's ``policy``) without the values at ``targets`` (:func:`reset_targets`), and
    without the objects that left empty."""
    out = clear_fields(current, targets, REQUEST_ROOTS, field="reset")
    for target in targets:
        _prune(out, parse_path(target))
    return out
