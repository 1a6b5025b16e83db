"""(c) The template service on loopback: throughput and latency under concurrent clients.

Starts the real server (``template-engine serve``, one uvicorn process, the example org seeded into a fresh
SQLite file, or ``--database-url``), then for each scenario runs ``--clients`` threads, each with its own
keep-alive ``httpx.Client``, for ``--seconds`` (after ``--warmup`` seconds not counted):

  floor     ``GET /health``: no token, no database, no composition; the cost of the stack itself
  get       ``GET /api/v1/workload-templates/distributed/{id}?projectId=...``: the system template
            ``pytorch-elastic`` composed as seen from project ``vision`` (system, department and project
            defaults, three assets, the template: the response the API is about)
  get-own   the same template from its own scope (system defaults, assets, template)
  preview   ``POST /api/v1/workload-templates/distributed/preview?projectId=...`` with the body of
            ``vit-finetune`` (validated, composed, not stored)

Each prints requests per second, p50 and p99 latency (milliseconds) and both as a ratio to the floor.  The
server and the clients share the machine: on two cores, one for each.  Every non-2xx answer is counted and
makes the run fail.  Run ``python benchmarks/bench_service.py`` (``--quick`` for a smoke run); the last line
is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import yaml

REPO = Path(__file__).resolve().parents[1]
TOKEN = "dev-admin"
T = "/api/v1/workload-templates/distributed"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _executable() -> str:
    found = Path(sys.executable).with_name("template-engine")
    return str(found) if found.exists() else (shutil.which("template-engine") or "template-engine")


def start_server(database_url: str) -> tuple[subprocess.Popen[bytes], str]:
    port = _free_port()
    command = [
        _executable(),
        "serve",
        "--port",
        str(port),
        "--database-url",
        database_url,
        "--dev",
        "--seed",
        str(REPO / "templates"),
        "--log-level",
        "warning",
    ]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(
                f"the server stopped: {process.stderr.read().decode() if process.stderr else ''}"
            )
        try:
            if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                return process, url
        except httpx.TransportError:
            time.sleep(0.1)
    process.kill()
    raise SystemExit("the server did not answer /health within 60 s")


def stop_server(process: subprocess.Popen[bytes]) -> None:
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()


Request = Callable[[httpx.Client], httpx.Response]


def run_scenario(url: str, request: Request, clients: int, seconds: float, warmup: float) -> dict[str, Any]:
    latencies: list[list[float]] = [[] for _ in range(clients)]
    failures: list[int] = [0] * clients
    start_line = threading.Barrier(clients + 1)
    timing = {"start": 0.0, "stop": 0.0}

    def client(index: int) -> None:
        headers = {"Authorization": f"Bearer {TOKEN}"}
        with httpx.Client(base_url=url, headers=headers, timeout=30) as http:
            start_line.wait()
            while True:
                began = time.perf_counter()
                if began >= timing["stop"]:
                    return
                response = request(http)
                ended = time.perf_counter()
                if not response.is_success:
                    failures[index] += 1
                if began >= timing["start"]:
                    latencies[index].append(ended - began)

    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for thread in threads:
        thread.start()
    now = time.perf_counter()
    timing["start"], timing["stop"] = now + warmup, now + warmup + seconds
    start_line.wait()
    for thread in threads:
        thread.join()
    samples = sorted(x for per_client in latencies for x in per_client)
    if not samples:
        raise SystemExit("no request completed")
    quantiles = statistics.quantiles(samples, n=100, method="inclusive")
    return {
        "requests": len(samples),
        "rps": len(samples) / seconds,
        "p50_ms": quantiles[49] * 1000,
        "p99_ms": quantiles[98] * 1000,
        "failures": sum(failures),
    }


def _ids(url: str) -> tuple[str, str]:
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {TOKEN}"}) as http:
        entries = http.get(T).json()["entries"]
        template = next(
            e
            for e in entries
            if e["meta"]["name"] == "pytorch-elastic" and e["meta"]["scopeType"] == "system"
        )
        projects = http.get("/api/v1/org-unit/projects").json()["projects"]
        vision = next(p for p in projects if p["name"] == "vision")
    return template["meta"]["id"], vision["id"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--clients", type=int, default=8, help="concurrent client threads (default 8)")
    parser.add_argument(
        "--seconds", type=float, default=10.0, help="measured seconds per scenario (default 10)"
    )
    parser.add_argument("--warmup", type=float, default=2.0, help="unmeasured seconds first (default 2)")
    parser.add_argument("--database-url", help="default: a fresh SQLite file")
    parser.add_argument("--quick", action="store_true", help="2 clients, 1 s per scenario: a smoke run")
    args = parser.parse_args(argv)
    if args.quick:
        args.clients, args.seconds, args.warmup = 2, 1.0, 0.2

    folder = Path(tempfile.mkdtemp(prefix="bench-service-"))
    database_url = args.database_url or f"sqlite:///{folder / 'bench.db'}"
    process, url = start_server(database_url)
    try:
        template_id, vision = _ids(url)
        vit = yaml.safe_load((REPO / "templates/projects/vision/templates/vit-finetune.yaml").read_text())
        vit["meta"] = {"name": "bench-preview", "scopeType": "project", "scopeId": vision}
        scenarios: dict[str, Request] = {
            "floor": lambda http: http.get("/health"),
            "get": lambda http: http.get(f"{T}/{template_id}", params={"projectId": vision}),
            "get-own": lambda http: http.get(f"{T}/{template_id}"),
            "preview": lambda http: http.post(f"{T}/preview", params={"projectId": vision}, json=vit),
        }
        results = {
            name: run_scenario(url, request, args.clients, args.seconds, args.warmup)
            for name, request in scenarios.items()
        }
    finally:
        stop_server(process)
        shutil.rmtree(folder, ignore_errors=True)

    floor = results["floor"]
    print(f"{args.clients} clients x {args.seconds:g} s per scenario, server {database_url.split(':')[0]}")
    print(f"{'scenario':10} {'req/s':>9} {'p50 ms':>8} {'p99 ms':>8} {'rps/floor':>10} {'p50/floor':>10}")
    for name, r in results.items():
        r["rps_vs_floor"] = r["rps"] / floor["rps"]
        r["p50_vs_floor"] = r["p50_ms"] / floor["p50_ms"]
        print(
            f"{name:10} {r['rps']:9.0f} {r['p50_ms']:8.2f} {r['p99_ms']:8.2f} "
            f"{r['rps_vs_floor']:10.2f} {r['p50_vs_floor']:10.2f}"
        )
    failed = sum(r["failures"] for r in results.values())
    summary = {
        "benchmark": "service",
        "clients": args.clients,
        "seconds": args.seconds,
        "database": database_url.split(":")[0],
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "results": results,
    }
    print(json.dumps(summary, sort_keys=True))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
