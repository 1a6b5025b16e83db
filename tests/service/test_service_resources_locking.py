"""Optimistic locking of a department's and a project's quotas (issue 30): ``PUT`` and ``PATCH
.../{departments,projects}/{id}/resources`` hold ``If-Match`` to the unit's version as every other write
does (412 with the current ETag on a mismatch, 400 on a header that is not entity tags), and
read-modify-write writers over two servers on one database lose none of their acknowledged changes."""

from __future__ import annotations

import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest
from conftest import ADMIN, Ids, MakeApp, bearer
from waiting import LIVE_TIMEOUT

U = "/api/v1/org-unit"


def _pool(name: str) -> dict[str, Any]:
    return {"nodePool": {"id": name}, "gpu": {"deserved": 1}}


def _read(http: Any, unit: str) -> tuple[list[dict[str, Any]], str]:
    response = http.get(unit)
    assert response.status_code == 200, response.json()
    return response.json()["resources"], response.headers["ETag"]


@pytest.mark.parametrize("kind", ["departments", "projects"])
def test_a_stale_or_foreign_if_match_is_a_412_and_changes_nothing(client: Any, ids: Ids, kind: str) -> None:
    unit = f"{U}/{kind}/" + (ids.departments["research"] if kind == "departments" else ids.projects["vision"])
    before, tag = _read(client, unit)
    for method in ("PUT", "PATCH"):
        others = ", ".join(f'"{n}"' for n in range(4) if f'"{n}"' != tag)  # a list without the current tag
        for stale in ('"999"', f"W/{tag}", '"garbage"', others):
            refused = client.request(
                method, f"{unit}/resources", json=[_pool("1")], headers={"If-Match": stale}
            )
            assert refused.status_code == 412, (method, stale, refused.json())
            assert refused.headers["ETag"] == tag and "read the resource again" in refused.json()["message"]
        malformed = client.request(
            method, f"{unit}/resources", json=[_pool("1")], headers={"If-Match": "garbage"}
        )
        assert malformed.status_code == 400, malformed.json()
        assert [p["field"] for p in malformed.json()["problems"]] == ["If-Match"]
    assert _read(client, unit) == (before, tag)
    written = client.put(f"{unit}/resources", json=[_pool("1")], headers={"If-Match": tag})
    assert written.status_code == 200, written.json()
    after, new = _read(client, unit)
    assert written.headers["ETag"] == new != tag and [r["nodePool"]["id"] for r in after] == ["1"]
    again = client.patch(f"{unit}/resources", json=[_pool("2")], headers={"If-Match": tag})
    assert again.status_code == 412 and _read(client, unit)[1] == new
    assert client.patch(f"{unit}/resources", json=[_pool("2")], headers={"If-Match": "*"}).status_code == 200


WRITERS, ROUNDS = 6, 5


@pytest.mark.parametrize("kind", ["departments", "projects"])
def test_read_modify_write_writers_of_quotas_on_two_servers_lose_nothing(
    make_app: MakeApp, database_url: str, live_server: Any, kind: str
) -> None:
    """Six writers, half on each of two servers on one database: GET the unit, PUT its resources with one
    node pool of their own added and If-Match, again on 412.  Every acknowledged node pool is in the final
    resources.  The first round's reads all happen before any write (a barrier), so all but one of the first
    round's writes name a stale version: the 412 is not left to timing."""
    with live_server(make_app(database_url)) as one, live_server(make_app(database_url, seed=False)) as two:
        with httpx.Client(base_url=one.url, headers=bearer(ADMIN), timeout=LIVE_TIMEOUT) as http:
            listed = http.get(f"{U}/{kind}").json()[kind]
        unit = f"{U}/{kind}/{listed[0]['id']}"
        barrier = threading.Barrier(WRITERS)
        statuses: Counter[int] = Counter()
        lock = threading.Lock()

        def work(writer: int) -> list[str]:
            acknowledged = []
            url = (one, two)[writer % 2].url
            with httpx.Client(base_url=url, headers=bearer(ADMIN), timeout=LIVE_TIMEOUT) as http:
                for round_ in range(ROUNDS):
                    name = f"{writer + 1}0{round_}"  # a node pool id: ASCII digits
                    first = True
                    while True:
                        resources, tag = _read(http, unit)
                        if round_ == 0 and first:
                            barrier.wait()
                        first = False
                        written = http.put(
                            f"{unit}/resources", json=[*resources, _pool(name)], headers={"If-Match": tag}
                        )
                        with lock:
                            statuses[written.status_code] += 1
                        if written.status_code == 200:
                            acknowledged.append(name)
                            break
                        assert written.status_code in (409, 412), written.json()
            return acknowledged

        with ThreadPoolExecutor(max_workers=WRITERS) as pool:
            acknowledged = [name for names in pool.map(work, range(WRITERS)) for name in names]
        with httpx.Client(base_url=two.url, headers=bearer(ADMIN), timeout=LIVE_TIMEOUT) as http:
            final, _ = _read(http, unit)
    assert len(acknowledged) == statuses[200] == WRITERS * ROUNDS
    kept = {r["nodePool"]["id"] for r in final}
    assert set(acknowledged) <= kept, sorted(set(acknowledged) - kept)  # 0 lost
    assert statuses[412] >= WRITERS - 1
    assert set(statuses) <= {200, 409, 412}
