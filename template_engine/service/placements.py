"""The scope a request names, as a :class:`~.context.Placement`: a template's or a body's ``scopeType`` and
``scopeId``, a policy's ``scope`` with ``departmentId``/``projectId``, and the project a read is seen from.

Each level is read from the scope table (:mod:`template_engine.scopes`): Run:ai's ``tenant`` is the top
scope (``system``), a named level takes the id of its unit (the level's ``id_field`` for a policy), and the
cluster level, which this service does not serve, is a problem naming the levels it does.
"""

from __future__ import annotations

from template_engine.errors import Problem
from template_engine.paths import Path
from template_engine.scopes import level_of
from template_engine.service.context import SERVED, SERVED_LEVELS, Ctx, Placement
from template_engine.service.errors import ApiError, bad_request
from template_engine.service.ids import EXPECTED as ID_EXPECTED
from template_engine.service.ids import id_number
from template_engine.service.ids import refused as refused_id
from template_engine.service.schemas import TENANT_ID
from template_engine.service.storage.repository import UNIT_TABLES


def template_scope(ctx: Ctx, scope_type: str, department_id: int | None, project_id: int | None) -> Placement:
    """The scope of a stored template or asset row (its type and the ids of its units)."""
    return ctx.placement(scope_type, project_id if scope_type == "project" else department_id)


def scope_of(
    ctx: Ctx, scope_type: str, scope_id: str | None, type_path: Path, id_path: Path
) -> tuple[Placement | None, list[Problem]]:
    """The scope a request names, or why it names none: the top scope (``system``, or ``tenant`` as Run:ai
    calls it) with no id or the tenant's own, or a department or project by id.  ``cluster`` is a problem:
    this service has no cluster layer."""
    level = level_of(scope_type)
    if level.type not in SERVED:
        return None, [
            Problem(
                "this service has no cluster scope: templates and defaults belong to the tenant, "
                "a department or a project",
                type_path,
                None,
                "tenant (or system), department or project",
            )
        ]
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
    number = id_number(scope_id)
    if number is None:
        return None, [Problem(refused_id(scope_id), id_path, None, ID_EXPECTED)]
    try:
        return ctx.placement(scope_type, number), []
    except ApiError as exc:
        if exc.status == 404:
            return None, [Problem(f"unknown {scope_type} {scope_id!r}", id_path)]
        raise


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
    department_id: str | int | None,
    project_id: str | int | None,
    where: tuple[str, ...],
    missing: int,
) -> Placement:
    """The scope a policy request names (``scope`` and the id field of its level); ``missing`` is the status
    of an unknown department or project (404 for a query, 400 for a body).  The id of a level below the scope
    is refused; one of a level above must be the scope's own."""

    def refused(message: str, field: str, expected: str | None = None) -> ApiError:
        return bad_request([Problem(message, (*where, field), None, expected)])

    level = level_of(scope)
    if level.type not in SERVED:
        raise refused(
            "this service has no cluster scope: policies belong to the tenant, a department or a project",
            "scope",
            "tenant, department or project",
        )
    given = {
        str(lv.id_field): value
        for lv, value in zip(SERVED_LEVELS[1:], (department_id, project_id), strict=True)
    }
    if not level.named:
        for field, value in given.items():
            if value is not None:
                raise refused(f"scope {scope} takes no {field}", field, f"no {field}")
        return Placement("system")
    wanted = level.id_field
    assert wanted is not None
    ident = given[wanted]
    if ident is None:
        raise refused(f"scope {scope} needs its {wanted}", wanted, f"the id of the {scope}")
    text = str(ident)
    number = id_number(ident)
    if number is None:
        raise refused(refused_id(ident), wanted, ID_EXPECTED)
    depth = SERVED_LEVELS.index(level)
    for lower in SERVED_LEVELS[depth + 1 :]:
        if given[str(lower.id_field)] is not None:
            raise refused(
                f"scope {scope} takes no {lower.id_field}", str(lower.id_field), f"no {lower.id_field}"
            )
    if ctx.repo.unit(UNIT_TABLES[level.type], number) is None:
        if missing == 404:
            raise ApiError(404, f"Resource id not found: {scope} {text}.")
        raise refused(f"unknown {scope} {text!r}", wanted, f"the id of a {scope}")
    place = ctx.placement(level.type, number)
    for upper in SERVED_LEVELS[1:depth]:
        field, value, row = str(upper.id_field), given[str(upper.id_field)], getattr(place, upper.type)
        actual = row.id if row is not None else None
        if value is not None and str(value) != str(actual):
            raise refused(
                f"{scope} {text} belongs to {upper.type} {actual}, not {value}",
                field,
                f"{actual}, or no {field}",
            )
    return place
