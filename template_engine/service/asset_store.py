"""Stored assets in Run:ai's shapes: their bodies (``AssetMeta`` and each kind's spec), the folder document a
Run:ai body becomes (held to the rules of an asset file), the scope a body or a list names, the list's
filters, and the rules of writes: a name is unique per folder kind, and an asset templates use or a policy
imposes is neither renamed nor deleted (409 naming them).  The routes (:mod:`.routes.assets`) parse and
answer; the rest is here.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from template_engine.errors import Problem
from template_engine.kinds import KINDS as WORKLOAD_KINDS
from template_engine.org import Scope
from template_engine.scopes import LEVEL_BY_ALIAS, NAMED_LEVELS, ScopeLevel
from template_engine.service.asset_shapes import (
    LIST_SPEC_KEYS,
    RunaiKind,
    ShapeProblem,
    from_runai,
    runai_kind_of,
    runai_path,
    to_runai,
    updated,
)
from template_engine.service.auth import Principal
from template_engine.service.budget import admit_answer
from template_engine.service.compliance import Comply
from template_engine.service.composer import audit_fields, scope_id
from template_engine.service.context import Ctx, Store
from template_engine.service.documents import check_asset, strip_nulls
from template_engine.service.errors import ApiError, bad_request, field_error, not_found
from template_engine.service.etags import check_if_match
from template_engine.service.placements import lineage, malformed, runai_scope, template_scope
from template_engine.service.policy_store import policies_imposing, policy_file
from template_engine.service.quota import admit_write
from template_engine.service.schemas import TENANT_ID, UUID_PATTERN
from template_engine.service.storage.repository import AssetRow, PolicyRow

#: Run:ai's meta fields that compose nothing here, stored as given (``tables.assets.runai``).
RUNAI_META_FIELDS = ("clusterId", "autoDelete", "workloadSupportedTypes", "private")


#: The workload kind filters (Run:ai's ``IsDistributedQuery``, ``IsTrainingQuery``, ``IsWorkspaceQuery``,
#: ``IsInferenceQuery``): each query parameter and the ``workloadSupportedTypes`` field it reads, one per
#: field of the kinds (:attr:`~template_engine.kinds.WorkloadKind.asset_support`).
SUPPORT_FILTERS: Mapping[str, str] = {
    f"is{field[:1].upper()}{field[1:]}": field for field in (kind.asset_support for kind in WORKLOAD_KINDS)
}


#: Run:ai's ``DistributedFrameworkQuery``: assets a distributed workload of that framework may use.
FRAMEWORK_FILTER = "distributedFramework"


#: The list filters served (Run:ai's ``AssetNameFilter``, ``AssetScopeFilter``, ``AssetClusterFilter``,
#: ``AssetProjectFilter``, ``AssetDepartmentFilter``, ``assetIdsFilter``, and the kind filters).
SERVED_FILTERS = frozenset(
    {
        "name",
        "scope",
        "clusterId",
        "projectId",
        "departmentId",
        "assetIds",
        *SUPPORT_FILTERS,
        FRAMEWORK_FILTER,
    }
)


#: Run:ai's compliance parameters (``ComplyToProject``...): each entry then carries its ``compliance``.
COMPLIANCE_PARAMETERS = frozenset({"complyToProject", "complyToWorkloadType", "complyToReplicaType"})


#: Run:ai's other list parameters, and why each is not served (a 400 when given).
UNSERVED_FILTERS: dict[str, str] = {
    "includeDescendants": "not served; list each department's or project's assets with scope and its id",
    "usageInfo": "this service keeps no usage information of assets",
    "statusInfo": "this service keeps no cluster status of assets",
}


IDS = re.compile(rf"{UUID_PATTERN[1:-1]}(,{UUID_PATTERN[1:-1]})*")


def asset_meta(row: AssetRow, kind: RunaiKind) -> dict[str, Any]:
    """Run:ai's ``AssetMeta`` of a stored asset."""
    meta: dict[str, Any] = {"id": row.id, "name": row.name}
    description = (row.document.get("meta") or {}).get("description")
    if description is not None:
        meta["description"] = description
    meta["scope"] = row.scope_type
    if row.department_id is not None:
        meta["departmentId"] = str(row.department_id)
    if row.project_id is not None:
        meta["projectId"] = row.project_id
    meta |= {"tenantId": TENANT_ID, "kind": kind.kind}
    meta |= {k: v for k, v in (row.runai or {}).items() if k in RUNAI_META_FIELDS}
    return meta | audit_fields(row.audit)


def asset_body(row: AssetRow, kind: RunaiKind) -> dict[str, Any]:
    """Run:ai's ``EnvironmentAsset``, ``ComputeAsset``, ``NFSAsset``... of a stored asset."""
    return {"meta": asset_meta(row, kind), "spec": to_runai(kind, row.document.get("spec") or {})}


def listed_datasource(row: AssetRow, kind: RunaiKind) -> dict[str, Any]:
    """An entry of Run:ai's ``DatasourceListResponse``: the spec under its kind's key."""
    body = asset_body(row, kind)
    return {"meta": body["meta"], "spec": {LIST_SPEC_KEYS[kind.kind]: body["spec"]}}


def folder_document(kind: RunaiKind, meta: dict[str, Any], spec: Any) -> dict[str, Any]:
    """The folder's document of a Run:ai body, checked as an asset file is; a 400 names each field of the
    Run:ai body that is wrong (its path in Run:ai's form)."""
    folder_meta = {k: meta[k] for k in ("name", "description") if meta.get(k) is not None}
    try:
        document = {"meta": folder_meta, "spec": from_runai(kind, spec if isinstance(spec, dict) else {})}
    except ShapeProblem as problem:
        raise bad_request(problem.problems) from None
    try:
        check_asset(kind.folder, document)
    except ApiError as error:
        connections = isinstance(spec, dict) and "connections" in spec
        moved = [
            Problem(p.message, runai_path(kind, p.path, connections), None, p.expected)
            for p in error.problems
        ]
        raise bad_request(moved or list(error.problems)) from None
    return document


def _raw_part(raw: Any, key: str) -> Any:
    part = raw.get(key) if isinstance(raw, dict) else None
    return strip_nulls(part) if part is not None else None


def creation_scope(ctx: Ctx, meta: dict[str, Any]) -> tuple[str, int | None]:
    """``(scope_type, unit_id)`` of Run:ai's ``AssetCreationFields``: ``tenant`` takes no unit, each named
    level of the scope table its id field (``clusterId``: the cluster's UUID; ``departmentId``,
    ``projectId``); the unit must exist.  Run:ai's ``system`` assets are its own."""
    scope = meta["scope"]
    if scope == "system":
        raise field_error(
            ("meta", "scope"),
            "scope 'system' is not served: system assets are Run:ai's own; "
            "this service's top scope is the tenant",
            "tenant, cluster, department or project",
        )
    level = LEVEL_BY_ALIAS[scope]
    fields = [str(lv.id_field) for lv in NAMED_LEVELS]
    given = {k for k in fields if meta.get(k) is not None}
    wanted = {str(level.id_field)} if level.named else set()
    for key in sorted(given - wanted):
        raise field_error(("meta", key), f"a {scope} asset takes no {key}", f"no {key}")
    for key in sorted(wanted - given):
        raise field_error(("meta", key), f"a {scope} asset needs its {key}", f"the id of the asset's {scope}")
    if not level.named:
        return "tenant", None
    field = str(level.id_field)
    unit = ctx.unit_id(level.type, meta[field])
    if unit is None:
        raise field_error(("meta", field), f"unknown {scope} {meta[field]!r}", f"the id of a {scope}")
    return level.type, unit


def _unit_in_query(ctx: Ctx, level: ScopeLevel, text: str) -> int:
    """The unit a list's ``clusterId``, ``departmentId`` or ``projectId`` names; a 400 on it otherwise."""
    field = str(level.id_field)
    bad = malformed(level.type, text)
    if bad is not None:
        raise field_error((field,), bad[0], bad[1])
    unit = ctx.unit_id(level.type, text)
    if unit is None:
        raise field_error((field,), f"unknown {level.type} {text!r}", f"the id of a {level.type}")
    return unit


def list_scopes(ctx: Ctx, query: dict[str, str]) -> list[tuple[str, int | None]] | None:
    """The scopes a list answers, from Run:ai's ``scope``, ``clusterId``, ``departmentId`` and ``projectId``
    filters: with ``scope`` only that scope (of the given unit); without it, each named unit's scope and every
    scope above it (a project's department, its cluster and the tenant).  ``None``: every scope."""
    named = {
        level.type: _unit_in_query(ctx, level, query[str(level.id_field)])
        for level in NAMED_LEVELS
        if str(level.id_field) in query
    }
    scope = query.get("scope")
    if scope is not None:
        if scope not in LEVEL_BY_ALIAS:
            raise field_error(
                ("scope",), f"unknown scope {scope!r}", "tenant, cluster, department or project"
            )
        return [(scope, named.get(LEVEL_BY_ALIAS[scope].type))]
    if not named:
        return None
    scopes: list[tuple[str, int | None]] = []
    for level_type, unit in named.items():
        for place in lineage(ctx.placement(level_type, unit)):
            found = (place.type if place.own is not None else "tenant", place.id)
            scopes += [found] if found not in scopes else []
    return scopes


def list_query(items: Iterable[tuple[str, str]]) -> dict[str, str]:
    """A list's query (its parameters as given), every parameter checked: one given twice, one of Run:ai's
    this service does not serve, or an unknown one is a 400 naming it."""
    query: dict[str, str] = {}
    for key, value in items:
        if key in UNSERVED_FILTERS:
            raise field_error((key,), f"query parameter {key} is not served: {UNSERVED_FILTERS[key]}")
        if key not in SERVED_FILTERS | COMPLIANCE_PARAMETERS:
            known = ", ".join(sorted(SERVED_FILTERS | COMPLIANCE_PARAMETERS))
            raise field_error((key,), f"unknown query parameter {key!r}", known)
        if key in query:
            raise field_error((key,), f"query parameter {key} is given twice", "one value")
        query[key] = value
    if "assetIds" in query and IDS.fullmatch(query["assetIds"]) is None:
        raise field_error(("assetIds",), "assetIds is not a list of UUIDs", "UUIDs separated by commas")
    return query


@dataclass(frozen=True)
class Supported:
    """The kind filters of a list: the ``workloadSupportedTypes`` fields asked true (``isTraining=true``:
    ``training``), and the distributed framework asked (``distributedFramework``).

    An asset may be used by a kind unless its stored ``workloadSupportedTypes`` says that kind's field is
    ``false`` (an asset that says nothing composes into a template of any kind); with a framework, it must
    also be one a distributed workload may use, and its ``distFramework``, when it names one, that framework.
    A filter asked ``false`` filters nothing (a filter that is off), as ``isDistributed=false`` did."""

    fields: frozenset[str] = frozenset()
    framework: str | None = None

    def keeps(self, row: AssetRow) -> bool:
        types = (row.runai or {}).get("workloadSupportedTypes")
        types = types if isinstance(types, dict) else {}
        if any(types.get(field) is False for field in self.fields):
            return False
        if self.framework is None:
            return True
        distributed = SUPPORT_FILTERS["isDistributed"]
        return types.get(distributed) is not False and types.get("distFramework") in (None, self.framework)


def listed(ctx: Ctx, folder_kind: str, query: dict[str, str], supported: Supported) -> list[AssetRow]:
    ids = query["assetIds"].lower().split(",") if "assetIds" in query else None
    rows = ctx.repo.assets(folder_kind, name=query.get("name"), scopes=list_scopes(ctx, query), ids=ids)
    return [r for r in rows if supported.keeps(r)]


def with_compliance(
    ctx: Ctx, comply: Comply, entries: list[tuple[AssetRow, dict[str, Any]]]
) -> list[dict[str, Any]]:
    """The entries' bodies, each with its ``compliance`` when ``complyToProject`` was given."""
    found = comply.assets(ctx, [row for row, _ in entries])
    if found is None:
        return [body for _, body in entries]
    return [body | {"compliance": found[row.id]} for row, body in entries]


def _load(ctx: Ctx, kind: RunaiKind, asset_id: uuid.UUID, lock: bool = False) -> AssetRow:
    row = ctx.repo.asset(str(asset_id), lock=lock)
    if row is None or row.kind != kind.folder or runai_kind_of(row.kind, row.document) is not kind:
        raise not_found(f"{kind.kind} asset {asset_id}")
    return row


def _in_use(ctx: Ctx, row: AssetRow, doing: str) -> None:
    """A 409 when templates use the asset or policies impose it (by name: it can be neither renamed nor
    deleted), naming each of them."""
    users = ctx.repo.templates_using(row.id)
    imposing = policies_imposing(ctx.repo, row.name) if row.kind == "datasource" else []
    if not users and not imposing:
        return
    refs = [
        {
            "id": t.id,
            "name": t.name,
            "scopeType": t.scope_type,
            "scopeId": scope_id(template_scope(ctx, t)),
        }
        for t in users
    ]
    policies = [_policy_ref(ctx, policy, scope) for policy, scope in imposing]
    reasons = []
    if users:
        reasons.append("templates use it: " + ", ".join(f"{t.name!r} ({t.id})" for t in users))
    if imposing:
        reasons.append(
            "policies impose it: "
            + ", ".join(f"the {scope} policy ({policy_file(scope)})" for _, scope in imposing)
        )
    extra: dict[str, Any] = {"details": "; ".join(reasons)}
    if refs:
        extra["templates"] = refs
    if policies:
        extra["policies"] = policies
    raise ApiError(
        409, f"The {row.kind} asset {row.name!r} cannot be {doing}: {'; '.join(reasons)}.", extra=extra
    )


def _policy_ref(ctx: Ctx, policy: PolicyRow, scope: Scope) -> dict[str, Any]:
    """Run:ai's ``PolicyRef`` of a stored policy: its scope as Run:ai names it, with its own level's id."""
    kind, _, ident = policy.scope_key.partition(":")
    place = ctx.placement(kind, int(ident) if ident else None)
    return runai_scope(place) | {"name": scope.name or "tenant"}


def _name_free(ctx: Ctx, kind: RunaiKind, name: str) -> None:
    if ctx.repo.assets_named([(kind.folder, name)]):
        raise ApiError(409, f"A {kind.folder} asset named {name!r} already exists.")


#: What a write of an asset answers (Run:ai's ``202``).
ACCEPTED = {"code": 202, "message": "Request has been accepted."}
#: A list's or a read's compliance, asked of the request's context (:class:`~.compliance.Comply`).
Compliance = Callable[[Ctx], Comply]


def create_asset(
    store: Store, principal: Principal, kind: RunaiKind, raw: Any, name: str
) -> tuple[dict[str, Any], int]:
    """Create an asset of ``kind`` from Run:ai's body ``raw`` (system admins): its folder document checked
    first, then its scope and its name."""
    meta = _raw_part(raw, "meta") or {}
    document = folder_document(kind, meta, _raw_part(raw, "spec"))
    runai = {k: meta[k] for k in RUNAI_META_FIELDS if meta.get(k) is not None}
    with store.write(principal) as ctx:
        ctx.access.require_admin()
        scope = creation_scope(ctx, meta)
        if scope[0] == "cluster" and scope[1] is not None:  # the UUID as the service writes it
            runai["clusterId"] = ctx.cluster(scope[1]).uuid
        _name_free(ctx, kind, document["meta"]["name"])
        asset_id = str(uuid.uuid4())
        admit_write(ctx.repo, "asset", scope[0], scope[1], document)
        ctx.repo.add_asset(asset_id, kind.folder, name, document, ctx.subject, scope, runai)
        row = _load(ctx, kind, uuid.UUID(asset_id))
    return asset_body(row, kind), row.audit.version


def list_assets(
    store: Store,
    principal: Principal,
    kind: RunaiKind | None,
    query: dict[str, str],
    supported: Supported,
    comply: Compliance,
) -> list[dict[str, Any]]:
    """The assets of ``kind`` (``None``: every data source, as Run:ai's ``DatasourceListResponse``; a data
    source Run:ai has no kind of is not listed) a list's query asks, each with its compliance when asked."""
    with store.read(principal) as ctx:
        compliance = comply(ctx)
        rows = listed(ctx, kind.folder if kind is not None else "datasource", query, supported)
        if kind is not None:
            mine = [(r, asset_body(r, kind)) for r in rows if runai_kind_of(r.kind, r.document) is kind]
            what = f"the {len(mine)} {kind.kind} assets listed"
        else:
            pairs = [(r, runai_kind_of(r.kind, r.document)) for r in rows]
            mine = [(r, listed_datasource(r, k)) for r, k in pairs if k is not None]
            what = f"the {len(mine)} data sources listed"
        admit_answer(what, [r.document for r, _ in mine])
        return with_compliance(ctx, compliance, mine)


def read_asset(
    store: Store, principal: Principal, kind: RunaiKind, asset_id: uuid.UUID, comply: Compliance
) -> tuple[dict[str, Any], int]:
    """An asset of ``kind``, with its compliance when asked."""
    with store.read(principal) as ctx:
        compliance = comply(ctx)
        row = _load(ctx, kind, asset_id)
        (body,) = with_compliance(ctx, compliance, [(row, asset_body(row, kind))])
    return body, row.audit.version


def update_asset(
    store: Store, principal: Principal, kind: RunaiKind, asset_id: uuid.UUID, raw: Any, if_match: str | None
) -> tuple[dict[str, Any], int]:
    """Replace an asset of ``kind`` (system admins): its spec updated by Run:ai's rules, its new name free
    and, when it changes, the asset used by no template or policy."""
    with store.write(principal) as ctx:
        ctx.access.require_admin()
        row = _load(ctx, kind, asset_id, lock=True)
        check_if_match(if_match, row.audit.version)
        current = to_runai(kind, row.document.get("spec") or {})
        try:
            spec = updated(kind, current, _raw_part(raw, "spec"))
        except ShapeProblem as problem:
            raise bad_request(problem.problems) from None
        document = folder_document(kind, _raw_part(raw, "meta") or {}, spec)
        name = document["meta"]["name"]
        if name != row.name:
            _name_free(ctx, kind, name)
            _in_use(ctx, row, "renamed")
        unit = row.project_id or row.department_id
        admit_write(ctx.repo, "asset", row.scope_type, unit, document, row.id)
        ctx.repo.update_asset(row.id, row.audit.version, name, document, ctx.subject)
        after = _load(ctx, kind, asset_id)
    return asset_body(after, kind), after.audit.version


def delete_asset(
    store: Store, principal: Principal, kind: RunaiKind, asset_id: uuid.UUID, if_match: str | None
) -> None:
    """Delete an asset of ``kind`` no template uses and no policy imposes (system admins)."""
    with store.write(principal) as ctx:
        ctx.access.require_admin()
        row = _load(ctx, kind, asset_id, lock=True)
        check_if_match(if_match, row.audit.version)
        _in_use(ctx, row, "deleted")
        ctx.repo.delete_asset(row.id, row.audit.version)
