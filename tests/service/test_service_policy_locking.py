"""Optimistic locking of the policies (issue 17): ``GET /api/v2/policy/distributed`` sends an ETag, ``PUT``,
``PATCH`` and ``DELETE`` honour ``If-Match`` (412 with the current ETag), a malformed ``If-Match`` is a 400 on
every route that takes one, and read-modify-write writers over two servers on one database lose nothing."""

from __future__ import annotations

import re
import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
from conftest import ADMIN, Ids, MakeApp, bearer
from waiting import LIVE_TIMEOUT

from template_engine.service.schemas import IF_MATCH_PATTERN

P = "/api/v2/policy/distributed"
TENANT = {"name": "tenant", "scope": "tenant"}


def _read(client: Any, **scope: Any) -> tuple[dict[str, Any], str]:
    response = client.get(P, params=scope or {"scope": "tenant"})
    assert response.status_code == 200, response.json()
    return response.json(), response.headers["ETag"]


def _with_variable(body: dict[str, Any], name: str) -> dict[str, Any]:
    """The request form of a read policy, with one more environment variable in its worker defaults."""
    policy = dict(body.get("policy") or {})
    defaults = dict(policy.get("defaults") or {})
    worker = dict(defaults.get("worker") or {})
    variables = (worker.get("environmentVariables") or {}).get("instances") or []
    worker["environmentVariables"] = {"instances": [*variables, {"name": name, "value": "x"}]}
    return {**policy, "defaults": {**defaults, "worker": worker}}


def _names(body: dict[str, Any]) -> set[str]:
    worker = ((body.get("policy") or {}).get("defaults") or {}).get("worker") or {}
    return {v["name"] for v in (worker.get("environmentVariables") or {}).get("instances") or []}


# -- ETag and If-Match --------------------------------------------------------------------------------------


def test_a_read_names_the_version_and_every_write_moves_it(client: Any, ids: Ids) -> None:
    body, tag = _read(client)
    assert re.fullmatch(r'"[0-9]+"', tag)
    assert _read(client) == (body, tag)  # reading changes nothing
    put = client.put(P, json={"meta": TENANT, "policy": _with_variable(body, "A")}, headers={"If-Match": tag})
    assert put.status_code == 200, put.json()
    after, new = _read(client)
    assert put.headers["ETag"] == new != tag and "A" in _names(after)
    # The defaults are half of a policy: a change through /api/v1/defaults changes the policy's ETag too, so
    # a policy written from what was read before it is refused instead of undoing it.
    assert client.patch("/api/v1/defaults/system", json={"spec": {"tty": True}}).status_code == 200
    _, moved = _read(client)
    assert moved != new
    later = {"meta": TENANT, "policy": _with_variable(after, "B")}
    stale = client.put(P, json=later, headers={"If-Match": new})
    assert stale.status_code == 412 and stale.headers["ETag"] == moved
    assert _read(client)[1] == moved
    # A scope that never had a policy or defaults of its own: "0", and If-Match "0" creates its first policy.
    research = ids.departments["research"]
    made = client.post("/api/v1/org-unit/projects", json={"name": "audio", "parentId": int(research)})
    assert made.status_code == 201, made.json()
    audio = made.json()["id"]
    scope = {"scope": "project", "projectId": audio}
    empty, zero = _read(client, **scope)
    assert zero == '"0"' and "policy" not in empty
    meta = {"name": "audio", "scope": "project", "projectId": int(audio)}
    first = client.put(P, json={"meta": meta, "policy": _with_variable({}, "C")}, headers={"If-Match": '"0"'})
    assert first.status_code == 200, first.json()
    again = client.put(P, json={"meta": meta, "policy": _with_variable({}, "D")}, headers={"If-Match": '"0"'})
    assert again.status_code == 412 and _names(_read(client, **scope)[0]) == {"C"}


def test_every_write_is_refused_on_a_stale_if_match_and_changes_nothing(client: Any) -> None:
    body, tag = _read(client)
    policy = _with_variable(body, "STALE")
    writes = {
        "PUT": lambda h: client.put(P, json={"meta": TENANT, "policy": policy}, headers=h),
        "PUT validateOnly": lambda h: client.put(
            P, json={"meta": TENANT, "policy": policy}, params={"validateOnly": True}, headers=h
        ),
        "PATCH": lambda h: client.patch(P, json={"meta": TENANT, "policy": policy}, headers=h),
        "DELETE": lambda h: client.delete(P, params=TENANT, headers=h),
    }
    for name, write in writes.items():
        refused = write({"If-Match": f'"{int(tag.strip(chr(34))) + 1}", W/"999"'})
        assert refused.status_code == 412, (name, refused.json())
        assert refused.headers["ETag"] == tag and "read the resource again" in refused.json()["message"]
        assert _read(client) == (body, tag), name
    # The current tag, or *, is honoured; the current tag made weak is not (RFC 9110's strong comparison).
    weak = writes["PATCH"]({"If-Match": f"W/{tag}"})
    assert weak.status_code == 412 and weak.headers["ETag"] == tag
    patched = writes["PATCH"]({"If-Match": tag})
    assert patched.status_code == 200 and "STALE" in _names(patched.json())
    assert writes["DELETE"]({"If-Match": "*"}).status_code == 204


BAD_IF_MATCH = ("garbage", "", "3", "W/3", '"3", garbage', '"3" "4"', "**", '"a b"', '"3', 'w/"3"')


def _concrete(path: str, ids: Ids, cluster: str = "") -> str:
    values = {
        "clusterUuid": cluster,
        "clusterId": cluster,
        "templateId": ids.template("pytorch-elastic"),
        "assetId": next(iter(ids.assets.values())),
        "departmentId": next(iter(ids.departments.values())),
        "projectId": next(iter(ids.projects.values())),
    }
    return re.sub(r"\{(\w+)\}", lambda m: str(values.get(m.group(1), "1")), path)


def test_a_malformed_if_match_is_a_400_on_every_route_that_takes_one(client: Any, ids: Ids) -> None:
    document = client.get("/openapi.json").json()
    taking = []
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            for parameter in operation.get("parameters", []):
                if parameter["in"] == "header" and parameter["name"] == "If-Match":
                    # The document states the grammar the service enforces.
                    assert parameter["schema"]["anyOf"][0]["pattern"] == IF_MATCH_PATTERN, (method, path)
                    taking.append((method.upper(), path))
    kinds = {path.split("/")[3] for _, path in taking}
    assert {"workload-templates", "defaults", "asset", "org-unit", "policy"} <= kinds, kinds
    assert {("PUT", P), ("PATCH", P), ("DELETE", P)} <= set(taking)
    cluster = client.post("/api/v1/clusters", json={"name": "main"}).json()["uuid"]
    before = client.get("/api/v1/defaults/system")
    for method, path in taking:
        for bad in BAD_IF_MATCH:
            params = TENANT if path == P and method == "DELETE" else None
            response = client.request(
                method, _concrete(path, ids, cluster), params=params, json={}, headers={"If-Match": bad}
            )
            assert response.status_code == 400, (method, path, bad, response.json())
            problem = next(p for p in response.json()["problems"] if p.get("field") == "If-Match")
            assert "must be * or entity tags" in problem["message"], problem
    after = client.get("/api/v1/defaults/system")
    assert after.headers["ETag"] == before.headers["ETag"]


def test_the_grammar_accepts_what_the_service_sends() -> None:
    for good in (
        '"0"',
        '"123"',
        'W/"7"',
        "*",
        '"1", W/"2"',
        '"1" ,"2"',
        '"' + "9" * 18 + '"',
        '"abc"',
        '""',
        '"any-opaque-tag"',
        '"1", ,"2"',
        '"' + "9" * 400 + '"',
        '"\x80\xff#!~"',
    ):
        assert re.fullmatch(IF_MATCH_PATTERN, good), good
    for bad in BAD_IF_MATCH:
        assert not re.fullmatch(IF_MATCH_PATTERN, bad), bad


# -- concurrent writers over two servers on one database ----------------------------------------------------

WRITERS, ROUNDS = 6, 5


def test_read_modify_write_writers_on_two_servers_lose_nothing(
    make_app: MakeApp, database_url: str, live_server: Any
) -> None:
    """Six writers, half on each of two servers (each its own app and connection pool) on one database:
    GET, add a variable of their own, PUT with If-Match, again on 412 or 409.  Every acknowledged change is
    in the final policy.  The first round's reads all happen before any write (a barrier), so the first
    round's writes all name one version and all but one are refused: the 412 is not left to timing."""
    with live_server(make_app(database_url)) as one, live_server(make_app(database_url, seed=False)) as two:
        barrier = threading.Barrier(WRITERS)
        statuses: Counter[int] = Counter()
        lock = threading.Lock()

        def work(writer: int) -> list[str]:
            acknowledged = []
            url = (one, two)[writer % 2].url
            with httpx.Client(base_url=url, headers=bearer(ADMIN), timeout=LIVE_TIMEOUT) as http:
                for round_ in range(ROUNDS):
                    name = f"WRITER_{writer}_ROUND_{round_}"
                    first = True
                    while True:
                        body, tag = _read(http)
                        if round_ == 0 and first:
                            barrier.wait()
                        first = False
                        written = http.put(
                            P,
                            json={"meta": TENANT, "policy": _with_variable(body, name)},
                            headers={"If-Match": tag},
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
            final, _ = _read(http)
    assert len(acknowledged) == statuses[200] == WRITERS * ROUNDS
    assert set(acknowledged) <= _names(final)  # 0 lost
    assert statuses[412] >= WRITERS - 1
    assert set(statuses) <= {200, 409, 412}
