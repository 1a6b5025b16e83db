"""Run:ai's ``reset`` of ``PATCH /api/v2/policy/distributed`` and ``PolicyCreationFields`` on policy writes.

``FieldsToReset``: "set of fields in jsonpath format that is requested to clear their policy (default and
rules)"; ``worker.X`` and ``master.X`` clear both at that field of that replica.  The service's own form
(``rules.…``, ``defaults.…``, ``imposedAssets.…``) clears that part only.  Driven through HTTP and through
the real SDK (``PolicyApi.update_distributed_policy_v2``) on a live server.
"""

from __future__ import annotations

from typing import Any

import pytest
from conftest import ADMIN, Ids
from sdk_helpers import Lazy, bearer_client, runapy

P = "/api/v2/policy/distributed"
m = Lazy("runai.models")
exceptions = Lazy("runai.exceptions")

#: A policy with defaults and rules at the same fields, of both replicas.
POLICY = {
    "rules": {
        "worker": {"slotsPerWorker": {"max": 4}, "compute": {"cpuCoreLimit": {"max": 8}}, "tty": {}},
        "master": {"security": {"runAsUid": {"min": 1}}},
    },
    "defaults": {
        "worker": {"slotsPerWorker": 2, "compute": {"cpuCoreLimit": 4}, "tty": True},
        "master": {"security": {"runAsUid": 1000}},
    },
}


def _meta(ids: Ids, name: str = "recsys") -> dict[str, Any]:
    return {"name": name, "scope": "project", "projectId": int(ids.projects[name])}


def _put(client: Any, ids: Ids) -> None:
    answer = client.put(P, json={"meta": _meta(ids), "policy": POLICY})
    assert answer.status_code == 200, answer.json()


def _problems(answer: Any) -> dict[str, dict[str, Any]]:
    assert answer.status_code == 400, answer.json()
    return {p.get("field", ""): p for p in answer.json()["problems"]}


def test_a_runai_reset_path_clears_defaults_and_rules_of_its_replica(client: Any, ids: Ids) -> None:
    _put(client, ids)
    reset = ["worker.slotsPerWorker", "worker.compute.cpuCoreLimit", "master.security"]
    answer = client.patch(P, json={"meta": _meta(ids), "reset": reset})
    assert answer.status_code == 200, answer.json()
    policy = answer.json()["policy"]
    # Both the default and the rules went; an object left empty went with them; the rest stays.
    assert policy["rules"] == {"worker": {"tty": {}}}
    assert policy["defaults"] == {"worker": {"tty": True}}
    stored = client.get(f"/api/v1/defaults/projects/{ids.projects['recsys']}").json()
    assert "slotsPerWorker" not in stored["spec"] and "master" not in stored


def test_a_reset_clears_only_its_replica(client: Any, ids: Ids) -> None:
    _put(client, ids)
    answer = client.patch(P, json={"meta": _meta(ids), "reset": ["master.tty", "worker"]})
    assert answer.status_code == 200, answer.json()
    policy = answer.json()["policy"]
    assert policy["rules"] == {"master": POLICY["rules"]["master"]}
    assert policy["defaults"] == {"master": POLICY["defaults"]["master"]}


def test_the_services_own_reset_form_still_clears_one_part(client: Any, ids: Ids) -> None:
    _put(client, ids)
    reset = ["rules.worker.slotsPerWorker", "policy.defaults.worker.tty"]
    answer = client.patch(P, json={"meta": _meta(ids), "reset": reset})
    assert answer.status_code == 200, answer.json()
    policy = answer.json()["policy"]
    assert (
        "slotsPerWorker" not in policy["rules"]["worker"]
        and policy["defaults"]["worker"]["slotsPerWorker"] == 2
    )
    assert "tty" not in policy["defaults"]["worker"] and policy["rules"]["worker"]["tty"] == {}


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("worker.imagePullPolicyy", "did you mean 'imagePullPolicy'?"),
        ("master.security.runAsUidd", "did you mean 'runAsUid'?"),
        ("wroker.image", "did you mean 'worker'?"),
        ("worker.image.tag", "is a single field"),
        ("worker.environmentVariables[name=TZ]", "names an item"),
        ("meta.name", "names no field"),
    ],
)
def test_a_reset_path_naming_no_field_is_a_400_naming_it(
    client: Any, ids: Ids, path: str, message: str
) -> None:
    _put(client, ids)
    before = client.get(P, params={"scope": "project", "projectId": ids.projects["recsys"]}).json()
    answer = client.patch(P, json={"meta": _meta(ids), "reset": ["worker.tty", path]})
    problem = _problems(answer)["reset[1]"]
    assert path in problem["message"] and message in problem["message"], problem
    assert problem["expected"]
    after = client.get(P, params={"scope": "project", "projectId": ids.projects["recsys"]}).json()
    assert after == before  # nothing cleared, not even the good path


# -- PolicyCreationFields and the read-only status ----------------------------------------------------------


def test_a_write_without_meta_name_is_refused(client: Any, ids: Ids) -> None:
    meta = {k: v for k, v in _meta(ids).items() if k != "name"}
    for method in ("PUT", "PATCH"):
        answer = client.request(method, P, json={"meta": meta, "policy": {}})
        assert "meta.name" in _problems(answer), method


def test_a_project_id_as_text_is_refused(client: Any, ids: Ids) -> None:
    meta = {
        **_meta(ids),
        "projectId": ids.projects["recsys"],
    }  # "3", Run:ai's ProjectIdOptional is an integer
    problems = _problems(client.put(P, json={"meta": meta, "policy": {}}))
    assert set(problems) == {"meta.projectId"}
    research = ids.departments["research"]
    # DepartmentIdOptional is a string whose own example is 2: both are taken.
    for department in (research, int(research)):
        meta = {"name": "research", "scope": "department", "departmentId": department}
        answer = client.put(P, json={"meta": meta, "policy": {}}, params={"validateOnly": True})
        assert answer.status_code == 200, answer.json()


def test_a_read_only_status_is_refused(client: Any, ids: Ids) -> None:
    status = {"validation": {"errorMessage": "fine"}}
    for method in ("PUT", "PATCH"):
        answer = client.request(method, P, json={"meta": _meta(ids), "policy": {"status": status}})
        problem = _problems(answer)["policy.status"]
        assert "read-only" in problem["message"], method
    meta = {**_meta(ids), "id": "00000000-0000-4000-8000-000000000000"}  # PolicyMeta's, read-only
    assert "meta.id" in _problems(client.put(P, json={"meta": meta, "policy": {}}))


# -- through the real SDK -----------------------------------------------------------------------------------


def test_the_sdk_resets_with_runais_paths(app: Any, live_server: Any, client: Any, ids: Ids) -> None:
    _put(client, ids)
    with live_server(app) as server:
        api = runapy.PolicyApi(bearer_client(server.url, ADMIN))
        meta = m.PolicyCreationFields(
            name="recsys", scope=m.ScopeType.PROJECT, projectId=int(ids.projects["recsys"])
        )
        request = m.DistributedPolicyChangeRequestV2(meta=meta, reset=["worker.slotsPerWorker"])
        answer = api.update_distributed_policy_v2(distributed_policy_change_request_v2=request)
        assert (
            m.DistributedPolicyV2.from_dict(answer.data).policy.rules.worker.compute.cpu_core_limit.max == 8
        )
        # The SDK's models fill in Run:ai's defaults (slotsPerWorker 1): the answer itself has none.
        policy = answer.data["policy"]
        assert "slotsPerWorker" not in policy["rules"]["worker"]
        assert "slotsPerWorker" not in policy["defaults"]["worker"]
        # The schema's own example names fields Run:ai's spec of 1.224.0 does not have (compute.gpu,
        # security.runAsGpu): a 400 naming each, with what was expected, and nothing cleared.
        example = m.DistributedPolicyChangeRequestV2(
            meta=meta, reset=["master.security.runAsGpu", "worker.compute.gpu"]
        )
        with pytest.raises(exceptions.ApiException) as refused:
            api.update_distributed_policy_v2(distributed_policy_change_request_v2=example)
        assert refused.value.status == 400
        body = m.Error.from_json(refused.value.body)
        assert "runAsGpu" in body.message or "runAsGpu" in str(refused.value.body)
        assert "'worker.compute.gpu'" in str(refused.value.body)
        assert "did you mean 'runAsGid'?" in str(refused.value.body)
    again = client.get(P, params={"scope": "project", "projectId": ids.projects["recsys"]}).json()
    assert again["policy"]["rules"]["worker"]["compute"] == {"cpuCoreLimit": {"max": 8}}
