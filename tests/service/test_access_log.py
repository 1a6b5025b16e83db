"""The access log and the request id (docs/http-api.md, "Metrics, logs and request ids"): one record per
request, the request id taken from ``X-Request-Id`` when it is a readable one and echoed, the same id on the
error records of that request, and JSON lines on a real server's stderr."""

from __future__ import annotations

import io
import json
import logging
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import ADMIN, bearer
from fastapi import FastAPI
from fastapi.testclient import TestClient
from servers import serve

from template_engine.service.access_log import (
    ACCESS_LOGGER,
    Finished,
    JsonFormatter,
    RequestIdFilter,
)

T = "/api/v1/workload-templates/distributed"
UNKNOWN = "6d1f3a52-0b1e-4c1e-9a51-2d2a8f1f0c11"  # a template id no template has
FRESH = re.compile(r"[0-9a-f]{32}")


def _finished(caplog: pytest.LogCaptureFixture) -> list[Finished]:
    return [r.access for r in caplog.records if r.name == ACCESS_LOGGER and isinstance(r.access, Finished)]


def test_each_request_is_one_record_with_its_route_status_and_id(
    client: TestClient, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger=ACCESS_LOGGER):
        answer = client.get(f"{T}/{UNKNOWN}", headers={"X-Request-Id": "proxy-7f3a.1:b_c"})
    assert answer.status_code == 404
    assert answer.headers["X-Request-Id"] == "proxy-7f3a.1:b_c"
    (record,) = _finished(caplog)
    assert (record.method, record.route, record.path, record.status) == (
        "GET",
        f"{T}/{{templateId}}",
        f"{T}/{UNKNOWN}",
        404,
    )
    assert record.request_id == "proxy-7f3a.1:b_c" and record.client == "testclient"
    assert record.duration_ms >= 0 and record.time.endswith("Z")


@pytest.mark.parametrize("sent", ["", "a b", "x" * 129, "id\u00e9", "<script>", "a/b"])
def test_an_unreadable_request_id_is_replaced_by_a_fresh_one(client: TestClient, sent: str) -> None:
    answer = client.get("/health", headers={"X-Request-Id": sent.encode()})
    assert FRESH.fullmatch(answer.headers["X-Request-Id"])


def test_without_a_request_id_each_answer_gets_its_own(client: TestClient) -> None:
    first, second = client.get("/health"), client.get("/metrics")
    assert FRESH.fullmatch(first.headers["X-Request-Id"]) and FRESH.fullmatch(second.headers["X-Request-Id"])
    assert first.headers["X-Request-Id"] != second.headers["X-Request-Id"]
    assert client.get("/health", headers={"X-Request-Id": "x" * 128}).headers["X-Request-Id"] == "x" * 128


@pytest.fixture
def json_lines() -> Iterator[io.StringIO]:
    """The service's records as ``serve`` formats them (:func:`log_config`'s handler), into a buffer."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter())
    handler.addFilter(RequestIdFilter())
    logger = logging.getLogger("template_engine")
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        yield stream
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


def test_an_error_record_carries_the_request_id_of_its_request(app: FastAPI, json_lines: io.StringIO) -> None:
    """A bug's 500: the traceback is logged (never shown) with the request's id, then the access record."""

    async def broken() -> None:
        raise RuntimeError("a bug")

    app.add_api_route("/broken-for-this-test", broken)
    with TestClient(app, raise_server_exceptions=False) as http:
        answer = http.get("/broken-for-this-test", headers={"X-Request-Id": "trace-500"})
    assert answer.status_code == 500 and "a bug" not in answer.text
    assert answer.headers["X-Request-Id"] == "trace-500"
    lines = [json.loads(line) for line in json_lines.getvalue().splitlines()]
    errors = [line for line in lines if line.get("level") == "error"]
    assert len(errors) == 1 and errors[0]["request_id"] == "trace-500"
    assert "RuntimeError: a bug" in errors[0]["exception"]
    (access,) = [line for line in lines if line.get("request_id") == "trace-500" and "route" in line]
    assert access["status"] == 500 and access["route"] == "/broken-for-this-test"
    assert set(access) == {"time", "method", "route", "path", "status", "duration_ms", "request_id", "client"}


def test_a_real_server_logs_one_json_object_per_line(tmp_path: Path) -> None:
    with serve(f"sqlite:///{tmp_path / 'db.sqlite'}", None) as server, server.client() as http:
        assert http.get(T, headers={"X-Request-Id": "live-1"}).status_code == 200
        assert http.get("/nowhere/42", headers={"X-Request-Id": "live-2"}).status_code == 404
    lines = [json.loads(line) for line in server.output.splitlines()]  # every line is JSON
    by_id = {line["request_id"]: line for line in lines if "route" in line}
    assert by_id["live-1"]["route"] == T and by_id["live-1"]["status"] == 200
    assert by_id["live-1"]["client"] == "127.0.0.1" and by_id["live-1"]["method"] == "GET"
    assert by_id["live-2"]["route"] == "unmatched" and by_id["live-2"]["path"] == "/nowhere/42"
    assert any(line.get("message", "").startswith("template-engine: database") for line in lines)
    assert any("Finished server process" in line.get("message", "") for line in lines)
    assert not any(line.get("logger") == "uvicorn.access" for line in lines)  # uvicorn's lines are off
    assert bearer(ADMIN)["Authorization"] not in server.output
