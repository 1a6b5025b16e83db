"""A whole org set up from nothing with the real Run:ai Python SDK (runapy 1.224.0), as a platform team would.

Each test starts a live server on an EMPTY database (no ``--seed``), logs in with client credentials as the
SDK's documentation shows, and drives the SDK's own API classes (``runai.api``) with its typed request
models.  Every answer is parsed into the SDK model Run:ai's document names for it (``Model.from_dict``) and,
whatever :data:`sdk_helpers.WHOLE_DOCUMENT` says for the rest of the suite, validated against Run:ai's whole
OpenAPI document (:func:`sdk_helpers.whole_document`): a body, status or error that does not conform fails
the call that received it.

Where runapy 1.224.0 has no model for Run:ai's schema, the body is validated against that schema of the
whole document by name (:func:`_conforms`): the SDK's ``Project`` (and so ``GetProjects200Response``) is the
metrics report's ``metadata``/``current`` shape, not the org unit's ``Project``, and its template request
models drop the templates' ``assets`` (Run:ai's ``TemplateAssets``), so those bodies go as the model's
``to_dict()`` with ``assets`` added.  The service's extensions (``/api/v1/defaults/...``, a template seen
from a project) have no SDK method: they go through httpx.

The families, one test each (docs/http-api.md, "The Run:ai SDK, method by method"): the login, departments,
projects, every asset kind, the distributed policy with Run:ai's ``reset`` form; then the whole org, a
workload submitted from it, a project moved to another department, and ``template-engine db export`` of the
database loaded with the library composing every template exactly as the service answers it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest
from click.testing import CliRunner
from conftest import CLUSTER
from sdk_helpers import (
    CONFORMANCE,
    Lazy,
    LiveOrg,
    install,
    live_org,
    parsed,
    runapy,
    whole_document,
    whole_schemas,
)

from template_engine import Org, compose, load_org
from template_engine.cli import main

if TYPE_CHECKING:
    from runai.runai_client import RunaiClient

install()

m = Lazy("runai.models")
errors = Lazy("runai.exceptions")
runai_client = Lazy("runai.runai_client")

CLIENT_ID, SECRET = "platform-team", "a-long-random-application-secret"
ADMIN = "org-setup-admin-token"
T = "/api/v1/workload-templates/distributed"


Live = LiveOrg


@pytest.fixture
def live(tmp_path: Path) -> Iterator[Live]:
    """A new server on an empty SQLite database (no seed) per test; every answer checked against the whole
    document while it runs (:func:`sdk_helpers.live_org`)."""
    with live_org(tmp_path, CLIENT_ID, SECRET, ADMIN) as found:
        yield found


def _conforms(schema: str, body: Any) -> Any:
    """``body`` validated against the schema ``schema`` of Run:ai's whole document (no SDK model has it)."""
    whole = whole_schemas()
    problems = whole.errors(whole.schema(schema), body)
    assert problems == [], f"not Run:ai's {schema}: {problems}"
    return body


def _resources(gpu: float, cpu: float | None = None) -> Any:
    """Run:ai's ``ResourcesNullable`` of the default node pool."""
    return m.ResourcesNullable(
        nodePool=m.ResourcesNodePool(id="1", name="default"),
        gpu=m.NonNullResource(deserved=gpu),
        cpu=m.Resource(deserved=cpu, limit=None) if cpu is not None else None,
        memory=m.ResourcesMemory(deserved=1024, units=m.Units.MIB),
    )


def _department(sdk: RunaiClient, name: str, gpu: float = 4) -> Any:
    request = m.DepartmentCreationRequest(
        name=name, clusterId=CLUSTER, description=f"the {name} department", resources=[_resources(gpu)]
    )
    answer = sdk.organizations.departments.create_department(request)
    assert answer.status_code == 201
    return parsed("DepartmentForList", answer.data)


def _project(
    sdk: RunaiClient, name: str, department_id: str, gpu: float = 1, cluster: str = CLUSTER
) -> dict[str, Any]:
    request = m.ProjectCreationRequest(
        name=name,
        clusterId=cluster,
        parentId=department_id,
        description=f"the {name} project",
        resources=[_resources(gpu, cpu=1000)],
    )
    answer = sdk.organizations.projects.create_project(request)
    assert answer.status_code == 201
    project: dict[str, Any] = _conforms("Project", answer.data)
    return project


# -- the check ---------------------------------------------------------------------------------------------


def test_the_whole_document_holds_what_the_subset_has_no_schema_for() -> None:
    """Run:ai's whole document has the org units and assets the subset lacks; a success status Run:ai does not
    declare is held to the body of the one it declares."""

    def problems(method: str, path: str, status: int, body: Any) -> list[str]:
        with whole_document():
            return CONFORMANCE.problems(method, path, status, "application/json", json.dumps(body).encode())

    department = problems("GET", "/api/v1/org-unit/departments/1", 200, {"id": "1", "name": "research"})
    assert "(body): 'clusterId' is a required property" in department
    asset = {"meta": {"name": "x", "id": "00000000-0000-4000-8000-000000000000"}, "spec": {}}
    created = problems("POST", "/api/v1/asset/environment", 201, asset)
    assert "meta: 'scope' is a required property (Run:ai's 202 body)" in created
    assert problems("GET", "/api/v1/workload-templates/count", 200, {"count": 0}) == []
    assert any("count" in p for p in problems("GET", "/api/v1/workload-templates/count", 200, {"n": 0}))


# -- login --------------------------------------------------------------------------------------------------


def test_the_sdk_logs_in_to_an_empty_org(live: Live) -> None:
    token = live.sdk.api_client._token
    assert token.count(".") == 2
    request = m.TokenRequest(
        grantType=m.TokenRequestGrantTypeEnum.CLIENT_CREDENTIALS, clientID=CLIENT_ID, clientSecret=SECRET
    )
    granted = parsed("TokenResponse", runapy.TokensApi(live.sdk.api_client).grant_token(request).data)
    assert granted.access_token.count(".") == 2
    templates = live.sdk.workloads.workload_templates
    assert parsed("CountResponse", templates.count_templates().data).count == 0
    assert (
        parsed("DistributedTemplatesListResponse", templates.list_distributed_templates().data).entries == []
    )
    with pytest.raises(errors.BadRequestException):
        runapy.TokensApi(live.sdk.api_client).grant_token(
            m.TokenRequest(
                grantType=m.TokenRequestGrantTypeEnum.CLIENT_CREDENTIALS,
                clientID=CLIENT_ID,
                clientSecret="wrong",
            )
        )


# -- org units ----------------------------------------------------------------------------------------------


def test_departments_through_the_sdk(live: Live) -> None:
    departments = live.sdk.organizations.departments
    assert parsed("GetDepartments200Response", departments.get_departments().data).departments == []
    assert parsed("CountResponse", departments.count_departments().data).count == 0
    created = _department(live.sdk, "research", gpu=4)
    assert (created.name, created.cluster_id, created.description) == (
        "research",
        CLUSTER,
        "the research department",
    )
    assert created.resources[0].gpu.deserved == 4 and created.resources[0].node_pool.id == "1"
    _department(live.sdk, "applied", gpu=2)

    got = parsed("DepartmentForList", departments.get_department(created.id).data)
    assert (got.id, got.name, got.resources[0].memory.units) == (created.id, "research", "Mib")
    listed = departments.get_departments(
        filter_by=["name=@e"],
        sort_by="name",  # the value, not the enum: see docs/http-api.md
        sort_order="desc",
        offset=0,
        limit=10,
    )
    assert [d.name for d in parsed("GetDepartments200Response", listed.data).departments] == [
        "research",
        "applied",
    ]
    counted = departments.count_departments(filter_by=["name==research"])
    assert parsed("CountResponse", counted.data).count == 1

    update = m.DepartmentUpdateRequest(description="changed", resources=[_resources(8)])
    updated = parsed("DepartmentForList", departments.update_department(created.id, update).data)
    assert (updated.description, updated.resources[0].gpu.deserved) == ("changed", 8)

    replaced = departments.update_department_resources(created.id, [_resources(6, cpu=2000)])
    assert [parsed("Resources", r).gpu.deserved for r in replaced.data] == [6]
    patch = [m.ResourcesNullable(nodePool=m.ResourcesNodePool(id="1"), cpu=m.Resource(deserved=3000))]
    patched = [parsed("Resources", r) for r in departments.patch_department_resources(created.id, patch).data]
    assert [(r.gpu.deserved, r.cpu.deserved) for r in patched] == [(6, 3000)]  # the gpu quota is kept
    again = parsed("DepartmentForList", departments.get_department(created.id).data)
    assert again.resources[0].cpu.deserved == 3000 and again.description == "changed"

    assert departments.delete_department(created.id).status_code == 204
    with pytest.raises(errors.NotFoundException) as gone:
        departments.get_department(created.id)
    assert parsed("Error", gone.value.data).code == 404
    assert parsed("CountResponse", departments.count_departments().data).count == 1


def test_projects_through_the_sdk(live: Live) -> None:
    projects = live.sdk.organizations.projects
    assert projects.get_projects().data == {"projects": []}
    assert parsed("CountResponse", projects.count_projects().data).count == 0
    research = _department(live.sdk, "research")
    created = _project(live.sdk, "vision", research.id, gpu=2)
    assert (created["name"], created["parentId"], created["clusterId"]) == ("vision", research.id, CLUSTER)
    assert created["resources"][0]["gpu"]["deserved"] == 2
    _project(live.sdk, "nlp", research.id)

    got = _conforms("Project", projects.get_project(created["id"]).data)
    assert (got["id"], got["description"]) == (created["id"], "the vision project")
    listed = projects.get_projects(
        filter_by=[f"parentId=={research.id}"],
        sort_by="name",  # the value, not the enum: see docs/http-api.md
        sort_order="asc",
        offset=0,
        limit=10,
        search="n",
    )
    assert [_conforms("Project", p)["name"] for p in listed.data["projects"]] == [
        "nlp",
        "vision",
    ]
    assert parsed("CountResponse", projects.count_projects(filter_by=["name=^vis"]).data).count == 1
    assert parsed("CountResponse", projects.count_projects(search="n").data).count == 2

    update = m.ProjectUpdateRequest(description="changed", resources=[_resources(3)])
    updated = _conforms("Project", projects.update_project(created["id"], update).data)
    assert (updated["description"], updated["resources"][0]["gpu"]["deserved"]) == ("changed", 3)
    replaced = projects.update_project_resources(created["id"], [_resources(5, cpu=500)])
    assert [parsed("Resources", r).gpu.deserved for r in replaced.data] == [5]
    patch = [m.ResourcesNullable(nodePool=m.ResourcesNodePool(id="1"), cpu=m.Resource(limit=900))]
    patched = [parsed("Resources", r) for r in projects.patch_project_resources(created["id"], patch).data]
    assert [(r.gpu.deserved, r.cpu.deserved, r.cpu.limit) for r in patched] == [(5, 500, 900)]

    assert projects.delete_project(created["id"]).status_code in (202, 204)  # Run:ai declares both
    with pytest.raises(errors.NotFoundException):
        projects.get_project(created["id"])
    assert parsed("CountResponse", projects.count_projects().data).count == 1


# -- assets -------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Kind:
    """One asset kind as the SDK has it: its API class, method names and models (runai/api/*_api.py)."""

    api: Callable[[Any], Any]
    methods: tuple[str, str, str, str, str]  # create, get, list, update, delete
    request: str
    update: str
    spec: str
    model: str
    listed: str
    kind: str  # Run:ai's AssetKind, in meta.kind
    first: dict[str, Any]
    second: dict[str, Any] = field(default_factory=dict)


def _crud(noun: str, by_id: str = "_by_id") -> tuple[str, str, str, str, str]:
    return (
        f"create_{noun}",
        f"get_{noun}{by_id}",
        f"list_{noun}s",
        f"update_{noun}{by_id}",
        f"delete_{noun}{by_id}",
    )


KINDS: dict[str, Kind] = {
    "environment": Kind(
        lambda w: w.environment,
        _crud("environment_asset"),
        "EnvironmentCreationRequest",
        "EnvironmentUpdateRequest",
        "EnvironmentAssetSpec",
        "EnvironmentAsset",
        "EnvironmentListResponse",
        "environment",
        {"image": "nvcr.io/nvidia/pytorch:24.05-py3", "command": "torchrun", "workingDir": "/workspace"},
        {"image": "nvcr.io/nvidia/pytorch:24.06-py3", "runAsUid": 1000, "runAsGid": 1000},
    ),
    "compute": Kind(
        lambda w: w.compute,
        _crud("compute_asset"),
        "ComputeCreationRequest",
        "ComputeUpdateRequest",
        "ComputeAssetSpec",
        "ComputeAsset",
        "ComputeListResponse",
        "compute",
        {"gpuDevicesRequest": 1, "cpuCoreRequest": 2, "cpuMemoryRequest": "8G"},
        {"gpuDevicesRequest": 8, "cpuCoreRequest": 16, "cpuMemoryLimit": "64G"},
    ),
    "nfs": Kind(
        lambda w: w.nfs,
        _crud("nfs_asset"),
        "NFSCreationRequest",
        "NFSUpdateRequest",
        "NFSAssetSpec",
        "NFSAsset",
        "NFSListResponse",
        "nfs",
        {
            "server": "nfs01.acme.internal",
            "path": "/export/datasets",
            "mountPath": "/datasets",
            "readOnly": True,
        },
        {"server": "nfs02.acme.internal", "path": "/export/datasets", "mountPath": "/datasets"},
    ),
    "pvc": Kind(
        lambda w: w.pvc,
        _crud("pvc_asset"),
        "PVCCreationRequest",
        "PVCUpdateRequest",
        "PVCAssetSpec",
        "PVCAsset",
        "PVCListResponse",
        "pvc",
        {"claimName": "checkpoints", "path": "/checkpoints", "existingPvc": True},
        {"path": "/checkpoints-v2"},
    ),
    "git": Kind(
        lambda w: w.git,
        _crud("git_asset"),
        "GitCreationRequest",
        "GitUpdateRequest",
        "GitAssetSpec",
        "GitAsset",
        "GitListResponse",
        "git",
        {"repository": "https://github.com/acme-ai/recipes", "branch": "main", "path": "/workspace/code"},
        {"repository": "https://github.com/acme-ai/recipes", "branch": "v2", "path": "/workspace/code"},
    ),
    "s3": Kind(
        lambda w: w.s3,
        _crud("s3_asset"),
        "S3CreationRequest",
        "S3UpdateRequest",
        "S3AssetSpec",
        "S3Asset",
        "S3ListResponse",
        "s3",
        {"bucket": "weights", "url": "https://s3.acme.internal", "path": "/weights"},
        {"bucket": "weights-v2", "url": "https://s3.acme.internal", "path": "/weights"},
    ),
    "host-path": Kind(
        lambda w: w.host_path,
        (
            "create_host_path",
            "get_host_path_by_id",
            "list_host_path_assets",
            "update_host_path_by_id",
            "delete_host_path_by_id",
        ),
        "HostPathCreationRequest",
        "HostPathUpdateRequest",
        "HostPathSpec",
        "HostPathAsset",
        "HostPathListResponse",
        "hostPath",
        {"path": "/mnt/scratch", "mountPath": "/scratch"},
        {"path": "/mnt/fast-scratch", "mountPath": "/scratch", "readOnly": False},
    ),
    "config-map": Kind(
        lambda w: w.config_map,
        _crud("config_map_asset"),
        "ConfigMapCreationRequest",
        "ConfigMapUpdateRequest",
        "ConfigMapAssetSpec",
        "ConfigMapAsset",
        "ConfigMapListResponse",
        "config-map",
        {"configMap": "train-settings", "mountPath": "/etc/train"},
    ),
    "secret": Kind(
        lambda w: w.secret,
        _crud("secret_asset"),
        "SecretAssetCreationRequest",
        "SecretAssetUpdateRequest",
        "SecretAssetSpec",
        "SecretAsset",
        "SecretAssetListResponse",
        "secret-volume",
        # Not credentialAssetId: this service has no credential assets (docs/http-api.md, "Secrets").
        {"mountPath": "/etc/tokens", "defaultMode": "0400"},
    ),
}
DATA_SOURCES = [k for k in KINDS if k not in ("environment", "compute")]


def _create_asset(sdk: RunaiClient, kind: str, name: str, **meta: Any) -> Any:
    """An asset of ``kind`` at the tenant scope (or ``meta``'s), with the kind's first spec."""
    k = KINDS[kind]
    request = getattr(m, k.request)(
        meta=m.AssetCreationRequest(name=name, scope=meta.pop("scope", m.Scope.TENANT), **meta),
        spec=getattr(m, k.spec)(**k.first),
    )
    answer = getattr(k.api(sdk.workload_assets), k.methods[0])(request)
    assert answer.status_code == 202  # Run:ai declares 202 for every asset creation
    return parsed(k.model, answer.data)


def _given(model: Any) -> dict[str, Any]:
    """A model's fields that hold a value: the SDK's ``from_dict`` sets every field it does not find to
    ``None``, and ``to_dict`` then writes them, where a model built from keywords leaves them out."""
    return {key: value for key, value in model.to_dict().items() if value is not None}


@pytest.mark.parametrize("kind", list(KINDS))
def test_every_asset_kind_through_the_sdk(live: Live, kind: str) -> None:
    k = KINDS[kind]
    api = k.api(live.sdk.workload_assets)
    create, get, list_, update, delete = (getattr(api, name) for name in k.methods)
    created = _create_asset(live.sdk, kind, f"first-{kind}", description="made by the SDK")
    assert (created.meta.name, created.meta.scope, created.meta.kind) == (f"first-{kind}", "tenant", k.kind)
    assert _given(created.spec) == _given(getattr(m, k.spec)(**k.first))
    other = _create_asset(live.sdk, kind, f"second-{kind}")

    got = parsed(k.model, get(created.meta.id).data)
    assert (got.meta.id, got.meta.description) == (created.meta.id, "made by the SDK")
    everything = parsed(k.listed, list_().data)
    assert sorted(e.meta.name for e in everything.entries) == [f"first-{kind}", f"second-{kind}"]
    named = parsed(k.listed, list_(name=f"first-{kind}", scope="tenant").data)
    assert [e.meta.id for e in named.entries] == [created.meta.id]

    # Each kind's own update request: Run:ai's PVC update changes only ``path`` (PvcFieldsUpdatable), and its
    # config-map and secret updates carry no spec at all (only the name and description change).
    fields = getattr(m, k.update).model_fields
    meta = m.AssetUpdateRequest(name=f"first-{kind}", description="changed")
    if "spec" not in fields:
        request, expected = getattr(m, k.update)(meta=meta), _given(created.spec)
    else:
        spec_model = fields["spec"].annotation
        spec_model = next((a for a in getattr(spec_model, "__args__", ()) if a is not type(None)), spec_model)
        request = getattr(m, k.update)(meta=meta, spec=spec_model(**k.second))
        expected = _given(created.spec) | _given(spec_model(**k.second))
        if spec_model.__name__ == k.spec:  # a whole spec replaces the stored one
            expected = _given(spec_model(**k.second))
    answer = update(created.meta.id, request)
    assert answer.status_code == 202
    updated = parsed(k.model, answer.data)
    assert updated.meta.description == "changed"
    assert _given(updated.spec) == expected
    assert parsed(k.model, get(created.meta.id).data).spec.to_dict() == updated.spec.to_dict()

    deleted = delete(other.meta.id)
    assert deleted.status_code == 202 and parsed("HttpResponse", deleted.data).code == 202
    with pytest.raises(errors.NotFoundException) as gone:
        get(other.meta.id)
    assert parsed("Error", gone.value.data).code == 404
    assert [e.meta.name for e in parsed(k.listed, list_().data).entries] == [f"first-{kind}"]
    with pytest.raises(errors.ApiException):
        create(
            getattr(m, k.request)(
                meta=m.AssetCreationRequest(name=f"first-{kind}", scope=m.Scope.TENANT),
                spec=getattr(m, k.spec)(**k.first),
            )
        )  # the name is taken in the scope


def test_the_data_sources_of_every_kind_in_one_list(live: Live) -> None:
    ids = {kind: _create_asset(live.sdk, kind, f"ds-{kind}").meta.id for kind in DATA_SOURCES}
    datasources = live.sdk.workload_assets.datasources
    listed = parsed("DatasourceListResponse", datasources.list_datasource_assets().data)
    assert {(e.meta.id, e.meta.kind) for e in listed.entries} == {
        (ids[kind], KINDS[kind].kind) for kind in DATA_SOURCES
    }
    one = parsed("DatasourceListResponse", datasources.list_datasource_assets(name="ds-nfs").data)
    assert [e.meta.id for e in one.entries] == [ids["nfs"]]


# -- policies -----------------------------------------------------------------------------------------------


def test_the_distributed_policy_through_the_sdk_with_run_ai_s_reset(live: Live) -> None:
    """At the top scope (Run:ai's tenant), so that this family does not depend on the org units."""
    policies = live.sdk.policies.policy
    meta = m.PolicyCreationFields(scope=m.ScopeType.TENANT, name="tenant")
    worker_rules = m.DistributedPolicyRulesV2Worker(
        slotsPerWorker=m.IntegerRules(min=1, max=4), numWorkers=m.IntegerRules(min=1, max=16)
    )
    overwrite = m.DistributedPolicyOverwriteRequestV2(
        meta=meta,
        policy=m.DistributedPolicyDefaultsAndRulesV2(
            defaults=m.DistributedPolicyDefaultsV2(
                worker=m.DistributedPolicyDefaultsV2Worker(slotsPerWorker=2, numWorkers=2)
            ),
            rules=m.DistributedPolicyRulesV2(worker=worker_rules),
        ),
    )
    written = policies.overwrite_distributed_policy_v2(distributed_policy_overwrite_request_v2=overwrite)
    put = parsed("DistributedPolicyV2", written.data)
    assert (put.policy.defaults.worker.slots_per_worker, put.policy.rules.worker.slots_per_worker.max) == (
        2,
        4,
    )
    got = parsed("DistributedPolicyV2", policies.get_distributed_policy_v2(scope="tenant").data)
    assert got.meta.scope == "tenant" and got.policy.rules.worker.num_workers.max == 16

    # Run:ai's FieldsToReset: a jsonpath of the replica's field clears both its default and its rules.
    change = m.DistributedPolicyChangeRequestV2(meta=meta, reset=["worker.slotsPerWorker"])
    changed = policies.update_distributed_policy_v2(distributed_policy_change_request_v2=change)
    reset = parsed("DistributedPolicyV2", changed.data)
    # Read the answer as sent: the SDK's models fill a missing field with the schema's own default
    # (``slotsPerWorker: 1``), which would hide whether the service cleared it.
    worker_defaults = changed.data["policy"]["defaults"]["worker"]
    worker_rules = changed.data["policy"]["rules"]["worker"]
    assert "slotsPerWorker" not in worker_defaults and "slotsPerWorker" not in worker_rules
    assert (worker_defaults["numWorkers"], worker_rules["numWorkers"]["max"]) == (2, 16)
    assert reset.policy.rules.worker.num_workers.max == 16

    assert policies.delete_distributed_policy(scope="tenant").status_code == 204
    after = parsed("DistributedPolicyV2", policies.get_distributed_policy_v2(scope="tenant").data)
    assert after.policy is None or after.policy.rules is None


# -- the whole org ------------------------------------------------------------------------------------------


def _defaults(http: httpx.Client, scope: str, document: dict[str, Any]) -> None:
    """The scope's defaults (the service's extension: docs/http-api.md, "Org defaults")."""
    answer = http.put(f"/api/v1/defaults/{scope}", json=document)
    assert answer.status_code == 200, answer.text


def _template(
    sdk: RunaiClient, name: str, scope: Any, scope_id: str | None, assets: dict[str, Any], **spec: Any
) -> Any:
    """A template made with the SDK's model; ``assets`` (Run:ai's TemplateAssets, which runapy's model drops)
    added to its ``to_dict()``."""
    request = m.DistributedTemplateCreationRequest(
        meta=m.TemplateCreationMetaFields(name=name, scopeType=scope, scopeId=scope_id),
        spec=m.DistributedTemplateSpec(
            distributedFramework=m.DistributedFramework.PYTORCH, numWorkers=2, **spec
        ),
        masterSpecSameAsWorker=True,
    )
    answer = sdk.workloads.workload_templates.create_distributed_template(
        {**request.to_dict(), "assets": assets}
    )
    assert answer.status_code == 202
    return parsed("DistributedTemplate", answer.data)


def _composes_as_served(live: Live, org: Org, project_ids: dict[str, str]) -> int:
    """Every (view, template) pair of the exported ``org`` composed by the library equals the service's
    ``GET .../distributed/{id}`` (``?projectId=`` for a project's view); the number of pairs compared."""
    listed = live.sdk.workloads.workload_templates.list_distributed_templates()
    by_name = {
        t.meta.name: t.meta.id for t in parsed("DistributedTemplatesListResponse", listed.data).entries
    }
    compared = 0
    for view, template in org.views():
        params = {"projectId": project_ids[view.project]} if view.project is not None else {}
        served = live.http.get(f"{T}/{by_name[template.name]}", params=params)
        assert served.status_code == 200, served.text
        library = compose(org, template, view).to_response()
        for key in ("combinedSpec", "combinedMasterSpec"):
            assert served.json()[key] == library[key], (view, template.name, key)
        compared += 1
    return compared


def _labels(spec: dict[str, Any] | None) -> dict[str, str]:
    return {label["name"]: label["value"] for label in (spec or {}).get("labels") or []}


def test_a_whole_org_from_nothing_submits_a_workload_and_exports_what_it_composes(
    live: Live, tmp_path: Path
) -> None:
    sdk, http = live.sdk, live.http
    # Org units: 2 departments, 3 projects.
    research, applied = _department(live.sdk, "research", 8), _department(live.sdk, "applied", 4)
    cluster = research.cluster_id  # the cluster as the service answers it, for the projects and the workload
    assert applied.cluster_id == cluster
    projects = {
        "vision": _project(sdk, "vision", research.id, cluster=cluster),
        "nlp": _project(sdk, "nlp", research.id, cluster=cluster),
        "speech": _project(sdk, "speech", applied.id, cluster=cluster),
    }
    # Assets of every kind.
    assets = {kind: _create_asset(sdk, kind, kind) for kind in KINDS}
    assert {a.meta.kind for a in assets.values()} == {k.kind for k in KINDS.values()}
    # A policy, first: a policy's PUT overwrites the scope's defaults too (a scope's policy is its rules and
    # its defaults document, docs/http-api.md), so the tenant's defaults are written after it.
    policy = m.DistributedPolicyOverwriteRequestV2(
        meta=m.PolicyCreationFields(scope=m.ScopeType.TENANT, name="tenant"),
        policy=m.DistributedPolicyDefaultsAndRulesV2(
            rules=m.DistributedPolicyRulesV2(
                worker=m.DistributedPolicyRulesV2Worker(numWorkers=m.IntegerRules(min=1, max=16))
            )
        ),
    )
    parsed(
        "DistributedPolicyV2",
        sdk.policies.policy.overwrite_distributed_policy_v2(
            distributed_policy_overwrite_request_v2=policy
        ).data,
    )
    # Defaults at every scope.
    _defaults(
        http,
        "system",
        {"spec": {"labels": [{"name": "tier", "value": "standard"}], "nodePools": ["default"]}},
    )
    _defaults(
        http, f"departments/{research.id}", {"spec": {"labels": [{"name": "tier", "value": "research"}]}}
    )
    _defaults(http, f"departments/{applied.id}", {"spec": {"labels": [{"name": "tier", "value": "applied"}]}})
    vision = projects["vision"]["id"]
    _defaults(
        http,
        f"projects/{vision}",
        {"spec": {"environmentVariables": [{"name": "WANDB_PROJECT", "value": "vision"}]}},
    )
    # Templates using the assets, at the system, a department and a project.
    everything = {
        "environment": "environment",
        "compute": "compute",
        "datasources": [{"name": kind} for kind in DATA_SOURCES],
    }
    # Run:ai's secret data source names its Kubernetes secret only through a credential asset
    # (credentialAssetId), a family this service does not have (docs/http-api.md, "Secrets"): the template
    # gives the secret of the asset's item, merged into it by name.
    secret = m.SupersetSpecAllOfStorage(secretVolume=[m.SecretInstance2(name="secret", secret="hub-token")])
    templates = [
        _template(sdk, "ddp", m.ScopeType.TENANT, None, everything, storage=secret),
        _template(sdk, "research-ddp", m.ScopeType.DEPARTMENT, research.id, {"environment": "environment"}),
        _template(
            sdk,
            "speech-ddp",
            m.ScopeType.PROJECT,
            projects["speech"]["id"],
            {"compute": "compute", "datasources": [{"name": "nfs", "overrides": {"containerPath": "/data"}}]},
        ),
    ]
    system = templates[0]
    assert system.runnable.is_runnable, system.runnable
    assert system.combined_spec.image == KINDS["environment"].first["image"]
    assert system.combined_spec.compute.gpu_devices_request == 1
    assert [n.server for n in system.combined_spec.storage.nfs] == ["nfs01.acme.internal"]

    # One workload submitted from the system template in vision.
    submitted = sdk.workloads.distributed.create_distributed(
        m.DistributedCreationRequest(
            name="first-run",
            projectId=vision,
            clusterId=cluster,
            templateId=system.meta.id,
            masterSpecSameAsWorker=True,
        )
    )
    assert submitted.status_code == 202
    workload = parsed("DistributedWorkload", submitted.data)
    assert workload.spec.image == KINDS["environment"].first["image"]
    assert {"tier": "research"}.items() <= _labels(submitted.data["spec"]).items()

    # nlp moves from research to applied (ProjectUpdateRequest has no parentId in Run:ai's document: the
    # service's PUT takes Run:ai's body with parentId added, the name ProjectCreationRequest gives it).
    nlp = projects["nlp"]["id"]
    before = http.get(f"{T}/{system.meta.id}", params={"projectId": nlp}).json()
    assert _labels(before["combinedSpec"])["tier"] == "research"
    move = {**m.ProjectUpdateRequest(resources=[_resources(1)]).to_dict(), "parentId": applied.id}
    moved = _conforms("Project", sdk.organizations.projects.update_project(nlp, move).data)
    assert moved["parentId"] == applied.id
    after = http.get(f"{T}/{system.meta.id}", params={"projectId": nlp}).json()
    assert _labels(after["combinedSpec"])["tier"] == "applied"  # the new department's defaults

    # template-engine db export of that database, loaded with the library: every composition is the service's.
    out = tmp_path / "exported"
    result = CliRunner().invoke(
        main, ["db", "export", "--root", str(out), "--database-url", live.database_url]
    )
    assert result.exit_code == 0, result.output
    assert (
        "2 departments, 3 projects, 4 defaults, 1 policies, 9 assets, 3 templates, 1 workloads"
        in result.output
    )
    org = load_org(out)
    assert not org.broken, org.broken
    assert {d: sorted(p) for d, p in org.departments.items()} == {
        "research": ["vision"],
        "applied": ["nlp", "speech"],
    }
    compared = _composes_as_served(live, org, {p["name"]: p["id"] for p in projects.values()})
    # vision sees ddp and research-ddp, nlp (now in applied) ddp, speech ddp and speech-ddp; then ddp and
    # research-ddp from their own scopes.
    assert compared == 7


# -- every kind (issue 32) ----------------------------------------------------------------------------------

#: The SDK's names of each one-role kind: (template model prefix, policy suffix and prefix, workload API,
#: its create method, its answer model).
ONE_ROLE_SDK = {
    "training": ("Training", "training_policy", "Training", "trainings", "create_training1", "Training1"),
    "workspace": (
        "Workspace",
        "workspace_policy",
        "Workspace",
        "workspaces",
        "create_workspace1",
        "Workspace1",
    ),
    "inference": (
        "Inference",
        "inference_policy",
        "Inference",
        "inferences",
        "create_inference1",
        "Inference1",
    ),
}


def _kind_template(
    sdk: RunaiClient, kind: str, name: str, scope: Any, scope_id: str | None, **spec: Any
) -> Any:
    """A template of a one-role kind made with the SDK's own request model."""
    prefix = ONE_ROLE_SDK[kind][0]
    request = getattr(m, f"{prefix}TemplateCreationRequest")(
        meta=m.TemplateCreationMetaFields(name=name, scopeType=scope, scopeId=scope_id),
        spec=getattr(m, f"{prefix}TemplateSpec").from_dict(spec),
    )
    answer = getattr(sdk.workloads.workload_templates, f"create_{kind}_template")(request)
    assert answer.status_code == 202, answer.data
    return parsed(f"{prefix}Template", answer.data)


def _seen_from(live: Live, path: str, template_id: str, project_id: str) -> dict[str, Any]:
    """A template as seen from a project (the service's extension ``?projectId=``)."""
    answer = live.http.get(
        f"/api/v1/workload-templates/{path}/{template_id}", params={"projectId": project_id}
    )
    assert answer.status_code == 200, answer.text
    body: dict[str, Any] = answer.json()
    return body


def test_every_kind_from_nothing_through_the_sdk(live: Live) -> None:
    """Issue 32, from an empty database with runapy 1.224.0: templates of all four kinds at the system, a
    department and a project; the policies of trainings, workspaces, inferences and distributed inferences
    (PUT, PATCH with validateOnly and with reset, GET, DELETE); the template list with complyToWorkloadType;
    one workload of each kind submitted; each composition honouring the shared defaults and its own kind's
    defaults and policy.  Every answer is checked against Run:ai's whole document (the fixture)."""
    sdk, http = live.sdk, live.http
    research = _department(sdk, "research")
    vision = _project(sdk, "vision", str(research.id))
    project_id = str(vision["id"])
    # one default for every kind, written once (the system's shared defaults)
    _defaults(http, "system", {"spec": {"image": "registry.acme/base:1", "backoffLimit": 4, "stdin": True}})

    templates = sdk.workloads.workload_templates
    scopes = [
        (m.ScopeType.SYSTEM, None, "system"),
        (m.ScopeType.DEPARTMENT, str(research.id), "department"),
        (m.ScopeType.PROJECT, project_id, "project"),
    ]
    made: dict[str, dict[str, Any]] = {kind: {} for kind in ("distributed", *ONE_ROLE_SDK)}
    for scope, scope_id, label in scopes:
        made["distributed"][label] = _template(sdk, f"dist-{label}", scope, scope_id, {})
        made["training"][label] = _kind_template(
            sdk, "training", f"train-{label}", scope, scope_id, completions=2
        )
        made["workspace"][label] = _kind_template(sdk, "workspace", f"ws-{label}", scope, scope_id)
        made["inference"][label] = _kind_template(
            sdk, "inference", f"serve-{label}", scope, scope_id, servingPort={"container": 8000}
        )

    # the shared default reaches every kind that has the field, as seen from the project
    paths = {"distributed": "distributed", "training": "trainings", "workspace": "workspaces"}
    seen = {
        kind: _seen_from(live, path, made[kind]["project"].meta.id, project_id)
        for kind, path in paths.items()
    }
    for kind, body in seen.items():
        assert body["combinedSpec"]["image"] == "registry.acme/base:1", kind
        assert body["combinedSpec"]["backoffLimit"] == 4, kind
    served = _seen_from(live, "inferences", made["inference"]["project"].meta.id, project_id)
    assert "backoffLimit" not in served["combinedSpec"] and "stdin" not in served["combinedSpec"]
    assert served["runnable"]["isRunnable"] is True

    # each kind's policy at the project: PUT, PATCH validateOnly, PATCH reset, GET, DELETE
    policies = sdk.policies.policy
    meta = m.PolicyCreationFields(scope=m.ScopeType.PROJECT, name="vision", projectId=int(project_id))
    at = {"scope": "project", "project_id": project_id}
    for kind, (_template_prefix, suffix, prefix, *_rest) in ONE_ROLE_SDK.items():
        policy = getattr(m, f"{prefix}PolicyDefaultsAndRulesV2")(
            defaults=getattr(m, f"{prefix}PolicyDefaultsV2")(workingDir=f"/{kind}"),
            rules=getattr(m, f"{prefix}PolicyRulesV2")(
                compute=m.SupersetRulesAllOfCompute(gpuDevicesRequest=m.IntegerRules(max=1))
            ),
        )
        put = getattr(policies, f"overwrite_{suffix}_v2")(
            **{
                f"{suffix}_overwrite_request_v2": getattr(m, f"{prefix}PolicyOverwriteRequestV2")(
                    meta=meta, policy=policy
                )
            }
        )
        parsed(f"{prefix}PolicyV2", put.data)
        change = getattr(m, f"{prefix}PolicyChangeRequestV2")(meta=meta, reset=["workingDir"])
        update = getattr(policies, f"update_{suffix}_v2")
        dry = update(validate_only=True, **{f"{suffix}_change_request_v2": change})
        parsed(f"{prefix}PolicyV2", dry.data)
        got = getattr(policies, f"get_{suffix}_v2")(**at)
        assert got.data["policy"]["defaults"]["workingDir"] == f"/{kind}"  # validateOnly stored nothing
    # the training policy's default reaches trainings only; its rule governs trainings only
    train = _seen_from(live, "trainings", made["training"]["project"].meta.id, project_id)
    assert train["combinedSpec"]["workingDir"] == "/training"
    assert "workingDir" not in seen["distributed"]["combinedSpec"]
    assert (
        _seen_from(live, "distributed", made["distributed"]["project"].meta.id, project_id)[
            "combinedSpec"
        ].get("workingDir")
        is None
    )
    greedy = _kind_template(
        sdk, "training", "greedy", m.ScopeType.PROJECT, project_id, compute={"gpuDevicesRequest": 2}
    )
    assert greedy.runnable.is_runnable is False  # runapy's RunnableInfo has no issues: read them as sent
    issues = _seen_from(live, "trainings", greedy.meta.id, project_id)["runnable"]["issues"]
    assert [(i["field"], i["rule"]) for i in issues] == [("compute.gpuDevicesRequest", "max")]
    dist_greedy = _template(
        sdk,
        "dist-greedy",
        m.ScopeType.PROJECT,
        project_id,
        {},
        compute=m.SupersetSpecAllOfCompute(gpuDevicesRequest=2),
    )
    assert dist_greedy.runnable.is_runnable
    # a reset, then the delete
    for _template_prefix, suffix, prefix, *_rest in ONE_ROLE_SDK.values():
        change = getattr(m, f"{prefix}PolicyChangeRequestV2")(meta=meta, reset=["workingDir"])
        reset = getattr(policies, f"update_{suffix}_v2")(**{f"{suffix}_change_request_v2": change})
        assert "workingDir" not in (reset.data["policy"].get("defaults") or {})
    train = _seen_from(live, "trainings", made["training"]["project"].meta.id, project_id)
    assert "workingDir" not in train["combinedSpec"]
    # the distributed inference's policy, by leader and worker
    di = m.DistributedInferencePolicyDefaultsAndRulesV2(
        defaults=m.DistributedInferenceDefaultsV2(
            leader=m.DistributedInferenceLeaderWorkerDefaultsV2(workingDir="/lead"),
            restartPolicy=None,
            startupPolicy=None,
            workers=None,
            replicas=None,  # runapy fills them else
        ),
        rules=m.DistributedInferenceRulesV2(
            worker=m.DistributedInferenceLeaderWorkerRulesV2(image=m.StringRules(required=True))
        ),
    )
    request = m.DistributedInferencePolicyOverwriteRequestV2(meta=meta, policy=di)
    written = policies.overwrite_distributed_inference_policy_v2(
        distributed_inference_policy_overwrite_request_v2=request
    )
    parsed("DistributedInferencePolicyV2", written.data)
    assert written.data["policy"]["defaults"]["leader"] == {"workingDir": "/lead"}
    change = m.DistributedInferencePolicyChangeRequestV2(meta=meta, reset=["leader.workingDir"])
    dry = policies.update_distributed_inference_policy_v2(
        validate_only=True, distributed_inference_policy_change_request_v2=change
    )
    parsed("DistributedInferencePolicyV2", dry.data)
    parsed("DistributedInferencePolicyV2", policies.get_distributed_inference_policy_v2(**at).data)
    listed = parsed("PolicyListResponse", policies.list_policies(project_id=project_id).data)
    assert sorted(e.type for e in listed.policies) == sorted(
        ["training", "workspace", "inference", "distributedInference"]
    )
    assert policies.delete_distributed_inference_policy(**at).status_code == 204
    for _template_prefix, suffix, prefix, *_rest in ONE_ROLE_SDK.values():
        assert getattr(policies, f"delete_{suffix}")(**at).status_code == 204
        assert parsed(f"{prefix}PolicyV2", getattr(policies, f"get_{suffix}_v2")(**at).data).policy is None

    # the list of every kind, complying to a workload type
    found = templates.list_templates1(
        comply_to_project=int(project_id), comply_to_workload_type="Training", limit=50
    )
    entries = parsed("TemplatesListResponse", found.data).entries
    by_type: dict[str, list[Any]] = {}
    for entry in entries:
        by_type.setdefault(entry.meta.workload_type.value, []).append(entry)
    assert sorted(by_type) == ["Distributed", "Inference", "Training", "Workspace"]
    for entry in by_type["Workspace"]:
        assert "workloadType" in [i.var_field for i in entry.compliance_issues or []]

    # one workload of each kind, submitted from the project's template of its kind
    for kind, (_t, _s, _p, api_name, create, answer_model) in ONE_ROLE_SDK.items():
        spec_model = getattr(m, f"{ONE_ROLE_SDK[kind][0]}SpecSpec")
        request = getattr(m, f"{ONE_ROLE_SDK[kind][0]}CreationRequest")(
            name=f"first-{kind}",
            projectId=project_id,
            clusterId=CLUSTER,
            templateId=made[kind]["project"].meta.id,
            spec=spec_model(),
        )
        answer = getattr(getattr(sdk.workloads, api_name), create)(request)
        assert answer.status_code == 202, answer.data
        workload = parsed(answer_model, answer.data)
        assert workload.spec.image == "registry.acme/base:1"
        if kind == "training":
            assert workload.spec.backoff_limit == 4 and workload.spec.completions == 2
        if kind == "inference":
            assert workload.spec.serving_port.container == 8000
    submitted = sdk.workloads.distributed.create_distributed(
        m.DistributedCreationRequest(
            name="first-distributed",
            projectId=project_id,
            clusterId=CLUSTER,
            templateId=made["distributed"]["project"].meta.id,
        )
    )
    assert submitted.status_code == 202, submitted.data
    listed_workloads = parsed(
        "GetWorkloads200Response", sdk.workloads.workloads.get_workloads(search="first-").data
    )
    assert sorted(w.type for w in listed_workloads.workloads) == [
        "Distributed",
        "Inference",
        "Training",
        "Workspace",
    ]
