"""The org's clusters, as Run:ai's ``/api/v1/clusters`` has them, and each cluster's settings.

A cluster is a level of the scope table (:mod:`template_engine.scopes`) between the tenant and its
departments; Run:ai names it by its UUID (``DisplayedCluster.uuid``).  A database without clusters is an
org of one cluster, whose settings are ``/api/v1/cluster-settings`` without ``clusterId``, as before; the
first cluster made adopts those settings and every department (docs/decisions.md, "The first cluster").
A cluster with departments, templates or assets is not deleted (409 naming them); its defaults and
policies go with it.  Every role reads the clusters; system admins make, rename and delete them, and write
their settings (a cluster's admins too).
"""

from __future__ import annotations

import uuid
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from template_engine.cluster.settings import ClusterSettings
from template_engine.errors import Problem
from template_engine.service.auth import Principal, require
from template_engine.service.cluster_api import check_settings, settings_body
from template_engine.service.composer import timestamp
from template_engine.service.context import Ctx, Placement, Store
from template_engine.service.documents import strip_nulls
from template_engine.service.errors import ApiError, field_error, not_found
from template_engine.service.etags import check_if_match
from template_engine.service.schemas import TENANT_ID, Name
from template_engine.service.storage.repository import CLUSTERS, ClusterUnitRow, Repository

#: The most clusters an org may have: every list of them is answered whole, and every department's
#: refusal names them (docs/decisions.md).
MAX_CLUSTERS = 100


class ClusterCreate(BaseModel):
    """Run:ai's ``ClusterCreationRequest``."""

    model_config = ConfigDict(extra="forbid")

    name: Name
    domain: str | None = Field(default=None, max_length=253)
    version: str | None = Field(default=None, max_length=64)


class ClusterUpdate(BaseModel):
    """Run:ai's ``ClusterUpdateRequest``: a new name."""

    model_config = ConfigDict(extra="forbid")

    name: Name


def cluster_body(row: ClusterUnitRow) -> dict[str, Any]:
    """Run:ai's ``DisplayedCluster`` of a stored cluster."""
    body: dict[str, Any] = {
        "uuid": row.uuid,
        "tenantId": TENANT_ID,
        "name": row.name,
        "createdAt": timestamp(row.audit.created_at),
        "updatedAt": timestamp(row.audit.updated_at),
    }
    return body | {k: v for k, v in (row.runai or {}).items() if k in ("domain", "version")}


def _name_taken(name: str) -> ApiError:
    return ApiError(409, problems=[Problem(f"a cluster named {name!r} already exists", ("name",))])


def _cluster(ctx: Ctx, cluster_uuid: str, lock: bool = False) -> ClusterUnitRow:
    row = ctx.repo.cluster_by_uuid(cluster_uuid.lower(), lock=lock)
    if row is None:
        raise not_found(f"cluster {cluster_uuid}")
    return row


def list_clusters(store: Store, principal: Principal) -> list[dict[str, Any]]:
    with store.read(principal) as ctx:
        return [cluster_body(row) for row in ctx.repo.units(CLUSTERS)]


def read_cluster(store: Store, principal: Principal, cluster_uuid: str) -> tuple[dict[str, Any], int]:
    with store.read(principal) as ctx:
        row = _cluster(ctx, cluster_uuid)
    return cluster_body(row), row.audit.version


def create_cluster(store: Store, principal: Principal, body: ClusterCreate) -> dict[str, Any]:
    """A new cluster (system admins).  The first one of the org adopts every department and the org's
    settings, so that the org composes as it did."""
    with store.write(principal) as ctx:
        require(ctx.access.may_manage("cluster"))
        if ctx.repo.unit_named(CLUSTERS, body.name) is not None:
            raise _name_taken(body.name)
        known = ctx.repo.units(CLUSTERS)
        if len(known) >= MAX_CLUSTERS:
            raise ApiError(
                413,
                f"The org has {len(known)} clusters, the most it may have ({MAX_CLUSTERS}); "
                "delete one first.",
            )
        first = not known
        runai = body.model_dump(exclude={"name"}, exclude_none=True)
        cluster_id = ctx.repo.add_cluster(str(uuid.uuid4()), body.name, runai, ctx.subject)
        if first:
            adopt_org(ctx.repo, cluster_id, ctx.subject)
        row = ctx.cluster(cluster_id)
    return cluster_body(row)


def adopt_org(repo: Repository, cluster_id: int, subject: str) -> None:
    """The first cluster of an org of one: it takes every department and the org's cluster settings, so that
    the org composes as it did (``POST /api/v1/clusters`` and ``db import`` of a folder that names
    clusters)."""
    repo.adopt_departments(cluster_id)
    settings = repo.cluster_settings()
    if settings is not None:
        repo.put_cluster_unit_settings(cluster_id, settings.document, settings.text, 0, subject)


def rename_cluster(
    store: Store, principal: Principal, cluster_uuid: str, body: ClusterUpdate, if_match: str | None
) -> int:
    """Rename a cluster (system admins); its version after (unchanged when the name is the same)."""
    with store.write(principal) as ctx:
        require(ctx.access.may_manage("cluster"))
        row = _cluster(ctx, cluster_uuid, lock=True)
        check_if_match(if_match, row.audit.version)
        other = ctx.repo.unit_named(CLUSTERS, body.name)
        if other is not None and other.id != row.id:
            raise _name_taken(body.name)
        if body.name == row.name:
            return row.audit.version
        return ctx.repo.update_unit(CLUSTERS, row.id, row.audit.version, body.name, None, ctx.subject)


def delete_cluster(store: Store, principal: Principal, cluster_uuid: str, if_match: str | None) -> None:
    """Delete a cluster that holds no department, template or asset (409 naming what it holds); its
    defaults and policies go with it."""
    with store.write(principal) as ctx:
        require(ctx.access.may_manage("cluster"))
        row = _cluster(ctx, cluster_uuid, lock=True)
        check_if_match(if_match, row.audit.version)
        left = [f"department {name}" for name in ctx.repo.department_names_in(row.id)]
        left += [f"template {t.name}" for t in ctx.repo.templates([f"cluster:{row.id}"])]
        left += [f"{a.kind} asset {a.name}" for a in ctx.repo.assets(scopes=[("cluster", row.id)])]
        if left:
            raise ApiError(409, "The cluster is not empty.", [Problem(item) for item in left])
        ctx.repo.delete_unit(CLUSTERS, row.id, row.audit.version)


def read_settings(
    store: Store, principal: Principal, effective: bool, cluster: uuid.UUID | None = None
) -> tuple[dict[str, Any], int]:
    """A cluster's settings (``cluster``: its UUID; none: those of an org without clusters), every setting
    with ``effective`` (defaults filled in), and their version (0: none stored)."""
    with store.read(principal) as ctx:
        if cluster is None:
            row = ctx.repo.cluster_settings()
            return settings_body(row, effective), row.audit.version if row else 0
        unit = _cluster(ctx, str(cluster))
        ctx.access.require_read(Placement("system").below("cluster", unit).ref)
    body = dict(unit.settings or {})
    if effective:
        body = ClusterSettings.model_validate(body).model_dump(mode="json")
    return body, unit.settings_version


def write_settings(
    store: Store,
    principal: Principal,
    raw: dict[str, Any],
    if_match: str | None,
    cluster: uuid.UUID | None = None,
) -> tuple[dict[str, Any], int]:
    """Replace a cluster's settings (``cluster``: its UUID, for its writers: system admins and its cluster
    admins; none: those of an org without clusters, system admins), the body checked as ``cluster.yaml``
    is."""
    document = strip_nulls(raw)
    with store.write(principal) as ctx:
        if cluster is None:
            ctx.access.require_admin()
            if ctx.repo.units(CLUSTERS):
                raise field_error(
                    ("clusterId",),
                    "the org has clusters: each has its own settings, and nothing reads the org's",
                    "?clusterId= of one of GET /api/v1/clusters",
                )
            row = ctx.repo.cluster_settings(lock=True)
            current = row.audit.version if row is not None else 0
        else:
            unit = _cluster(ctx, str(cluster), lock=True)
            ctx.access.require_write(Placement("system").below("cluster", unit).ref)
            current = unit.settings_version
        check_if_match(if_match, current)
        check_settings(document)
        if cluster is None:
            return document, ctx.repo.put_cluster_settings(document, None, current, ctx.subject)
        return document, ctx.repo.put_cluster_unit_settings(unit.id, document, None, current, ctx.subject)
