"""Run:ai wire compatibility through the in-process client: compliance in lists, scopes, the fields Run:ai's
schemas define and require, one 400 with every problem, and applications in the auth file."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest
from conftest import CLUSTER, Ids

from template_engine.service.auth import Authenticator, AuthFileError

T = "/api/v1/workload-templates/distributed"
W = "/api/v1/workloads/distributed"


def _fields(response: Any) -> list[str]:
    return [p.get("field") for p in response.json()["problems"]]


# -- 4. complyToProject, complyToReplicaType ----------------------------------------------------------------


def test_comply_to_project_gives_each_entry_its_issues_in_that_project(client: Any, ids: Ids) -> None:
    speech = ids.projects["speech"]
    listed = client.get(T, params={"complyToProject": speech, "filterBy": "name==asr-sweep-draft"}).json()
    [draft] = listed["entries"]
    issues = draft["complianceIssues"]
    assert {"field": "image", "details": "mandatory image is not provided", "rule": "required"} in issues
    # The same issues, the master's under masterSpec. (the system policy requires the master's image too).
    own = [
        ("masterSpec." if i["replica"] == "master" else "") + i["field"] for i in draft["runnable"]["issues"]
    ]
    assert [i["field"] for i in issues] == own
    assert {"field": "compute.gpuRequestType", "rule": "options"}.items() <= next(
        i for i in issues if i["field"] == "compute.gpuRequestType" and "rule" in i
    ).items()
    elastic = client.get(T, params={"complyToProject": speech, "filterBy": "name==pytorch-elastic"}).json()
    assert all(e["complianceIssues"] == [] for e in elastic["entries"] if e["meta"]["scopeType"] == "system")
    assert "complianceIssues" not in client.get(T, params={"limit": 1}).json()["entries"][0]


def test_comply_to_replica_type_and_workload_type(client: Any, ids: Ids) -> None:
    body = {
        "meta": {"name": "launcher-less", "scopeType": "system"},
        "spec": {"image": "a:1", "distributedFramework": "MPI"},
        "masterSpecSameAsWorker": False,
        "master": {"spec": {"args": "x"}},
    }
    assert client.post(T, json=body).status_code == 202
    vision = ids.projects["vision"]
    params: dict[str, Any] = {"complyToProject": vision, "filterBy": "name==launcher-less"}
    both = client.get(T, params=params).json()["entries"][0]["complianceIssues"]
    worker = client.get(T, params={**params, "complyToReplicaType": "Worker"}).json()["entries"][0]
    master = client.get(T, params={**params, "complyToReplicaType": "Master"}).json()["entries"][0]
    assert worker["complianceIssues"] == []
    # No master image: a runnable issue, and the system policy's rule (required) on the master.
    assert [(i["field"], i["rule"]) for i in master["complianceIssues"]] == [("image", "required")] * 2
    assert [i["field"] for i in both] == ["masterSpec.image"] * 2
    training = client.get(
        "/api/v1/workload-templates", params={**params, "complyToWorkloadType": "Training"}
    ).json()["entries"][0]
    assert training["complianceIssues"][0]["field"] == "workloadType"
    alone = client.get(T, params={"complyToReplicaType": "Master"})
    assert alone.status_code == 400 and _fields(alone) == ["complyToReplicaType"]
    assert client.get(T, params={"complyToProject": 999}).status_code == 400


# -- 5. scopes ----------------------------------------------------------------------------------------------


def test_tenant_is_the_top_scope_and_a_cluster_scope_needs_its_uuid(client: Any) -> None:
    created = client.post(T, json={"meta": {"name": "tenant-wide", "scopeType": "tenant"}})
    assert created.status_code == 202
    assert (created.json()["meta"]["scopeType"], created.json()["meta"]["scopeId"]) == ("system", "1")
    url = "/api/v1/workload-templates/name-availability"
    assert client.get(url, params={"templateName": "tenant-wide", "scopeType": "tenant"}).status_code == 409
    assert client.get(url, params={"templateName": "tenant-wide", "scopeType": "system"}).status_code == 409
    cluster = client.get(url, params={"templateName": "x", "scopeType": "cluster"})
    assert cluster.status_code == 400 and _fields(cluster) == ["scopeId"]  # issue 33: clusters by UUID
    assert "a cluster scope needs its id" in cluster.json()["details"]
    count = client.get("/api/v1/workload-templates/count", params={"filterBy": "scopeType==tenant"}).json()
    assert (
        count
        == client.get("/api/v1/workload-templates/count", params={"filterBy": "scopeType==system"}).json()
    )


# -- 6. fields the real schemas define and require ----------------------------------------------------------


def test_a_workload_master_may_have_its_own_image_pull_secrets(client: Any, ids: Ids) -> None:
    body = {
        "name": "with-pull-secrets",
        "projectId": ids.projects["vision"],
        "clusterId": CLUSTER,
        "spec": {"image": "a:1", "distributedFramework": "MPI"},
        "masterSpecSameAsWorker": False,
        "masterSpec": {"image": "launcher:1", "imagePullSecrets": [{"name": "regcred", "exclude": False}]},
    }
    accepted = client.post(W, json=body)
    assert accepted.status_code == 202, accepted.json()
    assert accepted.json()["masterSpec"]["imagePullSecrets"] == [{"name": "regcred", "exclude": False}]
    alone = {**body, "name": "no-master", "masterSpec": {"imagePullSecrets": [{"name": "regcred"}]}}
    refused = client.post(W, json=alone)
    assert refused.status_code == 400 and _fields(refused) == ["masterSpec.imagePullSecrets"]


@pytest.mark.parametrize("missing", ["operator", "key"])
def test_a_match_expression_needs_its_key_and_operator(client: Any, ids: Ids, missing: str) -> None:
    expression = {"key": "gpu", "operator": "Exists"}
    del expression[missing]
    affinity = {"nodeSelectorTerms": [{"matchExpressions": [expression]}]}
    template = client.post(
        T,
        json={"meta": {"name": "affine", "scopeType": "system"}, "spec": {"nodeAffinityRequired": affinity}},
    )
    field = f"spec.nodeAffinityRequired.nodeSelectorTerms[0].matchExpressions[0].{missing}"
    assert template.status_code == 400 and _fields(template) == [field]
    workload = {"name": "affine", "projectId": ids.projects["vision"], "clusterId": CLUSTER}
    refused = client.post(W, json={**workload, "spec": {"nodeAffinityRequired": affinity}})
    assert refused.status_code == 400 and field in _fields(refused)


def test_an_environment_variable_with_two_value_sources_is_not_runnable(client: Any, ids: Ids) -> None:
    variable = {"name": "DB", "value": "x", "secret": {"name": "db", "key": "password"}}
    body = {
        "name": "two-sources",
        "projectId": ids.projects["vision"],
        "clusterId": CLUSTER,
        "spec": {"image": "a:1", "distributedFramework": "MPI", "environmentVariables": [variable]},
    }
    refused = client.post(W, json=body)
    assert refused.status_code == 400
    assert "environmentVariables[name=DB]" in [i["field"] for i in refused.json()["complianceIssues"]]


# -- 7. one 400 with every problem --------------------------------------------------------------------------


def test_a_template_with_three_problems_gets_all_three_at_once(client: Any) -> None:
    body = {
        "meta": {"name": "three", "scopeType": "department", "scopeId": "999"},
        "spec": {"gpus": 1, "environmentVariables": [{"value": "no name"}]},
        "assets": {"environment": "no-such-environment"},
    }
    response = client.post(T, json=body)
    assert response.status_code == 400
    assert sorted(_fields(response)) == [
        "assets.environment",
        "meta.scopeId",
        "spec.environmentVariables[0]",
        "spec.gpus",
    ]


def test_a_workload_with_three_problems_gets_all_three_at_once(client: Any, ids: Ids) -> None:
    body = {
        "name": "three",
        "projectId": ids.projects["vision"],
        "clusterId": CLUSTER,
        "spec": {
            "numWorkers": "2",
            "environmentVariables": [{"value": "no name"}],
            "distributedFramework": "MPI",
        },
    }
    response = client.post(W, json=body)
    assert response.status_code == 400
    error = response.json()
    # The example org's system policy requires an image of the worker and of the (same as worker) master: no
    # image is also two compliance issues.
    assert [i["field"] for i in error["complianceIssues"]] == [
        "spec.numWorkers",
        "spec.environmentVariables[0]",
        "image",
        "image",
        "masterSpec.image",
    ]
    assert [i.get("rule") for i in error["complianceIssues"][2:]] == ["required"] * 3
    assert len(error["details"].splitlines()) == 5


def test_a_value_run_ai_refuses_is_refused(client: Any) -> None:
    spec = {"environmentVariables": [{"name": "A", "secret": {"name": "Bad_Name", "key": "k"}}]}
    response = client.post(T, json={"meta": {"name": "bad-secret", "scopeType": "system"}, "spec": spec})
    assert response.status_code == 400
    assert _fields(response) == ["spec.environmentVariables[0].secret.name"]
    assert "Kubernetes name" in response.json()["details"]


# -- 2. applications in the auth file -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("applications:\n  - {clientId: a, sha256: '" + "0" * 64 + "', role: viewer}\n", "signingKey"),
        ("signingKey: short\n", "signingKey"),
        (
            "signingKey: '" + "k" * 32 + "'\napplications:\n"
            "  - {clientId: a, sha256: '" + "0" * 64 + "', role: viewer}\n"
            "  - {clientId: a, sha256: '" + "1" * 64 + "', role: viewer}\n",
            "repeats the client id",
        ),
        ("signingKey: '" + "k" * 32 + "'\ntokenLifetime: 30\n", "tokenLifetime"),
        (
            "signingKey: '" + "k" * 32 + "'\napplications:\n  - {clientId: a, secret: x, role: viewer}\n",
            "secret",
        ),
    ],
)
def test_bad_application_entries(tmp_path: Path, text: str, fragment: str) -> None:
    path = tmp_path / "auth.yaml"
    path.write_text(text)
    with pytest.raises(AuthFileError) as caught:
        Authenticator.from_file(path)
    assert fragment in str(caught.value)
    assert "k" * 32 not in str(caught.value)


def test_applications_log_in_and_tokens_name_them(tmp_path: Path) -> None:
    path = tmp_path / "auth.yaml"
    secret = "s3cret-of-the-app"
    path.write_text(
        "signingKey: '" + "k" * 40 + "'\napplications:\n"
        f"  - {{clientId: bot, sha256: '{hashlib.sha256(secret.encode()).hexdigest()}', "
        "role: project-editor, project: vision}\n"
    )
    authenticator = Authenticator.from_file(path)
    assert authenticator.login("bot", "wrong", now=1000) is None
    assert authenticator.login("nobody", secret, now=1000) is None
    token, lifetime = authenticator.login("bot", secret, now=1000) or ("", 0)
    assert lifetime == 3600
    principal = authenticator.authenticate(token, now=2000)
    assert principal is not None and (principal.subject, principal.project) == ("bot", "vision")
    assert authenticator.authenticate(token, now=1000 + 3600) is None
    assert authenticator.expired(token, now=1000 + 3600)
    assert authenticator.authenticate(token[:-2] + "xx", now=2000) is None
