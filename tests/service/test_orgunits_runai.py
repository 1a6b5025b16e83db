"""Departments and projects in Run:ai's shapes (issue 19, item 1): every body against Run:ai's whole OpenAPI
document, the real SDK's org-unit calls, bad inputs, project moves, and the Run:ai fields through
``db export``/``db import``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import ADMIN, CLUSTER, TEMPLATES, Ids
from sdk_helpers import LiveServer, RealSchemas, bearer_client, install, runapy, serve

from template_engine.loader.tree import load_org
from template_engine.service.app import create_app
from template_engine.service.exporter import export_folder
from template_engine.service.importer import import_folder
from template_engine.service.orgunit_shapes import effective, merge_resources, resources_out, total_resources
from template_engine.service.settings import Settings
from template_engine.service.storage.database import create_db_engine, ensure_schema

install()

WHOLE = Path(__file__).resolve().parents[1] / "fixtures" / "runai" / "runai-openapi-1.224.0.json"
D, P = "/api/v1/org-unit/departments", "/api/v1/org-unit/projects"
T = "/api/v1/workload-templates/distributed"
RESOURCES = [
    {
        "nodePool": {"id": "1", "name": "default"},
        "gpu": {"deserved": 2, "limit": 4},
        "cpu": {"deserved": 8000},
        "memory": {"deserved": 1, "units": "GB"},
    },
    {"nodePool": {"id": "2", "name": "a100"}, "gpu": {"deserved": 1.5}},
]


@pytest.fixture(scope="module")
def whole() -> RealSchemas:
    return RealSchemas(WHOLE)


def _valid(whole: RealSchemas, schema: str, body: Any) -> None:
    assert whole.errors(whole.schema(schema), body) == [], body


def _problems(response: Any) -> dict[str, str]:
    assert response.status_code == 400, response.json()
    return {p.get("field", ""): p["message"] for p in response.json()["problems"]}


# -- bodies -------------------------------------------------------------------------------------------------


def test_every_body_is_runai_s(client: Any, ids: Ids, whole: RealSchemas) -> None:
    made = client.post(D, json={"name": "platform", "clusterId": CLUSTER, "resources": RESOURCES})
    assert made.status_code == 201
    department = made.json()
    _valid(whole, "Department", department)
    assert department["resources"] == RESOURCES and department["clusterId"] == CLUSTER
    assert department["totalResources"] == {"gpuQuota": 3.5, "cpuQuota": 8000.0, "memoryQuota": 1000.0}
    rules = {"trainingJobTimeLimitSeconds": 3600}
    created = client.post(
        P,
        json={
            "name": "audio",
            "parentId": department["id"],
            "clusterId": CLUSTER,
            "resources": [{"nodePool": {"id": "1"}}],
            "schedulingRules": rules,
            "requestedNamespace": "team-audio",
        },
    )
    assert created.status_code == 201, created.json()
    project = created.json()
    _valid(whole, "Project", project)
    assert project["resources"] == [{"nodePool": {"id": "1"}, "gpu": {"deserved": 0}}]  # Run:ai's default
    assert project["status"]["phase"] == "Unknown" and project["status"]["namespace"] == "team-audio"
    assert project["effective"]["schedulingRules"] == rules and project["enforceRunaiScheduler"] is True
    # A unit made without Run:ai's fields still answers Run:ai's required ones.
    plain = client.get(f"{P}/{ids.projects['vision']}").json()
    _valid(whole, "Project", plain)
    assert plain["clusterId"] == "00000000-0000-0000-0000-000000000000" and plain["resources"] == []
    assert plain["status"]["namespace"] == "runai-vision"
    departments = client.get(D).json()
    projects = client.get(P).json()
    for item in departments["departments"]:
        _valid(whole, "DepartmentForList", item)
    for item in projects["projects"]:
        _valid(whole, "Project", item)
    _valid(whole, "CountResponse", client.get(f"{P}/count").json())
    assert client.get(f"{D}/count").json() == {"count": 3}


def test_lists_filter_sort_and_page_as_runai_declares(client: Any, ids: Ids) -> None:
    research = ids.departments["research"]
    client.put(f"{P}/{ids.projects['nlp']}/resources", json=[{"gpu": {"deserved": 10}}])
    client.put(f"{P}/{ids.projects['speech']}/resources", json=[{"gpu": {"deserved": 9}}])

    def names(**params: Any) -> list[str]:
        response = client.get(P, params=params)
        assert response.status_code == 200, response.json()
        return [p["name"] for p in response.json()["projects"]]

    assert names(filterBy=f"parentId=={research}") == ["vision", "nlp"]
    assert names(filterBy="parentName==applied", sortBy="name", sortOrder="desc") == ["speech", "recsys"]
    assert names(filterBy="totalGpuQuota>=9", sortBy="totalGpuQuota") == ["speech", "nlp"]  # 9 < 10
    assert names(filterBy="gpuAllocated>=0") == []  # nothing is allocated or measured here
    assert names(search="ec") == ["recsys", "speech"]
    page = client.get(P, params={"limit": 3}).json()
    assert len(page["projects"]) == 3 and page["next"] == 3
    assert "next" not in client.get(P, params={"limit": 3, "offset": 3}).json()
    assert client.get(f"{P}/count", params={"filterBy": "name=^s"}).json() == {"count": 1}
    assert "filterBy[0]" in _problems(client.get(P, params={"filterBy": "totalGpuQuota>=many"}))
    assert client.get(D, params={"sortBy": "bogus"}).status_code == 400


# -- bad input ----------------------------------------------------------------------------------------------


def test_bad_inputs_name_their_field(client: Any, ids: Ids) -> None:
    research = ids.departments["research"]
    text = client.post(P, json={"name": "x", "parentId": research, "resources": [{"gpu": {"deserved": "2"}}]})
    assert "resources[0].gpu.deserved" in _problems(text)
    unknown = client.post(D, json={"name": "x", "resource": []})
    assert _problems(unknown) == {"resource": "unknown field 'resource' (did you mean 'resources'?)"}
    units = client.post(D, json={"name": "x", "resources": [{"memory": {"deserved": 1}}]})
    assert "resources[0].memory.units" in _problems(units)
    assert "clusterId" in _problems(client.post(D, json={"name": "x", "clusterId": "c1"}))
    assert "parentId" in _problems(client.post(P, json={"name": "x", "parentId": "999"}))
    # Run:ai's ProjectUpdateRequest has no requestedNamespace: set at creation only.
    put = client.put(f"{P}/{ids.projects['vision']}", json={"requestedNamespace": "n", "resources": []})
    assert "requestedNamespace" in _problems(put)
    assert client.post(D, json={"name": "research"}).status_code == 409
    assert client.post(P, json={"name": "vision", "parentId": research}).status_code == 409
    patch = client.patch(f"{D}/{research}/resources", json=[{"gpu": {"deserved": True}}])
    assert "[0].gpu.deserved" in " ".join(_problems(patch))


def test_overtime_data_s_updated_at_is_a_date_time(client: Any, whole: RealSchemas) -> None:
    """Run:ai's ``OvertimeRangeData.updatedAt`` is ``format: date-time``: any other text is a 400 naming
    the field, so no stored department makes a later read of the list non-conforming (schemathesis stored
    ``'<È\x85...'`` and every later ``GET /org-unit/departments`` broke Run:ai's schema)."""
    for bad in ("<\u00c8\u0085;", "2021-08-01", "2021-02-30T00:00:00Z", "2021-08-01T24:00:00Z", "yesterday"):
        body = {"name": "hours", "overtimeData": {"range24hData": {"updatedAt": bad}}}
        assert "overtimeData.range24hData.updatedAt" in _problems(client.post(D, json=body)), bad
    for good in ("2021-08-01T00:00:00Z", "2021-08-01t10:20:30.123+02:00"):
        body = {"name": f"ok-{len(good)}", "overtimeData": {"range7dData": {"updatedAt": good}}}
        made = client.post(D, json=body)
        assert made.status_code == 201, made.json()
        assert made.json()["overtimeData"]["range7dData"]["updatedAt"] == good
    for item in client.get(D).json()["departments"]:
        _valid(whole, "DepartmentForList", item)


def test_node_types_given_as_nulls_answer_as_not_set(client: Any, ids: Ids, whole: RealSchemas) -> None:
    """``NodeTypesPerWorkload``'s lists are nullable in a request, not in an answer: a project's
    ``effective.nodeTypes`` leaves such a ``null`` out, as its own ``nodeTypes`` does (schemathesis)."""
    nulls = {"names": None, "training": None, "workspace": None}
    put = client.put(f"{P}/{ids.projects['nlp']}", json={"nodeTypes": nulls, "schedulingRules": None})
    assert put.status_code == 200, put.json()
    assert put.json()["nodeTypes"] == {} and put.json()["effective"]["nodeTypes"] == {}
    _valid(whole, "Project", put.json())
    for item in client.get(P).json()["projects"]:
        _valid(whole, "Project", item)


# -- resources and updates ----------------------------------------------------------------------------------


def test_put_replaces_and_patch_merges_resources_by_node_pool(client: Any, ids: Ids) -> None:
    url = f"{P}/{ids.projects['vision']}/resources"
    assert client.put(url, json=RESOURCES).json() == RESOURCES
    patched = client.patch(
        url, json=[{"nodePool": {"id": "2"}, "gpu": {"deserved": 3}}, {"gpu": {"deserved": 1}}]
    )
    assert patched.status_code == 200
    assert patched.json() == [
        RESOURCES[0],
        {"nodePool": {"id": "2", "name": "a100"}, "gpu": {"deserved": 3}},  # merged into the stored entry
        {"gpu": {"deserved": 1}},
    ]
    assert client.put(url, json=[]).json() == []
    # A PUT of the project without resources keeps them; with them, replaces them.
    client.put(url, json=RESOURCES)
    kept = client.put(f"{P}/{ids.projects['vision']}", json={"description": "d"}).json()
    assert kept["resources"] == RESOURCES and kept["description"] == "d"
    replaced = client.put(f"{P}/{ids.projects['vision']}", json={"resources": []}).json()
    assert replaced["resources"] == [] and replaced["name"] == "vision"


def test_a_moved_project_composes_with_its_new_department(client: Any, ids: Ids) -> None:
    vit = ids.template("vit-finetune", "project")

    def cost_center() -> str:
        spec = str(client.get(f"{T}/{vit}").json()["combinedSpec"])
        return "research" if "cc-2100" in spec else "applied" if "cc-3300" in spec else "neither"

    assert cost_center() == "research"
    moved = client.put(f"{P}/{ids.projects['vision']}", json={"parentId": ids.departments["applied"]})
    assert moved.status_code == 200 and moved.json()["parentId"] == ids.departments["applied"]
    assert cost_center() == "applied"
    assert "parentId" in _problems(client.put(f"{P}/{ids.projects['vision']}", json={"parentId": "999"}))


def test_a_move_that_breaks_a_stored_policy_is_refused(client: Any, ids: Ids) -> None:
    recsys = ids.projects["recsys"]
    rule = {"worker": {"ports": {"attributes": {"serviceType": {"options": [{"value": "NodePort"}]}}}}}
    meta = {"name": "recsys", "scope": "project", "projectId": int(recsys)}
    put = client.put("/api/v2/policy/distributed", json={"meta": meta, "policy": {"rules": rule}})
    assert put.status_code == 200, put.json()
    # research's policy rules the same field: recsys's policy could not be loaded under research.
    refused = client.put(f"{P}/{recsys}", json={"parentId": ids.departments["research"]})
    assert refused.status_code == 409, refused.json()
    assert "policy of project recsys" in refused.text
    assert client.get(f"{P}/{recsys}").json()["parentId"] == ids.departments["applied"]  # nothing changed


def test_pure_derivations() -> None:
    assert total_resources(None) == {"gpuQuota": None, "cpuQuota": None, "memoryQuota": None}
    assert total_resources([{"memory": {"deserved": 100, "units": "Mib"}}])["memoryQuota"] == pytest.approx(
        104.8576
    )
    assert merge_resources([{"gpu": {"deserved": 1}}], [{"gpu": {"deserved": 2}}]) == [
        {"gpu": {"deserved": 2}}
    ]
    # An attribute not given is kept, and an object is merged key by key (Run:ai: "partial updates").
    pool = {"id": "1"}
    stored = [{"nodePool": pool, "gpu": {"deserved": 6, "limit": 8}, "cpu": {"deserved": 1000}}]
    patch = [{"nodePool": pool, "gpu": {"deserved": 4}, "memory": {"deserved": 10, "units": "Gib"}}]
    assert merge_resources(stored, patch) == [
        {
            "nodePool": pool,
            "gpu": {"deserved": 4, "limit": 8},
            "cpu": {"deserved": 1000},
            "memory": {"deserved": 10, "units": "Gib"},
        }
    ]
    assert stored[0]["gpu"] == {"deserved": 6, "limit": 8}  # the input is not changed
    # ResourcesNullable's null is "not set": an answer leaves it out (schemathesis found one answered).
    nulls = [{"nodePool": None, "memory": None, "priority": None, "cpu": {"deserved": 1}}]
    assert resources_out(nulls) == [{"cpu": {"deserved": 1}, "gpu": {"deserved": 0}}]
    added = merge_resources(stored, [{"nodePool": {"id": "2"}, "gpu": {"deserved": 1}}])
    assert [entry["nodePool"]["id"] for entry in added] == ["1", "2"]
    parent = {"schedulingRules": {"trainingJobTimeLimitSeconds": 10}, "defaultNodePools": ["a"]}
    own = {"schedulingRules": {"interactiveJobTimeLimitSeconds": 5}}
    assert effective(own, parent) == {
        "schedulingRules": {"trainingJobTimeLimitSeconds": 10, "interactiveJobTimeLimitSeconds": 5},
        "defaultNodePools": ["a"],
    }
    assert effective({"nodeTypes": {"training": None, "names": {"a": "b"}}}, parent)["nodeTypes"] == {
        "names": {"a": "b"}
    }


# -- the real SDK -------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, auth_file: Path) -> Iterator[LiveServer]:
    folder = tmp_path_factory.mktemp("orgunits")
    settings = Settings(database_url=f"sqlite:///{folder / 'o.db'}", auth_file=auth_file, seed=TEMPLATES)
    with serve(create_app(settings)) as live:
        yield live


def test_the_sdk_sets_up_org_units(server: LiveServer) -> None:

    m = runapy.models  # type: ignore[attr-defined]
    api = bearer_client(server.url, ADMIN)
    departments, projects = runapy.DepartmentsApi(api), runapy.ProjectsApi(api)
    quota = [m.ResourcesNullable(nodePool=m.ResourcesNodePool(id="1"), gpu=m.NonNullResource(deserved=2))]
    made = departments.create_department(
        m.DepartmentCreationRequest(name="platform", clusterId=CLUSTER, resources=quota)
    )
    assert made.status_code == 201
    department = made.data
    assert department["totalResources"]["gpuQuota"] == 2
    request = m.ProjectCreationRequest(
        name="infra", clusterId=CLUSTER, parentId=department["id"], resources=quota
    )
    project = projects.create_project(request).data
    assert projects.get_project(project["id"]).data["parentId"] == department["id"]
    assert projects.count_projects().data == {"count": 5}
    assert departments.count_departments().data == {"count": 3}
    assert [p["name"] for p in projects.get_projects(filter_by=["name==infra"]).data["projects"]] == ["infra"]
    update = m.ProjectUpdateRequest(description="shared", resources=[])
    assert projects.update_project(project["id"], update).data["description"] == "shared"
    more = [m.ResourcesNullable(nodePool=m.ResourcesNodePool(id="2"), gpu=m.NonNullResource(deserved=1))]
    assert len(projects.patch_project_resources(project["id"], more).data) == 1
    assert len(departments.patch_department_resources(department["id"], more).data) == 2
    assert departments.get_department(department["id"]).data["totalResources"]["gpuQuota"] == 3
    assert projects.delete_project(project["id"]).status_code == 204
    assert departments.delete_department(department["id"]).status_code == 204


# -- export and import --------------------------------------------------------------------------------------


def test_export_and_import_keep_the_runai_fields(client: Any, ids: Ids, app: Any, tmp_path: Path) -> None:
    research, vision = ids.departments["research"], ids.projects["vision"]
    client.put(f"{D}/{research}", json={"resources": RESOURCES, "defaultNodePools": ["a100"]})
    client.put(f"{P}/{vision}/resources", json=RESOURCES[1:])
    engine = app.state.store.engine
    export_folder(engine, tmp_path / "out")
    written = yaml.safe_load((tmp_path / "out" / "org.yaml").read_text())
    dept = next(d for d in written["departments"] if d["name"] == "research")
    assert dept["resources"] == RESOURCES and dept["defaultNodePools"] == ["a100"]
    assert dept["projects"] == [{"name": "vision", "resources": RESOURCES[1:]}, "nlp"]
    assert not load_org(tmp_path / "out").broken
    fresh = create_db_engine(f"sqlite:///{tmp_path / 'fresh.db'}")
    ensure_schema(fresh)
    import_folder(fresh, tmp_path / "out")
    export_folder(fresh, tmp_path / "again")
    assert (tmp_path / "again" / "org.yaml").read_text() == (tmp_path / "out" / "org.yaml").read_text()


def test_org_yaml_errors_of_runai_fields_have_lines(tmp_path: Path) -> None:
    from template_engine.errors import InputError
    from template_engine.loader.sources import MappingSource

    files = {
        "org.yaml": b"departments:\n- name: r\n  projects:\n  - name: v\n    resources:\n"
        b"    - gpu: {deserved: two}\n"
    }
    with pytest.raises(InputError) as raised:
        load_org(MappingSource(files))
    [problem] = raised.value.problems
    assert problem.path == ("departments", 0, "projects", 0, "resources", 0, "gpu", "deserved")
    assert problem.location is not None and problem.location.line == 6
    hours = {"org.yaml": b"departments:\n- name: r\n  overtimeData:\n    range24hData: {updatedAt: today}\n"}
    with pytest.raises(InputError) as raised:
        load_org(MappingSource(hours))
    [problem] = raised.value.problems
    assert problem.path == ("departments", 0, "overtimeData", "range24hData", "updatedAt")
    assert problem.location is not None and problem.location.line == 4
