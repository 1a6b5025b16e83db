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
from template_engine.service.cluster_api import check_settings, settings_body
from template_engine.service.documents import strip_nulls
from template_engine.service.routes.common import (
    Auth,
    IfMatch,
    JsonObject,
    JsonRoute,
    StoreDep,
    check_if_match,
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
    with store.read(principal) as ctx:
        row = ctx.repo.cluster_settings()
    return json_response(settings_body(row, bool(effective)), version=row.audit.version if row else 0)


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
    document = strip_nulls(raw)
    with store.write(principal) as ctx:
        ctx.access.require_admin()
        row = ctx.repo.cluster_settings(lock=True)
        current = row.audit.version if row is not None else 0
        check_if_match(if_match, current)
        check_settings(document)
        version = ctx.repo.put_cluster_settings(document, None, current, ctx.subject)
    return json_response(document, version=version)
