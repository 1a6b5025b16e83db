"""Request and response models: what FastAPI validates and what the OpenAPI document says.

Request models forbid unknown fields and reuse the engine's spec models (``WorkerSpec``, ``MasterSpec``,
``TemplateAssets``...), so a body is held to the same schema as a file of a templates folder.  Response
models only document: handlers return plain JSON (the composed bodies come from the engine), and the
schemathesis suite checks that what the server sends matches these models.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal
from uuid import UUID

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StrictBool

from template_engine.models.documents import (
    PATTERN_WORDS,
    AssetMeta,
    MasterDefaults,
    TemplateAssets,
    TemplateMasterSection,
    TemplateMeta,
)
from template_engine.models.spec import (
    ComputeAssetSpec,
    DatasourceAssetSpec,
    EnvironmentAssetSpec,
    MasterSpec,
    WorkerSpec,
)

NAME_PATTERN = r"^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$"
NAME_RULE = (
    "letters, digits, '.', '_' and '-', starting and ending with a letter or digit, at most 253 characters"
)
#: Workload names become Kubernetes object names: a DNS label.
WORKLOAD_NAME_PATTERN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
WORKLOAD_NAME_RULE = (
    "lowercase letters, digits and '-', starting and ending with a letter or digit, at most 63 characters"
)
#: Department and project ids, in paths, queries and bodies.
ID_PATTERN = r"^[0-9]{1,18}$"

#: Every pattern a request is checked against, in plain words: what a 400 says instead of the expression.
PATTERN_RULES: dict[str, str] = {
    **{pattern: f"must be {words}" for pattern, words in PATTERN_WORDS.items()},
    NAME_PATTERN: f"must be a name: {NAME_RULE}",
    WORKLOAD_NAME_PATTERN: f"must be a workload name: {WORKLOAD_NAME_RULE}",
    ID_PATTERN: "must be an id: 1 to 18 digits, such as '1'",
}
ScopeType = Literal["system", "department", "project"]
SortBy = Literal[
    "name",
    "workloadType",
    "runnable",
    "scopeType",
    "clusterId",
    "projectId",
    "departmentId",
    "createdAt",
    "updatedAt",
    "createdBy",
    "updatedBy",
]


def _number_to_text(value: Any) -> Any:
    """Run:ai's samples send ids both as ``1`` and as ``"1"``."""
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return value


OrgUnitId = Annotated[
    str,
    BeforeValidator(_number_to_text, json_schema_input_type=str | int),
    Field(pattern=ID_PATTERN, description='A department or project id, such as "1".'),
]


#: A template, department, project or asset name, as create takes it (and name-availability checks it).
Name = Annotated[
    str, Field(min_length=1, max_length=253, pattern=NAME_PATTERN, description=f"A name: {NAME_RULE}.")
]
#: A field path of ``fieldsToClear``.
FieldPath = Annotated[str, Field(min_length=1, max_length=1000)]


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


# -- errors -------------------------------------------------------------------------------------------------


class ProblemOut(BaseModel):
    message: str
    field: str | None = None
    file: str | None = None
    line: int | None = None
    layer: str | None = None
    expected: str | None = None


class ErrorOut(BaseModel):
    """Run:ai's ``Error``; ``problems`` lists the same problems as ``details``, one record each."""

    code: int = Field(ge=100, le=599)
    message: str
    details: str | None = None
    problems: list[ProblemOut] | None = None


class ComplianceIssue(BaseModel):
    field: str
    details: str
    rule: str | None = None


class SubmissionErrorOut(ErrorOut):
    """Run:ai's ``SubmissionErrorV2``: every runnable issue of a refused workload."""

    complianceIssues: list[ComplianceIssue] | None = None


class TemplateRefOut(BaseModel):
    id: UUID
    name: str
    scopeType: ScopeType
    scopeId: str | None = None


class InUseErrorOut(ErrorOut):
    """An asset still referenced by templates (409)."""

    templates: list[TemplateRefOut] | None = None


class AcceptedOut(BaseModel):
    code: int
    message: str


# -- templates ----------------------------------------------------------------------------------------------


#: The scope rule in the document: the system scope takes no id, a department or project scope needs one.
SCOPE_ID_RULE: dict[str, Any] = {
    "if": {"properties": {"scopeType": {"const": "system"}}, "required": ["scopeType"]},
    "then": {"properties": {"scopeId": {"type": "null"}}},
    "else": {"required": ["scopeId"], "properties": {"scopeId": {"type": ["string", "integer"]}}},
}


class TemplateCreateMeta(_Body):
    """A template's scope: ``scopeType: system`` without ``scopeId``, or a department or project by id."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=SCOPE_ID_RULE)

    name: Name
    description: str | None = Field(default=None, max_length=250)
    scopeType: ScopeType
    scopeId: Annotated[
        str | None, BeforeValidator(_number_to_text, json_schema_input_type=str | int | None)
    ] = Field(
        default=None,
        description="The department or project id; the system scope takes none (a 400 when given).",
    )


class TemplateCreate(_Body):
    meta: TemplateCreateMeta
    spec: WorkerSpec | None = None
    assets: TemplateAssets | None = None
    masterSpecSameAsWorker: StrictBool | None = None
    master: TemplateMasterSection | None = None


class TemplateReplace(_Body):
    meta: TemplateMeta
    spec: WorkerSpec | None = None
    assets: TemplateAssets | None = None
    masterSpecSameAsWorker: StrictBool | None = None
    master: TemplateMasterSection | None = None


class TemplatePatchMeta(_Body):
    name: Name | None = None
    description: str | None = Field(default=None, max_length=250)


class TemplatePatch(_Body):
    meta: TemplatePatchMeta | None = None
    spec: WorkerSpec | None = None
    assets: TemplateAssets | None = None
    masterSpecSameAsWorker: StrictBool | None = None
    master: TemplateMasterSection | None = None
    fieldsToClear: list[FieldPath] | None = Field(
        default=None, description="Field paths to clear before merging, such as spec.image or master."
    )


class TemplatePreview(_Body):
    """A template body composed without storing it."""

    meta: TemplateCreateMeta
    spec: WorkerSpec | None = None
    assets: TemplateAssets | None = None
    masterSpecSameAsWorker: StrictBool | None = None
    master: TemplateMasterSection | None = None


class RunnableIssueOut(BaseModel):
    replica: Literal["worker", "master"]
    field: str
    message: str


class RunnableOut(BaseModel):
    isRunnable: bool
    issue: str | None
    issues: list[RunnableIssueOut]
    warnings: list[RunnableIssueOut]


class TemplateMetaOut(BaseModel):
    id: UUID
    name: str
    description: str | None = None
    workloadType: Literal["Distributed"]
    scopeType: ScopeType
    scopeId: str | None
    departmentId: str | None = None
    projectId: str | None = None
    createdBy: str
    createdAt: str = Field(json_schema_extra={"format": "date-time"})
    updatedBy: str
    updatedAt: str = Field(json_schema_extra={"format": "date-time"})


class TemplateOut(BaseModel):
    meta: TemplateMetaOut
    spec: WorkerSpec
    assets: TemplateAssets
    masterSpecSameAsWorker: bool
    master: TemplateMasterSection | None
    runnable: RunnableOut
    combinedSpec: WorkerSpec | None
    combinedMasterSpec: MasterSpec | None


class Pagination(BaseModel):
    limit: int
    offset: int
    nextOffset: int | None


class TemplateListOut(BaseModel):
    entries: list[TemplateOut]
    pagination: Pagination


class CountOut(BaseModel):
    count: int


class ExplainEntryOut(BaseModel):
    replica: Literal["worker", "master"]
    field: str
    action: Literal["set", "added", "excluded", "derived"]
    value: Any = None
    layer: str | None = None
    file: str | None = None
    line: int | None = None


class ExplainOut(BaseModel):
    entries: list[ExplainEntryOut]
    warnings: list[RunnableIssueOut]


# -- defaults -----------------------------------------------------------------------------------------------


class DefaultsDocument(_Body):
    """A scope's layer document, the shape of ``defaults.yaml``."""

    spec: WorkerSpec | None = None
    masterSpecSameAsWorker: StrictBool | None = None
    master: MasterDefaults | None = None


class DefaultsPatch(DefaultsDocument):
    fieldsToClear: list[FieldPath] | None = Field(
        default=None, description="Field paths to clear before merging, such as spec.nodePools."
    )


# -- departments and projects -------------------------------------------------------------------------------


class DepartmentIn(_Body):
    name: Name
    description: str | None = Field(default=None, max_length=250)


class ProjectIn(_Body):
    name: Name
    parentId: OrgUnitId
    description: str | None = Field(default=None, max_length=250)


class ProjectUpdate(_Body):
    name: Name
    description: str | None = Field(default=None, max_length=250)


class _Audited(BaseModel):
    createdBy: str
    createdAt: str = Field(json_schema_extra={"format": "date-time"})
    updatedBy: str
    updatedAt: str = Field(json_schema_extra={"format": "date-time"})


class DepartmentOut(_Audited):
    id: str
    name: str
    description: str | None = None


class ProjectOut(_Audited):
    id: str
    name: str
    description: str | None = None
    parentId: str
    parentName: str


class DepartmentListOut(BaseModel):
    departments: list[DepartmentOut]


class ProjectListOut(BaseModel):
    projects: list[ProjectOut]


# -- assets -------------------------------------------------------------------------------------------------


class EnvironmentAssetIn(_Body):
    meta: AssetMeta
    spec: EnvironmentAssetSpec


class ComputeAssetIn(_Body):
    meta: AssetMeta
    spec: ComputeAssetSpec


class DatasourceAssetIn(_Body):
    meta: AssetMeta
    spec: DatasourceAssetSpec


class AssetMetaOut(_Audited):
    id: UUID
    name: str
    description: str | None = None
    kind: Literal["environment", "compute", "datasource"]


class EnvironmentAssetOut(BaseModel):
    meta: AssetMetaOut
    spec: EnvironmentAssetSpec


class ComputeAssetOut(BaseModel):
    meta: AssetMetaOut
    spec: ComputeAssetSpec


class DatasourceAssetOut(BaseModel):
    meta: AssetMetaOut
    spec: DatasourceAssetSpec


class EnvironmentAssetListOut(BaseModel):
    entries: list[EnvironmentAssetOut]


class ComputeAssetListOut(BaseModel):
    entries: list[ComputeAssetOut]


class DatasourceAssetListOut(BaseModel):
    entries: list[DatasourceAssetOut]


# -- workloads ----------------------------------------------------------------------------------------------


class WorkloadCreate(_Body):
    name: str = Field(
        min_length=1,
        max_length=63,
        pattern=WORKLOAD_NAME_PATTERN,
        description=f"A workload name: {WORKLOAD_NAME_RULE}.",
    )
    useGivenNameAsPrefix: StrictBool = False
    projectId: OrgUnitId
    clusterId: UUID
    templateId: UUID | None = None
    spec: WorkerSpec | None = None
    masterSpecSameAsWorker: StrictBool | None = None
    masterSpec: MasterSpec | None = None


DesiredPhase = Literal["Running", "Stopped", "Deleted"]
Phase = Literal[
    "Creating",
    "Initializing",
    "Resuming",
    "Pending",
    "Deleting",
    "Running",
    "Updating",
    "Stopped",
    "Stopping",
    "Degraded",
    "Failed",
    "Completed",
    "Terminating",
    "Unknown",
]


class WorkloadOut(BaseModel):
    name: str
    requestedName: str
    workloadId: UUID
    projectId: str
    departmentId: str | None = None
    clusterId: UUID
    createdBy: str
    createdAt: str = Field(json_schema_extra={"format": "date-time"})
    desiredPhase: DesiredPhase
    actualPhase: Phase | None = None
    deletedAt: str | None = Field(default=None, json_schema_extra={"format": "date-time"})
    spec: WorkerSpec
    masterSpecSameAsWorker: bool
    masterSpec: MasterSpec | None


class HealthOut(BaseModel):
    status: Literal["ok"]
