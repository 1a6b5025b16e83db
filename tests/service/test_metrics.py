"""``GET /metrics`` (docs/http-api.md, "Metrics, logs and request ids"): scraped after real requests and read
with prometheus-client's own parser; the counters move by what was done, and every label is bounded (a
route is its path template, never the path a client sent)."""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from conftest import Ids, MakeApp
from fastapi import FastAPI
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families
from servers import serve
from waiting import LIVE_TIMEOUT

from template_engine.pricing import COMPOSITION_PRICE

T = "/api/v1/workload-templates/distributed"
Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def samples(text: str) -> Samples:
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def scrape(get: Callable[[str], httpx.Response]) -> Samples:
    answer = get("/metrics")
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("text/plain")
    return samples(answer.text)


def value(found: Samples, name: str, **labels: str) -> float:
    return found.get((name, frozenset(labels.items())), 0.0)


def requests_of(found: Samples, route: str, status: str, method: str = "GET") -> float:
    return value(found, "template_engine_http_requests_total", method=method, route=route, status=status)


def test_requests_are_counted_by_route_template_and_status(client: TestClient, ids: Ids) -> None:
    template = ids.template("pytorch-elastic")
    before = scrape(client.get)
    for _ in range(3):
        assert client.get(f"{T}/{template}").status_code == 200
    assert client.head(f"{T}/{template}").status_code == 200
    missing = f"/no-such-page/{uuid.uuid4().hex}"
    assert client.get(missing).status_code == 404
    assert client.get(f"{T}/{uuid.uuid4()}").status_code == 404
    assert client.get(T, params={"limit": 0}).status_code == 400
    after = scrape(client.get)

    by_id = f"{T}/{{templateId}}"
    assert requests_of(after, by_id, "200") - requests_of(before, by_id, "200") == 3
    assert requests_of(after, by_id, "200", "HEAD") - requests_of(before, by_id, "200", "HEAD") == 1
    assert requests_of(after, by_id, "404") - requests_of(before, by_id, "404") == 1
    assert requests_of(after, T, "400") - requests_of(before, T, "400") == 1
    assert requests_of(after, "unmatched", "404") - requests_of(before, "unmatched", "404") == 1
    histogram = "template_engine_http_request_duration_seconds_count"
    assert (
        value(after, histogram, method="GET", route=by_id)
        - value(before, histogram, method="GET", route=by_id)
        == 4
    )
    routes = {dict(labels).get("route") for _, labels in after}
    assert template not in str(routes) and missing not in str(routes)  # the raw paths are never labels


def test_compositions_their_price_and_the_answer_cache_are_counted(client: TestClient) -> None:
    before = scrape(client.get)
    first = client.get(T, params={"limit": 5})
    again = client.get(T, params={"limit": 5})
    assert (first.headers["x-template-engine-cache"], again.headers["x-template-engine-cache"]) == (
        "miss",
        "hit",
    )
    after = scrape(client.get)

    def moved(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    compositions = moved("template_engine_compositions_total")
    assert compositions == 5  # the page's five, once: the second answer came from the cache
    assert moved("template_engine_composition_units_total") > COMPOSITION_PRICE * compositions
    assert moved("template_engine_composition_duration_seconds_count") == compositions
    assert moved("template_engine_answer_cache_total", result="miss") == 1
    assert moved("template_engine_answer_cache_total", result="hit") == 1


def test_the_database_pool_is_reported(client: TestClient) -> None:
    found = scrape(client.get)
    assert value(found, "template_engine_db_pool_size") >= 5  # SQLite's QueuePool keeps 5
    assert value(found, "template_engine_db_pool_checked_out") == 0  # none in use between requests


def test_a_pool_is_in_the_gauges_while_its_app_serves(
    client: TestClient, make_app: MakeApp, tmp_path: Path
) -> None:
    base = value(scrape(client.get), "template_engine_db_pool_size")
    other = make_app(f"sqlite:///{tmp_path / 'other.db'}", seed=False)
    for _ in range(2):  # a lifespan run twice counts its pool once each time
        with TestClient(other) as second:
            assert value(scrape(second.get), "template_engine_db_pool_size") == base + 5
        assert value(scrape(client.get), "template_engine_db_pool_size") == base


def test_metrics_need_no_token_and_stay_out_of_the_openapi_document(app: FastAPI) -> None:
    with TestClient(app) as anonymous:
        assert anonymous.get("/metrics").status_code == 200
        assert anonymous.get(T).status_code == 401
        assert "/metrics" not in anonymous.get("/openapi.json").json()["paths"]


def test_one_scrape_sums_every_worker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``serve --workers 2``: each worker writes to its own files under the directory the parent made, so
    any worker's answer counts the requests of both; the directory is removed when the server stops."""
    parent = tmp_path / "prometheus"
    parent.mkdir()
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(parent))
    url = f"sqlite:///{tmp_path / 'db.sqlite'}"
    with serve(url, None, "--workers", "2") as server:
        (directory,) = parent.iterdir()
        for _ in range(20):  # a new connection each: the kernel hands them to either worker
            assert httpx.get(f"{server.url}/favicon.ico", timeout=LIVE_TIMEOUT).status_code == 204
        assert any(name.endswith(".db") for name in os.listdir(directory))
        for _ in range(4):
            found = scrape(lambda path: httpx.get(f"{server.url}{path}", timeout=LIVE_TIMEOUT))
            assert requests_of(found, "/favicon.ico", "204") == 20
            assert value(found, "template_engine_db_pool_size") == 10  # 5 in each worker's pool
    assert list(parent.iterdir()) == []
