"""Policies: ``/api/v2/policy/distributed``, Run:ai's distributed policy of the tenant, a department or a
project (:mod:`..policy_api` says what a policy is made of here).

``GET`` and ``DELETE`` name the scope with ``scope`` (``tenant``, ``department``, ``project``) and
``departmentId``/``projectId``; ``PUT`` (overwrite) and ``PATCH`` (``reset`` field paths, then merge) name it
in the body's ``meta``, and take ``validateOnly``: the answer is the policy the write would make and
``affectedTemplates``, every template whose effective spec or compliance it would change, field by field
(:mod:`..impact`), and nothing is stored.  Every answer is the scope's ``DistributedPolicyV2``, with an ETag
(:func:`~..policy_api.policy_version`) that ``PUT``, ``PATCH`` and ``DELETE`` hold ``If-Match`` to.  Roles are
those of the defaults: every role reads the policies of the scopes it reads; a scope's admin (a department
admin for its department and its projects, a project editor for its project, a system admin for all) writes
them.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Annotated, Any

from fastapi import APIRouter, Query
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, ConfigDict, Field, create_model

from template_engine.errors import Problem
from template_engine.kinds import DISTRIBUTED, KINDS, WorkloadKind
from template_engine.service.auth import Principal
from template_engine.service.bodies import documented, refuse, schema_problems
from template_engine.service.cache import uncommitted
from template_engine.service.context import Ctx, Placement, Store
from template_engine.service.documents import merge_patch, strip_nulls
from template_engine.service.errors import ApiError, bad_request
from template_engine.service.ids import EXPECTED as ID_EXPECTED
from template_engine.service.ids import id_number
from template_engine.service.ids import refused as refused_id
from template_engine.service.impact import (
    Affected,
    DryRun,
    PolicyWriteOut,
    StoredOrg,
    admit_reading,
    affected,
    affected_body,
    stored_org,
)
from template_engine.service.policy_api import (
    check_policy,
    defaults_document,
    policy_body,
    policy_document,
    policy_list,
    policy_type,
    policy_version,
    request_form,
)
from template_engine.service.policy_reset import reset_policy, reset_targets
from template_engine.service.routes.common import (
    Auth,
    IfMatch,
    JsonObject,
    JsonRoute,
    StoreDep,
    check_if_match,
    errors,
    json_response,
    no_content,
)
from template_engine.service.schemas import (
    ID_PATTERN,
    PolicyChange,
    PolicyIn,
    PolicyMetaOut,
    PolicyOut,
    PolicyOverwrite,
    PolicyScopeType,
)
from template_engine.service.storage.repository import DEPARTMENTS, PROJECTS, DefaultsRow, PolicyRow

router = APIRouter(prefix="/api/v2/policy", tags=["Policy"], route_class=JsonRoute)

ScopeQuery = Annotated[PolicyScopeType, Query(description="tenant, department or project.")]
DepartmentQuery = Annotated[
    str | None, Query(pattern=ID_PATTERN, description="The department, with scope=department.")
]
ProjectQuery = Annotated[
    str | None, Query(pattern=ID_PATTERN, description="The project, with scope=project.")
]
ClusterQuery = Annotated[uuid.UUID | None, Query(description="Not used: this service has no cluster layer.")]
ApproveQuery = Annotated[bool | None, Query(description="Not used: this service has no cluster layer.")]
ValidateOnly = Annotated[
    bool | None,
    Query(
        description="Check the write and answer the policy it would make, with affectedTemplates: every "
        "template whose effective spec or compliance it would change. Nothing is stored."
    ),
]


def _read_only(raw: Mapping[str, Any]) -> list[Problem]:
    """A problem on ``policy.status`` when a write gives it: Run:ai's ``PolicyValidationStatus`` is what the
    service answers of a stored policy (read-only), never what a client sets."""
    policy = raw.get("policy")
    if isinstance(policy, Mapping) and policy.get("status") is not None:
        return [
            Problem(
                "policy.status is read-only: the service reports it on a stored policy",
                ("policy", "status"),
                None,
                "no status",
            )
        ]
    return []


@dataclass(frozen=True, slots=True)
class PolicyWrite:
    """The scope's ``DistributedPolicyV2`` after a write, its version (:func:`policy_version`, the ETag) and,
    validating only, the templates it would change (with the names of the stored documents, for
    provenance)."""

    body: dict[str, Any]
    version: int
    affected: list[Affected] | None = None
    labels: dict[str, str] | None = None


def _would_change(body: dict[str, Any], version: int, before: StoredOrg, after: StoredOrg) -> PolicyWrite:
    found = affected(before, after)
    return PolicyWrite(
        {**body, "affectedTemplates": affected_body(found, after)},
        version,
        found,
        {**before.labels, **after.labels},
    )


@dataclass(frozen=True, slots=True)
class _Held:
    """A scope's policy and defaults documents (``None``: it has none) and the versions they are at (a
    deleted document's tombstone's included: 0 only for one the scope never had).  The policy of a kind but
    distributed is one document (``defaults`` ``None``, ``defaults_at`` 0): its version is its row's."""

    policy: PolicyRow | None
    policy_at: int
    defaults: DefaultsRow | None
    defaults_at: int
    kind: WorkloadKind = DISTRIBUTED

    @property
    def version(self) -> int:
        if self.kind is not DISTRIBUTED:
            return self.policy_at
        return policy_version(self.policy_at, self.defaults_at)


def _locked(ctx: Ctx, place: Placement, kind: WorkloadKind = DISTRIBUTED) -> _Held:
    """The scope's policy and defaults documents, locked for this transaction (``FOR UPDATE`` on
    PostgreSQL; SQLite's write transactions are serialised already).

    Every policy write locks whichever of the two rows exist (a deleted document's tombstone is a row), so a
    second writer waits here for the first to commit.  A row that did not exist cannot be locked, and
    PostgreSQL's READ COMMITTED showed this statement the database as it was before the wait: when one is
    missing, both are read again, after the wait, so the version :func:`check_if_match` compares is the one
    the write changes (a row inserted by a writer that locked nothing makes the second insert fail: a 409,
    nothing written).  The policy of another kind is one row, read and locked the same way."""
    if kind is not DISTRIBUTED:
        policy, policy_at = ctx.repo.policy_at(place.key, lock=True, kind=kind.name)
        if not policy_at:
            policy, policy_at = ctx.repo.policy_at(place.key, lock=True, kind=kind.name)
        return _Held(policy, policy_at, None, 0, kind)
    policy, policy_at = ctx.repo.policy_at(place.key, lock=True)
    defaults, defaults_at = ctx.repo.defaults_at(place.key, lock=True)
    if not policy_at or not defaults_at:
        policy, policy_at = ctx.repo.policy_at(place.key, lock=True)
        defaults, defaults_at = ctx.repo.defaults_at(place.key, lock=True)
    return _Held(policy, policy_at, defaults, defaults_at)


def _place(
    ctx: Ctx,
    scope: str,
    department_id: str | int | None,
    project_id: str | int | None,
    where: tuple[str, ...],
    missing: int,
) -> Placement:
    """The scope a request names; ``missing`` is the status of an unknown department or project (404 for a
    query, 400 for a body)."""

    def refused(message: str, field: str, expected: str | None = None) -> ApiError:
        return bad_request([Problem(message, (*where, field), None, expected)])

    if scope == "cluster":
        raise refused(
            "this service has no cluster scope: policies belong to the tenant, a department or a project",
            "scope",
            "tenant, department or project",
        )
    given = {"departmentId": department_id, "projectId": project_id}
    if scope in ("tenant", "system"):
        for field, value in given.items():
            if value is not None:
                raise refused(f"scope {scope} takes no {field}", field, f"no {field}")
        return Placement("system")
    wanted = "departmentId" if scope == "department" else "projectId"
    ident = given[wanted]
    if ident is None:
        raise refused(f"scope {scope} needs its {wanted}", wanted, f"the id of the {scope}")
    text = str(ident)
    number = id_number(ident)
    if number is None:
        raise refused(refused_id(ident), wanted, ID_EXPECTED)
    if scope == "department" and project_id is not None:
        raise refused("scope department takes no projectId", "projectId", "no projectId")
    found = ctx.repo.unit(DEPARTMENTS, number) if scope == "department" else ctx.repo.unit(PROJECTS, number)
    if found is None:
        if missing == 404:
            raise ApiError(404, f"Resource id not found: {scope} {text}.")
        raise refused(f"unknown {scope} {text!r}", wanted, f"the id of a {scope}")
    place = ctx.placement(scope, number)
    if scope == "project" and department_id is not None:
        department = place.department.id if place.department is not None else None
        if str(department_id) != str(department):
            raise refused(
                f"project {text} belongs to department {department}, not {department_id}",
                "departmentId",
                f"{department}, or no departmentId",
            )
    return place


def _save(ctx: Ctx, place: Placement, held: _Held, document: dict[str, Any], layer: dict[str, Any]) -> None:
    """Store the scope's policy document (of the held kind) and defaults document (a distributed policy's);
    an empty one is removed, an unchanged one is left as it is (a policy imported from a file keeps its
    text).  Each write names the version read
    (:class:`~template_engine.service.storage.repository.StaleVersion` otherwise)."""
    department_id = place.department.id if place.type == "department" and place.department else None
    project_id = place.project.id if place.project else None
    repo, subject, policy, defaults = ctx.repo, ctx.subject, held.policy, held.defaults
    kind = held.kind.name
    if document and (policy is None or policy.document != document):
        repo.put_policy(
            place.key, document, None, held.policy_at, subject, department_id, project_id, kind=kind
        )
    elif not document and policy is not None:
        repo.delete_policy(place.key, held.policy_at, subject, kind=kind)
    if held.kind is not DISTRIBUTED:
        return
    if layer and (defaults is None or defaults.document != layer):
        repo.put_defaults(place.key, layer, held.defaults_at, subject, department_id, project_id)
    elif not layer and defaults is not None:
        repo.delete_defaults(place.key, held.defaults_at, subject)


#: A write's change: the scope's stored policy and defaults to the request's ``policy``.
Change = Callable[[Ctx, PolicyRow | None, DefaultsRow | None], dict[str, Any]]


def write_policy(
    store: Store,
    principal: Principal,
    meta: Mapping[str, Any],
    validate_only: bool,
    change: Change,
    version: int | None = None,
    if_match: str | None = None,
    kind: WorkloadKind = DISTRIBUTED,
) -> PolicyWrite:
    """Check and store a scope's policy of ``kind`` (``meta`` names the scope as a request's ``meta``
    does); with ``validate_only``, roll back and answer what it would make and change.  ``if_match``: the
    request's ``If-Match``, held to :func:`policy_version` (a 412 with the current ETag when it names another,
    in the transaction that writes, after the rows are locked).  ``version`` (the UI's stale-edit check, whose
    form edits only the policy document and keeps the defaults as they are): the version of the scope's policy
    document the change was made on (0: it never had one; a deleted one's otherwise); a 412 when it is
    another.  A policy of another kind than distributed is its one document: its ``defaults`` are its own
    (:func:`~..policy_api.policy_document`), the scope's defaults document is not touched."""
    try:
        with uncommitted(validate_only), store.write(principal) as ctx:
            place = _place(
                ctx, meta["scope"], meta.get("departmentId"), meta.get("projectId"), ("meta",), 400
            )
            ctx.access.require_write(place.ref)
            held = _locked(ctx, place, kind)
            policy, defaults = held.policy, held.defaults
            check_if_match(if_match, held.version)
            current = held.policy_at
            if version is not None and version != current:
                raise ApiError(
                    412,
                    f"The policy has changed since it was read (version {current}, not {version}); "
                    "read it again.",
                )
            given = change(ctx, policy, defaults)
            document, problems = policy_document(ctx, given, kind)
            problems += check_policy(ctx, place, document, kind)
            layer, more = (
                defaults_document(defaults.document if defaults else {}, given.get("defaults"))
                if kind is DISTRIBUTED
                else ({}, [])
            )
            refuse(problems + more, "The policy is not valid.")
            if validate_only:
                admit_reading(ctx)  # priced from the stored sizes, before anything is read
            before = stored_org(ctx) if validate_only else None
            _save(ctx, place, held, document, layer)
            body, written = policy_body(ctx, place, kind)
            if before is not None:
                after = stored_org(ctx)
                raise DryRun(partial(_would_change, body, held.version, before, after))
    except DryRun as done:
        answer: PolicyWrite = done.answer()  # after the rollback: composing holds no lock
        return answer
    return PolicyWrite(body, written)


def _write(
    store: Store,
    principal: Principal,
    raw: dict[str, Any],
    validate_only: bool | None,
    change: Change,
    if_match: str | None,
    kind: WorkloadKind,
) -> JSONResponse:
    written = write_policy(
        store, principal, raw["meta"], bool(validate_only), change, if_match=if_match, kind=kind
    )
    return json_response(written.body, version=written.version)


_ETAG = {"ETag": {"schema": {"type": "string"}, "description": 'The version of the policy, such as "4".'}}
_WRITE_RESPONSES = {200: {"model": PolicyWriteOut, "headers": _ETAG}, **errors(409, 412)}


@dataclass(frozen=True, slots=True)
class _Texts:
    """What the routes of a kind's policy say of themselves in the OpenAPI document."""

    get: str
    put: str
    patch: str
    delete: str


_DISTRIBUTED_TEXTS = _Texts(
    get=(
        "The policy of a scope (``meta`` and ``policy``, when it has one of its own) and its effective "
        "policy: the merged defaults, and every rule and imposed data source of its branch, each rule "
        'with its ``sourceOfRule``.  The ETag (:func:`~..policy_api.policy_version`; ``"0"``: the scope '
        "never had a policy or defaults of its own) is for ``If-Match``."
    ),
    put=(
        "Replace a scope's policy: its rules, imposed data sources and defaults (what ``policy`` does not"
        " give is removed; the defaults' ``masterSpecSameAsWorker`` is kept)."
    ),
    patch=(
        "Change a scope's policy: clear the policy (defaults and rules) of the fields at the ``reset`` "
        "paths (Run:ai's ``worker.compute.gpuDevicesRequest``, or the service's ``rules.worker.tty``: "
        ":func:`~..policy_reset.reset_targets`), then merge ``policy`` in (objects field by field, lists "
        "whole; ``null`` changes nothing)."
    ),
    delete=(
        "Remove a scope's policy: its rules, imposed data sources and defaults (the defaults' "
        "``masterSpecSameAsWorker`` is kept)."
    ),
)


def _texts(kind: WorkloadKind) -> _Texts:
    if kind is DISTRIBUTED:
        return _DISTRIBUTED_TEXTS
    shape = "split by leader and worker" if kind.roled_policy else "flat (no roles)"
    field = f"{kind.primary}.compute.gpuDevicesRequest" if kind.roled_policy else "compute.gpuDevicesRequest"
    noun = kind.noun
    return _Texts(
        get=f"The {noun} policy of a scope (``meta`` and ``policy``, when it has one of its own: Run:ai's "
        f"{kind.policy_type}PolicyV2, {shape}) and its effective policy: the defaults {kind.a_noun} gets "
        f"from the policy side (each scope's shared defaults on the {noun}'s fields, then its {noun} "
        "policy's), and every rule and imposed data source of its branch, each rule with its "
        '``sourceOfRule``.  The ETag (the policy\'s version; ``"0"``: the scope never had one) is for '
        "``If-Match``.",
        put=f"Replace a scope's {noun} policy: its defaults (the {noun}'s own), rules and imposed data "
        "sources (what ``policy`` does not give is removed).  The scope's shared defaults are not touched.",
        patch=f"Change a scope's {noun} policy: clear the policy (defaults and rules) of the fields at "
        f"the ``reset`` paths (Run:ai's ``{field}``, or a path under defaults, rules or imposedAssets), then "
        "merge ``policy`` in (objects field by field, lists whole; ``null`` changes nothing).",
        delete=f"Remove a scope's {noun} policy: its defaults, rules and imposed data sources.",
    )


class _RolesIn(BaseModel):
    """A body's part per role (``imposedAssets`` of a distributed inference): no other key."""

    model_config = ConfigDict(extra="forbid")


def _body_models(kind: WorkloadKind) -> tuple[type[PolicyOverwrite], type[PolicyChange]]:
    """Run:ai's ``<Kind>PolicyOverwriteRequestV2`` and ``<Kind>PolicyChangeRequestV2`` of ``kind``: the
    distributed ones as they are; another kind's ``policy.imposedAssets`` per its roles
    (``DistributedInferenceImposedAssets``) or one list of ids for a flat policy (``ImposedAssets``)."""
    if kind is DISTRIBUTED:
        return PolicyOverwrite, PolicyChange
    name = kind.policy_type
    roles: dict[str, Any] = {role: (list[str] | None, None) for role in kind.roles}
    imposed: Any = (
        create_model(
            f"{name}ImposedAssetsIn",
            __base__=_RolesIn,
            __doc__=f"Run:ai's {name}ImposedAssets: data source asset ids, per role.",
            **roles,
        )
        if kind.roled_policy
        else list[str]
    )
    policy_in = create_model(
        f"{name}PolicyIn",
        __base__=PolicyIn,
        __doc__=f"Run:ai's {name}PolicyDefaultsAndRulesV2, read as a {kind.policy_file} is: ``defaults`` "
        "(the kind's own value defaults, keyed lists as ``{instances: [...]}``, and attribute defaults), "
        "``rules`` in the kind's vocabulary, ``imposedAssets`` as asset ids.",
        rules=(
            dict[str, Any] | None,
            Field(default=None, description=f"Run:ai's {name}PolicyRulesV2, read as {kind.policy_file} is."),
        ),
        imposedAssets=(imposed | None, None),
    )
    overwrite = create_model(
        f"{name}PolicyOverwrite",
        __base__=PolicyOverwrite,
        __doc__=f"Run:ai's {name}PolicyOverwriteRequestV2.",
        policy=(policy_in | None, None),
    )
    change = create_model(
        f"{name}PolicyChange",
        __base__=PolicyChange,
        __doc__=f"Run:ai's {name}PolicyChangeRequestV2: ``reset``, then ``policy`` merged in.",
        policy=(policy_in | None, None),
    )
    return overwrite, change


def _add_routes(kind: WorkloadKind) -> None:
    """The four routes of the policies of ``kind``, at ``/api/v2/policy/{kind.policy_segment}``."""
    path = f"/{kind.policy_segment}"
    name = kind.name.replace("-", "_")
    texts = _texts(kind)
    overwrite_model, change_model = _body_models(kind)

    def get_policy(
        scope: ScopeQuery,
        principal: Auth,
        store: StoreDep,
        departmentId: DepartmentQuery = None,
        projectId: ProjectQuery = None,
        clusterId: ClusterQuery = None,
    ) -> JSONResponse:
        with store.read(principal) as ctx:
            place = _place(ctx, scope, departmentId, projectId, (), 404)
            ctx.access.require_read(place.ref)
            body, version = policy_body(ctx, place, kind)
        return json_response(body, version=version)

    def overwrite_policy(
        principal: Auth,
        raw: JsonObject,
        store: StoreDep,
        validateOnly: ValidateOnly = None,
        approveClusterDeletion: ApproveQuery = None,
        if_match: IfMatch = None,
    ) -> JSONResponse:
        refuse(_read_only(raw) + schema_problems(overwrite_model, raw))
        given = strip_nulls(raw.get("policy") or {})
        return _write(store, principal, raw, validateOnly, lambda _c, _p, _d: given, if_match, kind)

    def change_policy(
        principal: Auth,
        raw: JsonObject,
        store: StoreDep,
        validateOnly: ValidateOnly = None,
        approveClusterDeletion: ApproveQuery = None,
        if_match: IfMatch = None,
    ) -> JSONResponse:
        refuse(_read_only(raw) + schema_problems(change_model, raw))
        targets = reset_targets([path.removeprefix("policy.") for path in raw.get("reset") or []], kind)

        def change(ctx: Ctx, policy: PolicyRow | None, defaults: DefaultsRow | None) -> dict[str, Any]:
            current = reset_policy(request_form(ctx, policy, defaults, kind), targets)
            return merge_patch(current, strip_nulls(raw.get("policy") or {}))

        return _write(store, principal, raw, validateOnly, change, if_match, kind)

    def delete_policy(
        scope: ScopeQuery,
        principal: Auth,
        store: StoreDep,
        departmentId: DepartmentQuery = None,
        projectId: ProjectQuery = None,
        clusterId: ClusterQuery = None,
        approveClusterDeletion: ApproveQuery = None,
        if_match: IfMatch = None,
    ) -> Response:
        with store.write(principal) as ctx:
            place = _place(ctx, scope, departmentId, projectId, (), 404)
            ctx.access.require_write(place.ref)
            held = _locked(ctx, place, kind)
            check_if_match(if_match, held.version)
            layer: dict[str, Any] = {}
            if kind is DISTRIBUTED:
                layer, problems = defaults_document(held.defaults.document if held.defaults else {}, None)
                refuse(problems)
            _save(ctx, place, held, {}, layer)
        return no_content()

    routes: list[tuple[str, Callable[..., Any], str, str, dict[str, Any]]] = [
        ("GET", get_policy, "get", texts.get, {"response_model": PolicyOut, "responses": _GET_RESPONSES}),
        ("PUT", overwrite_policy, "overwrite", texts.put, {"openapi_extra": documented(overwrite_model)}),
        ("PATCH", change_policy, "change", texts.patch, {"openapi_extra": documented(change_model)}),
        ("DELETE", delete_policy, "delete", texts.delete, _DELETE),
    ]
    for method, endpoint, verb, description, more in routes:
        writes: dict[str, Any] = (
            {"response_model": None, "responses": _WRITE_RESPONSES} if method in ("PUT", "PATCH") else {}
        )
        router.add_api_route(
            path,
            endpoint,
            methods=[method],
            name=f"{verb}_{name}_policy",
            description=description,
            **writes,
            **more,
        )


_GET_RESPONSES: dict[int | str, dict[str, Any]] = {200: {"headers": _ETAG}, **errors(404)}
_DELETE: dict[str, Any] = {
    "status_code": 204,
    "response_class": Response,
    "responses": errors(404, 409, 412),
}


for _kind in KINDS:
    _add_routes(_kind)


# -- GET /api/v2/policy -----------------------------------------------------------------------------------


class PolicyListEntryOut(BaseModel):
    """Run:ai's ``PolicyListEntry``: a policy's type (``PolicyType``), its ``meta`` and, when the stored
    policy no longer reads, its ``status``."""

    type: str = Field(json_schema_extra={"enum": [policy_type(kind) for kind in KINDS]})
    meta: PolicyMetaOut
    status: dict[str, Any] | None = None


class PolicyListOut(BaseModel):
    """Run:ai's ``PolicyListResponse``."""

    policies: list[PolicyListEntryOut]


_WORKLOAD_TYPES = [kind.workload_type for kind in KINDS]
WorkloadTypeQuery = Annotated[
    str | None,
    Query(
        description="Only the policies of this workload type.",
        json_schema_extra={"enum": _WORKLOAD_TYPES},
    ),
]
ListScopeQuery = Annotated[
    PolicyScopeType | None,
    Query(description="Only the policies of this scope (cluster: none, this service has no cluster scope)."),
]


@router.get("", response_model=PolicyListOut, responses=errors())
def list_policies(
    principal: Auth,
    store: StoreDep,
    workloadType: WorkloadTypeQuery = None,
    scope: ListScopeQuery = None,
    departmentId: Annotated[
        str | None, Query(pattern=ID_PATTERN, description="Only the department's policies and its projects'.")
    ] = None,
    projectId: Annotated[
        str | None, Query(pattern=ID_PATTERN, description="Only the project's policies.")
    ] = None,
    clusterId: ClusterQuery = None,
    includeFallbackPolicies: Annotated[
        bool | None, Query(description="Not used: this service has no fallback policies.")
    ] = None,
) -> JSONResponse:
    """The policies of every kind the caller may read (Run:ai's ``PolicyListResponse``): distributed first,
    then each kind of :data:`~template_engine.kinds.KINDS`, each by scope, filtered by ``workloadType``,
    ``scope``, ``departmentId`` (the department's and its projects') and ``projectId``."""
    if workloadType is not None and workloadType not in _WORKLOAD_TYPES:
        refuse(
            [
                Problem(
                    f"unknown workloadType {workloadType!r}",
                    ("workloadType",),
                    None,
                    "one of: " + ", ".join(_WORKLOAD_TYPES),
                )
            ]
        )
    kinds = [kind for kind in KINDS if workloadType in (None, kind.workload_type)]
    level = {"tenant": "system"}.get(scope or "", scope)

    def wanted(place: Placement) -> bool:
        if level is not None and place.type != level:
            return False
        if departmentId is not None and (
            place.department is None or str(place.department.id) != departmentId
        ):
            return False
        return projectId is None or (place.project is not None and str(place.project.id) == projectId)

    with store.read(principal) as ctx:
        found = policy_list(ctx, kinds, wanted)
    return json_response({"policies": found})
