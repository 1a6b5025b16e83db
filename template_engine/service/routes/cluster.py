"""The org's clusters (``/api/v1/clusters``, as Run:ai has them) and their settings
(``/api/v1/cluster-settings``, an extension: Run:ai has no such operation).

A cluster's settings are the document a ``clusters/C/cluster.yaml`` holds (``?clusterId=``); without
``clusterId`` they are the settings of an org without clusters (``cluster.yaml``).  Every composition renders
its objects with its own cluster's.  Every role reads them; a system admin (or, for a cluster's, its
cluster admins) replaces them (``PUT``, with ``If-Match``: ETag ``"0"`` while none is stored).
:mod:`..clusters` and :mod:`..cluster_api` hold the rules.
"""

from __future__ import annotations

import uuid
from typing import Annotated, Any

from fastapi import APIRouter, Query
from fastapi.responses import JSONResponse, Response

from template_engine.cluster.settings import ClusterSettings
from template_engine.service.bodies import documented
from template_engine.service.clusters import (
    ClusterCreate,
    ClusterUpdate,
    create_cluster,
    delete_cluster,
    list_clusters,
    read_cluster,
    read_settings,
    rename_cluster,
    write_settings,
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

router = APIRouter(
    prefix="/api/v1/cluster-settings", tags=["Cluster settings (extension)"], route_class=JsonRoute
)
clusters = APIRouter(prefix="/api/v1/clusters", tags=["Clusters"], route_class=JsonRoute)

_EXTENSION = "An extension of Run:ai's API: a cluster's settings (cluster.yaml). "
_DOC: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "The stored settings ({} when none are stored: every setting has its default).",
        "content": {"application/json": {"schema": {"type": "object", "additionalProperties": True}}},
        "headers": {"ETag": {"schema": {"type": "string"}}},
    }
}
Effective = Annotated[
    bool | None, Query(description="Answer every setting, the defaults of those not stored filled in.")
]
ClusterQuery = Annotated[
    uuid.UUID | None, Query(description="The cluster whose settings (none: an org without clusters).")
]
_X = {"x-template-engine-extension": True}


@router.get("", response_model=None, responses={**_DOC, **errors(404)}, openapi_extra=_X)
def get_cluster_settings(
    principal: Auth, store: StoreDep, effective: Effective = None, clusterId: ClusterQuery = None
) -> JSONResponse:
    """A cluster's settings. Every role reads them."""
    body, version = read_settings(store, principal, bool(effective), clusterId)
    return json_response(body, version=version)


@router.put(
    "",
    response_model=None,
    responses={**_DOC, **errors(404, 412)},
    openapi_extra={**documented(ClusterSettings), **_X},
)
def put_cluster_settings(
    principal: Auth,
    raw: JsonObject,
    store: StoreDep,
    if_match: IfMatch = None,
    clusterId: ClusterQuery = None,
) -> JSONResponse:
    """Replace a cluster's settings, checked as cluster.yaml is; every composition after it renders its
    objects with them."""
    document, version = write_settings(store, principal, raw, if_match, clusterId)
    return json_response(document, version=version)


@clusters.get("", responses=errors())
def get_clusters(principal: Auth, store: StoreDep) -> JSONResponse:
    """The org's clusters (Run:ai's ``DisplayedCluster``)."""
    return json_response(list_clusters(store, principal))


@clusters.post("", status_code=201, responses=errors(409))
def create(principal: Auth, body: ClusterCreate, store: StoreDep) -> JSONResponse:
    """Add a cluster (system admins); the first one of an org adopts its departments and settings."""
    return json_response(create_cluster(store, principal, body), status=201)


@clusters.get("/{clusterUuid}", responses=errors(404))
def get_cluster(clusterUuid: uuid.UUID, principal: Auth, store: StoreDep) -> JSONResponse:
    body, version = read_cluster(store, principal, str(clusterUuid))
    return json_response(body, version=version)


@clusters.put("/{clusterUuid}", status_code=204, responses=errors(404, 409, 412))
def update(
    clusterUuid: uuid.UUID, principal: Auth, body: ClusterUpdate, store: StoreDep, if_match: IfMatch = None
) -> Response:
    """Rename a cluster (system admins)."""
    return no_content(rename_cluster(store, principal, str(clusterUuid), body, if_match))


@clusters.delete("/{clusterUuid}", status_code=204, responses=errors(404, 409, 412))
def delete(clusterUuid: uuid.UUID, principal: Auth, store: StoreDep, if_match: IfMatch = None) -> Response:
    """Delete a cluster that holds no department, template or asset; its defaults and policies go with it."""
    delete_cluster(store, principal, str(clusterUuid), if_match)
    return no_content()
