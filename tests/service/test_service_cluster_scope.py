"""The API at cluster scope, as Run:ai's (issue 33, build 3): templates (``scopeType: cluster``, ``scopeId``
the cluster's UUID), assets (``meta.scope: cluster`` with ``clusterId``), cluster defaults
(``/api/v1/defaults/clusters/{clusterUuid}``), workloads' ``clusterId`` and their cluster's settings, and what
a cluster admin may do.  Every answer is validated against Run:ai's whole document (``sdk_helpers``, installed
by ``conftest.py``).

The org: clusters east and west with their own namespace patterns and priority classes; department research
(east) with project vision, department applied (west) with project recsys.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import bearer, open_client
from fastapi.testclient import TestClient
from sdk_helpers import service_document

from template_engine.service.app import create_app
from template_engine.service.settings import Settings

ADMIN, EAST_ADMIN, RESEARCH, APPLIED = "c-admin", "c-east", "c-research", "c-applied"
AUTH = f"""\
tokens:
  - {{subject: alice, token: {ADMIN}, role: system-admin}}
  - {{subject: ed, token: {EAST_ADMIN}, role: cluster-admin, cluster: east}}
  - {{subject: bob, token: {RESEARCH}, role: department-admin, department: research}}
  - {{subject: erin, token: {APPLIED}, role: department-admin, department: applied}}
"""
POLICY = "/api/v2/policy/distributed"
TEMPLATES = "/api/v1/workload-templates"
WORKSPACES = f"{TEMPLATES}/workspaces"
DISTRIBUTED = f"{TEMPLATES}/distributed"
COMPUTE = "/api/v1/asset/compute"


class Org:
    """The org's ids, as the service gave them."""

    def __init__(self, client: TestClient) -> None:
        self.client = client
        self.east = self._created("/api/v1/clusters", {"name": "east"})["uuid"]
        self.west = self._created("/api/v1/clusters", {"name": "west"})["uuid"]
        for uuid, name in ((self.east, "east"), (self.west, "west")):
            settings = {
                "namespacePattern": name + "-{project}",
                "priorityClasses": [
                    {"name": f"{name}-low", "value": 1},
                    {"name": f"{name}-high", "value": 9},
                ],
                "preemptibleClass": f"{name}-low",
                "nonPreemptibleClass": f"{name}-high",
            }
            response = client.put("/api/v1/cluster-settings", params={"clusterId": uuid}, json=settings)
            assert response.status_code == 200, response.text
        self.research = self._unit("departments", {"name": "research", "clusterId": self.east})
        self.applied = self._unit("departments", {"name": "applied", "clusterId": self.west})
        self.vision = self._unit("projects", {"name": "vision", "parentId": self.research})
        self.recsys = self._unit("projects", {"name": "recsys", "parentId": self.applied})

    def _created(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        response = self.client.post(path, json=body)
        assert response.status_code in (200, 201, 202), response.text
        found: dict[str, Any] = response.json()
        return found

    def _unit(self, level: str, body: dict[str, Any]) -> str:
        return str(self._created(f"/api/v1/org-unit/{level}", body)["id"])


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, Org]]:
    folder = tmp_path_factory.mktemp("cluster-scope")
    auth = folder / "tokens.yaml"
    auth.write_text(AUTH)
    app = create_app(Settings(database_url=f"sqlite:///{folder / 'db.sqlite'}", auth_file=Path(auth)))
    with open_client(app, ADMIN) as client:
        yield app, Org(client)


@pytest.fixture
def org(service: tuple[Any, Org]) -> Org:
    return service[1]


def _template(org: Org, path: str, name: str, scope_type: str, scope_id: str, **more: Any) -> dict[str, Any]:
    body = {"meta": {"name": name, "scopeType": scope_type, "scopeId": scope_id}, **more}
    response = org.client.post(path, json=body)
    assert response.status_code == 202, response.text
    created: dict[str, Any] = response.json()
    return created


# -- templates ----------------------------------------------------------------------------------------------


def test_a_cluster_template_names_its_cluster_and_is_seen_from_its_clusters_projects_only(org: Org) -> None:
    created = _template(org, WORKSPACES, "east-notebook", "cluster", org.east, spec={"image": "python:3.12"})
    meta = created["meta"]
    assert (meta["scopeType"], meta["scopeId"], meta["clusterId"]) == ("cluster", org.east, org.east)
    assert meta["departmentId"] is None and meta["projectId"] is None
    one = f"{WORKSPACES}/{meta['id']}"

    seen = org.client.get(one, params={"projectId": org.vision}).json()["meta"]
    assert (seen["clusterId"], seen["departmentId"], seen["projectId"]) == (
        org.east,
        org.research,
        int(org.vision),
    )
    other = org.client.get(one, params={"projectId": org.recsys})
    assert other.status_code == 400 and other.json()["problems"][0]["field"] == "projectId"

    def names(token: str) -> set[str]:
        response = org.client.get(TEMPLATES, headers=bearer(token), params={"limit": 500})
        assert response.status_code == 200, response.text
        return {entry["meta"]["name"] for entry in response.json()["entries"]}

    assert "east-notebook" in names(RESEARCH) and "east-notebook" in names(EAST_ADMIN)
    assert "east-notebook" not in names(APPLIED)
    assert org.client.get(one, headers=bearer(APPLIED)).status_code == 403


def test_a_template_of_a_department_names_its_departments_cluster(org: Org) -> None:
    created = _template(org, WORKSPACES, "research-notebook", "department", org.research, spec={"image": "x"})
    assert (created["meta"]["scopeId"], created["meta"]["clusterId"]) == (org.research, org.east)


def test_a_template_name_is_free_per_cluster(org: Org) -> None:
    _template(org, WORKSPACES, "per-cluster", "cluster", org.east, spec={"image": "python:3.12"})
    available = f"{TEMPLATES}/name-availability"
    taken = org.client.get(
        available, params={"templateName": "per-cluster", "scopeType": "cluster", "scopeId": org.east}
    )
    free = org.client.get(
        available, params={"templateName": "per-cluster", "scopeType": "cluster", "scopeId": org.west}
    )
    assert (taken.status_code, free.status_code) == (409, 204)
    again = org.client.post(
        WORKSPACES, json={"meta": {"name": "per-cluster", "scopeType": "cluster", "scopeId": org.east}}
    )
    assert again.status_code == 400 and again.json()["problems"][0]["field"] == "meta.name"
    _template(org, WORKSPACES, "per-cluster", "cluster", org.west, spec={"image": "python:3.12"})


def test_a_cluster_scope_needs_a_known_cluster_uuid(org: Org) -> None:
    for scope_id, words in (("7", "must be"), ("00000000-0000-0000-0000-0000000000aa", "unknown cluster")):
        body = {"meta": {"name": "nowhere", "scopeType": "cluster", "scopeId": scope_id}}
        response = org.client.post(WORKSPACES, json=body)
        assert response.status_code == 400, response.text
        (problem,) = response.json()["problems"]
        assert problem["field"] == "meta.scopeId" and words in problem["message"], problem


# -- assets -------------------------------------------------------------------------------------------------


def test_a_cluster_asset_is_listed_by_its_cluster_and_usable_only_below_it(org: Org) -> None:
    meta = {"name": "east-small", "scope": "cluster", "clusterId": org.east.upper()}
    created = org.client.post(COMPUTE, json={"meta": meta, "spec": {"cpuCoreRequest": 1}})
    assert created.status_code == 202, created.text
    assert (created.json()["meta"]["scope"], created.json()["meta"]["clusterId"]) == ("cluster", org.east)

    def listed(**query: str) -> set[str]:
        response = org.client.get(COMPUTE, params=query)
        assert response.status_code == 200, response.text
        return {entry["meta"]["name"] for entry in response.json()["entries"]}

    assert "east-small" in listed(scope="cluster", clusterId=org.east)
    assert "east-small" not in listed(scope="cluster", clusterId=org.west)
    assert "east-small" in listed(clusterId=org.east) and "east-small" in listed(projectId=org.vision)
    assert "east-small" in listed(departmentId=org.research)
    assert "east-small" not in listed(projectId=org.recsys) and "east-small" not in listed(clusterId=org.west)
    unknown = org.client.get(COMPUTE, params={"clusterId": "00000000-0000-0000-0000-0000000000aa"})
    assert unknown.status_code == 400 and unknown.json()["problems"][0]["field"] == "clusterId"

    used = _template(
        org,
        WORKSPACES,
        "east-user",
        "department",
        org.research,
        spec={"image": "x"},
        assets={"compute": "east-small"},
    )
    assert used["combinedSpec"]["compute"] == {"cpuCoreRequest": 1}
    body = {"meta": {"name": "west-user", "scopeType": "department", "scopeId": org.applied}}
    refused = org.client.post(
        WORKSPACES, json={**body, "spec": {"image": "x"}, "assets": {"compute": "east-small"}}
    )
    assert refused.status_code == 400, refused.text
    (problem,) = refused.json()["problems"]
    assert problem["field"] == "assets.compute" and "belongs to cluster east" in problem["message"]


# -- defaults -----------------------------------------------------------------------------------------------


def test_a_clusters_defaults_are_read_written_and_removed_with_etags(org: Org) -> None:
    path = f"/api/v1/defaults/clusters/{org.west}"
    empty = org.client.get(path)
    assert (empty.status_code, empty.json(), empty.headers["etag"]) == (200, {}, '"0"')
    put = org.client.put(path, json={"spec": {"nodePools": ["a100"]}}, headers={"If-Match": '"0"'})
    assert (put.status_code, put.headers["etag"]) == (200, '"1"')
    stale = org.client.patch(path, json={"spec": {"workingDir": "/w"}}, headers={"If-Match": '"0"'})
    assert stale.status_code == 412
    patched = org.client.patch(path, json={"spec": {"workingDir": "/w"}}, headers={"If-Match": '"1"'})
    assert patched.json() == {"spec": {"nodePools": ["a100"], "workingDir": "/w"}}

    system = _template(org, WORKSPACES, "everywhere", "system", "1", spec={"image": "x"})
    one = f"{WORKSPACES}/{system['meta']['id']}"
    west = org.client.get(one, params={"projectId": org.recsys}).json()["combinedSpec"]
    east = org.client.get(one, params={"projectId": org.vision}).json()["combinedSpec"]
    assert west.get("nodePools") == ["a100"] and "nodePools" not in east

    removed = org.client.delete(path, headers={"If-Match": '"2"'})
    assert removed.status_code == 204
    assert org.client.get(path).json() == {}
    missing = org.client.get("/api/v1/defaults/clusters/00000000-0000-0000-0000-0000000000aa")
    assert missing.status_code == 404


# -- workloads ----------------------------------------------------------------------------------------------


def test_a_workload_runs_in_its_projects_cluster_with_that_clusters_settings(org: Org) -> None:
    template = _template(
        org,
        DISTRIBUTED,
        "trainer",
        "cluster",
        org.east,
        spec={"image": "python:3.12", "distributedFramework": "PyTorch", "numWorkers": 2},
    )
    body = {
        "projectId": org.vision,
        "templateId": template["meta"]["id"],
        "spec": {"preemptibility": "preemptible"},
    }
    wrong = org.client.post(
        "/api/v1/workloads/distributed", json={**body, "name": "job", "clusterId": org.west}
    )
    assert wrong.status_code == 400, wrong.text
    (problem,) = wrong.json()["problems"]
    assert problem["field"] == "clusterId" and "cluster east" in problem["message"]

    created = org.client.post(
        "/api/v1/workloads/distributed", json={**body, "name": "job", "clusterId": org.east.upper()}
    )
    assert created.status_code == 202, created.text
    assert created.json()["clusterId"] == org.east
    manifests = org.client.get(
        f"/api/v1/workloads/distributed/{created.json()['workloadId']}/manifests", params={"annotate": "true"}
    )
    assert manifests.status_code == 200, manifests.text
    (job,) = manifests.json()["objects"]
    assert job["metadata"]["namespace"] == "east-vision"
    pods = [replica["template"]["spec"] for replica in job["spec"]["pytorchReplicaSpecs"].values()]
    assert {pod["priorityClassName"] for pod in pods} == {"east-low"}
    assert _setting_files(manifests.json()) == {"db:clusters/east"}

    seen = org.client.get(
        f"{DISTRIBUTED}/{template['meta']['id']}/manifests",
        params={"projectId": org.vision, "annotate": "true"},
    ).json()
    assert seen["objects"][0]["metadata"]["namespace"] == "east-vision"
    assert _setting_files(seen) == {"db:clusters/east"}


def _setting_files(answer: dict[str, Any]) -> set[str]:
    """The files of the stored settings the values came from (a default setting has none)."""
    return {s["file"] for s in answer["sources"] if s["source"] == "setting" and "file" in s}


# -- who may do what ----------------------------------------------------------------------------------------


def _policy(scope: str, field: str = "gpuDevicesRequest", **ids: Any) -> dict[str, Any]:
    """A policy of ``scope`` with a rule of one field (one scope of a branch rules a field)."""
    return {
        "meta": {"name": "p", "scope": scope, **ids},
        "policy": {"rules": {"worker": {"compute": {field: {"max": 4}}}}},
    }


def _put_policy(org: Org, token: str, scope: str, field: str = "gpuDevicesRequest", **ids: Any) -> int:
    response = org.client.put(POLICY, json=_policy(scope, field, **ids), headers=bearer(token))
    assert response.status_code in (200, 403), response.text
    return response.status_code


def test_a_cluster_admin_writes_its_cluster_and_reads_nothing_of_the_other_but_the_tenant(org: Org) -> None:
    east = bearer(EAST_ADMIN)
    assert _put_policy(org, EAST_ADMIN, "cluster", clusterId=org.east) == 200
    assert _put_policy(org, EAST_ADMIN, "cluster", clusterId=org.west) == 403
    assert (
        _put_policy(org, EAST_ADMIN, "department", departmentId=org.research, field="cpuCoreRequest") == 200
    )
    assert _put_policy(org, EAST_ADMIN, "department", departmentId=org.applied, field="cpuCoreRequest") == 403

    read = org.client.get(POLICY, params={"scope": "cluster", "clusterId": org.east}, headers=east)
    assert read.status_code == 200 and read.json()["meta"]["clusterId"] == org.east
    assert (
        org.client.get(POLICY, params={"scope": "cluster", "clusterId": org.west}, headers=east).status_code
        == 403
    )
    assert org.client.get(POLICY, params={"scope": "tenant"}, headers=east).status_code == 200
    projects = org.client.get(POLICY, params={"scope": "project", "projectId": org.recsys}, headers=east)
    assert projects.status_code == 403

    for uuid, status in ((org.east, 200), (org.west, 403)):
        defaults = org.client.put(
            f"/api/v1/defaults/clusters/{uuid}", json={"spec": {"image": "x"}}, headers=east
        )
        settings = org.client.put(
            "/api/v1/cluster-settings", params={"clusterId": uuid}, json={}, headers=east
        )
        assert (defaults.status_code, settings.status_code) == (status, status)
        assert org.client.delete(f"/api/v1/defaults/clusters/{uuid}", headers=east).status_code == (
            204 if status == 200 else 403
        )
    project = {"name": "east-made", "parentId": org.research}
    assert org.client.post("/api/v1/org-unit/projects", json=project, headers=east).status_code == 201
    other = {"name": "west-made", "parentId": org.applied}
    assert org.client.post("/api/v1/org-unit/projects", json=other, headers=east).status_code == 403

    listed = org.client.get(POLICY.rsplit("/", 1)[0], params={"clusterId": org.east}).json()["policies"]
    assert listed and all(p["meta"].get("clusterId", org.east) == org.east for p in listed)
    assert {p["meta"]["scope"] for p in listed} == {"cluster", "department"}


def test_a_department_admin_reads_its_clusters_policy_and_cannot_write_it(org: Org) -> None:
    assert org.client.put(POLICY, json=_policy("cluster", clusterId=org.east)).status_code == 200
    research = bearer(RESEARCH)
    read = org.client.get(POLICY, params={"scope": "cluster", "clusterId": org.east}, headers=research)
    assert read.status_code == 200, read.text
    assert (
        org.client.put(POLICY, json=_policy("cluster", clusterId=org.east), headers=research).status_code
        == 403
    )
    assert (
        org.client.get(
            POLICY, params={"scope": "cluster", "clusterId": org.west}, headers=research
        ).status_code
        == 403
    )
    effective = org.client.get(
        POLICY, params={"scope": "project", "projectId": org.vision}, headers=research
    ).json()
    rule = effective["effective"]["rules"]["worker"]["compute"]["gpuDevicesRequest"]
    assert rule["sourceOfRule"] == {"scope": "cluster", "clusterId": org.east}


def test_a_rule_of_a_cluster_policy_is_named_by_its_clusters_file(org: Org) -> None:
    assert _put_policy(org, ADMIN, "cluster", clusterId=org.east) == 200
    body = _policy("department", departmentId=org.research)
    response = org.client.put(POLICY, json=body)
    assert response.status_code == 400, response.text
    (problem,) = response.json()["problems"]
    assert "cluster east policy (clusters/east/policy.yaml:" in problem["message"], problem


# -- the document -------------------------------------------------------------------------------------------


def test_the_document_states_the_cluster_scope() -> None:
    document = service_document()
    schemas = document["components"]["schemas"]
    assert "cluster" in schemas["TemplateCreateMeta"]["properties"]["scopeType"]["enum"]
    assert "cluster" in schemas["TemplateMetaOut"]["properties"]["scopeType"]["enum"]
    for name in ("PolicyMetaIn", "PolicyMetaOut", "PolicyRefOut", "AssetMetaOut"):
        assert "cluster" in schemas[name]["properties"]["scope"]["enum"], name
        assert "clusterId" in schemas[name]["properties"], name
    cluster_rule = [
        rule["then"]
        for rule in schemas["PolicyMetaIn"]["allOf"]
        if rule["if"]["properties"]["scope"].get("const") == "cluster"
    ]
    assert cluster_rule == [
        {
            "required": ["clusterId"],
            "properties": {
                "clusterId": {"not": {"type": "null"}},
                "departmentId": {"type": "null"},
                "projectId": {"type": "null"},
            },
        }
    ]
    assert "/api/v1/defaults/clusters/{clusterUuid}" in document["paths"]
    listed = document["paths"]["/api/v1/asset/compute"]["get"]["parameters"]
    assert {p["name"] for p in listed} >= {"scope", "clusterId", "departmentId", "projectId"}


def test_a_pending_change_names_a_cluster_template_by_its_uuid(org: Org) -> None:
    _template(org, WORKSPACES, "pending", "cluster", org.west, spec={"image": "python:3.12"})
    path = f"/api/v1/defaults/clusters/{org.west}"
    response = org.client.put(
        path, params={"validateOnly": "true"}, json={"spec": {"workingDir": "/pending"}}
    )
    assert response.status_code == 200, response.text
    affected = [a for a in response.json()["affectedTemplates"] if a["name"] == "pending"]
    assert affected and {(a["scopeType"], a["scopeId"]) for a in affected} == {("cluster", org.west)}
    assert org.client.get(path).json() == {}  # nothing stored
