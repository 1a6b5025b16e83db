"""The org's cluster settings: ``/api/v1/cluster-settings`` (an extension: Run:ai has no such operation).

The document a ``cluster.yaml`` holds (docs/cluster.md, "Cluster settings"), which every composition of the
service renders its objects with.  Every role reads it; a system admin replaces it (``PUT``, with
``If-Match`` as for the defaults: ETag ``"0"`` while none is stored).  :mod:`..cluster_api` checks and
answers it.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query
from fastapi.responses import JSONResponse

from template_engine.cluster.settings import ClusterSettings
from template_engine.service.bodies import documented
from template_engine.service.cluster_api import read_settings, write_settings
from template_engine.service.routes.common import (
    Auth,
    IfMatch,
    JsonObject,
    JsonRoute,
    StoreDep,
    errors,
    json_response,
)

router = APIRouter(
    prefix="/api/v1/cluster-settings", tags=["Cluster settings (extension)"], route_class=JsonRoute
)

_EXTENSION = "An extension of Run:ai's API: the org's cluster settings (cluster.yaml). "
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


@router.get(
    "",
    response_model=None,
    responses={**_DOC, **errors()},
    description=_EXTENSION + "Every role reads them.",
    openapi_extra={"x-template-engine-extension": True},
)
def get_cluster_settings(principal: Auth, store: StoreDep, effective: Effective = None) -> JSONResponse:
    """The org's cluster settings."""
    body, version = read_settings(store, principal, bool(effective))
    return json_response(body, version=version)


@router.put(
    "",
    response_model=None,
    responses={**_DOC, **errors(412)},
    description=_EXTENSION + "A system admin replaces them; the body is checked as cluster.yaml is.",
    openapi_extra={**documented(ClusterSettings), "x-template-engine-extension": True},
)
def put_cluster_settings(
    principal: Auth, raw: JsonObject, store: StoreDep, if_match: IfMatch = None
) -> JSONResponse:
    """Replace the org's cluster settings; every composition after it renders its objects with them."""
    document, version = write_settings(store, principal, raw, if_match)
    return json_response(document, version=version)
