"""Request and response models: what FastAPI validates and what the OpenAPI document says.

Request models forbid unknown fields and reuse the engine's spec models (``WorkerSpec``, ``MasterSpec``,
``TemplateAssets``...), so a body is held to the same schema as a file of a templates folder.  Response
models only document: handlers return plain JSON (the composed bodies come from the engine), and the
schemathesis suite checks that what the server sends matches these models.
"""

from __future__ import annotations

import functools
import operator
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Optional, get_args
from uuid import UUID

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    Strict,
    StrictBool,
    WithJsonSchema,
    create_model,
)

from template_engine.kinds import KINDS, TEMPLATE_KINDS, WorkloadKind
from template_engine.models import documents as _documents
from template_engine.models import orgunit as _orgunit
from template_engine.models.documents import (
    PATTERN_WORDS,
    MasterDefaults,
    TemplateAssets,
    TemplateMasterSection,
    TemplateMeta,
)
from template_engine.models.markers import MergeKey
from template_engine.models.spec import (
    ImagePullSecret,
    MasterSpec,
    WorkerSpec,
)
from template_engine.scopes import LEVEL_BY_TYPE, RunaiScopeType

#: Template, asset, department and project names: the models' own rule (the pattern bounds the length too, to
#: ``NAME_MAX_LENGTH``: each name becomes a file or folder name of an export).
NAME_PATTERN = _documents.NAME_PATTERN
NAME_MAX_LENGTH = _documents.NAME_MAX_LENGTH
NAME_RULE = (
    "letters, digits, '.', '_' and '-', starting and ending with a letter or digit, "
    f"at most {NAME_MAX_LENGTH} characters"
)
#: Workload names become Kubernetes object names: a DNS label.
WORKLOAD_NAME_PATTERN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
WORKLOAD_NAME_RULE = (
    "lowercase letters, digits and '-', starting and ending with a letter or digit, at most 63 characters"
)
#: Department and project ids, in paths, queries and bodies.
ID_PATTERN = _orgunit.ID_PATTERN
#: One entity tag of RFC 9110 (section 8.8.3): an opaque tag of ``etagc`` in double quotes, maybe weak.
IF_MATCH_TAG = r'(?P<weak>W/)?"(?P<opaque>[\x21\x23-\x7e\x80-\xff]*)"'
_ANY_TAG = r'(W/)?"[\x21\x23-\x7e\x80-\xff]*"'
#: ``If-Match`` (RFC 9110 section 13.1.1): ``*``, or a comma-separated list of entity tags (optional
#: whitespace around the commas, empty elements ignored).  :mod:`.etags` parses and compares it.
IF_MATCH_PATTERN = rf"^[ \t]*(\*|(,[ \t]*)*{_ANY_TAG}([ \t]*,([ \t]*{_ANY_TAG})?)*)[ \t]*$"

#: Every pattern a request is checked against, in plain words: what a 400 says instead of the expression.
PATTERN_RULES: dict[str, str] = {
    **{pattern: f"must be {words}" for pattern, words in PATTERN_WORDS.items()},
    NAME_PATTERN: f"must be a name: {NAME_RULE}",
    WORKLOAD_NAME_PATTERN: f"must be a workload name: {WORKLOAD_NAME_RULE}",
    IF_MATCH_PATTERN: 'must be * or entity tags separated by commas, each in double quotes, such as "3" '
    '(RFC 9110: W/"3" is weak and never matches)',
}
#: The scope types a template has (responses): the top scope is answered ``system``.  The levels the
#: service serves, as the scope table names them (checked below).
OwnScopeType = Literal["system", "cluster", "department", "project"]
#: The served levels as Run:ai names them in a policy's ``scope`` and an asset's ``meta.scope``.
ServedScope = Literal["tenant", "cluster", "department", "project"]
assert get_args(ServedScope) == tuple(LEVEL_BY_TYPE[level].runai_scope for level in get_args(OwnScopeType))
#: The scope types the service takes: Run:ai calls the top scope ``tenant``; ``system`` is this service's
#: name for it (and Run:ai's internal one).
SCOPE_TYPES = tuple(alias for level in get_args(OwnScopeType) for alias in LEVEL_BY_TYPE[level].aliases)
#: The scope types a request may name: every level of the scope table, and ``tenant`` (the system's other
#: name).
ScopeType = Annotated[
    RunaiScopeType,
    WithJsonSchema(
        {
            "type": "string",
            "enum": list(SCOPE_TYPES),
            "description": "system (or tenant), cluster, department or project",
        }
    ),
]
#: This service serves one tenant; its id is the ``scopeId`` of the top scope and every ``tenantId``.
TENANT_ID = 1
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
#: The fields Run:ai's ``GET /api/v1/workloads`` sorts and filters by.
WorkloadSortBy = Literal[
    "type",
    "name",
    "clusterId",
    "projectId",
    "projectName",
    "departmentId",
    "departmentName",
    "createdAt",
    "deletedAt",
    "submittedBy",
    "phase",
    "completedAt",
    "nodepool",
    "distributedFramework",
    "allocatedGPU",
    "idleGpus",
    "idleAllocatedGpus",
    "phaseUpdatedAt",
    "category",
    "priority",
    "totalPendingTimeSeconds",
    "totalRunningTimeSeconds",
    "priorityClassName",
    "guaranteedRuntimeEndsAt",
    "aiApplicationId",
    "aiApplicationName",
]
#: Run:ai's ``PolicyRuleEnum``: the rule a compliance issue breaks.
PolicyRule = Literal["min", "max", "step", "options", "required", "canEdit", "canAdd", "locked"]


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
    str,
    Field(
        min_length=1, max_length=NAME_MAX_LENGTH, pattern=NAME_PATTERN, description=f"A name: {NAME_RULE}."
    ),
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
    """An item of Run:ai's ``SubmissionErrorV2.complianceIssues``: a request problem or a runnable issue."""

    field: str
    details: str
    rule: PolicyRule | None = None


class SubmissionErrorOut(ErrorOut):
    """Run:ai's ``SubmissionErrorV2``: every runnable issue of a refused workload."""

    complianceIssues: list[ComplianceIssue] | None = None


class TemplateRefOut(BaseModel):
    id: UUID
    name: str
    scopeType: OwnScopeType
    scopeId: str


class PolicyRefOut(BaseModel):
    scope: ServedScope
    clusterId: UUID | None = None
    departmentId: str | None = None
    projectId: int | None = None
    name: str


class InUseErrorOut(ErrorOut):
    """An asset still referenced by templates or imposed by policies (409)."""

    templates: list[TemplateRefOut] | None = None
    policies: list[PolicyRefOut] | None = None


class AcceptedOut(BaseModel):
    code: int
    message: str


# -- templates ----------------------------------------------------------------------------------------------


#: The scope rule in the document: the top scope (``system`` or ``tenant``) takes no id but the tenant's own,
#: a cluster, department or project scope needs one.
SCOPE_ID_RULE: dict[str, Any] = {
    "if": {"properties": {"scopeType": {"enum": ["system", "tenant"]}}, "required": ["scopeType"]},
    "then": {"properties": {"scopeId": {"enum": [None, str(TENANT_ID), TENANT_ID]}}},
    "else": {"required": ["scopeId"], "properties": {"scopeId": {"type": ["string", "integer"]}}},
}
SCOPE_ID_WORDS = (
    "The cluster's UUID, or the department or project id. The system scope takes none, or the tenant's id "
    f"{TENANT_ID} (tenant is Run:ai's name for the system scope); any other is a 400."
)


class TemplateCreateMeta(_Body):
    """A template's scope: the top scope (``system``, or ``tenant`` as Run:ai calls it) without ``scopeId``,
    a cluster by its UUID, or a department or project by id."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=SCOPE_ID_RULE)

    name: Name
    description: str | None = Field(default=None, min_length=1, max_length=250)
    scopeType: ScopeType
    scopeId: Annotated[
        str | None, BeforeValidator(_number_to_text, json_schema_input_type=str | int | None)
    ] = Field(default=None, description=SCOPE_ID_WORDS)


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
    description: str | None = Field(default=None, min_length=1, max_length=250)


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
    #: For a compliance issue: the rule broken, and the policy file and line it is written at.
    rule: PolicyRule | None = None
    source: str | None = None
    #: For an object the cluster would refuse (an extension, docs/cluster.md): where in the object, and the
    #: check that refuses it.
    object: str | None = None
    check: str | None = None


class RunnableOut(BaseModel):
    isRunnable: bool
    issue: str | None
    issues: list[RunnableIssueOut]
    warnings: list[RunnableIssueOut]


#: Run:ai's ``WorkloadType`` of a template: one of the kinds it has templates of.
WorkloadTypeOut = Annotated[
    str, Field(json_schema_extra={"enum": [kind.workload_type for kind in TEMPLATE_KINDS]})
]


class TemplateMetaOut(BaseModel):
    """Run:ai's ``TemplateMetaFields``: ``scopeId`` is always a string (the tenant's id for the top scope);
    ``projectId`` is an integer, ``departmentId`` a string, as in Run:ai."""

    id: UUID
    name: str
    description: str | None = None
    workloadType: WorkloadTypeOut
    scopeType: OwnScopeType
    scopeId: str
    clusterId: UUID | None = None
    departmentId: str | None = None
    projectId: int | None = None
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


#: An integer that is absent rather than null (Run:ai's ``nextOffset`` and ``next`` are not nullable).
OptionalInt = Annotated[int | None, WithJsonSchema({"type": "integer"})]


class Pagination(BaseModel):
    limit: int
    offset: int
    nextOffset: OptionalInt = Field(
        default=None, description="The offset of the next page; absent on the last."
    )


class ComplianceInfoOut(BaseModel):
    """Run:ai's ``ComplianceInfoReason``: why a template or an asset does not comply with
    ``complyToProject``."""

    details: str
    field: str | None = None
    rule: PolicyRule | None = None


class TemplateEntryOut(TemplateOut):
    """A template of a list; ``complianceIssues`` when the list was asked ``complyToProject``."""

    complianceIssues: list[ComplianceInfoOut] | None = None


class TemplateListOut(BaseModel):
    entries: list[TemplateEntryOut]
    pagination: Pagination


class CountOut(BaseModel):
    count: int


@dataclass(frozen=True)
class TemplateShapes:
    """The bodies of one kind's template routes (``/api/v1/workload-templates/{segment}``): the request
    bodies, each Run:ai's ``<Kind>TemplateCreationRequest``... without ``kind`` (the route says it), and the
    answers, Run:ai's ``<Kind>Template`` and its list."""

    create: type[BaseModel]
    #: The body of ``POST .../{segment}/preview`` (an extension): a create body, composed and not stored.
    preview: type[BaseModel]
    replace: type[BaseModel]
    patch: type[BaseModel]
    out: type[BaseModel]
    entry: type[BaseModel]
    listed: type[BaseModel]


_FIELDS_TO_CLEAR = Field(
    default=None, description="Field paths to clear before merging, such as spec.image or master."
)


def _one_role_shapes(kind: WorkloadKind) -> TemplateShapes:
    """The bodies of a kind of one replica: ``meta``, ``spec`` (the kind's spec model) and ``assets``."""
    title = kind.workload_type
    spec: Any = kind.spec_model
    common: dict[str, Any] = {"spec": (spec | None, None), "assets": (TemplateAssets | None, None)}
    create = create_model(f"{title}TemplateCreate", __base__=_Body, meta=(TemplateCreateMeta, ...), **common)
    replace = create_model(f"{title}TemplateReplace", __base__=_Body, meta=(TemplateMeta, ...), **common)
    patch = create_model(
        f"{title}TemplatePatch",
        __base__=_Body,
        meta=(TemplatePatchMeta | None, None),
        fieldsToClear=(list[FieldPath] | None, _FIELDS_TO_CLEAR),
        **common,
    )
    out = create_model(
        f"{title}TemplateOut",
        meta=(TemplateMetaOut, ...),
        spec=(spec, ...),
        assets=(TemplateAssets, ...),
        runnable=(RunnableOut, ...),
        combinedSpec=(spec | None, ...),
    )
    entry = create_model(
        f"{title}TemplateEntryOut", __base__=out, complianceIssues=(list[ComplianceInfoOut] | None, None)
    )
    entries: Any = list[entry]
    listed = create_model(f"{title}TemplateListOut", entries=(entries, ...), pagination=(Pagination, ...))
    return TemplateShapes(create, create, replace, patch, out, entry, listed)


#: The bodies of each kind's template routes, by kind name.
TEMPLATE_SHAPES: dict[str, TemplateShapes] = {
    kind.name: (
        TemplateShapes(
            TemplateCreate,
            TemplatePreview,
            TemplateReplace,
            TemplatePatch,
            TemplateOut,
            TemplateEntryOut,
            TemplateListOut,
        )
        if kind.is_distributed
        else _one_role_shapes(kind)
    )
    for kind in TEMPLATE_KINDS
}


#: Any template kind's spec (Run:ai's ``SupersetSpec``).
AnySpec: Any = functools.reduce(operator.or_, [kind.spec_model for kind in TEMPLATE_KINDS])


#: Run:ai's ``SupersetTemplate``: a template of any kind, :class:`TemplateOut` with any kind's spec, and the
#: master's keys (a distributed template's only) optional.
_OPTIONAL_MASTER: dict[str, Any] = {
    name: (Optional[TemplateOut.model_fields[name].annotation], None)  # noqa: UP045 - a value, not a hint
    for name in ("masterSpecSameAsWorker", "master", "combinedMasterSpec")
}
SupersetTemplateOut: type[TemplateOut] = create_model(
    "SupersetTemplateOut",
    __base__=TemplateOut,
    spec=(AnySpec, ...),
    combinedSpec=(AnySpec | None, ...),
    **_OPTIONAL_MASTER,
)


class SupersetEntryOut(SupersetTemplateOut):
    complianceIssues: list[ComplianceInfoOut] | None = None


class SupersetListOut(BaseModel):
    entries: list[SupersetEntryOut]
    pagination: Pagination


class ExplainEntryOut(BaseModel):
    replica: Literal["worker", "master"]
    field: str
    action: Literal["set", "added", "excluded", "derived", "unset"]
    value: Any = None
    layer: str | None = None
    file: str | None = None
    line: int | None = None
    #: The policy rules that govern the field, each with its policy and file and line.
    rules: list[str] | None = None


class ExplainOut(BaseModel):
    entries: list[ExplainEntryOut]
    warnings: list[RunnableIssueOut]
    #: The template's ``runnable``, as its GET answers it (the issues of a template that cannot be composed).
    runnable: RunnableOut


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

# Their bodies are Run:ai's: ``service/orgunit_shapes.py``.


class _Audited(BaseModel):
    createdBy: str
    createdAt: str = Field(json_schema_extra={"format": "date-time"})
    updatedBy: str
    updatedAt: str = Field(json_schema_extra={"format": "date-time"})


# -- policies -----------------------------------------------------------------------------------------------

#: Run:ai's ``PolicyScope`` parameter (``tenant`` is the top scope; ``system`` is taken as its other name).
PolicyScopeType = Annotated[
    RunaiScopeType,
    WithJsonSchema(
        {
            "type": "string",
            "enum": ["tenant", "system", "cluster", "department", "project"],
            "description": "tenant (or system), cluster, department or project",
        }
    ),
]
_NULL = {"type": "null"}
#: Which ids each policy scope takes, in the document as the service enforces it
#: (:func:`~.placements.policy_scope`): the tenant none, a cluster its ``clusterId`` and no ``departmentId``
#: or ``projectId``, a department its ``departmentId`` and no ``projectId``, a project its ``projectId`` (an
#: id of a level above is taken when it is the scope's own).
POLICY_SCOPE_RULE: dict[str, Any] = {
    "allOf": [
        {
            "if": {"properties": {"scope": {"enum": ["tenant", "system"]}}, "required": ["scope"]},
            "then": {"properties": {"clusterId": _NULL, "departmentId": _NULL, "projectId": _NULL}},
        },
        {
            "if": {"properties": {"scope": {"const": "cluster"}}, "required": ["scope"]},
            "then": {
                "required": ["clusterId"],
                "properties": {"clusterId": {"not": _NULL}, "departmentId": _NULL, "projectId": _NULL},
            },
        },
        {
            "if": {"properties": {"scope": {"const": "department"}}, "required": ["scope"]},
            "then": {
                "required": ["departmentId"],
                "properties": {"departmentId": {"not": _NULL}, "projectId": _NULL},
            },
        },
        {
            "if": {"properties": {"scope": {"const": "project"}}, "required": ["scope"]},
            "then": {"required": ["projectId"], "properties": {"projectId": {"not": _NULL}}},
        },
    ]
}


#: Run:ai's ``ProjectIdOptional`` in a policy's ``meta``: an int32 (the SDK's ``StrictInt``); text is refused.
PolicyProjectId = Annotated[
    int, Strict(), Field(ge=0, le=2_147_483_647, description="The id of the project.")
]


class PolicyMetaIn(_Body):
    """Run:ai's ``PolicyCreationFields``: which scope's policy a write is for.  ``name`` and ``scope`` are
    required (its ``required``); ``projectId`` is an integer (``ProjectIdOptional``), ``departmentId`` a
    department id (``DepartmentIdOptional``, a string whose example is ``2``: both are taken).  The service
    names a policy after its scope: ``name`` is checked and not stored.  The tenant takes no id, a cluster its
    ``clusterId`` (its UUID), a department its ``departmentId``, a project its ``projectId``; the id of a
    level above may be given when it is the scope's own (:data:`POLICY_SCOPE_RULE`).  The read-only fields of
    ``PolicyMeta`` (``id``, the audit fields) are unknown fields here: a 400 names each."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=POLICY_SCOPE_RULE)

    name: str = Field(min_length=1, max_length=253, description="A chosen name for the policy.")
    scope: PolicyScopeType
    departmentId: OrgUnitId | None = None
    projectId: PolicyProjectId | None = None
    clusterId: UUID | None = None


class ImposedAssetsIn(_Body):
    """Run:ai's ``DistributedImposedAssets``: data source asset ids, per replica."""

    worker: list[str] | None = None
    master: list[str] | None = None


class PolicyIn(_Body):
    """Run:ai's ``DistributedPolicyDefaultsAndRulesV2``: ``rules`` in Run:ai's vocabulary (checked as a
    ``policy.yaml``), ``defaults`` in Run:ai's itemized form (``{instances: [...]}`` for keyed lists),
    ``imposedAssets`` as asset ids.  ``status`` is read-only (the service's ``PolicyValidationStatus`` of a
    stored policy): a write that gives it is a 400 naming ``policy.status``."""

    defaults: dict[str, Any] | None = None
    rules: dict[str, Any] | None = Field(
        default=None,
        description="Run:ai's DistributedPolicyRulesV2, read as a policy.yaml is. A rule's min and max are "
        "values the ruled field can hold (numWorkers 1 to 2147483647, a port 1 to 65535, gpuPortionRequest 0 "
        "to 1), within Run:ai's rule schema (IntegerRules' min, max and step are int32; NumberRules and "
        "defaultFrom.factor are doubles); step and factor are above 0. `template-engine schema policy` "
        "gives every field's bounds.",
    )
    imposedAssets: ImposedAssetsIn | None = None
    status: dict[str, Any] | None = Field(
        default=None,
        json_schema_extra={"readOnly": True},
        description="Read-only: a write giving it is a 400.",
    )


class PolicyOverwrite(_Body):
    """Run:ai's ``DistributedPolicyOverwriteRequestV2`` (``meta`` names the scope, so it is required)."""

    meta: PolicyMetaIn
    policy: PolicyIn | None = None


class PolicyChange(PolicyOverwrite):
    """Run:ai's ``DistributedPolicyChangeRequestV2``: ``reset`` clears the fields at these paths, then
    ``policy`` is merged in.  A path is Run:ai's ``FieldsToReset`` (``worker.compute.gpuDevicesRequest``:
    the default and the rules of that field) or the service's, relative to ``policy`` (``rules.worker.tty``,
    ``imposedAssets.worker``, ``defaults.worker.environmentVariables.instances[name=TZ]``: that part only);
    :func:`~template_engine.service.policy_api.reset_targets`."""

    reset: list[FieldPath] | None = Field(
        default=None,
        description="Fields whose policy to clear first: worker.<field> or master.<field> (Run:ai's "
        "FieldsToReset: the default and the rules), or a path under defaults, rules or imposedAssets.",
    )


class PolicyMetaOut(_Audited):
    """Run:ai's ``PolicyMeta``."""

    id: UUID
    name: str
    scope: ServedScope
    clusterId: UUID | None = None
    departmentId: str | None = None
    projectId: int | None = None
    tenantId: int


class PolicyOut(BaseModel):
    """Run:ai's ``DistributedPolicyV2``: the scope's own policy (absent when it has none), the effective
    policy of the scope (every rule with its ``sourceOfRule``) and when it last changed."""

    meta: PolicyMetaOut | None = None
    policy: dict[str, Any] | None = None
    effective: dict[str, Any]
    effectiveUpdatedAt: str | None = Field(default=None, json_schema_extra={"format": "date-time"})


# -- assets -------------------------------------------------------------------------------------------------


#: A UUID as text (Run:ai's ``format: uuid``).
UUID_PATTERN = r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"


class WorkloadSupportedTypesIn(_Body):
    """Run:ai's ``AssetCreationFields.workloadSupportedTypes``: stored as given, composes nothing here."""

    model_config = ConfigDict(extra="forbid", strict=True)
    inference: bool | None = None
    workspace: bool | None = None
    training: bool | None = None
    distributed: bool | None = None
    distFramework: Literal["MPI", "PyTorch", "TF", "XGBoost"] | None = None


class AssetCreationMetaIn(_Body):
    """Run:ai's ``AssetCreationRequest``: the name and description of the folder's asset meta, the scope
    (``tenant``, ``cluster`` with ``clusterId``, ``department`` with ``departmentId``, ``project`` with
    ``projectId``; ``system`` is refused), and the fields that compose nothing here, stored as given."""

    model_config = ConfigDict(extra="forbid", strict=True)
    name: Name
    description: str | None = Field(default=None, min_length=1, max_length=250)
    scope: RunaiScopeType
    clusterId: str | None = Field(default=None, pattern=UUID_PATTERN)
    departmentId: str | None = None
    projectId: int | None = None
    autoDelete: bool | None = None
    workloadSupportedTypes: WorkloadSupportedTypesIn | None = None
    private: bool | None = None


class AssetUpdateMetaIn(BaseModel):
    """Run:ai's ``AssetUpdateRequest``: only the name and description change; the rest of an ``AssetMeta``
    sent back as read is ignored (the scope of an asset is set when it is created)."""

    model_config = ConfigDict(extra="ignore", strict=True)
    name: Name
    description: str | None = Field(default=None, min_length=1, max_length=250)


class AssetCreationIn(_Body):
    """Run:ai's ``*CreationRequest`` of every asset kind; ``spec`` is the kind's Run:ai spec, checked by
    :mod:`..asset_shapes` and the folder's model of the kind."""

    meta: AssetCreationMetaIn
    spec: dict[str, Any] | None


class AssetUpdateIn(_Body):
    """Run:ai's ``*UpdateRequest`` of every asset kind (``ConfigMapUpdateRequest`` and
    ``SecretAssetUpdateRequest`` have no spec, ``PVCUpdateRequest`` only ``PvcFieldsUpdatable``)."""

    meta: AssetUpdateMetaIn
    spec: dict[str, Any] | None = None


class AssetMetaOut(_Audited):
    """Run:ai's ``AssetMeta``."""

    id: UUID
    name: str
    description: str | None = None
    scope: ServedScope
    departmentId: str | None = None
    projectId: int | None = None
    clusterId: UUID | None = None
    tenantId: int
    kind: str
    autoDelete: bool | None = None
    workloadSupportedTypes: dict[str, Any] | None = None
    private: bool | None = None


class AssetComplianceOut(BaseModel):
    """Run:ai's ``ComplianceInfo``: whether the asset may be used in a workload of ``complyToProject``."""

    imposed: bool = Field(description="Whether the project's policies impose it (data sources).")
    compliance: bool = Field(description="Whether it complies with the project's effective policy.")
    reason: list[ComplianceInfoOut] | None = Field(default=None, description="Why not, when it does not.")


class AssetOut(BaseModel):
    """Run:ai's ``EnvironmentAsset``, ``ComputeAsset``, ``NFSAsset``... (``spec`` in the kind's Run:ai form),
    and an entry of ``DatasourceListResponse`` (``spec`` keyed by the data source kind); ``compliance`` when
    ``complyToProject`` was given."""

    meta: AssetMetaOut
    spec: dict[str, Any]
    compliance: AssetComplianceOut | None = None


class AssetListOut(BaseModel):
    entries: list[AssetOut]


# -- workloads ----------------------------------------------------------------------------------------------


class WorkloadMasterSpec(MasterSpec):
    """A workload's ``masterSpec``: the master spec plus the master's own ``imagePullSecrets`` (Run:ai's
    ``MasterSpec`` has them; templates and defaults keep pull secrets in the worker spec only)."""

    imagePullSecrets: Annotated[list[ImagePullSecret] | None, MergeKey("name")] = None


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
    masterSpec: WorkloadMasterSpec | None = None


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
    masterSpec: WorkloadMasterSpec | None


class ConditionOut(BaseModel):
    type: str
    status: str
    message: str | None = None
    reason: str | None = None
    lastTransitionTime: str | None = Field(default=None, json_schema_extra={"format": "date-time"})


Time = Annotated[str, Field(json_schema_extra={"format": "date-time"})]


class WorkloadSummaryOut(BaseModel):
    """Run:ai's ``Workload`` (``GET /api/v1/workloads``): every key its schema requires, ``deletedAt`` and
    ``priority`` present even when null.  There is no cluster behind the service: no pods run."""

    tenantId: int
    id: UUID
    name: str
    #: Run:ai's ``workloadType`` of the workload's kind (``Distributed``, ``Training``...).
    type: str = Field(
        json_schema_extra={"enum": [k.workload_type for k in KINDS if k.workload_segment is not None]}
    )
    category: str
    source: Literal["Control-plane"]
    clusterId: UUID
    projectId: str
    projectName: str
    departmentId: str
    departmentName: str
    namespace: str
    createdAt: Time
    updatedAt: Time
    deletedAt: Time | None
    submittedBy: str
    phase: Phase
    phaseUpdatedAt: Time
    k8sPhase: str
    k8sPhaseUpdatedAt: Time
    runningPods: int
    priority: int | None
    priorityClassName: str
    conditions: list[ConditionOut]
    images: list[str]
    distributedFramework: str | None = None


class WorkloadDetailedOut(WorkloadSummaryOut):
    """Run:ai's ``WorkloadDetailed`` (``GET /api/v1/workloads/{workloadId}``)."""


class WorkloadListOut(BaseModel):
    workloads: list[WorkloadSummaryOut]
    next: OptionalInt = Field(default=None, description="The offset of the next page; absent on the last.")


# -- tokens -------------------------------------------------------------------------------------------------


class TokenRequestIn(BaseModel):
    """Run:ai's ``TokenRequest`` for an application's client credentials, strict: its keys as Run:ai's
    document spells them (``clientID``/``clientSecret``, the deprecated ``appID``/``appSecret``) or as
    Run:ai's Python SDK sends them (``AppId``/``AppSecret``), one pair, nothing else."""

    model_config = ConfigDict(extra="forbid")

    grantType: Literal["app_token", "client_credentials"] | None = None
    clientID: str | None = Field(default=None, description="The application's client id.")
    clientSecret: str | None = Field(default=None, description="Its secret.")
    appID: str | None = Field(default=None, description="The client id (deprecated: use clientID).")
    appSecret: str | None = Field(default=None, description="The secret (deprecated: use clientSecret).")
    AppId: str | None = Field(default=None, description="The client id, as Run:ai's Python SDK sends it.")
    AppSecret: str | None = Field(default=None, description="The secret, as Run:ai's Python SDK sends it.")


class TokenOut(BaseModel):
    """Run:ai's ``TokenResponse``: a signed bearer token (a JWT) and its lifetime in seconds."""

    accessToken: str
    expiresIn: int


class HealthOut(BaseModel):
    status: Literal["ok"]


class ReadyOut(BaseModel):
    """``GET /ready``'s answer: ``ready`` with the schema's revision (200), or ``unready`` with why (503)."""

    status: Literal["ready", "unready"]
    reason: str | None = None
    revision: str
