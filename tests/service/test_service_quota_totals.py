"""Nothing a client stores makes a later read fail (issue 30): a unit's quotas and their totals stay finite
doubles (Run:ai's ``TotalResources``, ``format: double``).  A write whose total would overflow is a 400
naming the quota; a property test writes random quotas (huge, tiny, negative, -1) through every route that
writes them and reads every route that shows them: never a 500, every answer valid (each response of these
clients is checked against Run:ai's schemas) and its totals the sums of what was stored."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import pytest
from conftest import ADMIN, RESEARCH, VIEWER, Ids, bearer, open_client
from fastapi import FastAPI
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from template_engine.models.orgunit import MB_PER_UNIT, quota_overflows

U = "/api/v1/org-unit"
BIG = 1e308


def _fields(response: Any) -> list[str]:
    return [p.get("field") for p in response.json()["problems"]]


def _reads(client: Any, ids: Ids) -> list[str]:
    project, department = ids.projects["vision"], ids.departments["research"]
    return [
        f"{U}/projects",
        f"{U}/projects/count",
        f"{U}/projects/{project}",
        f"{U}/projects?sortBy=totalGpuQuota",
        f"{U}/projects?filterBy=totalGpuQuota>=0",
        f"{U}/departments",
        f"{U}/departments/count",
        f"{U}/departments/{department}",
        f"{U}/departments?sortBy=totalGpuQuota&sortOrder=desc",
    ]


def _all_read(client: Any, ids: Ids) -> None:
    for url in _reads(client, ids):
        for token in (ADMIN, RESEARCH, VIEWER):
            response = client.get(url, headers=bearer(token))
            assert response.status_code == 200, (url, token, response.text)
    project = ids.projects["vision"]
    again = client.put(f"{U}/projects/{project}", json={"description": "still readable"})
    assert again.status_code == 200, again.text


def test_the_issues_quotas_are_refused_and_every_read_still_answers(client: Any, ids: Ids) -> None:
    project, department = ids.projects["vision"], ids.departments["research"]
    research = bearer(RESEARCH)
    memory = [{"nodePool": {"id": "1"}, "memory": {"deserved": BIG, "units": "GB"}}]
    refused = client.put(f"{U}/projects/{project}/resources", json=memory, headers=research)
    assert refused.status_code == 400 and _fields(refused) == ["[0].memory.deserved"], refused.json()
    assert "TotalResources.memoryQuota" in refused.json()["problems"][0]["message"]
    gpus = [{"nodePool": {"id": str(n)}, "gpu": {"deserved": BIG}} for n in (1, 2)]
    for unit in (f"projects/{project}", f"departments/{department}"):
        refused = client.put(f"{U}/{unit}/resources", json=gpus)
        assert refused.status_code == 400 and _fields(refused) == ["[1].gpu.deserved"], refused.json()
        # One at a time: the first is stored, the second, merged in by a PATCH, is refused on its own field.
        assert client.put(f"{U}/{unit}/resources", json=gpus[:1]).status_code == 200
        patched = client.patch(f"{U}/{unit}/resources", json=gpus[1:])
        assert patched.status_code == 400 and _fields(patched) == ["[0].gpu.deserved"], patched.json()
    # The bodies that carry resources too: a create and an update.
    created = client.post(f"{U}/projects", json={"name": "huge", "parentId": department, "resources": gpus})
    # The quota that overflows is the field named (not the list), in the check's own words.
    assert created.status_code == 400 and _fields(created) == ["resources[1].gpu.deserved"], created.json()
    assert not created.json()["problems"][0]["message"].startswith("Value error")
    updated = client.put(f"{U}/departments/{department}", json={"resources": gpus})
    assert updated.status_code == 400 and _fields(updated) == ["resources[1].gpu.deserved"], updated.json()
    _all_read(client, ids)
    shown = client.get(f"{U}/projects/{project}").json()["totalResources"]
    assert shown["gpuQuota"] == BIG


def test_the_rule_sums_as_the_answer_does() -> None:
    assert quota_overflows([{"gpu": {"deserved": BIG}}, {"gpu": {"deserved": -BIG}}]) == []
    assert [o.path for o in quota_overflows([{"cpu": {"deserved": -BIG}}, {"cpu": {"deserved": -BIG}}])] == [
        (1, "cpu", "deserved")
    ]
    assert [o.path for o in quota_overflows([{"memory": {"deserved": 1.75e308, "units": "Mib"}}])] == [
        (0, "memory", "deserved")
    ]


# -- the property -------------------------------------------------------------------------------------------

_quota = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([-1.0, -1, 0, 5e-324, 1e-308, 0.5, 1e307, BIG, 1.7976931348623157e308, -BIG]),
    st.integers(-(10**6), 10**6),
)
_resource = st.fixed_dictionaries(
    {}, optional={"deserved": _quota, "limit": _quota, "overQuotaWeight": _quota}
)
_entry = st.fixed_dictionaries(
    {"nodePool": st.fixed_dictionaries({"id": st.sampled_from(["1", "2", "3", "4"])})},
    optional={
        "gpu": _resource,
        "cpu": _resource,
        "memory": st.builds(lambda r, u: {**r, "units": u}, _resource, st.sampled_from(sorted(MB_PER_UNIT))),
    },
)
_write = st.tuples(
    st.sampled_from(["projects", "departments"]),
    st.sampled_from(["PUT", "PATCH"]),
    st.lists(_entry, max_size=4, unique_by=lambda e: e["nodePool"]["id"]),
)


@pytest.fixture(scope="module")
def quota_service(
    tmp_path_factory: pytest.TempPathFactory, seeded_sqlite: Any, auth_file: Any
) -> Iterator[Any]:
    """One copy of the example org for the whole property (each example rewrites what it reads)."""
    import shutil

    from template_engine.service.app import create_app
    from template_engine.service.settings import Settings

    folder = tmp_path_factory.mktemp("quotas")
    shutil.copyfile(seeded_sqlite, folder / "db.sqlite")
    app: FastAPI = create_app(Settings(database_url=f"sqlite:///{folder / 'db.sqlite'}", auth_file=auth_file))
    with open_client(app) as client:
        yield client, Ids(client)


def _expected(entries: list[dict[str, Any]]) -> dict[str, float | None]:
    gpu = [float((e.get("gpu") or {}).get("deserved", 0)) for e in entries]
    cpu = [float(e["cpu"]["deserved"]) for e in entries if "deserved" in (e.get("cpu") or {})]
    memory = [
        float(e["memory"]["deserved"]) * MB_PER_UNIT[e["memory"]["units"]]
        for e in entries
        if "deserved" in (e.get("memory") or {})
    ]
    return {
        k: (sum(v) if v else None)
        for k, v in {"gpuQuota": gpu, "cpuQuota": cpu, "memoryQuota": memory}.items()
    }


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(writes=st.lists(_write, min_size=1, max_size=3))
def test_random_quotas_never_break_a_read(quota_service: Any, writes: list[Any]) -> None:
    client, ids = quota_service
    for kind, method, entries in writes:
        unit = f"{U}/{kind}/" + (
            ids.projects["vision"] if kind == "projects" else ids.departments["research"]
        )
        before = client.get(unit).json()["resources"]
        response = client.request(method, f"{unit}/resources", json=entries)
        assert response.status_code in (200, 400), response.text
        after = client.get(unit).json()
        if response.status_code == 400:
            assert after["resources"] == before  # nothing stored
            assert all(f.endswith(".deserved") for f in _fields(response)), response.json()
            continue
        totals = after["totalResources"]
        assert totals == _expected(after["resources"])
        assert all(v is None or math.isfinite(v) for v in totals.values()), totals
    _all_read(client, ids)
