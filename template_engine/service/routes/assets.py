"""Assets: ``/api/v1/asset/{environment,compute,datasource}`` (create, list, get, update, delete).

A body is an asset file's document, ``{meta: {name, description?}, spec}``, held to the same rules (the kind
limits the fields; a data source holds one item).  Names are unique per kind, and templates refer to assets
by name, and policies impose data sources by name, so an asset that templates still use or a policy imposes
is neither deleted nor renamed: 409 with those templates and policies.
Every caller reads assets; system admins change them.
"""

# No ``from __future__ import annotations``: the routes are made by a factory and FastAPI must see the
# body models themselves, not their names.

import uuid
from typing import Any

from fastapi import APIRouter
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel

from template_engine.models.documents import AssetKind
from template_engine.org import Scope
from template_engine.service.composer import audit_fields
from template_engine.service.context import Ctx
from template_engine.service.documents import check_asset, strip_nulls
from template_engine.service.errors import ApiError, not_found
from template_engine.service.policy_store import policies_imposing, policy_file
from template_engine.service.routes.common import (
    Auth,
    IfMatch,
    JsonRoute,
    Raw,
    StoreDep,
    check_if_match,
    errors,
    json_response,
    no_content,
)
from template_engine.service.schemas import (
    TENANT_ID,
    ComputeAssetIn,
    ComputeAssetListOut,
    ComputeAssetOut,
    DatasourceAssetIn,
    DatasourceAssetListOut,
    DatasourceAssetOut,
    EnvironmentAssetIn,
    EnvironmentAssetListOut,
    EnvironmentAssetOut,
    InUseErrorOut,
)
from template_engine.service.storage.repository import AssetRow, PolicyRow

router = APIRouter(prefix="/api/v1/asset", tags=["Assets"], route_class=JsonRoute)


def asset_body(row: AssetRow) -> dict[str, Any]:
    meta: dict[str, Any] = {"id": row.id, "name": row.name}
    description = (row.document.get("meta") or {}).get("description")
    if description is not None:
        meta["description"] = description
    meta["kind"] = row.kind
    return {"meta": meta | audit_fields(row.audit), "spec": row.document.get("spec") or {}}


def _load(ctx: Ctx, kind: str, asset_id: uuid.UUID, lock: bool = False) -> AssetRow:
    row = ctx.repo.asset(str(asset_id), lock=lock)
    if row is None or row.kind != kind:
        raise not_found(f"{kind} asset {asset_id}")
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
            "scopeId": str(t.project_id or t.department_id) if t.scope_type != "system" else str(TENANT_ID),
        }
        for t in users
    ]
    policies = [_policy_ref(policy, scope) for policy, scope in imposing]
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


def _policy_ref(policy: PolicyRow, scope: Scope) -> dict[str, Any]:
    kind, _, ident = policy.scope_key.partition(":")
    ref: dict[str, Any] = {"scope": "tenant" if kind == "system" else kind}
    if kind == "department":
        ref["departmentId"] = ident
    elif kind == "project":
        ref["projectId"] = int(ident)
    return ref | {"name": scope.name or "tenant"}


def _routes(
    kind: AssetKind, body_model: type[BaseModel], out: type[BaseModel], list_out: type[BaseModel]
) -> None:
    path = f"/{kind}"

    def document_of(raw: Any) -> dict[str, Any]:
        document: dict[str, Any] = strip_nulls(raw if isinstance(raw, dict) else {})
        check_asset(kind, document)
        return document

    @router.post(
        path,
        status_code=201,
        response_model=out,
        responses=errors(403, 409),
        name=f"create_{kind}_asset",
        summary=f"Create a {kind} asset",
    )
    def create(body: body_model, raw: Raw, principal: Auth, store: StoreDep) -> JSONResponse:  # type: ignore[valid-type]
        document = document_of(raw)
        with store.write(principal) as ctx:
            ctx.access.require_admin()
            name = document["meta"]["name"]
            if ctx.repo.assets_named([(kind, name)]):
                raise ApiError(409, f"A {kind} asset named {name!r} already exists.")
            asset_id = str(uuid.uuid4())
            ctx.repo.add_asset(asset_id, kind, name, document, ctx.subject)
            row = _load(ctx, kind, uuid.UUID(asset_id))
        return json_response(asset_body(row), 201, row.audit.version)

    @router.get(
        path,
        response_model=list_out,
        responses=errors(),
        name=f"list_{kind}_assets",
        summary=f"List the {kind} assets",
    )
    def list_assets(principal: Auth, store: StoreDep) -> JSONResponse:
        with store.read(principal) as ctx:
            rows = ctx.repo.assets(kind)
        return json_response({"entries": [asset_body(r) for r in rows]})

    @router.get(
        path + "/{assetId}",
        response_model=out,
        responses=errors(404),
        name=f"get_{kind}_asset",
        summary=f"Get a {kind} asset",
    )
    def get(assetId: uuid.UUID, principal: Auth, store: StoreDep) -> JSONResponse:
        with store.read(principal) as ctx:
            row = _load(ctx, kind, assetId)
        return json_response(asset_body(row), version=row.audit.version)

    @router.put(
        path + "/{assetId}",
        response_model=out,
        responses={
            **errors(403, 404, 412),
            409: {"model": InUseErrorOut, "description": "Name taken or in use."},
        },
        name=f"update_{kind}_asset",
        summary=f"Replace a {kind} asset (not renamed while templates use it)",
    )
    def update(
        assetId: uuid.UUID,
        body: body_model,  # type: ignore[valid-type]
        raw: Raw,
        principal: Auth,
        store: StoreDep,
        if_match: IfMatch = None,
    ) -> JSONResponse:
        document = document_of(raw)
        with store.write(principal) as ctx:
            ctx.access.require_admin()
            row = _load(ctx, kind, assetId, lock=True)
            check_if_match(if_match, row.audit.version)
            name = document["meta"]["name"]
            if name != row.name:
                if ctx.repo.assets_named([(kind, name)]):
                    raise ApiError(409, f"A {kind} asset named {name!r} already exists.")
                _in_use(ctx, row, "renamed")
            ctx.repo.update_asset(row.id, row.audit.version, name, document, ctx.subject)
            updated = _load(ctx, kind, assetId)
        return json_response(asset_body(updated), version=updated.audit.version)

    @router.delete(
        path + "/{assetId}",
        status_code=204,
        response_class=Response,
        responses={
            **errors(403, 404, 412),
            409: {"model": InUseErrorOut, "description": "Templates use it, or policies impose it."},
        },
        name=f"delete_{kind}_asset",
        summary=f"Delete a {kind} asset no template uses",
    )
    def delete(assetId: uuid.UUID, principal: Auth, store: StoreDep, if_match: IfMatch = None) -> Response:
        with store.write(principal) as ctx:
            ctx.access.require_admin()
            row = _load(ctx, kind, assetId, lock=True)
            check_if_match(if_match, row.audit.version)
            _in_use(ctx, row, "deleted")
            ctx.repo.delete_asset(row.id, row.audit.version)
        return no_content()


_routes("environment", EnvironmentAssetIn, EnvironmentAssetOut, EnvironmentAssetListOut)
_routes("compute", ComputeAssetIn, ComputeAssetOut, ComputeAssetListOut)
_routes("datasource", DatasourceAssetIn, DatasourceAssetOut, DatasourceAssetListOut)
