"""The access log and the request id (docs/http-api.md, "Metrics, logs and request ids"): one record per
request, the request id taken from ``X-Request-Id`` when it is a readable one and echoed, the same id on the
error records of that request, and JSON lines on a real server's stderr."""

from __future__ import annotations

import contextlib
import io
import json
import logging
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import ADMIN, TEMPLATES, bearer
from fastapi import FastAPI
from fastapi.testclient import TestClient
from servers import serve

from template_engine.service.access_log import (
    ACCESS_LOGGER,
    Finished,
    JsonFormatter,
    RequestIdFilter,
    TextFormatter,
    text_safe,
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


@contextlib.contextmanager
def _records(formatter: logging.Formatter) -> Iterator[io.StringIO]:
    """The service's records formatted by ``formatter`` (with the request id filter), into a buffer."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(formatter)
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


@pytest.fixture
def json_lines() -> Iterator[io.StringIO]:
    """The service's records as ``serve`` formats them (:func:`log_config`'s handler), into a buffer."""
    with _records(JsonFormatter()) as stream:
        yield stream


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


@pytest.mark.parametrize("workers", [1, 2], ids=["one process", "two workers"])
def test_every_line_of_a_seeded_start_is_a_json_object(tmp_path: Path, workers: int) -> None:
    """``--seed`` logs what it did (seeded, or skipped because the database holds data) as a record of the
    server's, formatted as every other: never a plain line among the JSON ones."""
    url = f"sqlite:///{tmp_path / 'db.sqlite'}"
    messages: list[list[str]] = []
    for _ in range(2):
        with serve(url, None, "--seed", str(TEMPLATES), "--workers", str(workers)) as server:
            pass
        lines = [json.loads(line) for line in server.output.splitlines()]  # every line is JSON
        messages.append(
            [line["message"] for line in lines if line.get("logger") == "template_engine.service"]
        )
    first, second = messages
    assert first[0] == f"seeded the database from {TEMPLATES}"
    assert second[0] == (
        f"--seed {TEMPLATES} skipped: the database already holds data (use `db import` to load it)"
    )
    assert first[1].startswith("template-engine: database") and second[1].startswith(
        "template-engine: database"
    )


def test_a_library_record_or_a_python_warning_is_a_json_line_too() -> None:
    """Once ``serve`` has configured logging, a logger it does not name (SQLAlchemy's, alembic's) and a
    Python warning are written by the same handler, not by Python's last-resort handler as plain text."""
    program = (
        "import logging, warnings\n"
        "from template_engine.service.access_log import log_config\n"
        "from template_engine.service.commands import _logging\n"
        "_logging(log_config('json', 'info'))\n"
        "logging.getLogger('sqlalchemy.pool').warning('a library warns')\n"
        "warnings.warn('a deprecated thing', DeprecationWarning, stacklevel=1)\n"
    )
    done = subprocess.run(
        [sys.executable, "-W", "always", "-c", program],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    lines = [json.loads(line) for line in done.stderr.splitlines()]
    assert [(line["logger"], line["level"]) for line in lines] == [
        ("sqlalchemy.pool", "warning"),
        ("py.warnings", "warning"),
    ]
    assert lines[0]["message"] == "a library warns" and "a deprecated thing" in lines[1]["message"]


# -- the text format: one record, one line, whatever the client sends ----------------------------------------

#: A path that, unescaped, ends the access line and writes a second one that passes for a real record.
FORGED = '/api/v1/x/a\n2026-12-02T00:00:00Z 127.0.0.1 "GET /admin" 200 1.0 ms route=/admin request_id=forged'
FORGED_SENT = (
    "/api/v1/x/a%0A2026-12-02T00:00:00Z%20127.0.0.1%20%22GET%20/admin%22%20200%201.0%20ms"
    "%20route=/admin%20request_id=forged"
)


@pytest.fixture
def text_lines() -> Iterator[io.StringIO]:
    """The service's records as ``serve --log-format text`` formats them, into a buffer."""
    with _records(TextFormatter()) as stream:
        yield stream


def test_a_path_with_a_newline_is_one_escaped_text_line(client: TestClient, text_lines: io.StringIO) -> None:
    assert client.get(FORGED_SENT, headers={"X-Request-Id": "real-1"}).status_code == 404
    (line,) = text_lines.getvalue().splitlines()
    assert line.endswith("route=unmatched request_id=real-1")
    assert '"GET /api/v1/x/a\\n2026-12-02T00:00:00Z 127.0.0.1 \\"GET /admin\\" 200' in line


@pytest.mark.parametrize(
    ("sent", "written"),
    [
        ("a\rb", "a\\rb"),
        ("a\tb", "a\\tb"),
        ("a\x1b[31mb", "a\\x1b[31mb"),
        ("a\x85b", "a\\x85b"),
        ("a\u2028b", "a\\u2028b"),
        ('a"b', 'a\\"b'),
        ("a\\nb", "a\\\\nb"),  # a backslash the client sent is not mistaken for an escape
        ("caf\u00e9", "caf\u00e9"),  # printable text is written as it is
    ],
)
def test_text_safe_escapes_every_control_the_quote_and_the_backslash(sent: str, written: str) -> None:
    assert text_safe(sent) == written


def _text_line(finished: Finished) -> str:
    record = logging.LogRecord(ACCESS_LOGGER, logging.INFO, __file__, 1, "access", None, None)
    record.access = finished
    return TextFormatter().format(record)


def test_every_field_of_an_access_line_a_client_chooses_is_escaped() -> None:
    """The client address may come from ``X-Forwarded-For`` (uvicorn's ``FORWARDED_ALLOW_IPS``)."""
    finished = Finished(
        time="2026-12-02T00:00:00.000Z",
        method="GET",
        route="/r\n",
        path="/p\n",
        status=200,
        duration_ms=1.0,
        request_id="id\n",
        client="1.2.3.4\nforged",
    )
    line = _text_line(finished)
    assert "\n" not in line
    assert line == (
        '2026-12-02T00:00:00.000Z "1.2.3.4\\nforged" "GET /p\\n" 200 1.0 ms route=/r\\n request_id=id\\n'
    )


#: A client that, written bare, makes the line read as a request from 10.0.0.1 for ``GET /admin``.
FORGED_CLIENT = '10.0.0.1 "GET /admin" 200 1.0 ms route=/admin request_id=forged -'


@pytest.mark.parametrize(
    ("client", "written"),
    [
        ("203.0.113.7", "203.0.113.7"),
        ("2001:db8::1", "2001:db8::1"),
        ("[fe80::1%eth0]", "[fe80::1%eth0]"),
        ("proxy.example.org", "proxy.example.org"),
        (None, "-"),
        ("-", '"-"'),  # not mistaken for no client
        ("", '""'),
        ("1.2.3.4 5.6.7.8", '"1.2.3.4 5.6.7.8"'),
        (FORGED_CLIENT, '"10.0.0.1 \\"GET /admin\\" 200 1.0 ms route=/admin request_id=forged -"'),
    ],
)
def test_the_client_field_of_a_text_line_is_one_token_whatever_it_holds(
    client: str | None, written: str
) -> None:
    """``X-Forwarded-For`` may hold spaces and quotes (uvicorn keeps the text between its commas): a client
    that is not an address is quoted and escaped as the request line is, so a reader splitting the line on
    spaces outside quotes finds the same fields whatever the client sent."""
    finished = Finished("2026-12-02T00:00:00.000Z", "GET", "/health", "/health", 200, 1.0, "real-3", client)
    line = _text_line(finished)
    assert (
        line == f'2026-12-02T00:00:00.000Z {written} "GET /health" 200 1.0 ms route=/health request_id=real-3'
    )
    fields = shlex.split(line)
    assert fields[2:] == ["GET /health", "200", "1.0", "ms", "route=/health", "request_id=real-3"]


def test_an_error_line_quoting_the_path_and_its_traceback_cannot_forge_a_record(
    app: FastAPI, text_lines: io.StringIO
) -> None:
    """The 500's record names the path (``errors.py``); its traceback, which may quote what the client sent,
    follows indented, so no line starting in column 0 is anything but a record's own first line."""

    async def broken(name: str) -> None:
        raise RuntimeError(f"no template {name}")

    app.add_api_route("/broken-for-this-test/{name}", broken)
    with TestClient(app, raise_server_exceptions=False) as http:
        sent = "/broken-for-this-test/a%0A2026-12-02T00:00:00Z%20forged"
        assert http.get(sent, headers={"X-Request-Id": "real-2"}).status_code == 500
    lines = text_lines.getvalue().splitlines()
    records = [line for line in lines if not line.startswith("    ")]
    assert len(records) == 2, lines  # the error and the access record
    assert not any(line.startswith("2026-12-02T00:00:00Z forged") for line in lines)
    (error,) = [line for line in records if " ERROR " in line]
    assert "unhandled error in GET /broken-for-this-test/a\\n2026-12-02T00:00:00Z forged" in error
    assert error.endswith("[request_id=real-2]")
    # the exception's own newline breaks the traceback's line, indented like the rest of it
    assert lines[lines.index("    RuntimeError: no template a") + 1] == "    2026-12-02T00:00:00Z forged"


def test_a_real_server_in_text_format_writes_a_forged_path_on_one_line(tmp_path: Path) -> None:
    database = f"sqlite:///{tmp_path / 'db.sqlite'}"
    with serve(database, None, "--log-format", "text") as server, server.client() as http:
        assert http.get(FORGED_SENT, headers={"X-Request-Id": "live-text"}).status_code == 404
    (line,) = [line for line in server.output.splitlines() if "live-text" in line]
    assert line.endswith("route=unmatched request_id=live-text")
    assert "request_id=forged" in line  # inside the escaped path, on the real record's line
    assert not any(line.startswith("2026-12-02T00:00:00Z") for line in server.output.splitlines())


def test_a_real_server_quotes_a_forwarded_client_with_spaces_and_quotes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """uvicorn trusts the loopback proxy's ``X-Forwarded-For`` (``FORWARDED_ALLOW_IPS``) and keeps its text:
    the text line quotes it, the JSON line holds it as a string."""
    monkeypatch.setenv("FORWARDED_ALLOW_IPS", "127.0.0.1")
    database = f"sqlite:///{tmp_path / 'db.sqlite'}"
    for log_format in ("text", "json"):
        with serve(database, None, "--log-format", log_format) as server, server.client() as http:
            headers = {"X-Forwarded-For": FORGED_CLIENT, "X-Request-Id": f"live-{log_format}"}
            assert http.get("/health", headers=headers).status_code == 200
        (line,) = [line for line in server.output.splitlines() if f"live-{log_format}" in line]
        if log_format == "json":
            assert json.loads(line)["client"] == FORGED_CLIENT
        else:
            written = '"10.0.0.1 \\"GET /admin\\" 200 1.0 ms route=/admin request_id=forged -"'
            assert f"Z {written} " in line
            fields = shlex.split(line)
            assert fields[1] == FORGED_CLIENT and fields[2] == "GET /health" and fields[3] == "200"
            assert fields[-2:] == ["route=/health", "request_id=live-text"]
