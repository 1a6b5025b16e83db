"""The scope a request names, as a :class:`~.context.Placement`: a template's or a body's ``scopeType`` and
``scopeId``, a policy's ``scope`` with ``clusterId``/``departmentId``/``projectId``, and the project a read is
seen from.

Each level is read from the scope table (:mod:`template_engine.scopes`): Run:ai's ``tenant`` is the top
scope (``system``), and a named level takes the id of its unit (the level's ``id_field`` for a policy): a
cluster its UUID, as Run:ai names clusters; a department or a project its id.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from template_engine.errors import Problem
from template_engine.models.orgunit import UUID_PATTERN
from template_engine.paths import Path
from template_engine.scopes import LEVEL_BY_TYPE, ScopeLevel, level_of
from template_engine.service.context import SERVED_LEVELS, Ctx, Placement
from template_engine.service.errors import ApiError, bad_request
from template_engine.service.ids import EXPECTED as ID_EXPECTED
from template_engine.service.ids import UUID_EXPECTED, id_number, is_uuid
from template_engine.service.ids import refused as refused_id
from template_engine.service.schemas import ID_PATTERN, TENANT_ID


def template_scope(ctx: Ctx, row: Any) -> Placement:
    """The scope of a stored template or asset row (its ``scope_type`` and its unit's id)."""
    return ctx.placement(row.scope_type, row.unit_id)


def malformed(scope_type: str, given: object) -> tuple[str, str] | None:
    """Why ``given`` is not an id of a unit of ``scope_type`` (a cluster's is a UUID, a department's or a
    project's 1 to 18 digits), and what was expected; ``None`` when it is one."""
    if scope_type == "cluster":
        return (
            None if is_uuid(given) else (f"must be {UUID_EXPECTED} (got {str(given)[:80]!r})", UUID_EXPECTED)
        )
    return None if id_number(given) is not None else (refused_id(given), ID_EXPECTED)


def path_id(level: ScopeLevel) -> tuple[str, str]:
    """The path parameter naming a unit of a named ``level`` and its pattern: a cluster's ``clusterUuid`` (as
    Run:ai's cluster routes name it), a UUID; a department's ``departmentId`` or a project's ``projectId``, an
    id."""
    if level.type == "cluster":
        return "clusterUuid", UUID_PATTERN
    return str(level.id_field), ID_PATTERN


def scope_of(
    ctx: Ctx, scope_type: str, scope_id: str | None, type_path: Path, id_path: Path
) -> tuple[Placement | None, list[Problem]]:
    """The scope a request names, or why it names none: the top scope (``system``, or ``tenant`` as Run:ai
    calls it) with no id or the tenant's own, or a cluster, department or project by its id."""
    level = level_of(scope_type)
    if not level.named:
        if scope_id is not None and scope_id != str(TENANT_ID):
            return None, [
                Problem(
                    f"the {scope_type} scope has no id but the tenant's ({TENANT_ID})",
                    id_path,
                    None,
                    f"no scopeId, or {TENANT_ID}",
                )
            ]
        return Placement("system"), []
    if scope_id is None:
        return None, [Problem(f"a {scope_type} scope needs its id", id_path, None, f"the {scope_type} id")]
    bad = malformed(level.type, scope_id)
    if bad is not None:
        return None, [Problem(bad[0], id_path, None, bad[1])]
    unit = ctx.unit_id(level.type, scope_id)
    if unit is None:
        return None, [Problem(f"unknown {scope_type} {scope_id!r}", id_path)]
    return ctx.placement(level.type, unit), []


def scope_from_body(ctx: Ctx, scope_type: str, scope_id: str | None, path: Path) -> Placement:
    """The scope a request names (:func:`scope_of`); a 400 when it names none."""
    own, problems = scope_of(ctx, scope_type, scope_id, (*path[:-1], "scopeType"), path)
    if own is None:
        raise bad_request(problems)
    return own


def view_from_query(ctx: Ctx, own: Placement, project_id: str | None) -> Placement:
    """``?projectId=``: a project at or below ``own``; otherwise the template's own scope."""
    if project_id is None:
        return own
    view = ctx.project_placement(project_id, "projectId")
    if not own.contains(view):
        raise bad_request(
            [Problem(f"project {project_id} is not at or below the template's scope", ("projectId",))]
        )
    ctx.access.require_read(view.ref)
    return view


def policy_scope(
    ctx: Ctx,
    scope: str,
    ids: Mapping[str, Any],
    where: tuple[str, ...],
    missing: int,
) -> Placement:
    """The scope a policy request names (``scope`` and the id field of its level among ``ids``: ``clusterId``,
    ``departmentId``, ``projectId``); ``missing`` is the status of an unknown unit (404 for a query, 400 for
    a body).  The id of a level below the scope is refused; one of a level above must be the scope's own."""

    def refused(message: str, field: str, expected: str | None = None) -> ApiError:
        return bad_request([Problem(message, (*where, field), None, expected)])

    level = level_of(scope)
    given = {str(lv.id_field): ids.get(str(lv.id_field)) for lv in SERVED_LEVELS[1:]}
    if not level.named:
        for field, value in given.items():
            if value is not None:
                raise refused(f"scope {scope} takes no {field}", field, f"no {field}")
        return Placement("system")
    wanted = str(level.id_field)
    ident = given[wanted]
    if ident is None:
        raise refused(f"scope {scope} needs its {wanted}", wanted, f"the id of the {scope}")
    text = str(ident)
    bad = malformed(level.type, ident)
    if bad is not None:
        raise refused(bad[0], wanted, bad[1])
    depth = SERVED_LEVELS.index(level)
    for lower in SERVED_LEVELS[depth + 1 :]:
        if given[str(lower.id_field)] is not None:
            raise refused(
                f"scope {scope} takes no {lower.id_field}", str(lower.id_field), f"no {lower.id_field}"
            )
    unit = ctx.unit_id(level.type, ident)
    if unit is None:
        if missing == 404:
            raise ApiError(404, f"Resource id not found: {scope} {text}.")
        raise refused(f"unknown {scope} {text!r}", wanted, f"the id of a {scope}")
    place = ctx.placement(level.type, unit)
    for upper in SERVED_LEVELS[1:depth]:
        field, value, row = str(upper.id_field), given[str(upper.id_field)], getattr(place, upper.type)
        actual = public_id(upper.type, row) if row is not None else None
        if value is not None and str(value).lower() != str(actual).lower():
            raise refused(
                f"{scope} {text} belongs to {upper.type} {actual}, not {value}",
                field,
                f"{actual}, or no {field}",
            )
    return place


def lineage(place: Placement) -> list[Placement]:
    """``place`` and every scope above it, nearest first (the system last)."""
    out = [place]
    while out[-1].own is not None:
        out.append(out[-1].parent())
    return out


def runai_scope(place: Placement) -> dict[str, Any]:
    """Run:ai's names of a scope (a ``sourceOfRule``, a policy's ``meta``): its ``scope`` and its own level's
    id (``clusterId`` a UUID, ``departmentId`` text, ``projectId`` a number, as Run:ai's types have them)."""
    out: dict[str, Any] = {"scope": LEVEL_BY_TYPE[place.type].runai_scope}
    row = place.own
    if row is not None:
        ident: Any = row.id if place.type == "project" else public_id(place.type, row)
        out[str(LEVEL_BY_TYPE[place.type].id_field)] = ident
    return out


def public_id(scope_type: str, row: Any) -> str:
    """The id Run:ai gives a unit: a cluster's UUID, a department's or project's id as text."""
    return str(row.uuid) if scope_type == "cluster" else str(row.id)
