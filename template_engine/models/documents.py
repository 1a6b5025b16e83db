"""The documents a templates folder (or the service's database) holds: layers, templates, assets, the org."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, field_validator

from template_engine.models.kind_specs import InferenceSpec, TrainingSpec, WorkspaceSpec
from template_engine.models.orgunit import ID_PATTERN, UUID_PATTERN, DepartmentRunaiFields, ProjectRunaiFields
from template_engine.models.spec import (
    ComputeAssetSpec,
    DatasourceAssetSpec,
    EnvironmentAssetSpec,
    MasterSpec,
    WorkerSpec,
)
from template_engine.models.spec_items import DEFAULT_MODE_PATTERN
from template_engine.paths import Path
from template_engine.scopes import ScopeType as ScopeType  # re-exported: the models name scopes by it

#: The workload kinds (``template_engine.kinds.KINDS`` describes each): a template file says its kind in
#: ``kind:`` (none: ``distributed``, as every template was before issue 32).
KindName = Literal["distributed", "training", "workspace", "inference", "distributed-inference"]
AssetKind = Literal["environment", "compute", "datasource"]

#: The folder under ``assets/`` that holds each kind.
ASSET_FOLDERS: dict[AssetKind, str] = {
    "environment": "environments",
    "compute": "computes",
    "datasource": "datasources",
}

#: The longest name of a template, asset, department or project.  Each name becomes a file or folder name of
#: a templates folder and of ``db export`` (``NAME.yaml``, ``departments/NAME/``); most file systems take at
#: most 255 bytes in one, and a name is ASCII (the pattern), so 250 characters always fit with ``.yaml``.
#: Run:ai documents no longer limit (a template name is only ``minLength: 1``).
NAME_MAX_LENGTH = 250
#: A name: ASCII letters, digits, '.', '_' and '-', starting and ending with a letter or digit.  The pattern
#: bounds the length too, so that every check made with it (a query parameter...) holds names to the limit.
NAME_PATTERN = rf"^[A-Za-z0-9]([A-Za-z0-9._-]{{0,{NAME_MAX_LENGTH - 2}}}[A-Za-z0-9])?$"
_NAME = Field(min_length=1, max_length=NAME_MAX_LENGTH, pattern=NAME_PATTERN)
_OPTIONAL_NAME = Field(default=None, min_length=1, max_length=NAME_MAX_LENGTH, pattern=NAME_PATTERN)

#: Every pattern of the models in plain words, for messages: a user never sees a regular expression.
PATTERN_WORDS: dict[str, str] = {
    NAME_PATTERN: "a name of letters, digits, '.', '_' and '-' that starts and ends with a letter or digit "
    f"(at most {NAME_MAX_LENGTH} characters), such as 'vit-finetune'",
    DEFAULT_MODE_PATTERN: "a 4-character octal file mode, such as '0644'",
    UUID_PATTERN: "a UUID, such as '71f69d83-ba66-4822-adf5-55ce55efd210'",
    ID_PATTERN: "an id of 1 to 18 ASCII digits, such as '1'",
}


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class MasterDefaults(_Strict):
    """The ``master`` section of a defaults document."""

    spec: MasterSpec | None = None


class LayerDocument(_Strict):
    """Scope defaults: ``system/``, ``departments/D/`` or ``projects/P/defaults.yaml``."""

    spec: WorkerSpec | None = None
    masterSpecSameAsWorker: bool | None = None
    master: MasterDefaults | None = None


class DatasourceOverrides(_Strict):
    containerPath: str | None = Field(default=None, min_length=1)


class DatasourceRef(_Strict):
    """A data source asset used by a template, optionally moved inside the container."""

    name: str = _NAME
    overrides: DatasourceOverrides | None = None


class TemplateAssets(_Strict):
    """Assets a template refers to by name."""

    environment: str | None = _OPTIONAL_NAME
    compute: str | None = _OPTIONAL_NAME
    datasources: list[DatasourceRef] | None = None


class TemplateMasterSection(_Strict):
    """A template's ``master``: its own spec and assets."""

    spec: MasterSpec | None = None
    assets: TemplateAssets | None = None


class TemplateMeta(_Strict):
    name: str = _NAME
    #: 1 to 250 characters, as Run:ai's ``TemplateDescription`` (no description is ``null``, not ``""``).
    description: str | None = Field(default=None, min_length=1, max_length=250)


class TemplateDocument(_Strict):
    """A distributed training template, as the API's create request body (without scope); a file may say
    ``kind: distributed``."""

    meta: TemplateMeta
    kind: Literal["distributed"] | None = None
    spec: WorkerSpec | None = None
    assets: TemplateAssets | None = None
    masterSpecSameAsWorker: bool | None = None
    master: TemplateMasterSection | None = None


class _OneRoleTemplate(_Strict):
    """A template of a kind of one replica: no master (``master`` is an unknown field, and reads ``None``)."""

    #: Built when first used (as the kinds' spec models: ``models/kind_specs.py``).
    model_config = ConfigDict(defer_build=True)

    meta: TemplateMeta
    assets: TemplateAssets | None = None
    master: ClassVar[None] = None
    masterSpecSameAsWorker: ClassVar[None] = None


class TrainingTemplateDocument(_OneRoleTemplate):
    """A standard training template (``kind: training``; Run:ai's ``TrainingTemplateSpec``)."""

    kind: Literal["training"]
    spec: TrainingSpec | None = None


class WorkspaceTemplateDocument(_OneRoleTemplate):
    """A workspace template (``kind: workspace``; Run:ai's ``WorkspaceTemplateSpec``)."""

    kind: Literal["workspace"]
    spec: WorkspaceSpec | None = None


class InferenceTemplateDocument(_OneRoleTemplate):
    """An inference template (``kind: inference``; Run:ai's ``InferenceTemplateSpec``)."""

    kind: Literal["inference"]
    spec: InferenceSpec | None = None  # type: ignore[valid-type]


#: Any template document.
AnyTemplateDocument = (
    TemplateDocument | TrainingTemplateDocument | WorkspaceTemplateDocument | InferenceTemplateDocument
)


def asset_refs(doc: AnyTemplateDocument) -> tuple[tuple[AssetKind, str, Path], ...]:
    """Every asset a template names, as ``(kind, name, the field that names it)``: its own (environment,
    compute, data sources in order), then its master's.  The one reading of a template's asset names: the
    loader's reference checks, the org's :meth:`~template_engine.org.Template.asset_refs` and the service."""
    out: list[tuple[AssetKind, str, Path]] = []
    sections: list[tuple[Path, TemplateAssets | None]] = [(("assets",), doc.assets)]
    if doc.master is not None:
        sections.append((("master", "assets"), doc.master.assets))
    for root, assets in sections:
        if assets is None:
            continue
        if assets.environment:
            out.append(("environment", assets.environment, (*root, "environment")))
        if assets.compute:
            out.append(("compute", assets.compute, (*root, "compute")))
        for index, ref in enumerate(assets.datasources or ()):
            out.append(("datasource", ref.name, (*root, "datasources", index, "name")))
    return tuple(out)


class WorkloadSupportedTypes(_Strict):
    """Run:ai's ``WorkloadSupportedTypes`` of an asset: the kinds it may be used by (``false``: not by that
    kind; unset: by any) and, for distributed, the one framework it is for."""

    inference: bool | None = None
    workspace: bool | None = None
    training: bool | None = None
    distributed: bool | None = None
    distFramework: Literal["MPI", "PyTorch", "TF", "XGBoost"] | None = None


class AssetMeta(_Strict):
    name: str = _NAME
    description: str | None = Field(default=None, max_length=250)
    #: The kinds of workload the asset may be used by (Run:ai's ``meta.workloadSupportedTypes``).
    workloadSupportedTypes: WorkloadSupportedTypes | None = None


class EnvironmentAsset(_Strict):
    meta: AssetMeta
    spec: EnvironmentAssetSpec


class ComputeAsset(_Strict):
    meta: AssetMeta
    spec: ComputeAssetSpec


class DatasourceAsset(_Strict):
    meta: AssetMeta
    spec: DatasourceAssetSpec


ASSET_MODELS: dict[AssetKind, type[EnvironmentAsset | ComputeAsset | DatasourceAsset]] = {
    "environment": EnvironmentAsset,
    "compute": ComputeAsset,
    "datasource": DatasourceAsset,
}


def _project_entry(value: Any) -> Any:
    """A project of ``org.yaml`` is its name, or a mapping of its name and Run:ai's fields."""
    return {"name": value} if isinstance(value, str) else value


class OrgProject(ProjectRunaiFields):
    """A project of ``org.yaml``: ``vision``, or ``{name: vision, resources: [...]}`` with Run:ai's fields
    of a project that compose nothing (:class:`~template_engine.models.orgunit.ProjectRunaiFields`)."""

    name: str

    @field_validator("name")
    @classmethod
    def _name_length(cls, value: str) -> str:
        if not value or len(value) > NAME_MAX_LENGTH:
            raise ValueError(f"project name {value!r} must be 1 to {NAME_MAX_LENGTH} characters")
        return value

    def runai(self) -> dict[str, Any]:
        """The Run:ai fields the entry gives, as given (what the service stores in ``projects.runai``)."""
        return self.model_dump(mode="json", exclude_unset=True, exclude={"name"})


class OrgDepartment(DepartmentRunaiFields):
    """A department of ``org.yaml``: its name, description, projects, and Run:ai's fields of a department
    that compose nothing (:class:`~template_engine.models.orgunit.DepartmentRunaiFields`) beside them."""

    name: str = _NAME
    description: str | None = None
    projects: list[
        Annotated[OrgProject, BeforeValidator(_project_entry, json_schema_input_type=str | OrgProject)]
    ] = Field(default_factory=list)

    def project_names(self) -> list[str]:
        return [project.name for project in self.projects]

    def runai(self) -> dict[str, Any]:
        """The Run:ai fields the entry gives, as given (what the service stores in ``departments.runai``)."""
        return self.model_dump(mode="json", exclude_unset=True, exclude={"name", "description", "projects"})


class OrgCluster(_Strict):
    """A cluster of ``org.yaml``: its name, Run:ai's fields of a cluster that compose nothing (``domain``,
    ``version``: ``ClusterCreationRequest``) and its departments (each with its projects).  Its settings, and
    any defaults, policies, templates and assets of its own, are in ``clusters/NAME/``."""

    name: str = _NAME
    description: str | None = None
    domain: str | None = Field(default=None, max_length=253)
    version: str | None = Field(default=None, max_length=64)
    departments: list[OrgDepartment] = Field(default_factory=list)

    def runai(self) -> dict[str, Any]:
        """The fields the entry gives beside its name and departments, as given (what the service stores in
        ``clusters.runai``: Run:ai's ``domain`` and ``version``, and the description, which Run:ai's clusters
        do not have)."""
        return self.model_dump(mode="json", exclude_unset=True, exclude={"name", "departments"})


class OrgDocument(_Strict):
    """``org.yaml``: the departments and their projects (or the clusters, each with its departments), and
    the templates that are drafts.  An org that names no clusters runs on one, set by ``cluster.yaml``."""

    departments: list[OrgDepartment] = Field(default_factory=list)
    clusters: list[OrgCluster] | None = None
    #: Template files (``projects/speech/templates/asr-sweep.yaml``) that are deliberately unfinished:
    #: ``check`` reports their pairs and does not fail on them (docs/decisions.md, "Draft templates").
    drafts: list[str] = Field(default_factory=list)


#: An example of the shape a model expects, for the message of a value that has another shape (a mapping
#: where a list belongs...).  Keyed by the model that holds the mis-shaped field.
SHAPE_EXAMPLES: dict[type[BaseModel], str] = {
    OrgDocument: "departments: [{name: research, projects: [vision, nlp]}]",
    OrgCluster: "{name: east, departments: [{name: research, projects: [vision, nlp]}]}",
    OrgDepartment: "{name: research, projects: [vision, nlp]}",
    OrgProject: "vision, or {name: vision, resources: [{nodePool: {id: '1'}, gpu: {deserved: 2}}]}",
}
