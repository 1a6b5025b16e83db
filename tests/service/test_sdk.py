"""The real Run:ai Python SDK (runapy 1.224.0), unchanged, against a live server on a loopback port.

Every call goes through the SDK's own API classes and typed request models; every body that comes back is
parsed into the SDK model Run:ai's document names for it (``Model.from_dict``), and checked against Run:ai's
schemas on the way in (:mod:`sdk_helpers`).  The clients are built with ``retry_enabled=False``, so a refusal
surfaces as the SDK's exception at once instead of after urllib3's retries.
"""

from __future__ import annotations

import base64
import hashlib
import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest
from conftest import CLUSTER, TEMPLATES
from sdk_helpers import Lazy, LiveServer, bearer_client, install, login_client, parsed, runapy, serve

if TYPE_CHECKING:
    from runai.api import DistributedApi, WorkloadsApi, WorkloadTemplatesApi
    from runai.api_client import ApiClient
    from runai.runai_client import RunaiClient

from waiting import LIVE_TIMEOUT

from template_engine.service.app import create_app
from template_engine.service.settings import Settings
from template_engine.service.tokens import Signer

install()

# The SDK, imported when a test first uses it (sdk_helpers.Lazy): its models, exceptions and client.
m = Lazy("runai.models")
errors = Lazy("runai.exceptions")
runai_client = Lazy("runai.runai_client")

SIGNING_KEY = "a-signing-key-of-at-least-32-characters"
CLIENT_ID, SECRET = "ci-pipeline", "a-long-random-application-secret"
VISION_BOT, VISION_SECRET = "vision-bot", "another-application-secret"
ADMIN = "sdk-admin-token"


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


AUTH_YAML = f"""\
signingKey: "{SIGNING_KEY}"
tokenLifetime: 600
tokens:
  - {{subject: alice, token: {ADMIN}, role: system-admin}}
applications:
  - {{clientId: {CLIENT_ID}, sha256: "{_sha(SECRET)}", role: system-admin}}
  - {{clientId: {VISION_BOT}, sha256: "{_sha(VISION_SECRET)}", role: project-editor, project: vision}}
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """The example org on SQLite behind a real uvicorn, for the whole module."""
    folder = tmp_path_factory.mktemp("sdk")
    auth = folder / "auth.yaml"
    auth.write_text(AUTH_YAML)
    settings = Settings(database_url=f"sqlite:///{folder / 'sdk.db'}", auth_file=auth, seed=TEMPLATES)
    with serve(create_app(settings)) as live:
        yield live


@pytest.fixture(scope="module")
def sdk(server: LiveServer) -> RunaiClient:
    """The SDK as its documentation shows it: client credentials, the login done by ``ApiClient``."""
    return runai_client.RunaiClient(login_client(server.url, CLIENT_ID, SECRET))


@pytest.fixture(scope="module")
def org(server: LiveServer) -> dict[str, str]:
    """Project and department names to their ids."""
    with httpx.Client(
        base_url=server.url, headers={"Authorization": f"Bearer {ADMIN}"}, timeout=LIVE_TIMEOUT
    ) as http:
        projects = http.get("/api/v1/org-unit/projects").json()["projects"]
        departments = http.get("/api/v1/org-unit/departments").json()["departments"]
    return {p["name"]: p["id"] for p in projects} | {d["name"]: d["id"] for d in departments}


def _payload(token: str) -> dict[str, Any]:
    """The claims as the SDK reads them: the middle segment, *standard* base64 (runai/token_refresher.py)."""
    claims: dict[str, Any] = json.loads(base64.b64decode(token.split(".")[1] + "=="))
    return claims


# -- login --------------------------------------------------------------------------------------------------


def test_the_sdk_logs_in_with_client_credentials(server: LiveServer, sdk: RunaiClient) -> None:
    api: ApiClient = sdk.api_client
    token = api._token
    assert token.count(".") == 2
    claims = _payload(token)
    assert bytes.fromhex(claims["sub"]).decode() == CLIENT_ID and 590 <= claims["exp"] - time.time() <= 600
    assert api.token_refresher._token_expiry == claims["exp"]  # the SDK's own expiry check took the token
    listed = sdk.workloads.workload_templates.count_templates()
    assert parsed("CountResponse", listed.data).count >= 7
    # The SDK's grant_token (TokensApi), Run:ai's spelling of the credentials.
    request = m.TokenRequest(
        grantType=m.TokenRequestGrantTypeEnum.CLIENT_CREDENTIALS, clientID=CLIENT_ID, clientSecret=SECRET
    )
    granted = parsed("TokenResponse", runapy.TokensApi(api).grant_token(request).data)
    assert (
        granted.expires_in == 600
        and bytes.fromhex(_payload(granted.access_token)["sub"]).decode() == CLIENT_ID
    )


def test_tokens_decode_with_the_standard_alphabet() -> None:
    """The SDK decodes the payload with ``base64.b64decode``: '-' and '_' would be dropped there."""
    signer = Signer(SIGNING_KEY.encode(), 600)
    for index in range(3000):
        subject = "client_~?>é-@."[: index % 15] + "x" * (index % 7)
        token = signer.issue(subject, 1_700_000_000 + index * 7919)
        segment = token.split(".")[1]
        assert "-" not in segment and "_" not in segment
        assert _payload(token)["exp"] == 1_700_000_600 + index * 7919
        claims = signer.verify(token, 0)
        assert claims is not None and claims.subject == subject


def test_a_role_bound_application_reaches_its_scope_only(server: LiveServer, org: dict[str, str]) -> None:
    bot = runai_client.RunaiClient(login_client(server.url, VISION_BOT, VISION_SECRET))
    templates = bot.workloads.workload_templates
    request = m.DistributedTemplateCreationRequest(
        meta=m.TemplateCreationMetaFields(
            name="bot-job", scopeType=m.ScopeType.PROJECT, scopeId=org["vision"]
        ),
        spec=m.DistributedTemplateSpec(image="a:1", distributedFramework=m.DistributedFramework.PYTORCH),
    )
    created = parsed("DistributedTemplate", templates.create_distributed_template(request).data)
    assert created.meta.created_by == VISION_BOT and created.meta.project_id == int(org["vision"])
    with pytest.raises(errors.ForbiddenException) as refused:
        templates.create_distributed_template(
            m.DistributedTemplateCreationRequest(
                meta=m.TemplateCreationMetaFields(name="x", scopeType=m.ScopeType.TENANT)
            )
        )
    assert parsed("Error", refused.value.data).code == 403


@pytest.mark.parametrize(
    ("client_id", "secret"),
    [(CLIENT_ID, "wrong"), ("nobody", SECRET), (CLIENT_ID, ""), (None, None)],
)
def test_wrong_credentials_are_refused_with_run_ai_s_400(
    server: LiveServer, client_id: Any, secret: Any
) -> None:
    with pytest.raises(ValueError, match="Failed to get access token") as refused:
        runapy.ApiClient(
            runapy.Configuration(
                client_id=client_id, client_secret=secret, runai_base_url=server.url, retry_enabled=False
            )
        )
    assert "'code': 400" in str(refused.value)
    sent = {"grantType": "app_token", "AppId": client_id, "AppSecret": secret}
    answer = httpx.post(f"{server.url}/api/v1/token", json=sent, timeout=LIVE_TIMEOUT)
    assert answer.status_code == 400 and "accessToken" not in answer.json()
    assert parsed("Error", answer.json()).code == 400


def test_the_stock_bearer_token_configuration_gets_no_token(server: LiveServer) -> None:
    """runapy 1.224.0 logs in with null credentials even when given a bearer token: refused, never minted."""
    with pytest.raises(ValueError, match="'code': 400"):
        runapy.ApiClient(
            runapy.Configuration(bearer_token=ADMIN, runai_base_url=server.url, retry_enabled=False)
        )


def test_plain_bearer_tokens_keep_working(server: LiveServer) -> None:
    client = runai_client.RunaiClient(bearer_client(server.url, ADMIN))
    listed = client.workloads.workload_templates.list_distributed_templates(limit=2)
    assert len(parsed("DistributedTemplatesListResponse", listed.data).entries) == 2
    with pytest.raises(errors.UnauthorizedException) as refused:
        runai_client.RunaiClient(
            bearer_client(server.url, "not-a-token")
        ).workloads.workload_templates.count_templates()
    assert refused.value.status == 401


def test_an_expired_token_is_refused(server: LiveServer) -> None:
    expired = Signer(SIGNING_KEY.encode(), 600).issue(CLIENT_ID, int(time.time()) - 3600)
    with pytest.raises(errors.UnauthorizedException) as refused:
        runai_client.RunaiClient(
            bearer_client(server.url, expired)
        ).workloads.workload_templates.count_templates()
    assert "expired" in refused.value.data["message"]
    forged = Signer(b"another-key-of-at-least-32-characters!!", 600).issue(CLIENT_ID, int(time.time()))
    with pytest.raises(errors.UnauthorizedException):
        runai_client.RunaiClient(
            bearer_client(server.url, forged)
        ).workloads.workload_templates.count_templates()


# -- templates ----------------------------------------------------------------------------------------------


def _spec(**extra: Any) -> m.DistributedTemplateSpec:
    return m.DistributedTemplateSpec(
        image="python:3.11",
        command="python",
        args="train.py",
        distributedFramework=m.DistributedFramework.PYTORCH,
        **extra,
    )


def test_templates_through_the_sdk(sdk: RunaiClient, org: dict[str, str]) -> None:
    templates: WorkloadTemplatesApi = sdk.workloads.workload_templates
    name = f"sdk-{uuid.uuid4().hex[:6]}"
    vision = org["vision"]

    # name availability, at the top scope (Run:ai's tenant) and in a project
    assert templates.template_name_availability(template_name=name, scope_type="tenant").status_code == 204
    free = templates.template_name_availability(template_name=name, scope_type="project", scope_id=vision)
    assert (free.status_code, free.data) == (204, None)

    # create at each scope
    affinity = m.NodeAffinityRequired(
        nodeSelectorTerms=[
            m.NodeSelectorTerm(
                matchExpressions=[m.MatchExpression(key="gpu", operator=m.MatchExpressionOperator.EXISTS)]
            )
        ]
    )
    scopes: list[tuple[m.ScopeType, str | None]] = [
        (m.ScopeType.TENANT, None),
        (m.ScopeType.SYSTEM, None),
        (m.ScopeType.DEPARTMENT, org["research"]),
        (m.ScopeType.PROJECT, vision),
    ]
    created = {}
    for scope_type, scope_id in scopes:
        request = m.DistributedTemplateCreationRequest(
            meta=m.TemplateCreationMetaFields(
                name=f"{name}-{scope_type.value}",
                description="made by the SDK",
                scopeType=scope_type,
                scopeId=scope_id,
            ),
            spec=_spec(numWorkers=2, nodeAffinityRequired=affinity),
            masterSpecSameAsWorker=True,
        )
        answer = templates.create_distributed_template(request)
        assert answer.status_code == 202
        template = parsed("DistributedTemplate", answer.data)
        created[scope_type] = template
        assert template.meta.scope_id == (scope_id or "1") and template.runnable.is_runnable
    assert (
        created[m.ScopeType.TENANT].meta.scope_type == m.ScopeType.SYSTEM
    )  # the top scope is answered system
    assert created[m.ScopeType.PROJECT].meta.project_id == int(vision)  # an integer, as Run:ai's schema says
    template_id = created[m.ScopeType.PROJECT].meta.id
    with pytest.raises(errors.ConflictException) as taken:
        templates.template_name_availability(
            template_name=f"{name}-project", scope_type="project", scope_id=vision
        )
    assert parsed("Error", taken.value.data).code == 409
    with pytest.raises(errors.BadRequestException) as cluster:
        templates.create_distributed_template(
            m.DistributedTemplateCreationRequest(
                meta=m.TemplateCreationMetaFields(name=name, scopeType=m.ScopeType.CLUSTER)
            )
        )
    assert "cluster" in cluster.value.data["details"]

    # list, with every parameter (filterBy goes as one comma-joined parameter)
    listed = templates.list_distributed_templates(
        offset=0,
        limit=10,
        sort_order="desc",
        sort_by="createdAt",
        filter_by=[f"name=@{name}", "workloadType==Distributed"],
        search="sdk-",
        comply_to_project=int(vision),
        comply_to_replica_type="Worker",
    )
    page = parsed("DistributedTemplatesListResponse", listed.data)
    assert sorted(e.meta.name for e in page.entries) == sorted(f"{name}-{s.value}" for s, _ in scopes)
    assert all(e.compliance_issues == [] for e in page.entries)
    assert page.pagination.next_offset is None and "nextOffset" not in listed.data["pagination"]
    first = parsed("DistributedTemplatesListResponse", templates.list_distributed_templates(limit=1).data)
    assert first.pagination.next_offset == 1
    outside = templates.list_distributed_templates(
        filter_by=["scopeType==project"], comply_to_project=int(org["recsys"])
    )
    issues = [e.compliance_issues for e in parsed("DistributedTemplatesListResponse", outside.data).entries]
    assert issues and all(i and "not available in project 'recsys'" in i[0].details for i in issues)

    # the any-type list and read
    anything = templates.list_templates1(
        offset=0,
        limit=50,
        sort_order="asc",
        sort_by="name",
        filter_by=[f"name=@{name}"],
        search=name,
        comply_to_project=int(vision),
        comply_to_workload_type="Distributed",
        comply_to_replica_type="Master",
    )
    assert len(parsed("TemplatesListResponse", anything.data).entries) == 4
    superset = parsed("SupersetTemplate", templates.get_template_by_id1(template_id).data)
    assert superset.meta.id == template_id and superset.meta.workload_type == m.WorkloadType.DISTRIBUTED

    # count, get, put, patch, delete
    counted = templates.count_templates(filter_by=[f"name=@{name}", "scopeType==tenant"], search=name)
    assert parsed("CountResponse", counted.data).count == 2  # tenant and system are the same scope
    got = parsed("DistributedTemplate", templates.get_distributed_template(template_id).data)
    assert got.spec.node_affinity_required.node_selector_terms[0].match_expressions[0].operator == "Exists"
    update = m.DistributedTemplateUpdateRequest(
        meta=m.TemplateUpdateMetaFields(name=f"{name}-project", description="replaced"),
        spec=_spec(numWorkers=3),
        masterSpecSameAsWorker=True,
    )
    put = parsed("DistributedTemplate", templates.update_distributed_template(template_id, update).data)
    assert put.spec.num_workers == 3 and put.spec.node_affinity_required is None
    patch = m.DistributedTemplatePatchRequest(
        meta=m.TemplatePatchMetaFields(name=None, description="patched"),  # name: null keeps the name
        spec=m.DistributedTemplateSpec(numWorkers=4),
        fieldsToClear=["spec.command"],
    )
    patched = parsed("DistributedTemplate", templates.patch_distributed_template(template_id, patch).data)
    assert (patched.meta.name, patched.meta.description) == (f"{name}-project", "patched")
    assert (
        patched.spec.num_workers == 4 and patched.spec.command is None and patched.spec.image == "python:3.11"
    )
    for template in created.values():
        deleted = templates.delete_distributed_template(template.meta.id)
        assert (deleted.status_code, deleted.data) == (204, None)
    with pytest.raises(errors.NotFoundException) as gone:
        templates.get_distributed_template(template_id)
    assert parsed("Error", gone.value.data).code == 404


# -- workloads ----------------------------------------------------------------------------------------------


def test_workloads_through_the_sdk(sdk: RunaiClient, org: dict[str, str]) -> None:
    templates: WorkloadTemplatesApi = sdk.workloads.workload_templates
    distributed: DistributedApi = sdk.workloads.distributed
    workloads: WorkloadsApi = sdk.workloads.workloads
    suffix = uuid.uuid4().hex[:6]
    vision = org["vision"]
    template = parsed(
        "DistributedTemplate",
        templates.create_distributed_template(
            m.DistributedTemplateCreationRequest(
                meta=m.TemplateCreationMetaFields(
                    name=f"wl-{suffix}", scopeType=m.ScopeType.PROJECT, scopeId=vision
                ),
                spec=_spec(numWorkers=2),
            )
        ).data,
    )

    from_template = m.DistributedCreationRequest(
        name=f"from-template-{suffix}",
        projectId=vision,
        clusterId=CLUSTER,
        templateId=template.meta.id,
        masterSpecSameAsWorker=True,
    )
    first = parsed("DistributedWorkload", distributed.create_distributed(from_template).data)
    assert (
        first.project_id == vision and first.spec.image == "python:3.11" and first.desired_phase == "Running"
    )
    inline = m.DistributedCreationRequest(
        name=f"inline-{suffix}",
        projectId=vision,
        clusterId=CLUSTER,
        useGivenNameAsPrefix=True,
        spec=m.DistributedSpecSpec(
            image="python:3.11", distributedFramework=m.DistributedFramework.PYTORCH, numWorkers=2
        ),
        masterSpecSameAsWorker=False,
        masterSpec=m.MasterSpec(image="python:3.11", imagePullSecrets=[m.ImagePullSecret(name="regcred")]),
    )
    answer = distributed.create_distributed(inline)
    assert answer.status_code == 202
    second = parsed("DistributedWorkload", answer.data)
    assert second.name.startswith(f"inline-{suffix}-") and second.requested_name == f"inline-{suffix}"
    assert [s.name for s in second.master_spec.image_pull_secrets] == ["regcred"]

    got = parsed("DistributedWorkload", distributed.get_distributed(first.workload_id).data)
    assert got.workload_id == first.workload_id
    detailed = parsed("WorkloadDetailed", workloads.get_workload(first.workload_id).data)
    assert (detailed.id, detailed.project_name, detailed.type) == (first.workload_id, "vision", "Distributed")
    assert detailed.deleted_at is None and detailed.priority is None and detailed.tenant_id == 1
    listed = workloads.get_workloads(
        deleted=False,
        offset=0,
        limit=1,
        sort_order="desc",
        sort_by="name",
        filter_by=["type==Distributed", f"projectId=={vision}"],
        search=suffix,
    )
    page = parsed("GetWorkloads200Response", listed.data)
    assert [w.name for w in page.workloads] == [second.name] and page.next == 1
    counted = workloads.count_workloads(deleted=False, filter_by=[f"name=@{suffix}"], search=None)
    assert parsed("CountResponse", counted.data).count == 2

    for action, desired in (
        (distributed.suspend_distributed, "Stopped"),
        (distributed.resume_distributed, "Running"),
    ):
        accepted = parsed("HttpResponse", action(first.workload_id).data)
        assert (accepted.code, accepted.message) == (202, "Request has been accepted.")
        assert (
            parsed("DistributedWorkload", distributed.get_distributed(first.workload_id).data).desired_phase
            == desired
        )
    for workload in (first, second):
        assert parsed("HttpResponse", distributed.delete_distributed(workload.workload_id).data).code == 202
    assert (
        parsed("DistributedWorkload", distributed.get_distributed(first.workload_id).data).desired_phase
        == "Deleted"
    )
    gone = parsed("GetWorkloads200Response", workloads.get_workloads(deleted=True, search=suffix).data)
    assert {w.id for w in gone.workloads} == {first.workload_id, second.workload_id}
    assert all(w.deleted_at is not None for w in gone.workloads)
    assert parsed("CountResponse", workloads.count_workloads(filter_by=[f"name=@{suffix}"]).data).count == 0


def test_a_refused_submission_names_every_problem_in_one_400(sdk: RunaiClient, org: dict[str, str]) -> None:
    """A key missing, a masterSpec with masterSpecSameAsWorker, no image and no framework: one answer."""
    request = m.DistributedCreationRequest(
        name="four-problems",
        projectId=org["vision"],
        clusterId=CLUSTER,
        spec=m.DistributedSpecSpec(environmentVariables=[m.EnvironmentVariable(value="no name")]),
        masterSpecSameAsWorker=True,
        masterSpec=m.MasterSpec(image="launcher:1"),
    )
    with pytest.raises(errors.BadRequestException) as refused:
        sdk.workloads.distributed.create_distributed(request)
    error = parsed("SubmissionErrorV2", refused.value.data)
    fields = [issue.var_field for issue in error.compliance_issues]
    # The example org's system policy requires an image of the worker and of the master: two more issues.
    policy = ["image", "masterSpec.image"]
    assert fields == ["spec.environmentVariables[0]", "masterSpec", "image", "distributedFramework", *policy]
    assert [issue.rule for issue in error.compliance_issues][2:] == ["required"] * 4


def test_the_example_in_the_docs_runs(server: LiveServer) -> None:
    """docs/http-api.md's SDK example, run as written against this server."""
    docs = Path(__file__).resolve().parents[2] / "docs" / "http-api.md"
    text = docs.read_text()
    start = text.index("```python\n", text.index("## Using the Run:ai Python SDK")) + len("```python\n")
    code = text[start : text.index("```", start)]
    code = code.replace('"http://127.0.0.1:8080"', repr(server.url))
    code = code.replace('"dev-client"', repr(CLIENT_ID)).replace('"dev-secret"', repr(SECRET))
    code = code.replace('"dev-admin"', repr(ADMIN))
    exec(compile(code, str(docs), "exec"), {})


# -- the policies of every kind (issue 32) -----------------------------------------------------------------


#: Each kind's policy through the SDK: its PolicyApi method suffix, its models' prefix, its value defaults,
#: the field a reset clears (the other, ``image``, stays), Run:ai's PolicyType and WorkloadType.
POLICY_KINDS = {
    "training": ("training_policy", "Training", {"backoffLimit": 3}, "training", "Training"),
    "workspace": ("workspace_policy", "Workspace", {"workingDir": "/w"}, "workspace", "Workspace"),
    "inference": ("inference_policy", "Inference", {"workingDir": "/w"}, "inference", "Inference"),
    "distributed-inference": (
        "distributed_inference_policy",
        "DistributedInference",
        {"workingDir": "/w"},
        "distributedInference",
        "DistributedInference",
    ),
}


def _sdk_policy(kind: str, defaults: dict[str, Any], rules: dict[str, Any]) -> Any:
    """The SDK's ``<Kind>PolicyDefaultsAndRulesV2`` of a one-role kind, or a distributed inference's with
    these defaults and rules for its leader."""
    prefix = POLICY_KINDS[kind][1]
    if kind != "distributed-inference":
        return getattr(m, f"{prefix}PolicyDefaultsAndRulesV2")(
            defaults=getattr(m, f"{prefix}PolicyDefaultsV2")(**defaults),
            rules=getattr(m, f"{prefix}PolicyRulesV2")(**rules),
        )
    # runapy 1.224.0 fills DistributedInferenceDefaultsV2's schema defaults into a request (restartPolicy,
    # startupPolicy, workers: 0, replicas: 1) unless they are set to None (then sent as null: no opinion);
    # the service reads the leader's and the worker's policy, not those (docs/http-api.md).
    unset = {"restartPolicy": None, "startupPolicy": None, "workers": None, "replicas": None}
    return m.DistributedInferencePolicyDefaultsAndRulesV2(
        defaults=m.DistributedInferenceDefaultsV2(
            leader=m.DistributedInferenceLeaderWorkerDefaultsV2(**defaults), **unset
        ),
        rules=m.DistributedInferenceRulesV2(leader=m.DistributedInferenceLeaderWorkerRulesV2(**rules)),
    )


@pytest.mark.parametrize("kind", list(POLICY_KINDS))
def test_the_policy_of_each_kind_through_the_sdk(sdk: RunaiClient, org: dict[str, str], kind: str) -> None:
    """PUT, PATCH (validateOnly, then Run:ai's reset), GET, the list and DELETE of a training, a workspace, an
    inference and a distributed inference policy of the department ``applied`` (the tenant's, the example
    org's, stay as they are), each answer parsed into the SDK's model."""
    policies = sdk.policies.policy
    suffix, prefix, values, policy_type, workload_type = POLICY_KINDS[kind]
    leader = kind == "distributed-inference"

    def own(part: dict[str, Any]) -> Any:  # the leader's part of a distributed inference's section
        return part["leader"] if leader else part

    (field,) = values
    defaults = {**values, "image": "a:1"}
    ruled = m.IntegerRules(max=6) if field == "backoffLimit" else m.StringRules(canEdit=False)
    rules = {"image": m.StringRules(required=True), field: ruled}
    applied = str(org["applied"])
    meta = m.PolicyCreationFields(scope=m.ScopeType.DEPARTMENT, name="applied", departmentId=applied)
    scope = {"scope": "department", "department_id": applied}
    model = f"{prefix}PolicyV2"
    get = getattr(policies, f"get_{suffix}_v2")
    overwrite = getattr(m, f"{prefix}PolicyOverwriteRequestV2")(
        meta=meta, policy=_sdk_policy(kind, defaults, rules)
    )
    written = getattr(policies, f"overwrite_{suffix}_v2")(**{f"{suffix}_overwrite_request_v2": overwrite})
    put = parsed(model, written.data)
    assert own(written.data["policy"]["defaults"]) == defaults and put.meta.department_id == applied
    assert parsed(model, get(**scope).data).meta.id == put.meta.id

    role = "leader." if leader else ""
    change = getattr(m, f"{prefix}PolicyChangeRequestV2")(meta=meta, reset=[f"{role}{field}"])
    update = getattr(policies, f"update_{suffix}_v2")
    dry = update(validate_only=True, **{f"{suffix}_change_request_v2": change})
    parsed(model, dry.data)
    assert isinstance(dry.data["affectedTemplates"], list)
    assert get(**scope).data["policy"] == written.data["policy"]  # nothing stored
    changed = update(**{f"{suffix}_change_request_v2": change})
    parsed(model, changed.data)
    # Read the answer as sent: the SDK's models fill a missing field with the schema's own default.
    after = changed.data["policy"]
    assert field not in own(after["defaults"]) and field not in own(after["rules"])
    assert "image" in own(after["defaults"]) and "image" in own(after["rules"])

    found = policies.list_policies(workload_type=workload_type, department_id=applied).data
    listed = parsed("PolicyListResponse", found)
    assert [(e.type, e.meta.id) for e in listed.policies] == [(policy_type, put.meta.id)]
    assert getattr(policies, f"delete_{suffix}")(**scope).status_code == 204
    assert parsed(model, get(**scope).data).policy is None
