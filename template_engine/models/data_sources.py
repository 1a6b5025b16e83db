"""The data source kinds, one row each: the one table of them (issue 33).

A kind is a keyed list under ``spec.storage`` (:class:`~template_engine.models.spec.Storage`, whose fields
are these rows in this order).  Each row says which field ``overrides.containerPath`` replaces
(DESIGN.md "Layers and precedence"), which fields an item must have to be submitted (runai-facts section 4;
DESIGN.md "Runnable") and, where Run:ai has an asset kind of it, that kind: its ``AssetKind``, its route
under ``/api/v1/asset`` and its key in ``DatasourceListResponseAssetSpec``.  Everything else that lists the
kinds reads this table.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class RunaiSource:
    """A data source kind as Run:ai's asset API names it."""

    #: Run:ai's ``AssetKind`` (``AssetMeta.kind``).
    kind: str
    #: The route of its assets under ``/api/v1/asset``.
    path: str
    #: Its key in Run:ai's ``DatasourceListResponseAssetSpec``.
    list_key: str


@dataclass(frozen=True, slots=True)
class DataSourceKind:
    """One data source kind: its ``spec.storage`` list and what is known of its items."""

    storage: str
    #: The field ``overrides.containerPath`` replaces.
    container_path: str
    #: The fields each item must have to be submitted.
    required: tuple[str, ...]
    #: Run:ai's asset kind of it; ``None``: Run:ai has none (its data volumes are served elsewhere).
    runai: RunaiSource | None = None


DATA_SOURCES: tuple[DataSourceKind, ...] = (
    DataSourceKind("pvc", "path", ("path",), RunaiSource("pvc", "datasource/pvc", "pvc")),
    DataSourceKind(
        "nfs", "mountPath", ("server", "path", "mountPath"), RunaiSource("nfs", "datasource/nfs", "nfs")
    ),
    DataSourceKind("s3", "path", ("bucket", "path"), RunaiSource("s3", "datasource/s3", "s3")),
    DataSourceKind("git", "path", ("repository", "path"), RunaiSource("git", "datasource/git", "git")),
    DataSourceKind(
        "hostPath",
        "mountPath",
        ("path", "mountPath"),
        RunaiSource("hostPath", "datasource/host-path", "hostPath"),
    ),
    DataSourceKind(
        "configMapVolume",
        "mountPath",
        ("configMap", "mountPath"),
        RunaiSource("config-map", "datasource/config-map", "config_map"),
    ),
    DataSourceKind(
        "secretVolume",
        "mountPath",
        ("secret", "mountPath"),
        RunaiSource("secret-volume", "datasource/secrets", "secret"),
    ),
    DataSourceKind("emptyDirVolume", "path", ("path",)),
    DataSourceKind("dataVolume", "mountPath", ("id", "mountPath")),
)
#: Each kind by its ``spec.storage`` list.
DATA_SOURCE: dict[str, DataSourceKind] = {kind.storage: kind for kind in DATA_SOURCES}
#: The field ``overrides.containerPath`` replaces, per data source kind.
CONTAINER_PATH_FIELD: dict[str, str] = {kind.storage: kind.container_path for kind in DATA_SOURCES}

__all__ = ["CONTAINER_PATH_FIELD", "DATA_SOURCE", "DATA_SOURCES", "DataSourceKind", "RunaiSource"]
