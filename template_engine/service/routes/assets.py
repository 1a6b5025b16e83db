"""Assets at Run:ai's paths with Run:ai's bodies: ``/api/v1/asset/environment``, ``/compute`` and each data
source kind under ``/datasource`` (``nfs``, ``pvc``, ``git``, ``s3``, ``host-path``, ``config-map``,
``secrets``), each with create, list, get, update and delete; and ``GET /api/v1/asset/datasource``, every data
source as Run:ai's ``DatasourceListResponse``.

A body is Run:ai's ``*CreationRequest`` / ``*UpdateRequest``; the database keeps the templates folder's
document of the asset (:mod:`..asset_shapes` translates the ``spec`` both ways), held to the same rules as an
asset file.  ``meta`` answers as Run:ai's ``AssetMeta``: the scope (``tenant``, ``cluster``, ``department``,
``project``) is stored in ``tables.assets``, the fields that compose nothing here (``workloadSupportedTypes``,
``autoDelete``, ``private``, and ``clusterId``: a cluster asset's UUID) as given.  Names are unique per folder
kind across the org (every data source kind shares one namespace, as the folder's ``assets/datasources/``);
templates refer to assets by name and policies impose data sources by name, so an asset that templates use or
a policy imposes is neither deleted nor renamed: 409 with those templates and policies.  Every caller reads
assets; system admins change them.  Creates, updates and deletes answer 202, as Run:ai declares.  Lists and
reads asked ``complyToProject`` give each asset Run:ai's ``compliance`` (:mod:`..compliance`).  Lists filter
by scope (``scope``, ``clusterId``, ``departmentId``, ``projectId``) and by the workload kinds an asset may
be used by (``isDistributed``, ``isTraining``, ``isWorkspace``, ``isInference``, ``distributedFramework``:
:class:`~..asset_store.Supported`), read from its stored ``workloadSupportedTypes`` (:mod:`..asset_queries`).
"""

# No ``from __future__ import annotations``: the routes are made by a factory and FastAPI must see the
# parameter types themselves, not their names.

import uuid

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from template_engine.service import asset_store as assets
from template_engine.service.asset_queries import ListFilters
from template_engine.service.asset_shapes import KINDS, RunaiKind
from template_engine.service.compliance import (
    Comply,
    ComplyToProject,
    ComplyToReplicaType,
    ComplyToWorkloadType,
)
from template_engine.service.routes.common import (
    Auth,
    IfMatch,
    JsonRoute,
    Raw,
    StoreDep,
    errors,
    json_response,
)
from template_engine.service.schemas import (
    AcceptedOut,
    AssetCreationIn,
    AssetListOut,
    AssetOut,
    AssetUpdateIn,
    InUseErrorOut,
)

router = APIRouter(prefix="/api/v1/asset", tags=["Assets"], route_class=JsonRoute)


def _routes(kind: RunaiKind) -> None:
    path = f"/{kind.path}"
    op = kind.operation

    @router.post(
        path,
        status_code=202,
        response_model=AssetOut,
        responses=errors(403, 409),
        name=f"create_{op}_asset",
        summary=f"Create a {kind.kind} asset (Run:ai's {kind.schema})",
    )
    def create(body: AssetCreationIn, raw: Raw, principal: Auth, store: StoreDep) -> JSONResponse:
        answer, version = assets.create_asset(store, principal, kind, raw, body.meta.name)
        return json_response(answer, 202, version)

    @router.get(
        path,
        response_model=AssetListOut,
        responses=errors(),
        name=f"list_{op}_assets",
        summary=f"List the {kind.kind} assets",
    )
    def list_assets(
        request: Request,
        principal: Auth,
        store: StoreDep,
        supported: ListFilters,
        complyToProject: ComplyToProject = None,
        complyToWorkloadType: ComplyToWorkloadType = None,
        complyToReplicaType: ComplyToReplicaType = None,
    ) -> JSONResponse:
        comply = lambda ctx: Comply(ctx, complyToProject, complyToReplicaType, complyToWorkloadType)  # noqa: E731
        query = assets.list_query(request.query_params.multi_items())
        entries = assets.list_assets(store, principal, kind, query, supported, comply)
        return json_response({"entries": entries})

    @router.get(
        path + "/{assetId}",
        response_model=AssetOut,
        responses=errors(404),
        name=f"get_{op}_asset_by_id",
        summary=f"Get a {kind.kind} asset",
    )
    def get(
        assetId: uuid.UUID,
        principal: Auth,
        store: StoreDep,
        complyToProject: ComplyToProject = None,
        complyToWorkloadType: ComplyToWorkloadType = None,
        complyToReplicaType: ComplyToReplicaType = None,
    ) -> JSONResponse:
        comply = lambda ctx: Comply(ctx, complyToProject, complyToReplicaType, complyToWorkloadType)  # noqa: E731
        answer, version = assets.read_asset(store, principal, kind, assetId, comply)
        return json_response(answer, version=version)

    @router.put(
        path + "/{assetId}",
        status_code=202,
        response_model=AssetOut,
        responses={
            **errors(403, 404, 412),
            409: {"model": InUseErrorOut, "description": "Name taken, or in use and renamed."},
        },
        name=f"update_{op}_asset_by_id",
        summary=f"Replace a {kind.kind} asset (not renamed while templates use it)",
    )
    def update(
        assetId: uuid.UUID,
        body: AssetUpdateIn,
        raw: Raw,
        principal: Auth,
        store: StoreDep,
        if_match: IfMatch = None,
    ) -> JSONResponse:
        answer, version = assets.update_asset(store, principal, kind, assetId, raw, if_match)
        return json_response(answer, 202, version)

    @router.delete(
        path + "/{assetId}",
        status_code=202,
        response_model=AcceptedOut,
        responses={
            **errors(403, 404, 412),
            409: {"model": InUseErrorOut, "description": "Templates use it, or policies impose it."},
        },
        name=f"delete_{op}_asset_by_id",
        summary=f"Delete a {kind.kind} asset no template uses",
    )
    def delete(
        assetId: uuid.UUID, principal: Auth, store: StoreDep, if_match: IfMatch = None
    ) -> JSONResponse:
        assets.delete_asset(store, principal, kind, assetId, if_match)
        return json_response(assets.ACCEPTED, 202)


@router.get(
    "/datasource",
    response_model=AssetListOut,
    responses=errors(),
    name="list_datasource_assets",
    summary="List every data source, of every kind (Run:ai's DatasourceListResponse)",
)
def list_datasources(
    request: Request,
    principal: Auth,
    store: StoreDep,
    supported: ListFilters,
    complyToProject: ComplyToProject = None,
    complyToWorkloadType: ComplyToWorkloadType = None,
    complyToReplicaType: ComplyToReplicaType = None,
) -> JSONResponse:
    """Data sources Run:ai has no asset kind of (``emptyDirVolume``, ``dataVolume`` written in a folder)
    are not listed: no Run:ai route serves them."""
    comply = lambda ctx: Comply(ctx, complyToProject, complyToReplicaType, complyToWorkloadType)  # noqa: E731
    query = assets.list_query(request.query_params.multi_items())
    entries = assets.list_assets(store, principal, None, query, supported, comply)
    return json_response({"entries": entries})


for _kind in KINDS:
    _routes(_kind)
