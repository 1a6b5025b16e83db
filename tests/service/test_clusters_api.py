"""``/api/v1/clusters`` and each cluster's settings (issue 33), on the example org: a database without
clusters is an org of one cluster; the first cluster made adopts its departments and settings, so every
composition is what it was; later clusters take departments by ``clusterId``."""

from __future__ import annotations

import uuid
from typing import Any

from conftest import RESEARCH, VIEWER, bearer
from fastapi.testclient import TestClient

C = "/api/v1/clusters"
S = "/api/v1/cluster-settings"
T = "/api/v1/workload-templates/distributed"
D = "/api/v1/org-unit/departments"


def _templates(client: TestClient) -> dict[str, Any]:
    """Every template's composition as seen from vision (system and department templates) and from itself."""
    listed = client.get(T, params={"limit": 100}).json()["entries"]
    vision = next(
        p["id"] for p in client.get("/api/v1/org-unit/projects").json()["projects"] if p["name"] == "vision"
    )
    out = {}
    for entry in listed:
        out[entry["meta"]["name"]] = client.get(f"{T}/{entry['meta']['id']}").json()["combinedSpec"]
        seen = client.get(f"{T}/{entry['meta']['id']}", params={"projectId": vision})
        if seen.status_code == 200:
            out[entry["meta"]["name"] + "@vision"] = seen.json()["combinedSpec"]
    return out


def test_the_first_cluster_adopts_the_org_and_changes_no_composition(client: TestClient) -> None:
    before = _templates(client)
    settings = client.get(S)
    assert client.get(C).json() == []
    made = client.post(C, json={"name": "main", "domain": "gpu.acme.internal", "version": "2.20"})
    assert made.status_code == 201, made.text
    cluster = made.json()
    assert cluster["name"] == "main" and cluster["domain"] == "gpu.acme.internal"
    uuid.UUID(cluster["uuid"])
    assert client.get(C).json() == [cluster]
    # every department is now the cluster's, with the org's settings
    departments = client.get(D).json()["departments"]
    assert departments and {d["clusterId"] for d in departments} == {cluster["uuid"]}
    own = client.get(S, params={"clusterId": cluster["uuid"]})
    assert own.json() == settings.json() and own.headers["etag"] == '"1"'
    assert _templates(client) == before


def test_a_second_cluster_takes_departments_by_cluster_id_and_its_own_settings(client: TestClient) -> None:
    first = client.post(C, json={"name": "main"}).json()
    second = client.post(C, json={"name": "cloud"}).json()
    put = client.put(S, params={"clusterId": second["uuid"]}, json={"namespacePattern": "cloud-{project}"})
    assert put.status_code == 200 and put.headers["etag"] == '"1"'
    stale = client.put(
        S,
        params={"clusterId": second["uuid"]},
        json={"namespacePattern": "x-{project}"},
        headers={"If-Match": '"0"'},
    )
    assert stale.status_code == 412
    bad = client.put(S, params={"clusterId": second["uuid"]}, json={"namespacePatern": "x"})
    assert bad.status_code == 400 and "namespacePatern" in bad.text
    made = client.post(D, json={"name": "cloudy", "clusterId": second["uuid"], "resources": []})
    assert made.status_code == 201 and made.json()["clusterId"] == second["uuid"]
    missing = client.post(D, json={"name": "nowhere", "resources": []})
    assert missing.status_code == 400 and missing.json()["problems"][0]["field"] == "clusterId"
    unknown = client.post(D, json={"name": "nowhere", "clusterId": str(uuid.uuid4()), "resources": []})
    assert unknown.status_code == 400 and "unknown cluster" in unknown.text
    project = client.post(
        "/api/v1/org-unit/projects", json={"name": "cloud-ml", "parentId": made.json()["id"], "resources": []}
    ).json()
    assert project["clusterId"] == second["uuid"]
    assert project["status"]["namespace"] == "cloud-cloud-ml"  # its cluster's namespace pattern
    # a department moves to another cluster (an extension of Run:ai's update)
    moved = client.put(f"{D}/{made.json()['id']}", json={"clusterId": first["uuid"], "resources": []})
    assert moved.status_code == 200, moved.text
    assert moved.json()["clusterId"] == first["uuid"]


def test_a_cluster_is_renamed_and_deleted_only_when_empty(client: TestClient) -> None:
    first = client.post(C, json={"name": "main"}).json()
    second = client.post(C, json={"name": "spare"}).json()
    taken = client.put(f"{C}/{second['uuid']}", json={"name": "main"})
    assert taken.status_code == 409
    renamed = client.put(f"{C}/{second['uuid']}", json={"name": "reserve"})
    assert renamed.status_code == 204 and renamed.headers["etag"] == '"2"'
    same = client.put(f"{C}/{second['uuid']}", json={"name": "reserve"}, headers={"If-Match": '"2"'})
    assert same.status_code == 204 and same.headers["etag"] == '"2"'  # nothing changed: no new version
    got = client.get(f"{C}/{second['uuid']}")
    assert got.json()["name"] == "reserve" and got.headers["etag"] == '"2"'
    in_use = client.delete(f"{C}/{first['uuid']}")
    assert in_use.status_code == 409 and "department research" in in_use.text
    assert client.delete(f"{C}/{second['uuid']}", headers={"If-Match": '"1"'}).status_code == 412
    assert client.delete(f"{C}/{second['uuid']}").status_code == 204
    assert client.get(f"{C}/{second['uuid']}").status_code == 404
    assert client.get(f"{C}/not-a-uuid").status_code == 404


def test_only_system_admins_make_clusters_and_every_role_reads_them(client: TestClient) -> None:
    assert client.post(C, json={"name": "x"}, headers=bearer(RESEARCH)).status_code == 403
    assert client.post(C, json={"name": "x"}, headers=bearer(VIEWER)).status_code == 403
    made = client.post(C, json={"name": "main"}).json()
    assert client.get(C, headers=bearer(VIEWER)).json() == [made]
    put = client.put(S, params={"clusterId": made["uuid"]}, json={}, headers=bearer(RESEARCH))
    assert put.status_code == 403
    assert client.post(C, json={"name": "bad name!"}).status_code == 400
    assert client.post(C, json={"name": "main"}).status_code == 409


def test_a_cluster_policy_reaches_its_departments_only(client: TestClient) -> None:
    main = client.post(C, json={"name": "main"}).json()
    other = client.post(C, json={"name": "other"}).json()
    policy = {
        "meta": {"name": "main", "scope": "cluster", "clusterId": main["uuid"]},
        "policy": {"rules": {"worker": {"backoffLimit": {"max": 3}}}},
    }
    written = client.put("/api/v2/policy/distributed", json=policy)
    assert written.status_code == 200, written.text
    assert (
        written.json()["meta"]["scope"] == "cluster" and written.json()["meta"]["clusterId"] == main["uuid"]
    )
    projects = {p["name"]: p["id"] for p in client.get("/api/v1/org-unit/projects").json()["projects"]}
    seen = client.get(
        "/api/v2/policy/distributed", params={"scope": "project", "projectId": projects["vision"]}
    )
    rule = seen.json()["effective"]["rules"]["worker"]["backoffLimit"]
    assert rule["sourceOfRule"] == {"scope": "cluster", "clusterId": main["uuid"]}
    empty = client.get("/api/v2/policy/distributed", params={"scope": "cluster", "clusterId": other["uuid"]})
    assert empty.status_code == 200
    assert "backoffLimit" not in empty.json()["effective"]["rules"]["worker"]  # the system's rules only
    unknown = client.get(
        "/api/v2/policy/distributed", params={"scope": "cluster", "clusterId": str(uuid.uuid4())}
    )
    assert unknown.status_code == 404
    needs = client.get("/api/v2/policy/distributed", params={"scope": "cluster"})
    assert needs.status_code == 400 and "clusterId" in needs.text


# -- what a newcomer's review found (issue 33) --------------------------------------------------------------


def test_a_department_does_not_move_away_from_the_assets_its_templates_use(client: TestClient) -> None:
    main = client.post(C, json={"name": "main"}).json()
    other = client.post(C, json={"name": "other"}).json()
    asset = {
        "meta": {"name": "main-gpu", "scope": "cluster", "clusterId": main["uuid"]},
        "spec": {"gpuDevicesRequest": 1},
    }
    assert client.post("/api/v1/asset/compute", json=asset).status_code == 202
    research = next(d for d in client.get(D).json()["departments"] if d["name"] == "research")
    template = {
        "meta": {"name": "uses-main-gpu", "scopeType": "department", "scopeId": research["id"]},
        "spec": {"distributedFramework": "PyTorch", "numWorkers": 1},
        "assets": {"compute": "main-gpu"},
    }
    assert client.post(T, json=template).status_code == 202
    moved = client.put(f"{D}/{research['id']}", json={"clusterId": other["uuid"], "resources": []})
    assert moved.status_code == 409, moved.text
    assert "uses-main-gpu" in moved.text
    still = next(d for d in client.get(D).json()["departments"] if d["name"] == "research")
    assert still["clusterId"] == main["uuid"]


def test_a_project_s_cluster_id_is_its_department_s(client: TestClient) -> None:
    main = client.post(C, json={"name": "main"}).json()
    other = client.post(C, json={"name": "other"}).json()
    research = next(d for d in client.get(D).json()["departments"] if d["name"] == "research")
    body = {"name": "stray", "parentId": research["id"], "clusterId": other["uuid"], "resources": []}
    refused = client.post("/api/v1/org-unit/projects", json=body)
    assert refused.status_code == 400 and refused.json()["problems"][0]["field"] == "clusterId"
    assert "main" in refused.text
    made = client.post("/api/v1/org-unit/projects", json={**body, "clusterId": main["uuid"].upper()})
    assert made.status_code == 201 and made.json()["clusterId"] == main["uuid"]


def test_a_deleted_cluster_takes_its_policy_and_defaults_with_it(client: TestClient, app: Any) -> None:
    spare = client.post(C, json={"name": "main"}).json() and client.post(C, json={"name": "spare"}).json()
    policy = {
        "meta": {"name": "spare", "scope": "cluster", "clusterId": spare["uuid"]},
        "policy": {
            "rules": {"worker": {"backoffLimit": {"max": 3}}},
            "defaults": {"worker": {"backoffLimit": 2}},
        },
    }
    assert client.put("/api/v2/policy/distributed", json=policy).status_code == 200
    assert client.delete(f"{C}/{spare['uuid']}").status_code == 204
    with app.state.store.engine.connect() as connection:
        left = [
            connection.exec_driver_sql(
                f"SELECT count(*) FROM {table} WHERE scope_key LIKE 'cluster:%'"
            ).scalar_one()
            for table in ("policies", "defaults")
        ]
    assert left == [0, 0]


def test_the_org_s_own_settings_are_not_written_once_it_has_clusters(client: TestClient) -> None:
    assert client.put(S, json={"namespacePattern": "org-{project}"}).status_code == 200  # no clusters yet
    client.post(C, json={"name": "main"})
    refused = client.put(S, json={"namespacePattern": "x-{project}"})
    assert refused.status_code == 400 and refused.json()["problems"][0]["field"] == "clusterId"


def test_an_org_has_a_bounded_number_of_clusters(client: TestClient, monkeypatch: Any) -> None:
    from template_engine.service import clusters

    monkeypatch.setattr(clusters, "MAX_CLUSTERS", 2)
    assert client.post(C, json={"name": "a"}).status_code == 201
    assert client.post(C, json={"name": "b"}).status_code == 201
    over = client.post(C, json={"name": "c"})
    assert over.status_code == 413 and "at most" not in over.text and "2 clusters" in over.text
    assert [c["name"] for c in client.get(C).json()] == ["a", "b"]


def test_a_department_admin_reads_its_own_cluster_s_settings_only(client: TestClient) -> None:
    main = client.post(C, json={"name": "main"}).json()
    other = client.post(C, json={"name": "other"}).json()
    assert client.get(S, params={"clusterId": main["uuid"]}, headers=bearer(RESEARCH)).status_code == 200
    assert client.get(S, params={"clusterId": other["uuid"]}, headers=bearer(RESEARCH)).status_code == 403
