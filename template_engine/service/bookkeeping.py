"""The bookkeeping file of an export, ``.template-engine/export.yaml``: what a templates folder cannot hold.

A templates folder names its documents; the database also keeps, for each of them, an id, a version and who
created and last changed it when, plus the descriptions of projects, the high-water marks of the integer ids
(so that an id is never given twice, even after a delete) and the workloads.  ``db export`` writes all of that
here, next to the folder's documents; ``db import`` into an empty database restores it, so the database that
comes back is the one that was exported.

Each document file is listed by its path with the fingerprint (SHA-256) of the document as exported: a file
edited since keeps its id and creation, and gets the next version, stamped by the importer.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Annotated, Any

from pydantic import AfterValidator, AwareDatetime, BaseModel, ConfigDict, Field, model_validator

from template_engine.errors import Problem
from template_engine.kinds import KINDS
from template_engine.loader.tree import read_source
from template_engine.loader.validate import locate, validate
from template_engine.org import Source

#: The folder of the bookkeeping, at the root of an export; nothing else of the export is in it.
META_FOLDER = ".template-engine"
#: The bookkeeping file, relative to the root of an export.
META_FILE = f"{META_FOLDER}/export.yaml"
#: The version of this file's layout; an importer refuses a layout newer than its own.
FORMAT = 1
#: What precedes the data in the file.
HEADER = (
    "# Written by `template-engine db export`: the ids, versions, audit fields, project descriptions and\n"
    "# workloads of the database, which the templates files cannot hold.  `template-engine db import` into\n"
    "# an empty database restores them; a document edited since keeps its id and gets a new version.\n"
)

_INT4 = 2**31 - 1
_Id = Annotated[int, Field(ge=1, le=_INT4)]
_Stamp = Annotated[AwareDatetime, Field(strict=False)]
_Subject = Annotated[str, Field(min_length=1, max_length=253)]
_Name = Annotated[str, Field(min_length=1, max_length=253)]
_Uuid = Annotated[str, Field(min_length=1, max_length=36)]
_Description = Annotated[str | None, Field(max_length=250)]
_SHA256 = r"^[0-9a-f]{64}$"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class Audited(_Strict):
    """The audit fields of a row; ``version`` leaves room for the one more an edited document gets."""

    version: int = Field(ge=1, le=_INT4 - 1)
    createdBy: _Subject
    createdAt: _Stamp
    updatedBy: _Subject
    updatedAt: _Stamp


class ClusterUnitEntry(Audited):
    """A cluster (``tables.clusters``): its id, Run:ai's UUID, the fingerprint of its fields beside its name
    in ``org.yaml`` (``domain``, ``version``, ``description``) as exported, and its settings' own version and
    the fingerprint of their document (``None``: no settings were stored, so no ``cluster.yaml`` was
    written)."""

    name: _Name
    id: _Id
    uuid: _Uuid
    sha256: str = Field(pattern=_SHA256)
    settingsVersion: int = Field(ge=0, le=_INT4 - 1)
    settingsSha256: str | None = Field(default=None, pattern=_SHA256)


class OrgClusterSettings(Audited):
    """The settings of the org of one cluster (``tables.cluster_settings``), kept by a database that has had
    clusters since (``GET /api/v1/cluster-settings`` without ``clusterId`` still reads them): a folder that
    names clusters has no file for them (a top-level ``cluster.yaml`` beside ``clusters:`` is an error)."""

    document: dict[str, Any]
    text: str | None = None


class DepartmentEntry(Audited):
    name: _Name
    id: _Id
    description: _Description = None
    #: The department's cluster (absent: an org without clusters).
    cluster: _Name | None = None


class ProjectEntry(Audited):
    name: _Name
    id: _Id
    department: _Name
    description: _Description = None


class FileEntry(Audited):
    """One document file: ``id`` for assets and templates (defaults are identified by their scope)."""

    id: _Uuid | None = None
    sha256: str = Field(pattern=_SHA256)


#: The kinds a workload may be of (those with workload routes).
_WORKLOAD_KINDS = tuple(k.name for k in KINDS if k.workload_segment is not None)


def _workload_kind(name: str) -> str:
    if name not in _WORKLOAD_KINDS:
        raise ValueError(f"unknown workload kind {name!r} (one of {', '.join(_WORKLOAD_KINDS)})")
    return name


class WorkloadEntry(Audited):
    id: _Uuid
    name: _Name
    requestedName: _Name
    projectId: _Id
    departmentId: _Id | None = None
    clusterId: _Uuid
    templateId: _Uuid | None = None
    desiredPhase: str = Field(min_length=1, max_length=16)
    actualPhase: str | None = Field(default=None, max_length=16)
    masterSpecSameAsWorker: bool
    spec: dict[str, Any]
    masterSpec: dict[str, Any] | None = None
    deletedAt: _Stamp | None = None
    #: The workload's kind (``template_engine.kinds``); absent: distributed, as every export before the kinds.
    kind: Annotated[str, AfterValidator(_workload_kind)] = "distributed"


class Sequences(_Strict):
    """The highest integer id ever given, per table (deleted rows included)."""

    departments: int = Field(ge=0, le=_INT4)
    projects: int = Field(ge=0, le=_INT4)
    #: Absent (0) in an export of a database that never had clusters.
    clusters: int = Field(default=0, ge=0, le=_INT4)


class ExportMeta(_Strict):
    format: int
    schemaVersion: int = Field(ge=1)
    sequences: Sequences
    #: Absent in an export of a database without clusters.
    clusters: list[ClusterUnitEntry] = Field(default_factory=list)
    clusterSettings: OrgClusterSettings | None = None
    departments: list[DepartmentEntry] = Field(default_factory=list)
    projects: list[ProjectEntry] = Field(default_factory=list)
    files: dict[str, FileEntry] = Field(default_factory=dict)
    workloads: list[WorkloadEntry] = Field(default_factory=list)

    @model_validator(mode="after")
    def _unique(self) -> ExportMeta:
        _once("cluster name", [c.name for c in self.clusters])
        _once("cluster id", [c.id for c in self.clusters])
        _once("cluster uuid", [c.uuid for c in self.clusters])
        _once("department name", [d.name for d in self.departments])
        _once("department id", [d.id for d in self.departments])
        _once("project name", [p.name for p in self.projects])
        _once("project id", [p.id for p in self.projects])
        _once("file id", [f.id for f in self.files.values() if f.id is not None])
        _once("workload id", [w.id for w in self.workloads])
        live = [(w.projectId, w.name) for w in self.workloads if w.deletedAt is None]
        _once("live workload name in a project", live)
        return self

    def cluster(self, name: str) -> ClusterUnitEntry | None:
        return next((c for c in self.clusters if c.name == name), None)

    def department(self, name: str) -> DepartmentEntry | None:
        return next((d for d in self.departments if d.name == name), None)

    def project(self, name: str) -> ProjectEntry | None:
        return next((p for p in self.projects if p.name == name), None)


def _once(what: str, values: list[Any]) -> None:
    seen: set[Any] = set()
    for value in values:
        if value in seen:
            raise ValueError(f"{what} {value!r} is given twice")
        seen.add(value)


def fingerprint(document: Any) -> str:
    """The SHA-256 of ``document`` as JSON, keys in their order: equal exactly when stored equal (any
    value: one that cannot be exported is refused elsewhere, with its field)."""
    text = json.dumps(document, ensure_ascii=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def read_meta(root: Path) -> tuple[ExportMeta | None, Source | None, list[Problem]]:
    """The bookkeeping of the folder at ``root``: ``(None, None, [])`` when it has none."""
    if not (root / META_FILE).exists():
        return None, None, []
    source, problems = read_source(root, META_FILE)
    if source is None:
        return None, None, problems
    found = source.data.get("format")
    if found != FORMAT:
        return (
            None,
            source,
            [
                Problem(
                    f"bookkeeping format {found!r} is not one this version reads",
                    ("format",),
                    locate(META_FILE, source.lines, ("format",)),
                    f"format: {FORMAT} (a newer template-engine wrote this export: upgrade to import it)",
                )
            ],
        )
    meta, problems = validate(ExportMeta, source.data, META_FILE, source.lines)
    return meta, source, problems
