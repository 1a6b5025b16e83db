"""Distributed templates over HTTP (in-process ASGI client): shapes, composition, CRUD, PATCH, lists."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import TEMPLATES, Ids, sample

from template_engine import compose, load_org

BASE = "/api/v1/workload-templates/distributed"
TEMPLATE_KEYS = {
    "meta",
    "spec",
    "assets",
    "masterSpecSameAsWorker",
    "master",
    "runnable",
    "combinedSpec",
    "combinedMasterSpec",
}


def _job(
    name: str = "job", scope: str = "system", scope_id: str | None = None, **spec: Any
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "scopeType": scope}
    if scope_id is not None:
        meta["scopeId"] = scope_id
    return {"meta": meta, "spec": {"image": "python:3.11", "distributedFramework": "PyTorch", **spec}}


def test_the_seed_request_sample_is_accepted(client: Any) -> None:
    response = client.post(BASE, json=sample("seed002_request.json"))
    assert response.status_code == 202
    body = response.json()
    assert set(body) == TEMPLATE_KEYS
    assert response.headers["ETag"] == '"1"'
    meta = body["meta"]
    assert meta["name"] == "my-template-name"
    assert (meta["scopeType"], meta["scopeId"], meta["workloadType"]) == ("system", "1", "Distributed")
    assert meta["createdBy"] == meta["updatedBy"] == "alice"
    assert meta["createdAt"].endswith("Z")
    # Run:ai's keys a client reads are there, null where there is no value (Run:ai's schema: nullable)
    nulls = ("description", "clusterId", "departmentId", "projectId")
    assert {k: meta[k] for k in nulls} == dict.fromkeys(nulls)
    # Only the system defaults apply: no image anywhere, so not runnable, with every reason.
    assert body["runnable"]["isRunnable"] is False
    assert body["runnable"]["issue"] == "mandatory image is not provided"
    assert body["combinedSpec"]["labels"][0] == {"name": "org", "value": "acme-ai"}


def test_the_seed_response_sample_sent_back_is_refused_naming_master(client: Any) -> None:
    """The seed's template has ``master`` and ``masterSpecSameAsWorker: true``: DESIGN.md makes that a 400."""
    seed = sample("seed002_response.json")
    body = {k: seed[k] for k in ("spec", "masterSpecSameAsWorker", "master")}
    body["meta"] = {"name": "from-the-seed", "scopeType": "system"}
    response = client.post(BASE, json=body)
    assert response.status_code == 400
    error = response.json()
    assert error["code"] == 400
    assert any(p.get("field") == "master" for p in error["problems"]), error
    assert "master" in error["details"]
    # With the flag turned off (and the secret's name one Run:ai takes) the same document is a valid template.
    body["masterSpecSameAsWorker"] = False
    for spec in (body["spec"], body["master"]["spec"]):
        spec["environmentVariables"][0]["secret"]["name"] = "postgress-secret"
    assert client.post(BASE, json=body).status_code == 202


def test_every_composition_equals_the_engine_on_the_same_folder(client: Any, ids: Ids) -> None:
    """The service composes exactly what ``template-engine preview`` composes from the YAML files."""
    org = load_org(TEMPLATES)
    seen = 0
    for view, template in org.views():
        expected = compose(org, template, view).to_response()
        params = {"projectId": ids.projects[view.project]} if view.project else {}
        got = client.get(ids.url(template.name, template.scope.type), params=params).json()
        for key in (
            "spec",
            "assets",
            "masterSpecSameAsWorker",
            "master",
            "combinedSpec",
            "combinedMasterSpec",
        ):
            if key in expected or key in got:  # a kind of one role has no master keys (issue 32)
                assert got[key] == expected[key], (template.name, view, key)
        assert got["runnable"]["issues"] == expected["runnable"]["issues"]
        assert got["runnable"]["isRunnable"] == expected["runnable"]["isRunnable"]
        seen += 1
    assert seen > 10


def test_meta_names_the_view(client: Any, ids: Ids) -> None:
    template_id = ids.template("pytorch-elastic")
    own = client.get(f"{BASE}/{template_id}").json()["meta"]
    # seen from its own scope, a system template has no department or project: the keys are null
    assert (own["departmentId"], own["projectId"], own["clusterId"]) == (None, None, None)
    seen = client.get(f"{BASE}/{template_id}", params={"projectId": ids.projects["nlp"]}).json()
    assert seen["meta"]["projectId"] == int(ids.projects["nlp"])  # an integer, as in Run:ai
    assert seen["meta"]["departmentId"] == ids.departments["research"]
    labels = {label["name"]: label["value"] for label in seen["combinedSpec"]["labels"]}
    assert labels["cost-center"] == "cc-2100"  # research's defaults apply below research


def test_preview_needs_a_project_below_the_template(client: Any, ids: Ids) -> None:
    vit = ids.template("vit-finetune", "project")
    response = client.get(f"{BASE}/{vit}", params={"projectId": ids.projects["recsys"]})
    assert response.status_code == 400
    assert response.json()["problems"][0]["field"] == "projectId"
    assert client.get(f"{BASE}/{vit}", params={"projectId": "9999"}).status_code == 400
    assert client.get(f"{BASE}/{vit}", params={"projectId": "nope"}).status_code == 400


def test_create_in_department_and_project_scopes(client: Any, ids: Ids) -> None:
    research = ids.departments["research"]
    response = client.post(BASE, json=_job("dept-job", "department", research))
    assert response.status_code == 202
    assert response.json()["meta"]["scopeId"] == research
    assert response.json()["meta"]["departmentId"] == research
    response = client.post(BASE, json=_job("proj-job", "project", int(ids.projects["vision"])))
    assert response.status_code == 202
    assert response.json()["meta"]["projectId"] == int(ids.projects["vision"])
    # The same name in another scope is fine; in the same scope it is a 400 on meta.name (the status Run:ai
    # declares for this operation: it declares no 409).
    assert client.post(BASE, json=_job("proj-job", "project", ids.projects["nlp"])).status_code == 202
    taken = client.post(BASE, json=_job("proj-job", "project", ids.projects["nlp"]))
    assert taken.status_code == 400 and taken.json()["problems"][0]["field"] == "meta.name"


@pytest.mark.parametrize(
    ("meta", "field"),
    [
        ({"name": "x", "scopeType": "department"}, "meta.scopeId"),
        ({"name": "x", "scopeType": "project", "scopeId": "999"}, "meta.scopeId"),
        ({"name": "x", "scopeType": "system", "scopeId": "2"}, "meta.scopeId"),  # 1 is the tenant's id
        ({"name": "x", "scopeType": "tenant", "scopeId": "2"}, "meta.scopeId"),
        ({"name": "x", "scopeType": "cluster"}, "meta.scopeId"),  # a cluster scope needs its UUID
        ({"name": "-x-", "scopeType": "system"}, "meta.name"),
        ({"name": "x" * 254, "scopeType": "system"}, "meta.name"),
        ({"name": "x", "scopeType": "system", "description": "d" * 251}, "meta.description"),
    ],
)
def test_bad_meta_is_a_400_naming_the_field(client: Any, meta: dict[str, Any], field: str) -> None:
    response = client.post(BASE, json={"meta": meta})
    assert response.status_code == 400
    assert field in [p.get("field") for p in response.json()["problems"]]


def test_unknown_assets_are_named(client: Any) -> None:
    body = _job("with-assets")
    body["assets"] = {"environment": "nope", "datasources": [{"name": "code"}, {"name": "missing"}]}
    response = client.post(BASE, json=body)
    assert response.status_code == 400
    fields = [p["field"] for p in response.json()["problems"]]
    assert fields == ["assets.environment", "assets.datasources[1].name"]


def test_keyed_list_problems_are_refused(client: Any) -> None:
    body = _job("dupes", environmentVariables=[{"name": "A", "value": "1"}, {"name": "A", "value": "2"}])
    body["spec"]["labels"] = [{"value": "no-name"}]
    response = client.post(BASE, json=body)
    assert response.status_code == 400
    fields = [p["field"] for p in response.json()["problems"]]
    assert fields == ["spec.environmentVariables[1]", "spec.labels[0]"]


def test_put_replaces_and_versions(client: Any) -> None:
    created = client.post(BASE, json=_job("put-me", numWorkers=2))
    template_id = created.json()["meta"]["id"]
    body = {"meta": {"name": "put-me", "description": "now described"}, "spec": {"image": "alpine"}}
    response = client.put(f"{BASE}/{template_id}", json=body)
    assert response.status_code == 200
    assert response.headers["ETag"] == '"2"'
    got = response.json()
    assert got["spec"] == {"image": "alpine"}  # replaced, not merged
    assert got["meta"]["description"] == "now described"
    assert got["meta"]["scopeType"] == "system"  # the scope stays
    # A scope in a PUT body is an unknown field.
    body["meta"]["scopeType"] = "project"
    assert client.put(f"{BASE}/{template_id}", json=body).status_code == 400


def test_if_match(client: Any) -> None:
    template_id = client.post(BASE, json=_job("guarded")).json()["meta"]["id"]
    patch = {"spec": {"numWorkers": 3}}
    stale = client.patch(f"{BASE}/{template_id}", json=patch, headers={"If-Match": '"7"'})
    assert stale.status_code == 412
    assert stale.json()["code"] == 412
    assert stale.headers["ETag"] == '"1"'
    ok = client.patch(f"{BASE}/{template_id}", json=patch, headers={"If-Match": '"1"'})
    assert ok.status_code == 200 and ok.headers["ETag"] == '"2"'
    # RFC 9110: If-Match compares strongly (a weak tag matches nothing), and any well-formed opaque tag is a
    # tag: one that is not the current version is a 412, not a 400.
    for other in ('W/"2"', '"any-opaque-tag"', '"02"', '"x", W/"2"'):
        refused = client.patch(f"{BASE}/{template_id}", json=patch, headers={"If-Match": other})
        assert refused.status_code == 412 and refused.headers["ETag"] == '"2"', (other, refused.json())
    assert (
        client.patch(f"{BASE}/{template_id}", json=patch, headers={"If-Match": '"x", "2"'}).status_code == 200
    )
    assert client.patch(f"{BASE}/{template_id}", json=patch, headers={"If-Match": "*"}).status_code == 200
    assert client.delete(f"{BASE}/{template_id}", headers={"If-Match": '"1"'}).status_code == 412
    assert client.delete(f"{BASE}/{template_id}", headers={"If-Match": '"4"'}).status_code == 204
    assert client.get(f"{BASE}/{template_id}").status_code == 404
    assert client.delete(f"{BASE}/{template_id}").status_code == 404


def test_patch_merges_and_clears(client: Any) -> None:
    body = _job("patched", args="train.py", environmentVariables=[{"name": "A", "value": "1"}, {"name": "B"}])
    body["spec"]["compute"] = {"cpuCoreRequest": 1, "cpuCoreLimit": 2}
    template_id = client.post(BASE, json=body).json()["meta"]["id"]
    patch = {
        "meta": {"description": "patched"},
        "spec": {"compute": {"cpuCoreLimit": 4}, "image": None},
        "fieldsToClear": ["spec.args", "spec.environmentVariables[name=A]", "spec.nothing.here"],
    }
    response = client.patch(f"{BASE}/{template_id}", json=patch)
    assert response.status_code == 200, response.json()
    spec = response.json()["spec"]
    assert spec["compute"] == {"cpuCoreRequest": 1, "cpuCoreLimit": 4}  # merged
    assert spec["image"] == "python:3.11"  # null leaves a value as it is
    assert "args" not in spec
    assert spec["environmentVariables"] == [{"name": "B"}]
    assert response.json()["meta"]["description"] == "patched"
    # Lists are replaced whole; clearing a mapping then setting a field replaces the mapping.
    patch = {"spec": {"compute": {"gpuDevicesRequest": 1}}, "fieldsToClear": ["spec.compute"]}
    assert client.patch(f"{BASE}/{template_id}", json=patch).json()["spec"]["compute"] == {
        "gpuDevicesRequest": 1
    }


@pytest.mark.parametrize("path", ["meta.name", "meta", "spec[", "fieldsToClear", "runnable"])
def test_fields_to_clear_that_cannot_be(client: Any, path: str) -> None:
    template_id = client.post(BASE, json=_job("clear-bad")).json()["meta"]["id"]
    response = client.patch(f"{BASE}/{template_id}", json={"fieldsToClear": [path]})
    assert response.status_code == 400
    assert response.json()["problems"][0]["field"] == "fieldsToClear[0]"


def test_patch_into_a_conflict_is_refused_whole(client: Any) -> None:
    body = _job("master-ful")
    body["masterSpecSameAsWorker"] = False
    body["master"] = {"spec": {"image": "launcher"}}
    template_id = client.post(BASE, json=body).json()["meta"]["id"]
    response = client.patch(f"{BASE}/{template_id}", json={"masterSpecSameAsWorker": True})
    assert response.status_code == 400
    assert response.json()["problems"][0]["field"] == "master"
    assert client.get(f"{BASE}/{template_id}").headers["ETag"] == '"1"'
    response = client.patch(
        f"{BASE}/{template_id}", json={"masterSpecSameAsWorker": True, "fieldsToClear": ["master"]}
    )
    assert response.status_code == 200
    assert response.json()["combinedMasterSpec"]["image"] == "python:3.11"


def test_rename_into_a_taken_name_is_refused(client: Any) -> None:
    first = client.post(BASE, json=_job("first")).json()["meta"]["id"]
    client.post(BASE, json=_job("second"))
    assert client.patch(f"{BASE}/{first}", json={"meta": {"name": "second"}}).status_code == 400
    assert client.patch(f"{BASE}/{first}", json={"meta": {"name": "third"}}).json()["meta"]["name"] == "third"


def _names(response: Any) -> list[str]:
    return [e["meta"]["name"] for e in response.json()["entries"]]


def test_list_filters_sorts_and_pages(client: Any) -> None:
    everything = client.get(BASE).json()
    assert everything["pagination"] == {"limit": 50, "offset": 0}  # no nextOffset on the last page
    assert all(set(e) == TEMPLATE_KEYS for e in everything["entries"])
    assert _names(client.get(BASE, params={"filterBy": "runnable==false"})) == ["asr-sweep-draft"]
    project = client.get(BASE, params={"filterBy": "scopeType==project"})
    assert sorted(_names(project)) == ["asr-sweep-draft", "pytorch-elastic", "vit-finetune"]
    both = client.get(BASE, params=[("filterBy", "scopeType==project"), ("filterBy", "name=@elastic")])
    assert _names(both) == ["pytorch-elastic"]
    assert _names(client.get(BASE, params={"search": "XGB"})) == ["xgboost-ctr"]
    names = _names(client.get(BASE, params={"sortBy": "name", "sortOrder": "desc"}))
    assert names == sorted(names, reverse=True)
    runnable_last = _names(client.get(BASE, params={"sortBy": "runnable", "sortOrder": "asc"}))
    assert runnable_last[0] == "asr-sweep-draft"
    page = client.get(BASE, params={"limit": 2, "offset": 2}).json()
    assert len(page["entries"]) == 2
    assert page["pagination"] == {"limit": 2, "offset": 2, "nextOffset": 4}
    assert _names(client.get(BASE, params={"filterBy": "createdBy==seed"})) == names[::-1]


@pytest.mark.parametrize(
    "params",
    [
        {"filterBy": "bogus==1"},
        {"filterBy": "name~1"},
        {"limit": 0},
        {"limit": 501},
        {"offset": -1},
        {"sortBy": "x"},
    ],
)
def test_bad_list_parameters(client: Any, params: dict[str, Any]) -> None:
    response = client.get(BASE, params=params)
    assert response.status_code == 400
    assert response.json()["details"]


def test_count(client: Any) -> None:
    total = len(client.get("/api/v1/workload-templates", params={"limit": 500}).json()["entries"])
    assert client.get("/api/v1/workload-templates/count").json() == {"count": total}
    assert client.get("/api/v1/workload-templates/count", params={"filterBy": "runnable==false"}).json() == {
        "count": 1
    }
    assert client.get("/api/v1/workload-templates/count", params={"search": "elastic"}).json() == {"count": 2}


def test_name_availability(client: Any, ids: Ids) -> None:
    url = "/api/v1/workload-templates/name-availability"
    assert client.get(url, params={"templateName": "mpi-horovod", "scopeType": "system"}).status_code == 409
    assert client.get(url, params={"templateName": "fresh", "scopeType": "system"}).status_code == 204
    nlp = {"templateName": "pytorch-elastic", "scopeType": "project", "scopeId": ids.projects["nlp"]}
    assert client.get(url, params=nlp).status_code == 409
    assert client.get(url, params={**nlp, "scopeId": ids.projects["vision"]}).status_code == 204
    assert client.get(url, params={"scopeType": "system"}).status_code == 400
    assert client.get(url, params={**nlp, "scopeId": "999"}).status_code == 400


def test_explain(client: Any, ids: Ids) -> None:
    vit = ids.template("vit-finetune", "project")
    response = client.get(f"{BASE}/{vit}/explain", params={"field": "labels"})
    assert response.status_code == 200
    entries = response.json()["entries"]
    assert {e["field"] for e in entries} >= {"labels[name=project]", "labels[name=tier]"}
    excluded = [e for e in entries if e["action"] == "excluded"]
    assert excluded and excluded[0]["layer"] == "project vision defaults"
    assert all(e["file"].startswith("db:") for e in entries)
    assert client.get(f"{BASE}/{vit}/explain", params={"field": "labels["}).status_code == 400


def test_a_template_that_cannot_render_is_not_runnable(client: Any) -> None:
    body = _job("broken-jinja", workingDir="/home/{{ nobody }}")
    response = client.post(BASE, json=body)
    assert response.status_code == 202
    got = response.json()
    assert got["runnable"]["isRunnable"] is False
    assert "nobody" in got["runnable"]["issue"]
    assert got["combinedSpec"] is None
    explained = client.get(f"{BASE}/{got['meta']['id']}/explain")
    assert explained.status_code == 200
    assert explained.json() == {"entries": [], "warnings": [], "runnable": got["runnable"]}


def test_explain_answers_what_get_answers(client: Any, ids: Ids) -> None:
    """Issue 17: explain answered 400 for a stored template whose expression fails while GET answered 200 with
    the issue; now both answer 200 with the same ``runnable``, from the template's scope and a project."""
    body = _job("fails-below", "department", ids.departments["research"], workingDir="/w/{{ nobody }}")
    created = client.post(BASE, json=body)
    assert created.status_code == 202
    url = f"{BASE}/{created.json()['meta']['id']}"
    for params in ({}, {"projectId": ids.projects["vision"]}):
        got = client.get(url, params=params)
        explained = client.get(f"{url}/explain", params=params)
        assert (got.status_code, explained.status_code) == (200, 200)
        assert got.json()["runnable"]["isRunnable"] is False and got.json()["runnable"]["issues"]
        assert explained.json()["runnable"] == got.json()["runnable"]
        assert explained.json()["entries"] == []
    vit = ids.template("vit-finetune", "project")
    runnable = client.get(f"{BASE}/{vit}").json()["runnable"]
    assert client.get(f"{BASE}/{vit}/explain").json()["runnable"] == runnable


def test_preview_endpoint_stores_nothing(client: Any, ids: Ids) -> None:
    before = client.get("/api/v1/workload-templates/count").json()["count"]
    body = _job("preview-only", "department", ids.departments["research"])
    response = client.post(f"{BASE}/preview", params={"projectId": ids.projects["vision"]}, json=body)
    assert response.status_code == 200
    assert response.json()["meta"]["projectId"] == int(ids.projects["vision"])
    assert response.json()["runnable"]["isRunnable"] is True
    assert client.get("/api/v1/workload-templates/count").json()["count"] == before


def test_a_defaults_change_shows_in_the_next_composition(client: Any, ids: Ids) -> None:
    template_id = ids.template("pytorch-elastic")
    before = client.get(f"{BASE}/{template_id}").json()["combinedSpec"]
    patch = {"spec": {"labels": [{"name": "new", "value": "label"}], "priorityClass": "high"}}
    assert client.patch("/api/v1/defaults/system", json=patch).status_code == 200
    after = client.get(f"{BASE}/{template_id}").json()["combinedSpec"]
    assert after["priorityClass"] == "high" != before["priorityClass"]
    assert after["labels"] == [{"name": "new", "value": "label"}]  # a list in a PATCH replaces the list
