"""The lowest role cannot stall the service: a real server keeps answering /health while requests full of the
worst expressions the language allows compose, and it stops on SIGTERM while they run."""

from __future__ import annotations

import signal
import subprocess
import threading
from pathlib import Path

import httpx
from conftest import TEMPLATES, VIEWER
from test_service_server import T, serve
from waiting import LIVE_TIMEOUT, READY_WITHIN

from template_engine.expressions import MAX_DOCUMENT_TOKENS, MAX_TEXT, count_tokens

#: The worst values the language allows: each grows a 1,900-character constant to near the 10,000-character
#: limit through replace() with an empty pattern, then changes case, reverses and compares it.
_SEED = "x" * 1900
_WORST = "{{ '" + _SEED + "'|replace('', 'abcd')|upper|lower|title|reverse|replace('a', 'b')|length > 3 }}"
assert len(_WORST) <= MAX_TEXT


def _worst_body() -> dict[str, object]:
    # As many as one document may hold (its expression tokens are bounded before anything is parsed).
    count = MAX_DOCUMENT_TOKENS // count_tokens(_WORST)
    # Each value distinct, so no cache of a rendered text can spare the work.
    variables = [{"name": f"V{i}", "value": f"{_WORST}-{i}"} for i in range(count)]
    return {
        "meta": {"name": "worst", "scopeType": "system"},
        "spec": {
            "image": "python:3.11",
            "distributedFramework": "PyTorch",
            "environmentVariables": variables,
        },
    }


def _hammer(url: str, stop: threading.Event, statuses: list[int]) -> None:
    with httpx.Client(
        base_url=url, headers={"Authorization": f"Bearer {VIEWER}"}, timeout=LIVE_TIMEOUT
    ) as http:
        while not stop.is_set():
            try:
                statuses.append(http.post(f"{T}/preview", json=_worst_body()).status_code)
            except httpx.TransportError:
                return


def test_health_answers_while_the_worst_allowed_expressions_compose(tmp_path: Path, auth_file: Path) -> None:
    url = f"sqlite:///{tmp_path / 'service.db'}"
    with serve(url, auth_file, "--seed", str(TEMPLATES)) as server:
        with httpx.Client(
            base_url=server.url, headers={"Authorization": f"Bearer {VIEWER}"}, timeout=LIVE_TIMEOUT
        ) as http:
            one = http.post(f"{T}/preview", json=_worst_body())
        # The composition as a whole runs out of budget: one render issue naming the field where it ran out,
        # never a hang or a 500.
        assert one.status_code == 200
        issues = one.json()["runnable"]["issues"]
        exhausted = [i for i in issues if "units of work" in i["message"]]
        assert len(exhausted) == 1, [i["message"][:200] for i in issues[:3]]
        assert exhausted[0]["field"].startswith("environmentVariables[name=V")
        stop = threading.Event()
        statuses: list[int] = []
        workers = [threading.Thread(target=_hammer, args=(server.url, stop, statuses)) for _ in range(4)]
        for worker in workers:
            worker.start()
        try:
            health = [httpx.get(f"{server.url}/health", timeout=10).status_code for _ in range(20)]
        finally:
            stop.set()
            for worker in workers:
                worker.join()
        assert health == [200] * 20
        assert statuses and set(statuses) == {200}


def test_sigterm_stops_the_server_while_requests_compose(tmp_path: Path, auth_file: Path) -> None:
    url = f"sqlite:///{tmp_path / 'service.db'}"
    stop = threading.Event()
    statuses: list[int] = []
    with serve(url, auth_file) as server:
        workers = [threading.Thread(target=_hammer, args=(server.url, stop, statuses)) for _ in range(4)]
        for worker in workers:
            worker.start()
        try:
            while not statuses:  # at least one request has been served; others are in flight
                httpx.get(f"{server.url}/health", timeout=10)
            server.process.send_signal(signal.SIGTERM)
            try:
                server.process.wait(timeout=READY_WITHIN)  # a bound for a loaded machine, not a speed
            except subprocess.TimeoutExpired:
                raise AssertionError("the server did not stop after SIGTERM") from None
        finally:
            stop.set()
            for worker in workers:
                worker.join()
    assert server.process.returncode in (0, -signal.SIGTERM)
