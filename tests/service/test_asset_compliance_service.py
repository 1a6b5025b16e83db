"""Run:ai's ``complyToProject`` (with ``complyToWorkloadType``, ``complyToReplicaType``) and ``isDistributed``
on the asset routes: each entry's ``compliance`` from the project's effective policy.

Every answer a test client receives is checked against Run:ai's whole document (``conftest``); the lists are
also parsed by runapy 1.224.0's models.
"""

from __future__ import annotations

from typing import Any

import pytest
from conftest import Ids
from sdk_helpers import parsed

COMPUTE = "/api/v1/asset/compute"
ENVIRONMENT = "/api/v1/asset/environment"
DATASOURCES = "/api/v1/asset/datasource"


def _create(client: Any, path: str, name: str, spec: dict[str, Any], **meta: Any) -> str:
    response = client.post(path, json={"meta": {"name": name, "scope": "tenant", **meta}, "spec": spec})
    assert response.status_code == 202, response.text
    asset_id: str = response.json()["meta"]["id"]
    return asset_id


def _by_name(body: dict[str, Any]) -> dict[str, Any]:
    return {e["meta"]["name"]: e.get("compliance") for e in body["entries"]}


def test_a_compute_asset_above_the_system_maximum_does_not_comply_and_says_why(client: Any, ids: Ids) -> None:
    _create(client, COMPUTE, "sixteen", {"gpuDevicesRequest": 16})
    vision = ids.projects["vision"]
    response = client.get(COMPUTE, params={"complyToProject": vision, "complyToWorkloadType": "Distributed"})
    assert response.status_code == 200
    found = _by_name(response.json())
    assert found["a100-x1"] == {"imposed": False, "compliance": True}
    assert found["a100-x8"] == {"imposed": False, "compliance": True}  # 8 is the maximum
    assert found["sixteen"] == {
        "imposed": False,
        "compliance": False,
        "reason": [
            {
                "field": "compute.gpuDevicesRequest",
                "details": "compute.gpuDevicesRequest is 16, above the maximum 8 of the system policy",
                "rule": "max",
            }
        ],
    }
    listed = parsed("ComputeListResponse", response.json())
    (entry,) = [e for e in listed.entries if e.meta.name == "sixteen"]
    assert entry.compliance.compliance is False and entry.compliance.reason[0].rule == "max"
    # the system policy rules the workers' GPUs only: the master complies
    master = client.get(COMPUTE, params={"complyToProject": vision, "complyToReplicaType": "Master"})
    assert _by_name(master.json())["sixteen"] == {"imposed": False, "compliance": True}
    # without a replica type, both: the worker's issue, named as it is
    both = client.get(COMPUTE, params={"complyToProject": vision})
    assert [r["field"] for r in _by_name(both.json())["sixteen"]["reason"]] == ["compute.gpuDevicesRequest"]
    # without complyToProject, no compliance
    assert "compliance" not in client.get(COMPUTE).json()["entries"][0]


def test_a_department_s_attribute_rule_and_imposed_data_sources(client: Any, ids: Ids) -> None:
    spec = {
        "image": "nvcr.io/acme/web:1",
        "connections": [
            {
                "name": "ui",
                "internalToolInfo": {
                    "toolType": "jupyter-notebook",
                    "connectionType": "LoadBalancer",
                    "containerPort": 8888,
                },
            }
        ],
    }
    _create(client, ENVIRONMENT, "public-ui", spec)
    research = client.get(ENVIRONMENT, params={"complyToProject": ids.projects["vision"]})
    found = _by_name(research.json())
    assert found["pytorch"] == {"imposed": False, "compliance": True}
    assert found["public-ui"]["compliance"] is False
    (reason,) = found["public-ui"]["reason"]
    assert (reason["field"], reason["rule"]) == ("ports[name=ui].serviceType", "options")
    parsed("EnvironmentListResponse", research.json())
    applied = client.get(ENVIRONMENT, params={"complyToProject": ids.projects["recsys"]})
    assert _by_name(applied.json())["public-ui"] == {"imposed": False, "compliance": True}
    # research imposes the datasets on its workers
    worker = _by_name(
        client.get(
            DATASOURCES, params={"complyToProject": ids.projects["nlp"], "complyToReplicaType": "Worker"}
        ).json()
    )
    assert worker["datasets"] == {"imposed": True, "compliance": True}
    assert worker["imagenet"] == {"imposed": False, "compliance": True}
    parsed(
        "DatasourceListResponse",
        client.get(DATASOURCES, params={"complyToProject": ids.projects["nlp"]}).json(),
    )
    master = client.get(
        DATASOURCES, params={"complyToProject": ids.projects["nlp"], "complyToReplicaType": "Master"}
    )
    assert _by_name(master.json())["datasets"] == {"imposed": False, "compliance": True}
    assert _by_name(client.get(DATASOURCES, params={"complyToProject": ids.projects["recsys"]}).json())[
        "datasets"
    ] == {"imposed": False, "compliance": True}


def test_an_asset_of_another_department_and_another_workload_type_do_not_comply(
    client: Any, ids: Ids
) -> None:
    _create(
        client,
        COMPUTE,
        "applied-only",
        {"gpuDevicesRequest": 1},
        scope="department",
        departmentId=ids.departments["applied"],
    )
    found = _by_name(client.get(COMPUTE, params={"complyToProject": ids.projects["vision"]}).json())
    (reason,) = found["applied-only"]["reason"]
    assert reason["field"] is None and "may not use compute asset 'applied-only'" in reason["details"]
    training = client.get(
        COMPUTE, params={"complyToProject": ids.projects["vision"], "complyToWorkloadType": "Training"}
    )
    assert training.status_code == 200
    for compliance in _by_name(training.json()).values():
        assert compliance["compliance"] is False
        assert compliance["reason"][0]["field"] == "workloadType"
        assert "only Distributed workloads are composed here" in compliance["reason"][0]["details"]


def test_an_asset_read_by_id_answers_its_compliance_too(client: Any, ids: Ids) -> None:
    asset_id = _create(client, COMPUTE, "sixteen", {"gpuDevicesRequest": 16})
    response = client.get(f"{COMPUTE}/{asset_id}", params={"complyToProject": ids.projects["vision"]})
    assert response.status_code == 200
    assert response.json()["compliance"]["reason"][0]["rule"] == "max"
    assert parsed("ComputeAsset", response.json()).compliance.compliance is False
    assert "compliance" not in client.get(f"{COMPUTE}/{asset_id}").json()


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ({"complyToReplicaType": "Worker"}, "complyToReplicaType"),
        ({"complyToWorkloadType": "Distributed"}, "complyToWorkloadType"),
        ({"complyToProject": "999"}, "complyToProject"),
        ({"complyToProject": "x"}, "complyToProject"),
        ({"complyToProject": "1", "complyToReplicaType": "Launcher"}, "complyToReplicaType"),
        ({"isDistributed": "perhaps"}, "isDistributed"),
    ],
)
def test_a_compliance_parameter_that_cannot_be_read_is_a_400_naming_it(
    client: Any, query: dict[str, str], field: str
) -> None:
    response = client.get(COMPUTE, params=query)
    assert response.status_code == 400, response.text
    assert response.json()["problems"][0]["field"] == field


def test_is_distributed_leaves_out_what_says_it_is_not_for_distributed_workloads(client: Any) -> None:
    spec = {"image": "python:3.11"}
    _create(
        client,
        ENVIRONMENT,
        "notebook-only",
        spec,
        workloadSupportedTypes={"workspace": True, "distributed": False},
    )
    _create(
        client, ENVIRONMENT, "for-all", spec, workloadSupportedTypes={"workspace": True, "distributed": True}
    )
    every = set(_by_name(client.get(ENVIRONMENT).json()))
    distributed = set(_by_name(client.get(ENVIRONMENT, params={"isDistributed": "true"}).json()))
    assert every - distributed == {"notebook-only"}
    assert {
        "for-all",
        "pytorch",
    } <= distributed  # an asset that says nothing composes into distributed templates
    assert set(_by_name(client.get(ENVIRONMENT, params={"isDistributed": "false"}).json())) == every
