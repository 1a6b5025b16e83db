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
from collections.abc import Callable
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query
from fastapi.responses import JSONResponse, Response

from template_engine.kinds import KINDS, WorkloadKind
from template_engine.service.auth import Principal
from template_engine.service.bodies import documented
from template_engine.service.context import Store
from template_engine.service.impact import PolicyWriteOut
from template_engine.service.policy_api import (
    WORKLOAD_TYPES,
    listed_policies,
)
from template_engine.service.policy_shapes import PolicyListOut, body_models, texts_of
from template_engine.service.policy_writes import (
    Change,
    changing,
    overwriting,
    read_policy,
    remove_policy,
)
from template_engine.service.policy_writes import (
    write_policy as write_policy,  # ui/routes.py imports it from here
)
from template_engine.service.routes.common import (
    Auth,
    IfMatch,
    JsonObject,
    JsonRoute,
    StoreDep,
    errors,
    json_response,
    no_content,
)
from template_engine.service.schemas import (
    ID_PATTERN,
    PolicyOut,
    PolicyScopeType,
)

router = APIRouter(prefix="/api/v2/policy", tags=["Policy"], route_class=JsonRoute)

ScopeQuery = Annotated[PolicyScopeType, Query(description="tenant, cluster, department or project.")]
DepartmentQuery = Annotated[
    str | None, Query(pattern=ID_PATTERN, description="The department, with scope=department.")
]
ProjectQuery = Annotated[
    str | None, Query(pattern=ID_PATTERN, description="The project, with scope=project.")
]
ClusterQuery = Annotated[uuid.UUID | None, Query(description="The cluster, with scope=cluster.")]


def _scope_query(
    scope: ScopeQuery,
    departmentId: DepartmentQuery = None,
    projectId: ProjectQuery = None,
    clusterId: ClusterQuery = None,
) -> tuple[str, dict[str, Any]]:
    """The scope a policy's query names, and the id field of each level (``policy_scope`` reads them)."""
    cluster = str(clusterId) if clusterId is not None else None
    return scope, {"clusterId": cluster, "departmentId": departmentId, "projectId": projectId}


#: The scope of a policy's ``GET`` and ``DELETE``: Run:ai's ``scope`` and its level's id field.
ScopeIds = Annotated[tuple[str, dict[str, Any]], Depends(_scope_query)]
ApproveQuery = Annotated[bool | None, Query(description="Not used: no cluster approves a policy here.")]


def _delete_query(
    scope: ScopeQuery,
    departmentId: DepartmentQuery = None,
    projectId: ProjectQuery = None,
    clusterId: ClusterQuery = None,
    approveClusterDeletion: ApproveQuery = None,
) -> tuple[str, dict[str, Any]]:
    """A ``DELETE``'s scope, its parameters in Run:ai's order (``approveClusterDeletion`` is read, and not
    used)."""
    return _scope_query(scope, departmentId, projectId, clusterId)


DeleteIds = Annotated[tuple[str, dict[str, Any]], Depends(_delete_query)]
ValidateOnly = Annotated[
    bool | None,
    Query(
        description="Check the write and answer the policy it would make, with affectedTemplates: every "
        "template whose effective spec or compliance it would change. Nothing is stored."
    ),
]


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


def _add_routes(kind: WorkloadKind) -> None:
    """The four routes of the policies of ``kind``, at ``/api/v2/policy/{kind.policy_segment}``."""
    path = f"/{kind.policy_segment}"
    name = kind.name.replace("-", "_")
    texts = texts_of(kind)
    overwrite_model, change_model = body_models(kind)

    def get_policy(at: ScopeIds, principal: Auth, store: StoreDep) -> JSONResponse:
        with store.read(principal) as ctx:
            body, version = read_policy(ctx, *at, kind)
        return json_response(body, version=version)

    def overwrite_policy(
        principal: Auth,
        raw: JsonObject,
        store: StoreDep,
        validateOnly: ValidateOnly = None,
        approveClusterDeletion: ApproveQuery = None,
        if_match: IfMatch = None,
    ) -> JSONResponse:
        return _write(store, principal, raw, validateOnly, overwriting(raw, overwrite_model), if_match, kind)

    def change_policy(
        principal: Auth,
        raw: JsonObject,
        store: StoreDep,
        validateOnly: ValidateOnly = None,
        approveClusterDeletion: ApproveQuery = None,
        if_match: IfMatch = None,
    ) -> JSONResponse:
        return _write(store, principal, raw, validateOnly, changing(raw, change_model, kind), if_match, kind)

    def delete_policy(at: DeleteIds, principal: Auth, store: StoreDep, if_match: IfMatch = None) -> Response:
        with store.write(principal) as ctx:
            remove_policy(ctx, *at, kind, if_match)
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


WorkloadTypeQuery = Annotated[
    str | None,
    Query(
        description="Only the policies of this workload type.",
        json_schema_extra={"enum": WORKLOAD_TYPES},
    ),
]
ListScopeQuery = Annotated[PolicyScopeType | None, Query(description="Only the policies of this scope.")]


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
    clusterId: Annotated[uuid.UUID | None, Query(description="Only the cluster's, and below it.")] = None,
    includeFallbackPolicies: Annotated[
        bool | None, Query(description="Not used: this service has no fallback policies.")
    ] = None,
) -> JSONResponse:
    """The policies of every kind the caller may read (Run:ai's ``PolicyListResponse``): distributed first,
    then each kind of :data:`~template_engine.kinds.KINDS`, each by scope, filtered by ``workloadType``,
    ``scope``, ``clusterId``, ``departmentId`` (the unit's and those below it) and ``projectId``."""
    with store.read(principal) as ctx:
        cluster = str(clusterId) if clusterId is not None else None
        found = listed_policies(ctx, workloadType, scope, departmentId, projectId, cluster)
    return json_response({"policies": found})
