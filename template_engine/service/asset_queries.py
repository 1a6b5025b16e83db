"""The query parameters of Run:ai's asset lists, declared once for every list route (each kind's and
``GET /api/v1/asset/datasource``): the scope filters (``name``, ``scope``, ``clusterId``, ``departmentId``,
``projectId``, ``assetIds``) and the kind filters (one per :data:`~.asset_store.SUPPORT_FILTERS` entry and
``distributedFramework``), as one dependency whose signature is made from these tables, so that the OpenAPI
document lists each.  The list itself reads the query as given (:func:`~.asset_store.list_query`); the
dependency answers the kind filters, :class:`~.asset_store.Supported`.
"""

# No ``from __future__ import annotations``: FastAPI reads the annotations of the signature made here.

import inspect
from typing import Annotated, Any, get_args

from fastapi import Depends, Query
from pydantic import WithJsonSchema

from template_engine.models.spec_items import DistributedFramework
from template_engine.service.asset_store import FRAMEWORK_FILTER, IDS, SUPPORT_FILTERS, Supported

#: What the OpenAPI document says of ``assetIds``: what :data:`~.asset_store.IDS` takes (issue 30: it took
#: ``assetIds=``).
IDS_PATTERN = f"^{IDS.pattern}(?![\\s\\S])"

_FRAMEWORKS = ", ".join(get_args(DistributedFramework))
#: Each filter's parameter name and its annotation (Run:ai's ``AssetNameFilter``, ``AssetScopeFilter``,
#: ``AssetClusterFilter``, ``AssetDepartmentFilter``, ``AssetProjectFilter``, ``assetIdsFilter``).
_SCOPE_FILTERS: dict[str, Any] = {
    "name": Annotated[
        str | None, Query(description="Only the asset of this name (Run:ai's AssetNameFilter).")
    ],
    "scope": Annotated[
        str | None,
        Query(
            description="Only assets of this scope: tenant, cluster, department or project "
            "(AssetScopeFilter)."
        ),
    ],
    "clusterId": Annotated[
        str | None,
        Query(
            json_schema_extra={"format": "uuid"},
            description="With scope=cluster, that cluster's assets (by its UUID); otherwise the assets of "
            "the cluster and the tenant (AssetClusterFilter).",
        ),
    ],
    "departmentId": Annotated[
        str | None,
        Query(
            description="With scope=department, that department's assets; otherwise the department's, its "
            "cluster's and the tenant's (AssetDepartmentFilter).",
        ),
    ],
    "projectId": Annotated[
        int | None,
        Query(
            description="With scope=project, that project's assets; otherwise the assets of the project, its "
            "department, its cluster and the tenant (AssetProjectFilter).",
        ),
    ],
    "assetIds": Annotated[
        Annotated[str, WithJsonSchema({"type": "string", "pattern": IDS_PATTERN})] | None,
        Query(description="Only these assets: UUIDs separated by commas."),
    ],
}
_KIND_FILTERS: dict[str, Any] = {
    **{
        name: Annotated[
            bool | None,
            Query(
                description=f"true: only assets a workload of type {field} may use (all but those whose "
                f"workloadSupportedTypes says {field}: false); false: no filter."
            ),
        ]
        for name, field in SUPPORT_FILTERS.items()
    },
    FRAMEWORK_FILTER: Annotated[
        DistributedFramework | None,
        Query(
            description="Only assets a distributed workload of this framework may use: not distributed: "
            f"false, and a workloadSupportedTypes.distFramework of none or this one ({_FRAMEWORKS})."
        ),
    ],
}


def _filters(**given: Any) -> Supported:
    """The kind filters asked (the scope filters are read from the query as given)."""
    fields = frozenset(
        SUPPORT_FILTERS[name] for name, value in given.items() if name in SUPPORT_FILTERS and value
    )
    return Supported(fields, given.get(FRAMEWORK_FILTER))


_filters.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
    [
        inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=annotation)
        for name, annotation in {**_SCOPE_FILTERS, **_KIND_FILTERS}.items()
    ],
    return_annotation=Supported,
)

#: A list route's filters: every parameter above in the document; the kind filters as :class:`Supported`.
ListFilters = Annotated[Supported, Depends(_filters)]

__all__ = ["IDS_PATTERN", "ListFilters"]
