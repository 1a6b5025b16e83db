"""The real thing: ``template-engine serve`` (the installed entry point) as a process on a loopback port."""

from __future__ import annotations

import signal
from pathlib import Path

import httpx
from conftest import ADMIN, RESEARCH, TEMPLATES, VIEWER
from servers import serve
from waiting import LIVE_TIMEOUT

T = "/api/v1/workload-templates/distributed"


def test_data_survives_a_restart_of_the_server(tmp_path: Path, auth_file: Path) -> None:
    url = f"sqlite:///{tmp_path / 'service.db'}"
    with serve(url, auth_file, "--seed", str(TEMPLATES)) as first, first.client() as http:
        assert "nextOffset" not in http.get(T).json()["pagination"]  # the last page
        created = http.post(
            T, json={"meta": {"name": "kept", "scopeType": "system"}, "spec": {"image": "a:1"}}
        )
        assert created.status_code == 202
        template_id = created.json()["meta"]["id"]
        assert http.patch(f"{T}/{template_id}", json={"spec": {"args": "x"}}).status_code == 200
        before = http.get(f"{T}/{template_id}").json()
        count = http.get("/api/v1/workload-templates/count").json()["count"]
        with first.client(RESEARCH) as bob:
            assert bob.get(T).status_code == 200
        assert httpx.get(f"{first.url}{T}", timeout=LIVE_TIMEOUT).status_code == 401
    # A graceful stop: uvicorn finishes, then re-raises SIGTERM (so the status is -15, not 0).
    assert first.process.returncode in (0, -signal.SIGTERM)
    assert "Finished server process" in first.output, first.output
    with serve(url, auth_file, "--seed", str(TEMPLATES)) as second, second.client(VIEWER) as http:
        after = http.get(f"{T}/{template_id}")
        assert after.headers["ETag"] == '"2"'
        assert after.json() == before
        assert http.get("/api/v1/workload-templates/count").json()["count"] == count  # not seeded twice
        openapi = httpx.get(f"{second.url}/openapi.json", timeout=LIVE_TIMEOUT).json()
        assert T in openapi["paths"]
    for output in (first.output, second.output):
        assert "Uvicorn running on http://127.0.0.1" in output
        assert ADMIN not in output and RESEARCH not in output and VIEWER not in output


def test_two_processes_on_one_postgresql(postgres_url: str, auth_file: Path) -> None:
    """Two replicas started together (both with --seed) on one database serve the same data."""
    with (
        serve(postgres_url, auth_file, "--seed", str(TEMPLATES)) as a,
        serve(postgres_url, auth_file, "--seed", str(TEMPLATES)) as b,
        a.client() as left,
        b.client() as right,
    ):
        assert left.get("/api/v1/workload-templates/count").json() == {"count": 10}  # seeded once
        assert right.get("/api/v1/workload-templates/count").json() == {"count": 10}
        created = left.post(T, json={"meta": {"name": "replicated", "scopeType": "system"}})
        template_id = created.json()["meta"]["id"]
        seen = right.get(f"{T}/{template_id}")
        assert seen.status_code == 200 and seen.headers["ETag"] == '"1"'
        assert (
            right.patch(
                f"{T}/{template_id}", json={"spec": {"image": "b"}}, headers={"If-Match": '"1"'}
            ).status_code
            == 200
        )
        assert (
            left.patch(
                f"{T}/{template_id}", json={"spec": {"image": "a"}}, headers={"If-Match": '"1"'}
            ).status_code
            == 412
        )
        assert left.get(f"{T}/{template_id}").json()["spec"]["image"] == "b"
