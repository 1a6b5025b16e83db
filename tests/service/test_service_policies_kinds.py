"""Policies of every kind over HTTP (issue 32): ``/api/v2/policy/{trainings,workspaces,inferences,
distributed-inferences}``, ``GET /api/v2/policy``, their storage (``kind_policies``), ``db import``/``export``
and ``db upgrade``.

Every response here is also checked against Run:ai's whole document (``TrainingPolicyV2``...,
``PolicyListResponse``, ``Error``) by the conformance hook that ``conftest`` installs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import TEMPLATES, Ids

from template_engine.kinds import DISTRIBUTED, KIND_BY_NAME, KINDS, TEMPLATE_KINDS, WorkloadKind

BASE = "/api/v2/policy"
#: Every kind whose policy is one document of its own (every kind but distributed).
OWN = [kind for kind in KINDS if kind is not DISTRIBUTED]
TRAINING = KIND_BY_NAME["training"]
INFERENCE = KIND_BY_NAME["inference"]
LEADER_WORKER = KIND_BY_NAME["distributed-inference"]


def _url(kind: WorkloadKind) -> str:
    return f"{BASE}/{kind.policy_segment}"


def _project(ids: Ids, name: str) -> dict[str, Any]:
    return {"name": name, "scope": "project", "projectId": int(ids.projects[name])}


def _query(meta: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in meta.items() if k != "name"}


def _roled(kind: WorkloadKind, part: Any) -> Any:
    """``part`` as the primary role's in ``kind``'s shape: under the role for a policy split by role."""
    return {kind.primary: part} if kind.roled_policy else part


def _put(client: Any, kind: WorkloadKind, meta: dict[str, Any], policy: dict[str, Any], **params: Any) -> Any:
    return client.put(_url(kind), json={"meta": meta, "policy": policy}, params=params)


def _problems(response: Any) -> dict[str, dict[str, Any]]:
    assert response.status_code == 400, response.json()
    return {p.get("field", ""): p for p in response.json()["problems"]}


# -- the routes of every kind -------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", OWN, ids=lambda k: k.name)
def test_put_get_patch_delete_of_each_kind(client: Any, ids: Ids, kind: WorkloadKind) -> None:
    meta = _project(ids, "vision")
    datasets = ids.assets[("datasource", "datasets")]
    policy = {
        "defaults": _roled(kind, {"image": "python:3.11", "environmentVariables": {"instances": [
            {"name": "TZ", "value": "UTC"}]}}),
        "rules": _roled(kind, {"compute": {"gpuDevicesRequest": {"max": 4}}, "image": {"required": True}}),
        "imposedAssets": _roled(kind, [datasets]),
    }  # fmt: skip
    distributed = client.get(f"{BASE}/distributed", params=_query(meta)).json()
    put = _put(client, kind, meta, policy)
    assert put.status_code == 200, put.json()
    assert put.headers["ETag"] == '"1"'
    own = put.json()["policy"]
    assert own == policy
    assert put.json()["meta"]["projectId"] == int(ids.projects["vision"])
    got = client.get(_url(kind), params=_query(meta))
    assert got.status_code == 200 and got.json()["policy"] == policy
    effective = got.json()["effective"]
    rules = effective["rules"][kind.primary] if kind.roled_policy else effective["rules"]
    assert rules["compute"]["gpuDevicesRequest"] == {
        "max": 4,
        "sourceOfRule": {"scope": "project", "projectId": int(ids.projects["vision"])},
    }
    assert effective["imposedAssets"] == _roled(kind, [datasets])
    defaults = effective["defaults"][kind.primary] if kind.roled_policy else effective["defaults"]
    assert defaults["image"] == "python:3.11"
    # The distributed policy of the scope is another policy: untouched.
    assert client.get(f"{BASE}/distributed", params=_query(meta)).json() == distributed

    # PATCH: validateOnly stores nothing; a reset clears a field's defaults and rules; then merge.
    field = f"{kind.primary}.image" if kind.roled_policy else "image"
    dry = client.patch(
        _url(kind), json={"meta": meta, "reset": [field]}, params={"validateOnly": True}
    )
    assert dry.status_code == 200, dry.json()
    assert "image" not in (dry.json()["policy"]["rules"][kind.primary] if kind.roled_policy else dry.json()["policy"]["rules"])
    assert "affectedTemplates" in dry.json()
    assert client.get(_url(kind), params=_query(meta)).json()["policy"] == policy
    patched = client.patch(
        _url(kind),
        json={"meta": meta, "reset": [field], "policy": {"rules": _roled(kind, {"tty" if kind is not INFERENCE and kind is not LEADER_WORKER else "workingDir": {"canEdit": False}})}},
        headers={"If-Match": '"1"'},
    )
    assert patched.status_code == 200, patched.json()
    assert patched.headers["ETag"] == '"2"'
    after = patched.json()["policy"]
    own_defaults = after["defaults"][kind.primary] if kind.roled_policy else after["defaults"]
    own_rules = after["rules"][kind.primary] if kind.roled_policy else after["rules"]
    assert "image" not in own_defaults and "image" not in own_rules
    assert own_rules["compute"] == {"gpuDevicesRequest": {"max": 4}}
    # A stale If-Match is a 412; DELETE with the current one.
    assert client.delete(_url(kind), params=_query(meta), headers={"If-Match": '"1"'}).status_code == 412
    assert client.delete(_url(kind), params=_query(meta), headers={"If-Match": '"2"'}).status_code == 204
    gone = client.get(_url(kind), params=_query(meta))
    assert gone.status_code == 200 and "policy" not in gone.json() and gone.headers["ETag"] == '"3"'
