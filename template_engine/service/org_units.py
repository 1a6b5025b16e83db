"""Departments and projects, the units of the org tree, as one set of rules over a row per level
(:class:`UnitLevel`): create, list, read, update (rename, and move to another parent), set quotas and
delete.  :mod:`.routes.orgunits` parses, authorizes and answers; the rules are here.

Who manages a unit is decided by its parent scope (:meth:`~.auth.Access.can_manage_units`): system admins
manage departments, a department's admins its projects too.  A unit whose parent is the top scope is
authorized before it is read (a non-admin learns nothing of which departments exist); any other unit is read
first, its parent decides.  Names are unique per level in the whole org (a templates folder and Kubernetes
namespaces need org-wide project names).  A unit with units below it, templates, assets or (a project) live
workloads is not deleted (409, naming what is left).  A rename or move that would leave a stored template or
policy unloadable is refused with a 409 naming them: the org is built after the change in the same
transaction and compared with before.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, get_args

from template_engine.cluster.settings import ClusterSettings
from template_engine.errors import Problem
from template_engine.loader.policies import org_policy_problems
from template_engine.loader.tree import reference_problems
from template_engine.scopes import DEPARTMENT_LEVEL, PROJECT_LEVEL, ScopeLevel
from template_engine.service.auth import require
from template_engine.service.composer import audit_fields
from template_engine.service.context import SERVED_LEVELS, Ctx, Placement
from template_engine.service.documents import strip_nulls
from template_engine.service.errors import ApiError, field_error
from template_engine.service.etags import check_if_match
from template_engine.service.ids import parse_id
from template_engine.service.impact import StoredOrg, stored_org
from template_engine.service.listing import Listing
from template_engine.service.orgunit_shapes import (
    DEPARTMENT_UPDATED,
    NO_CLUSTER,
    PROJECT_UPDATED,
    DepartmentCreate,
    DepartmentUpdate,
    ProjectCreate,
    ProjectUpdate,
    effective,
    finite_quotas,
    project_status,
    resources_out,
    total_resources,
    updated_runai,
)
from template_engine.service.storage.repository import (
    CLUSTERS,
    DEPARTMENTS,
    PROJECTS,
    UNIT_TABLES,
    DepartmentRow,
    ProjectRow,
    UnitTable,
)
from template_engine.service.stored import stored_cluster_unit

#: Run:ai's ``DepartmentFilterSortFields`` and ``ProjectFilterSortFields``.
DepartmentField = Literal[
    "name",
    "clusterId",
    "totalGpuQuota",
    "gpuAllocated",
    "createdAt",
    "avgGpuAllocation24h",
    "avgGpuUtilization24h",
    "avgGpuMemoryUtilization24h",
    "avgGpuAllocation7d",
    "avgGpuUtilization7d",
    "avgGpuMemoryUtilization7d",
    "avgGpuAllocation30d",
    "avgGpuUtilization30d",
    "avgGpuMemoryUtilization30d",
]
ProjectField = Literal[
    "name",
    "clusterId",
    "departmentId",
    "parentId",
    "parentName",
    "phase",
    "totalGpuQuota",
    "gpuAllocated",
    "createdAt",
    "avgGpuAllocation24h",
    "avgGpuUtilization24h",
    "avgGpuMemoryUtilization24h",
    "avgGpuAllocation7d",
    "avgGpuUtilization7d",
    "avgGpuMemoryUtilization7d",
    "avgGpuAllocation30d",
    "avgGpuUtilization30d",
    "avgGpuMemoryUtilization30d",
]
#: Usage this service does not measure: read as empty, so a filter on them matches nothing.
_MEASURED = frozenset(f for f in get_args(ProjectField) if f.startswith("avg") or f == "gpuAllocated")


def _unit_text(entry: Mapping[str, Any], name: str) -> str:
    """What a filter or sort of a unit compares: the body's field, ``totalGpuQuota`` from
    ``totalResources``, ``phase`` from ``status``, ``departmentId`` and ``parentName`` from the department."""
    found: Any
    if name == "totalGpuQuota":
        found = entry["totalResources"]["gpuQuota"]
    elif name == "phase":
        found = entry.get("status", {}).get("phase")
    elif name == "departmentId":
        found = entry.get("parentId")
    else:
        found = entry.get("_parentName" if name == "parentName" else name)
    return "" if found is None else str(found)


DEPARTMENT_LISTING = Listing(
    get_args(DepartmentField),
    _unit_text,
    dates=frozenset({"createdAt"}),
    numbers=frozenset({"totalGpuQuota"}) | (_MEASURED & set(get_args(DepartmentField))),
)
PROJECT_LISTING = Listing(
    get_args(ProjectField),
    _unit_text,
    dates=frozenset({"createdAt"}),
    ids=frozenset({"departmentId", "parentId"}),
    numbers=frozenset({"totalGpuQuota"}) | _MEASURED,
)


# -- bodies -------------------------------------------------------------------------------------------------


def _unit_body(row: DepartmentRow | ProjectRow, place: Placement) -> dict[str, Any]:
    """The fields every unit has: the stored Run:ai fields as stored (a ``null`` given in a request, Run:ai's
    "not set", left out: :func:`strip_nulls`), then Run:ai's required ones (``clusterId``: the unit's
    cluster's UUID, or in an org without clusters the one given, :data:`NO_CLUSTER` if none;
    ``resources``, ``totalResources``)."""
    runai = dict(row.runai or {})
    body: dict[str, Any] = {"id": str(row.id), "name": row.name, "description": row.description or ""}
    body |= strip_nulls({k: v for k, v in runai.items() if k != "resources"})
    cluster = place.cluster
    body["clusterId"] = cluster.uuid if cluster is not None else runai.get("clusterId") or NO_CLUSTER
    body["resources"] = resources_out(runai.get("resources"))
    body["totalResources"] = total_resources(runai.get("resources"))
    return body | audit_fields(row.audit)


def department_body(place: Placement, namespace: Callable[[str], str]) -> dict[str, Any]:
    """Run:ai's ``Department`` of a stored department."""
    assert place.department is not None
    return _unit_body(place.department, place)


def project_body(place: Placement, namespace: Callable[[str], str]) -> dict[str, Any]:
    """Run:ai's ``Project`` of a stored project: its department's id as ``parentId``, its ``status``
    (:func:`..orgunit_shapes.project_status`) and ``effective`` (:func:`..orgunit_shapes.effective`)."""
    row, department = place.project, place.department
    assert row is not None and department is not None
    body = _unit_body(row, place)
    body["parentId"] = str(department.id)
    body.setdefault("enforceRunaiScheduler", True)  # Run:ai's default
    if body["enforceRunaiScheduler"] is None:
        body["enforceRunaiScheduler"] = True
    # its cluster's settings, as every composition reads them (validated once per version: the cache)
    own = (
        stored_cluster_unit(place.cluster, ())[0].settings.namespace
        if place.cluster is not None
        else namespace
    )
    body["status"] = project_status(row.runai, own(row.name))
    body["effective"] = effective(row.runai, department.runai)
    return body


def namespaces(ctx: Ctx) -> Callable[[str], str]:
    """The namespace of a project as the cluster settings render it (``namespacePattern``)."""
    stored = ctx.repo.cluster_settings()
    try:
        settings = ClusterSettings.model_validate(stored.document if stored is not None else {})
    except ValueError:
        settings = ClusterSettings()
    return settings.namespace


def shaper(ctx: Ctx, unit: UnitLevel) -> Callable[[Placement], dict[str, Any]]:
    """The answer of a unit of ``unit``'s level, the cluster settings read once, when first needed."""
    found: list[Callable[[str], str]] = []

    def namespace(name: str) -> str:
        if not found:
            found.append(namespaces(ctx))
        return found[0](name)

    return lambda place: unit.body(place, namespace)


# -- the levels ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class UnitLevel:
    """One level of units: its row of the scope table, its table, how its answers are shaped and listed, and
    the Run:ai fields an update replaces.  A level of units is a row of :data:`UNIT_LEVELS`."""

    level: ScopeLevel
    table: UnitTable[Any]
    body: Callable[[Placement, Callable[[str], str]], dict[str, Any]]
    listing: Listing
    updated: tuple[str, ...]
    #: Whether the level's units hold workloads (a live one keeps a unit from being deleted).
    workloads: bool = False

    @property
    def type(self) -> str:
        return self.level.type

    @property
    def param(self) -> str:
        """The path parameter and body field naming a unit (``departmentId``)."""
        assert self.level.id_field is not None
        return self.level.id_field

    @property
    def plural(self) -> str:
        """The units' path segment and list key (``departments``)."""
        assert self.level.folder is not None
        return self.level.folder

    @property
    def parent_is_top(self) -> bool:
        """Whether the level is the first of the org units (its units are authorized before they are read:
        only a role bound above the level may manage any of them)."""
        return self is UNIT_LEVELS[0]

    @property
    def below(self) -> UnitLevel | None:
        """The level of units right below (``None`` for the last)."""
        return next((u for u in UNIT_LEVELS if u.table.parent and _above(u.type).type == self.type), None)


def _above(scope_type: str) -> ScopeLevel:
    types: list[str] = [level.type for level in SERVED_LEVELS]
    index = types.index(scope_type)
    return SERVED_LEVELS[index - 1]


DEPARTMENT_UNITS = UnitLevel(
    DEPARTMENT_LEVEL, DEPARTMENTS, department_body, DEPARTMENT_LISTING, DEPARTMENT_UPDATED
)
PROJECT_UNITS = UnitLevel(PROJECT_LEVEL, PROJECTS, project_body, PROJECT_LISTING, PROJECT_UPDATED, True)
#: The levels of units, top first.
UNIT_LEVELS: tuple[UnitLevel, ...] = (DEPARTMENT_UNITS, PROJECT_UNITS)


# -- rules --------------------------------------------------------------------------------------------------


def _name_taken(unit: UnitLevel, name: str) -> ApiError:
    return ApiError(409, problems=[Problem(f"a {unit.type} named {name!r} already exists", ("name",))])


def _in_use(unit: UnitLevel, left: list[str]) -> ApiError:
    return ApiError(409, f"The {unit.type} is not empty.", [Problem(item) for item in left])


def _parent(ctx: Ctx, unit: UnitLevel, given: str) -> Placement:
    """The parent unit ``parentId`` names, locked, or a 400 on ``parentId``."""
    level = _above(unit.type)
    try:
        return ctx.placement(level.type, parse_id(given, "parentId"), lock=True)
    except ApiError as exc:
        if exc.status == 404:
            raise field_error(("parentId",), f"unknown {level.type} {given!r}") from None
        raise


def cluster_parent(ctx: Ctx, body: Any) -> Placement:
    """The cluster a department's ``clusterId`` names, locked, in an org that has clusters (a 400 on
    ``clusterId`` when it names none of them, or is missing); the top scope in an org without clusters, where
    ``clusterId`` is one of Run:ai's fields, stored as given (docs/decisions.md)."""
    given = getattr(body, "clusterId", None)
    rows = ctx.repo.units(CLUSTERS)
    if not rows:
        return Placement("system")
    known = ", ".join(f"{row.uuid} ({row.name})" for row in rows[:5]) + (" ..." if len(rows) > 5 else "")
    if given is None:
        raise field_error(("clusterId",), "a department of an org with clusters needs its clusterId", known)
    row = ctx.repo.cluster_by_uuid(str(given).lower(), lock=True)
    if row is None:
        raise field_error(("clusterId",), f"unknown cluster {given!r}", f"one of: {known}")
    return Placement("system").below("cluster", row)


def managed(ctx: Ctx, unit: UnitLevel, unit_id: str) -> Placement:
    """The unit ``unit_id`` names, locked, when the caller manages it (its parent's managers): a 403 first
    for a unit right below the top scope, a 404 first for the others."""
    if unit.parent_is_top:
        require(ctx.access.may_manage(unit.type))
    place = ctx.placement(unit.type, parse_id(unit_id, unit.param), lock=True)
    require(ctx.access.can_manage_units(place.parent().ref))
    return place


def create_unit(
    ctx: Ctx, unit: UnitLevel, body: DepartmentCreate | ProjectCreate
) -> tuple[dict[str, Any], int]:
    """Create a unit in its parent (``parentId``, the top scope for a department); Run:ai's fields are stored
    as given.  The answer and its version."""
    given = getattr(body, "parentId", None)
    parent = _parent(ctx, unit, given) if given is not None else cluster_parent(ctx, body)
    require(ctx.access.can_manage_units(parent.ref))
    if ctx.repo.unit_named(unit.table, body.name) is not None:
        raise _name_taken(unit, body.name)
    runai = body.model_dump(mode="json", exclude_unset=True, exclude={"name", "description", "parentId"})
    if parent.cluster is not None:  # the cluster row says it: a stored copy could only go stale
        given_cluster = runai.pop("clusterId", None)
        if given_cluster is not None and str(given_cluster).lower() != parent.cluster.uuid:
            raise field_error(
                ("clusterId",),
                f"the {unit.type} would be in cluster {parent.cluster.name} ({parent.cluster.uuid}), "
                f"not {given_cluster}",
                f"{parent.cluster.uuid}, or no clusterId",
            )
    unit_id = ctx.repo.add_unit(unit.table, body.name, body.description, ctx.subject, runai, parent.id)
    place = ctx.placement(unit.type, unit_id)
    assert place.own is not None
    return shaper(ctx, unit)(place), place.own.audit.version


def visible_units(
    ctx: Ctx, unit: UnitLevel, filter_by: list[str] | None, search: str | None
) -> list[dict[str, Any]]:
    """The units of a level the caller may read, matching ``search`` (in the name) and the filters, each with
    its parent's name (``_parentName``, for the listing)."""
    filters = unit.listing.parse(filter_by)
    parents = {}
    if unit.table.parent is not None:
        above = _above(unit.type).type
        parents = {place.id: place for place in _placements(ctx, above)}
    out, shape = [], shaper(ctx, unit)
    for row in ctx.repo.units(unit.table):
        if search and search.lower() not in row.name.lower():
            continue
        parent = parents.get(getattr(row, unit.table.parent)) if unit.table.parent else None
        parent = parent or Placement("system")
        place = parent.below(unit.type, row)
        if ctx.access.can_read(place.ref):
            entry = shape(place)
            if parent.own is not None:
                entry["_parentName"] = parent.own.name
            if all(f(entry) for f in filters):
                out.append(entry)
    return out


def _placements(ctx: Ctx, scope_type: str) -> list[Placement]:
    """Every scope of a level of units, with the rows above it (none but the system's for a unit whose
    parent column is empty: a department of an org without clusters)."""
    table = UNIT_TABLES[scope_type]
    if table.parent is None:
        return [Placement("system").below(scope_type, row) for row in ctx.repo.units(table)]
    parents = {place.id: place for place in _placements(ctx, _above(scope_type).type)}
    top = Placement("system")
    return [
        parents.get(getattr(row, table.parent), top).below(scope_type, row) for row in ctx.repo.units(table)
    ]


def page(
    entries: list[dict[str, Any]],
    listing: Listing,
    sort_by: str | None,
    sort_order: str,
    offset: int,
    limit: int,
    key: str,
) -> dict[str, Any]:
    """Sorted (by id when no ``sortBy``; numbers as numbers, an empty field first) and paged; Run:ai's
    ``next`` is the offset of the next page, absent on the last."""
    if sort_by is not None:

        def order(entry: Mapping[str, Any]) -> tuple[Any, ...]:
            text = listing.text_of(entry, sort_by)
            if sort_by in listing.numbers:
                return (text != "", float(text) if text else 0.0, int(entry["id"]))
            return (text.lower(), text, int(entry["id"]))

        entries.sort(key=order, reverse=sort_order == "desc")
    elif sort_order == "desc":
        entries.reverse()
    chosen = entries[offset : offset + limit]
    out: dict[str, Any] = {key: [{k: v for k, v in e.items() if not k.startswith("_")} for e in chosen]}
    if offset + len(chosen) < len(entries):
        out["next"] = offset + len(chosen)
    return out


def read_unit(ctx: Ctx, unit: UnitLevel, unit_id: str) -> tuple[dict[str, Any], int]:
    """A unit the caller may read (404, then 403), and its version."""
    place = ctx.placement(unit.type, parse_id(unit_id, unit.param))
    ctx.access.require_read(place.ref)
    assert place.own is not None
    return shaper(ctx, unit)(place), place.own.audit.version


def _unloadable(stored: StoredOrg) -> set[str]:
    """The stored documents the org cannot load: broken alone, or by the checks of policies that need the
    whole org (:func:`~template_engine.loader.policies.org_policy_problems`: one scope of a branch rules a
    field, imposed assets are data sources), as ``load_org`` runs them on a folder."""
    org = stored.org
    clusters = {name: entry.departments for name, entry in org.clusters.items()}
    policies = org_policy_problems(org.policies, org.departments, org.assets, set(), clusters)
    # a template naming an asset its scope may no longer use (a department moved to another cluster)
    used = {p.location.file for p in reference_problems(org) if p.location is not None}
    return set(org.broken) | set(policies) | used


def _refuse_breaking(ctx: Ctx, before: StoredOrg | None, what: str) -> None:
    """A 409 naming the stored documents the change leaves unloadable that were loadable ``before``."""
    if before is None:
        return
    after = stored_org(ctx)
    broken = [after.labels.get(file, file) for file in sorted(_unloadable(after) - _unloadable(before))]
    if broken:
        raise ApiError(
            409,
            f"The {what} would leave stored documents that can no longer be loaded.",
            [Problem(f"{label} could no longer be loaded") for label in broken],
        )


def update_unit(
    ctx: Ctx, unit: UnitLevel, unit_id: str, body: DepartmentUpdate | ProjectUpdate, if_match: str | None
) -> tuple[dict[str, Any], int]:
    """Replace a unit's description and Run:ai fields; rename it (``name``) or move it to another parent
    (``parentId``), both extensions.  A move needs the right to manage units in both parents; a rename or
    move that leaves stored documents unloadable is a 409 naming them.  ``if_match``: the request's
    ``If-Match``, held to the unit's version."""
    place = managed(ctx, unit, unit_id)
    row = place.own
    assert row is not None
    check_if_match(if_match, row.audit.version)
    target = place.parent()
    given = getattr(body, "parentId", None)
    if given is not None and given != str(target.id):
        target = _parent(ctx, unit, given)
        require(ctx.access.can_manage_units(target.ref))
    moving = getattr(body, "clusterId", None)
    if moving is not None and (target.cluster is None or moving.lower() != target.cluster.uuid):
        target = cluster_parent(ctx, body)
        require(ctx.access.can_manage_units(target.ref))
    name = body.name if body.name is not None else row.name
    other = ctx.repo.unit_named(unit.table, name)
    if other is not None and other.id != row.id:
        raise _name_taken(unit, name)
    moved = target.id != place.parent().id
    before = stored_org(ctx) if moved or name != row.name else None
    runai = updated_runai(row.runai, body, unit.updated)
    parent_id = target.id if moved else None
    ctx.repo.update_unit(
        unit.table, row.id, row.audit.version, name, body.description, ctx.subject, runai, parent_id
    )
    _refuse_breaking(ctx, before, "move" if moved else "rename")
    updated = ctx.repo.unit(unit.table, row.id)  # the context's rows are those of before the write
    assert updated is not None
    return shaper(ctx, unit)(target.below(unit.type, updated)), updated.audit.version


def set_resources(
    ctx: Ctx,
    unit: UnitLevel,
    unit_id: str,
    if_match: str | None,
    given: list[dict[str, Any]],
    change: Callable[[list[Any] | None], list[Any]],
) -> tuple[list[dict[str, Any]], int]:
    """Change a unit's quotas per node pool (``change`` of the stored ones; ``given``, as sent, for the
    finite-quota check): the answer and the unit's new version."""
    row = managed(ctx, unit, unit_id).own
    assert row is not None
    check_if_match(if_match, row.audit.version)
    runai = dict(row.runai or {})
    runai["resources"] = finite_quotas(change(runai.get("resources")), given)
    version = ctx.repo.update_unit(
        unit.table, row.id, row.audit.version, row.name, row.description, ctx.subject, runai
    )
    return resources_out(runai["resources"]), version


def delete_unit(ctx: Ctx, unit: UnitLevel, unit_id: str, if_match: str | None) -> None:
    """Delete a unit with nothing left in it (units below, templates, assets, live workloads; else a 409
    naming them); its defaults go with it."""
    place = managed(ctx, unit, unit_id)
    row = place.own
    assert row is not None
    check_if_match(if_match, row.audit.version)
    below = unit.below
    left = [f"{below.type} {u.name!r} ({u.id})" for u in ctx.repo.units(below.table, row.id)] if below else []
    left += [f"template {t.name!r} ({t.id})" for t in ctx.repo.templates([place.key])]
    left += [f"{a.kind} asset {a.name!r} ({a.id})" for a in ctx.repo.assets_of_unit(unit.type, row.id)]
    live = ctx.repo.live_workloads_of(row.id) if unit.workloads else 0
    if live:
        left.append(f"{live} workload(s) not deleted")
    if left:
        raise _in_use(unit, left)
    found = ctx.repo.defaults([place.key]).get(place.key)
    if found is not None:
        ctx.repo.delete_defaults(place.key, found.audit.version, ctx.subject)
    ctx.repo.delete_unit(unit.table, row.id, row.audit.version)
