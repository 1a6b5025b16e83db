"""The statuses the service answers that Run:ai's operation does not declare, each with its reason.

For every operation the service shares with Run:ai's OpenAPI document (``runai-openapi-1.224.0.json``, the
one ``runapy`` 1.224.0 is generated from), a status the service's own OpenAPI document declares is either
one Run:ai declares for that operation or a row here.  Where Run:ai declares a status for a case, the
service answers with it (a template or live workload name taken is a 400 on ``POST``, which is what Run:ai
declares there, and a 409 on ``name-availability``, which is what it declares there); the rows here are the
cases where it declares none that fits.  ``tests/service/test_runai_statuses.py`` holds the service's
document, Run:ai's and this table equal; docs/http-api.md ("Status codes beyond Run:ai's") says the same in
words.
"""

from __future__ import annotations

from collections.abc import Mapping

from template_engine.kinds import KINDS, TEMPLATE_KINDS, WorkloadKind
from template_engine.service.asset_shapes import KINDS as ASSET_KINDS

T = "/api/v1/workload-templates"
W = "/api/v1/workloads"
A = "/api/v1/asset"
O = "/api/v1/org-unit"  # noqa: E741

#: Why the service answers each status where Run:ai declares none, the same on every operation.
REASONS: Mapping[str, str] = {
    "400": "a query parameter, filter or path id that cannot be read (limit=0, sortBy=bogus, "
    "filterBy=createdAt>=yesterday, an id that is not one): Run:ai declares no 400 on this operation, and "
    "saying what is wrong beats a 404 or an answer to another question",
    "403": "the caller's role may not change assets (only system admins do): Run:ai declares 403 on the "
    "other kinds' creates, not on this one",
    "409": "a write that collided with another at the same instant: read again and retry",
    "412": "If-Match does not hold for the current version (the answer carries the current ETag)",
    "413": "a body over the limit, a JSON body of more than 20,000 values, or a request whose work is over "
    "its budget: checked before routing, on any operation",
    "500": "declared on every operation (Run:ai leaves it out of a few): it is always a bug",
    "503": "the database is unreachable or locked: declared on every operation",
}

_CLUSTER_BODY = (
    "a body that is not Run:ai's ClusterCreationRequest (a name that is not one, an unknown field)"
)
_CLUSTER_NAME = "another cluster has that name: names are unique in the org, as folders of clusters/ are"
_NO_CLUSTER = "no cluster has that UUID (Run:ai declares 404 on the cluster's read, not on its writes)"
_CLUSTER_IN_USE = "the cluster holds departments, templates or assets (each named): nothing is deleted"
_DELETED = "the workload is deleted: it is neither suspended nor resumed (Run:ai declares no 400 either)"
_IN_USE = "the department or project is not empty, or a write collided with another: nothing is deleted"
_ASSET_IN_USE = "templates use the asset or policies impose it (or the new name is taken): it is kept"
#: The asset paths whose operations Run:ai declares alike (host-path differs: its rows are written out).
_STANDARD_ASSET_PATHS = (
    "environment",
    "compute",
    *(kind.path for kind in ASSET_KINDS if kind.storage not in (None, "hostPath")),
)

#: The workload paths of every kind that has them (Run:ai declares their submit, read and delete alike).
_WORKLOAD_SEGMENTS = tuple(kind.workload_segment for kind in KINDS if kind.workload_segment is not None)


def _row(*statuses: str, **overrides: str) -> dict[str, str]:
    """A row of :data:`DEVIATIONS`: each status with its reason (:data:`REASONS`, or ``s<status>=`` given)."""
    return {status: overrides.get(f"s{status}", REASONS.get(status, "")) for status in statuses}


def _template_rows(kind: WorkloadKind) -> dict[tuple[str, str], dict[str, str]]:
    """The rows of a kind's template routes (Run:ai declares the same on each kind's; an inference template
    has no PUT or PATCH)."""
    base = f"{T}/{kind.template_segment}"
    rows = {
        ("GET", base): _row("400", "413"),
        ("POST", base): _row("409", "413"),
        ("GET", f"{base}/{{templateId}}"): _row("400", "413"),
        ("DELETE", f"{base}/{{templateId}}"): _row("400", "412", "413"),
    }
    if kind.template_updates:
        rows[("PUT", f"{base}/{{templateId}}")] = _row("409", "412", "413")
        rows[("PATCH", f"{base}/{{templateId}}")] = _row("409", "412", "413")
    return rows


_SUSPENDED = _row("400", "409", "413", s409=_DELETED)
#: ``(method, path)`` (the service's path) -> every status it declares beyond Run:ai's, with its reason.
DEVIATIONS: Mapping[tuple[str, str], Mapping[str, str]] = {
    **{key: row for kind in TEMPLATE_KINDS for key, row in _template_rows(kind).items()},
    ("GET", T): _row("400", "413"),
    ("GET", f"{T}/{{templateId}}"): _row("400", "413"),
    ("GET", f"{T}/count"): _row("400", "413"),
    ("GET", f"{T}/name-availability"): _row("400", "413", "500"),
    **{
        key: row
        for segment in _WORKLOAD_SEGMENTS
        for key, row in {
            ("POST", f"{W}/{segment}"): _row("409", "413", "500"),
            ("GET", f"{W}/{segment}/{{workloadId}}"): _row("400", "413"),
            ("DELETE", f"{W}/{segment}/{{workloadId}}"): _row("400", "413"),
        }.items()
    },
    **{
        ("POST", f"{W}/{kind.workload_segment}/{{workloadId}}/{action}"): _row(
            "400", "409", "413", s409=_DELETED
        )
        for kind in KINDS
        if kind.workload_suspends
        for action in ("suspend", "resume")
    },
    ("GET", W): _row("400", "413"),
    ("GET", f"{W}/count"): _row("400", "413"),
    ("GET", f"{W}/{{workloadId}}"): _row("400", "413"),
    ("POST", "/api/v1/token"): _row("413"),
    ("GET", "/api/v2/policy"): _row("400", "413", "500"),
    ("GET", "/api/v1/clusters"): _row("400", "413"),
    ("POST", "/api/v1/clusters"): _row("400", "409", "413", s400=_CLUSTER_BODY, s409=_CLUSTER_NAME),
    ("GET", "/api/v1/clusters/{clusterUuid}"): _row("400", "413"),
    ("PUT", "/api/v1/clusters/{clusterUuid}"): _row(
        "404", "409", "412", "413", s404=_NO_CLUSTER, s409=_CLUSTER_NAME
    ),
    ("DELETE", "/api/v1/clusters/{clusterUuid}"): _row(
        "400", "404", "409", "412", "413", s404=_NO_CLUSTER, s409=_CLUSTER_IN_USE
    ),
    **{
        (method, f"/api/v2/policy/{kind.policy_segment}"): _row(*statuses)
        for kind in KINDS
        for method, statuses in (
            ("GET", ("413", "500")),
            ("PUT", ("409", "412", "413", "500")),
            ("PATCH", ("409", "412", "413", "500")),
            ("DELETE", ("409", "412", "413", "500")),
        )
    },
    ("GET", f"{O}/departments"): _row("413", "500"),
    ("POST", f"{O}/departments"): _row("413", "500"),
    ("GET", f"{O}/departments/{{departmentId}}"): _row("400", "413", "500"),
    ("PUT", f"{O}/departments/{{departmentId}}"): _row("409", "412", "413", "500"),
    ("DELETE", f"{O}/departments/{{departmentId}}"): _row("409", "412", "413", "500", s409=_IN_USE),
    ("GET", f"{O}/projects"): _row("413", "500"),
    ("POST", f"{O}/projects"): _row("413", "500"),
    ("GET", f"{O}/projects/{{projectId}}"): _row("400", "413", "500"),
    ("PUT", f"{O}/projects/{{projectId}}"): _row("409", "412", "413", "500"),
    ("DELETE", f"{O}/projects/{{projectId}}"): _row("409", "412", "413", s409=_IN_USE),
    ("GET", f"{O}/departments/count"): _row("413", "500"),
    ("GET", f"{O}/projects/count"): _row("413", "500"),
    ("PUT", f"{O}/departments/{{departmentId}}/resources"): _row("412", "413"),
    ("PATCH", f"{O}/departments/{{departmentId}}/resources"): _row("412", "413"),
    ("PUT", f"{O}/projects/{{projectId}}/resources"): _row("412", "413", "500"),
    ("PATCH", f"{O}/projects/{{projectId}}/resources"): _row("412", "413", "500"),
    **{
        key: row
        for kind in _STANDARD_ASSET_PATHS
        for key, row in {
            ("GET", f"{A}/{kind}"): _row("400", "413", "500"),
            ("POST", f"{A}/{kind}"): _row("413", "500"),
            ("GET", f"{A}/{kind}/{{assetId}}"): _row("400", "413", "500"),
            ("PUT", f"{A}/{kind}/{{assetId}}"): _row(
                "400", "409", "412", "413", "500", "503", s409=_ASSET_IN_USE
            ),
            ("DELETE", f"{A}/{kind}/{{assetId}}"): _row(
                "400", "409", "412", "413", "500", s409=_ASSET_IN_USE
            ),
        }.items()
    },
    # Run:ai declares more on host-path (400 everywhere, 412 on delete, 503 on update) and no 403 on create.
    ("GET", f"{A}/datasource/host-path"): _row("413", "500"),
    ("POST", f"{A}/datasource/host-path"): _row("403", "413", "500"),
    ("GET", f"{A}/datasource/host-path/{{assetId}}"): _row("413", "500"),
    ("PUT", f"{A}/datasource/host-path/{{assetId}}"): _row("409", "412", "413", "500", s409=_ASSET_IN_USE),
    ("DELETE", f"{A}/datasource/host-path/{{assetId}}"): _row("409", "413", "500", s409=_ASSET_IN_USE),
    ("GET", f"{A}/datasource"): _row("400", "413", "500"),
}
