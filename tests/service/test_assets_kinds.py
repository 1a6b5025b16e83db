"""The asset lists' workload kind filters (issue 32, item 6): Run:ai's ``isTraining``, ``isWorkspace``,
``isInference``, ``isDistributed`` and ``distributedFramework``, read from each asset's stored
``workloadSupportedTypes``.  They were a 400 ("not served") before.

Every answer a test client receives is checked against Run:ai's whole document (``conftest``).
"""

from __future__ import annotations

from typing import Any

import pytest
from conftest import Ids

from template_engine.kinds import KINDS
from template_engine.service.asset_store import SUPPORT_FILTERS

ENVIRONMENT = "/api/v1/asset/environment"
COMPUTE = "/api/v1/asset/compute"
DATASOURCES = "/api/v1/asset/datasource"
SPEC = {"image": "python:3.11"}
#: Assets and what their workloadSupportedTypes say.
TYPES: dict[str, dict[str, Any]] = {
    "notebook-only": {"workspace": True, "training": False, "inference": False, "distributed": False},
    "train-only": {"training": True, "workspace": False, "inference": False, "distributed": False},
    "serve-only": {"inference": True, "workspace": False, "training": False, "distributed": False},
    "mpi-only": {"distributed": True, "distFramework": "MPI", "training": False},
    "for-all": {"workspace": True, "training": True, "inference": True, "distributed": True},
}


def _create(client: Any, path: str, name: str, spec: dict[str, Any], **meta: Any) -> None:
    response = client.post(path, json={"meta": {"name": name, "scope": "tenant", **meta}, "spec": spec})
    assert response.status_code == 202, response.text


def _names(client: Any, path: str, **params: str) -> set[str]:
    response = client.get(path, params=params)
    assert response.status_code == 200, response.text
    return {e["meta"]["name"] for e in response.json()["entries"]}


@pytest.fixture
def typed(client: Any) -> set[str]:
    """The example org's environments and five more with workloadSupportedTypes; every name listed."""
    for name, types in TYPES.items():
        _create(client, ENVIRONMENT, name, SPEC, workloadSupportedTypes=types)
    return _names(client, ENVIRONMENT)


def test_the_filters_are_one_per_kinds_supported_type() -> None:
    assert set(SUPPORT_FILTERS.values()) == {k.asset_support for k in KINDS}
    assert set(SUPPORT_FILTERS) == {"isDistributed", "isTraining", "isWorkspace", "isInference"}


@pytest.mark.parametrize(
    ("query", "left_out"),
    [
        ("isTraining", {"notebook-only", "serve-only", "mpi-only"}),
        ("isWorkspace", {"train-only", "serve-only"}),
        ("isInference", {"notebook-only", "train-only"}),
        ("isDistributed", {"notebook-only", "train-only", "serve-only"}),
    ],
)
def test_a_kind_filter_leaves_out_what_says_it_is_not_for_that_kind(
    client: Any, typed: set[str], query: str, left_out: set[str]
) -> None:
    """An asset that says nothing (the example org's) may be used by every kind."""
    assert typed - _names(client, ENVIRONMENT, **{query: "true"}) == left_out
    assert _names(client, ENVIRONMENT, **{query: "false"}) == typed  # a filter that is off


def test_kind_filters_together_keep_what_every_kind_asked_may_use(client: Any, typed: set[str]) -> None:
    both = _names(client, ENVIRONMENT, isTraining="true", isWorkspace="true")
    assert typed - both == {"notebook-only", "train-only", "serve-only", "mpi-only"}
    assert {"for-all", "pytorch"} <= both


def test_distributed_framework_keeps_distributed_assets_of_that_framework_or_none(
    client: Any, typed: set[str]
) -> None:
    pytorch = _names(client, ENVIRONMENT, distributedFramework="PyTorch")
    assert typed - pytorch == {"notebook-only", "train-only", "serve-only", "mpi-only"}
    mpi = _names(client, ENVIRONMENT, distributedFramework="MPI")
    assert typed - mpi == {"notebook-only", "train-only", "serve-only"}


def test_the_filters_apply_to_every_list(client: Any, ids: Ids) -> None:
    _create(
        client, COMPUTE, "cpu-notebooks", {"cpuCoreRequest": 1}, workloadSupportedTypes={"training": False}
    )
    every = _names(client, COMPUTE)
    assert every - _names(client, COMPUTE, isTraining="true") == {"cpu-notebooks"}
    assert _names(client, COMPUTE, isInference="true") == every
    datasources = _names(client, DATASOURCES)
    assert _names(client, DATASOURCES, isWorkspace="true", distributedFramework="TF") == datasources


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ({"isTraining": "perhaps"}, "isTraining"),
        ({"isInference": "2"}, "isInference"),
        ({"distributedFramework": "Horovod"}, "distributedFramework"),
        ({"isWorkspace": ["true", "false"]}, "isWorkspace"),
    ],
)
def test_a_kind_filter_that_cannot_be_read_is_a_400_naming_it(
    client: Any, query: dict[str, Any], field: str
) -> None:
    response = client.get(ENVIRONMENT, params=query)
    assert response.status_code == 400, response.text
    assert response.json()["problems"][0]["field"] == field
