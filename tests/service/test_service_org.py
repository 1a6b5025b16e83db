"""Org defaults per scope, departments and projects, and assets over HTTP."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from conftest import TEMPLATES, Ids

TEMPLATES_URL = "/api/v1/workload-templates/distributed"


# -- defaults -----------------------------------------------------------------------------------------------


def test_defaults_read_as_the_yaml_file_holds_them(client: Any, ids: Ids) -> None:
    system = client.get("/api/v1/defaults/system")
    assert system.status_code == 200
    assert system.json() == yaml.safe_load((TEMPLATES / "system/defaults.yaml").read_text())
    assert system.headers["ETag"] == '"1"'
    research = client.get(f"/api/v1/defaults/departments/{ids.departments['research']}").json()
    assert research == yaml.safe_load((TEMPLATES / "departments/research/defaults.yaml").read_text())
    vision = client.get(f"/api/v1/defaults/projects/{ids.projects['vision']}").json()
    assert vision == yaml.safe_load((TEMPLATES / "projects/vision/defaults.yaml").read_text())


def test_defaults_lifecycle(client: Any, ids: Ids) -> None:
    url = f"/api/v1/defaults/projects/{ids.projects['recsys']}"
    assert client.get(url).headers["ETag"] == '"1"'
    assert client.delete(url).status_code == 204
    # Deleted: the scope reads as one with no defaults, with the version the delete made ("0" is the ETag of
    # a scope that never had any), and the next document goes on from it.
    empty = client.get(url)
    assert (empty.json(), empty.headers["ETag"]) == ({}, '"2"')
    assert client.delete(url).status_code == 204  # deleting nothing is fine, and moves nothing
    assert client.get(url).headers["ETag"] == '"2"'
    assert client.put(url, json={"spec": {}}, headers={"If-Match": '"0"'}).status_code == 412
    put = client.put(url, json={"spec": {"nodePools": ["a"]}}, headers={"If-Match": '"2"'})
    assert (put.status_code, put.headers["ETag"]) == (200, '"3"')
    assert client.put(url, json={"spec": {}}, headers={"If-Match": '"2"'}).status_code == 412
    patch = client.patch(url, json={"spec": {"backoffLimit": 2}, "fieldsToClear": ["spec.nodePools"]})
    assert patch.json() == {"spec": {"backoffLimit": 2}}
    assert client.get(url).json() == {"spec": {"backoffLimit": 2}}
    assert client.patch(url, json={"fieldsToClear": ["meta"]}).status_code == 400


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"masterSpecSameAsWorker": True, "master": {"spec": {"image": "x"}}}, "master"),
        ({"master": {"spec": {"numWorkers": 2}}}, "master.spec.numWorkers"),
        ({"spec": {"labels": [{"name": "a"}, {"name": "a"}]}}, "spec.labels[1]"),
        ({"spec": {"compute": {"gpuPortionRequest": 2}}}, "spec.compute.gpuPortionRequest"),
        ({"meta": {"name": "x"}}, "meta"),
    ],
)
def test_bad_defaults_are_refused(client: Any, body: dict[str, Any], field: str) -> None:
    response = client.put("/api/v1/defaults/system", json=body)
    assert response.status_code == 400
    assert field in [p.get("field") for p in response.json()["problems"]]
    assert client.get("/api/v1/defaults/system").headers["ETag"] == '"1"'


def test_defaults_of_unknown_scopes(client: Any) -> None:
    assert client.get("/api/v1/defaults/departments/999").status_code == 404
    assert client.put("/api/v1/defaults/projects/999", json={}).status_code == 404
    assert client.get("/api/v1/defaults/projects/abc").json() == {"code": 404, "message": "No such endpoint."}


def test_department_defaults_reach_its_projects_only(client: Any, ids: Ids) -> None:
    url = f"/api/v1/defaults/departments/{ids.departments['applied']}"
    assert client.patch(url, json={"spec": {"priorityClass": "very-high"}}).status_code == 200
    template = ids.template("pytorch-elastic")

    def priority(project: str) -> Any:
        response = client.get(f"{TEMPLATES_URL}/{template}", params={"projectId": ids.projects[project]})
        return response.json()["combinedSpec"].get("priorityClass")

    assert (priority("recsys"), priority("vision")) == ("very-high", "medium")


# -- departments and projects -------------------------------------------------------------------------------


def test_departments(client: Any) -> None:
    created = client.post("/api/v1/org-unit/departments", json={"name": "platform", "description": "infra"})
    assert created.status_code == 201
    body = created.json()
    assert body["id"].isdigit() and body["name"] == "platform" and body["createdBy"] == "alice"
    dept = body["id"]
    assert client.post("/api/v1/org-unit/departments", json={"name": "platform"}).status_code == 409
    listed = client.get("/api/v1/org-unit/departments").json()["departments"]
    assert [d["name"] for d in listed] == ["research", "applied", "platform"]
    renamed = client.put(f"/api/v1/org-unit/departments/{dept}", json={"name": "platform2"})
    assert renamed.status_code == 200 and renamed.json()["name"] == "platform2"
    assert client.put(f"/api/v1/org-unit/departments/{dept}", json={"name": "research"}).status_code == 409
    assert client.get(f"/api/v1/org-unit/departments/{dept}").json()["name"] == "platform2"
    assert client.delete(f"/api/v1/org-unit/departments/{dept}").status_code == 204
    assert client.get(f"/api/v1/org-unit/departments/{dept}").status_code == 404


def test_a_department_in_use_is_not_deleted(client: Any, ids: Ids) -> None:
    response = client.delete(f"/api/v1/org-unit/departments/{ids.departments['research']}")
    assert response.status_code == 409
    assert "project 'vision'" in response.json()["details"]
    assert "template 'tf-parameter-server'" in response.json()["details"]


def test_projects(client: Any, ids: Ids) -> None:
    research = ids.departments["research"]
    created = client.post("/api/v1/org-unit/projects", json={"name": "audio", "parentId": int(research)})
    assert created.status_code == 201
    project = created.json()
    assert (
        project["parentId"] == research and "parentName" not in project
    )  # Run:ai's Project has no parentName
    # Project names are unique in the whole org (the templates folder and namespaces need it).
    other = {"name": "audio", "parentId": ids.departments["applied"]}
    assert client.post("/api/v1/org-unit/projects", json=other).status_code == 409
    assert client.post("/api/v1/org-unit/projects", json={"name": "x", "parentId": "999"}).status_code == 400
    listed = client.get("/api/v1/org-unit/projects", params={"filterBy": f"parentId=={research}"}).json()[
        "projects"
    ]
    assert [p["name"] for p in listed] == ["vision", "nlp", "audio"]
    assert client.put(f"/api/v1/org-unit/projects/{project['id']}", json={"name": "nlp"}).status_code == 409
    assert client.delete(f"/api/v1/org-unit/projects/{project['id']}").status_code == 204


def test_renaming_a_project_renames_it_in_compositions(client: Any, ids: Ids) -> None:
    vision = ids.projects["vision"]
    vit = ids.template("vit-finetune", "project")
    assert client.get(f"{TEMPLATES_URL}/{vit}").json()["combinedSpec"]["workingDir"] == "/home/vision"
    assert client.put(f"/api/v1/org-unit/projects/{vision}", json={"name": "sight"}).status_code == 200
    assert client.get(f"{TEMPLATES_URL}/{vit}").json()["combinedSpec"]["workingDir"] == "/home/sight"


def test_a_project_with_templates_is_not_deleted(client: Any, ids: Ids) -> None:
    response = client.delete(f"/api/v1/org-unit/projects/{ids.projects['vision']}")
    assert response.status_code == 409
    assert "vit-finetune" in response.json()["details"]
    recsys = ids.projects["recsys"]
    assert client.delete(f"/api/v1/org-unit/projects/{recsys}").status_code == 204
    assert client.get(f"/api/v1/defaults/projects/{recsys}").status_code == 404


# -- assets -------------------------------------------------------------------------------------------------

ENV = {
    "meta": {"name": "jax", "description": "JAX", "scope": "tenant"},
    "spec": {"image": "jax:latest", "command": "python"},
}


def test_asset_lifecycle(client: Any) -> None:
    created = client.post("/api/v1/asset/environment", json=ENV)
    assert created.status_code == 202  # Run:ai's status of create_environment_asset
    asset = created.json()
    assert asset["meta"]["kind"] == "environment" and asset["spec"] == ENV["spec"]
    assert asset["meta"]["scope"] == "tenant"
    assert client.post("/api/v1/asset/environment", json=ENV).status_code == 409
    asset_id = asset["meta"]["id"]
    assert client.get(f"/api/v1/asset/environment/{asset_id}").json() == asset
    assert client.get(f"/api/v1/asset/compute/{asset_id}").status_code == 404  # wrong kind
    changed = {"meta": {"name": "jax2"}, "spec": {"image": "jax:0.4"}}
    updated = client.put(f"/api/v1/asset/environment/{asset_id}", json=changed, headers={"If-Match": '"1"'})
    assert updated.status_code == 202 and updated.json()["meta"]["name"] == "jax2"
    names = [a["meta"]["name"] for a in client.get("/api/v1/asset/environment").json()["entries"]]
    assert "jax2" in names and "pytorch" in names
    assert (
        client.delete(f"/api/v1/asset/environment/{asset_id}", headers={"If-Match": '"1"'}).status_code == 412
    )
    assert client.delete(f"/api/v1/asset/environment/{asset_id}").status_code == 202


def test_an_asset_in_use_is_neither_deleted_nor_renamed(client: Any, ids: Ids) -> None:
    pytorch = ids.assets[("environment", "pytorch")]
    response = client.delete(f"/api/v1/asset/environment/{pytorch}")
    assert response.status_code == 409
    body = response.json()
    assert {t["name"] for t in body["templates"]} == {"hpo-sweep", "pytorch-elastic", "vit-finetune"}
    assert "pytorch-elastic" in body["message"] and body["code"] == 409
    rename = {"meta": {"name": "torch"}, "spec": {"image": "x"}}
    assert client.put(f"/api/v1/asset/environment/{pytorch}", json=rename).status_code == 409
    # Changing its content is fine, and every template using it sees the change.
    same_name = {"meta": {"name": "pytorch"}, "spec": {"image": "nvcr.io/nvidia/pytorch:25.01-py3"}}
    assert client.put(f"/api/v1/asset/environment/{pytorch}", json=same_name).status_code == 202
    elastic = client.get(f"{TEMPLATES_URL}/{ids.template('pytorch-elastic')}").json()
    assert elastic["combinedSpec"]["image"] == "nvcr.io/nvidia/pytorch:25.01-py3"
    # Once no template uses it, it goes.
    for name, scope in (
        ("pytorch-elastic", "system"),
        ("pytorch-elastic", "project"),
        ("vit-finetune", "project"),
    ):
        assert client.delete(f"{TEMPLATES_URL}/{ids.template(name, scope)}").status_code == 204
    (hpo,) = (  # the training that uses it too (issue 32)
        e["meta"]["id"]
        for e in client.get("/api/v1/workload-templates", params={"search": "hpo-sweep"}).json()["entries"]
    )
    assert client.delete(f"/api/v1/workload-templates/trainings/{hpo}").status_code == 204
    assert client.delete(f"/api/v1/asset/environment/{pytorch}").status_code == 202


@pytest.mark.parametrize(
    ("kind", "body", "field"),
    [
        ("environment", {"meta": {"name": "e", "scope": "tenant"}, "spec": {"compute": {}}}, "spec.compute"),
        ("compute", {"meta": {"name": "c", "scope": "tenant"}, "spec": {"image": "x"}}, "spec.image"),
        ("compute", {"meta": {"name": "c", "scope": "tenant"}, "spec": {"compute": {}}}, "spec.compute"),
        ("compute", {"meta": {"name": "c", "scope": "tenant"}}, "spec"),
        ("compute", {"meta": {"name": "c"}, "spec": {}}, "meta.scope"),
        ("datasource/nfs", {"meta": {"name": "d", "scope": "tenant"}, "spec": {"server": 3}}, "spec.server"),
        ("datasource/nfs", {"meta": {"name": "bad name!", "scope": "tenant"}, "spec": {}}, "meta.name"),
    ],
)
def test_bad_assets_are_refused(client: Any, kind: str, body: dict[str, Any], field: str) -> None:
    response = client.post(f"/api/v1/asset/{kind}", json=body)
    assert response.status_code == 400
    assert field in [p.get("field") for p in response.json()["problems"]]
