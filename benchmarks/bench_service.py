"""(c) The template service on loopback: throughput under concurrent clients, as a ratio to ``GET /health``.

Starts the real server (``template-engine serve``, ``--workers`` processes, the example org seeded into a
fresh SQLite file, or ``--database-url``: give an empty PostgreSQL database), adds templates over the API
until there are ``--templates`` (default 100: copies of the example's, each with its own name and image), then
measures these scenarios at each client count of ``--clients`` (default 8 and 32):

  floor     ``GET /health``: no token, no database, no composition; the cost of the stack itself
  get       ``GET /api/v1/workload-templates/distributed/{id}?projectId=...``: the system template
            ``pytorch-elastic`` composed as seen from project ``vision`` (system, department and project
            defaults, three assets, the template: the response the API is about)
  list      ``GET /api/v1/workload-templates/distributed?limit=100``: every template, each composed
  get-miss  (with ``--misses``) a write, then ``get``: each client changes the project's defaults before each
            read, so reads recompose (clients reading at the same revision share one composition)

Each scenario runs ``clients`` threads, each with its own keep-alive ``httpx.Client``, for ``--seconds``
(after ``--warmup`` seconds not counted).  Scenarios are interleaved: each of ``--runs`` rounds runs every
scenario once per client count, in an order that rotates from round to round, and each round's requests per
second are divided by that round's floor at the same client count.  The figures are the median and the
minimum over the rounds of those ratios (and of req/s and p50).  The targets (issue 11): ``get`` at least
0.5 of the floor at 8 and 32 clients, ``list`` at least 0.2.

The clients are Python threads on the same two cores as the server, so the floor itself is partly the
clients' limit; the server's own CPU time per request (user + system of the server and its workers, from
``/proc``; PostgreSQL's processes not included) is reported beside it, with ``floor cpu/this``: the floor's
CPU per request divided by the scenario's, the ratio a client that cost nothing would see.

With ``--replicas 1,2,3`` (issue 22) the same scenarios run through Debian's HAProxy (``apt-get install
haproxy``) in front of 1, 2 and 3 replicas (``template-engine serve`` processes, one worker each) on one
PostgreSQL database (``--database-url``, an empty one; default: a throwaway server started with
``.ci/postgres.sh``): one HAProxy process with one frontend per replica count (round robin over the first N
replicas, health-checked on ``/ready``), so each ratio is to ``/health`` through the same balancer at the
same replica count, and ``vs 1`` divides a scenario's req/s by its own at one replica.  Each round runs every
replica count; the server CPU columns are left out there.

Every non-2xx answer is counted and makes the run fail; the share of answers the cache served
(``X-Template-Engine-Cache: hit``) is reported.  Run ``python benchmarks/bench_service.py`` (``--quick`` for a
smoke run); the last line is one JSON object.
"""

from __future__ import annotations

import argparse
import itertools
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

REPO = Path(__file__).resolve().parents[1]
TOKEN = "dev-admin"
T = "/api/v1/workload-templates/distributed"
TARGETS = {"get": 0.5, "list": 0.2}
CACHE_HEADER = "x-template-engine-cache"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _executable() -> str:
    found = Path(sys.executable).with_name("template-engine")
    return str(found) if found.exists() else (shutil.which("template-engine") or "template-engine")


def start_server(
    database_url: str, workers: int = 1, cache_bytes: int | None = None
) -> tuple[subprocess.Popen[bytes], str]:
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
        "--workers",
        str(workers),
    ]
    env = dict(os.environ)
    if cache_bytes is not None:
        env["TEMPLATE_ENGINE_CACHE_BYTES"] = str(cache_bytes)
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
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


def _descendants(pid: int) -> list[int]:
    found = [pid]
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            children = (task / "children").read_text().split()
        except OSError:
            continue
        for child in children:
            found += _descendants(int(child))
    return found


def server_cpu(pid: int) -> float:
    """CPU seconds (user + system) used so far by the server process and its workers (Linux; 0 elsewhere)."""
    total = 0
    for each in _descendants(pid):
        try:
            fields = Path(f"/proc/{each}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15 of stat)
    return total / os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 0.0


def run_scenario(
    url: str, request: Request, clients: int, seconds: float, warmup: float, pid: int = 0
) -> dict[str, Any]:
    latencies: list[list[float]] = [[] for _ in range(clients)]
    failures: list[int] = [0] * clients
    hits: list[int] = [0] * clients
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
                    hits[index] += response.headers.get(CACHE_HEADER) == "hit"

    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for thread in threads:
        thread.start()
    now = time.perf_counter()
    timing["start"], timing["stop"] = now + warmup, now + warmup + seconds
    start_line.wait()
    time.sleep(max(0.0, timing["start"] - time.perf_counter()))
    cpu_before = server_cpu(pid) if pid else 0.0
    time.sleep(max(0.0, timing["stop"] - time.perf_counter()))
    cpu_used = server_cpu(pid) - cpu_before if pid else 0.0
    for thread in threads:
        thread.join()
    samples = sorted(x for per_client in latencies for x in per_client)
    if not samples:
        raise SystemExit(f"no request completed in {seconds:g} s ({sum(failures)} failed)")
    quantiles = statistics.quantiles(samples, n=100, method="inclusive")
    return {
        "requests": len(samples),
        "rps": len(samples) / seconds,
        "p50_ms": quantiles[49] * 1000,
        "p99_ms": quantiles[98] * 1000,
        "failures": sum(failures),
        "hit_share": sum(hits) / len(samples),
        "server_cpu_ms": cpu_used * 1000 / len(samples),
    }


def _ids(http: httpx.Client) -> tuple[str, str]:
    entries = http.get(T, params={"limit": 500}).json()["entries"]
    template = next(
        e for e in entries if e["meta"]["name"] == "pytorch-elastic" and e["meta"]["scopeType"] == "system"
    )
    projects = http.get("/api/v1/org-unit/projects").json()["projects"]
    vision = next(p for p in projects if p["name"] == "vision")
    return template["meta"]["id"], vision["id"]


def add_templates(http: httpx.Client, total: int) -> int:
    """Copies of the example's templates (each in its scope, with a new name and image) until ``total``."""
    entries = http.get(T, params={"limit": 500}).json()["entries"]
    originals = [http.get(f"{T}/{e['meta']['id']}").json() for e in entries]
    for number, original in zip(range(len(entries), total), itertools.cycle(originals), strict=False):
        meta = original["meta"]
        body = {
            "meta": {"name": f"{meta['name']}-copy-{number}", "scopeType": meta["scopeType"]}
            | ({"scopeId": meta["scopeId"]} if meta["scopeType"] != "system" else {}),
            "spec": original["spec"] | {"image": f"registry.example/bench/image-{number}:1"},
            "assets": original["assets"],
            "masterSpecSameAsWorker": original["masterSpecSameAsWorker"],
        }
        if original.get("master") is not None:
            body["master"] = original["master"]
        created = http.post(T, json=body)
        if created.status_code != 202:
            raise SystemExit(f"cannot add a template: {created.status_code} {created.text[:500]}")
    count: int = http.get("/api/v1/workload-templates/count").json()["count"]
    return count


def _summary(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values)}


# -- replicas behind HAProxy (--replicas) -------------------------------------------------------------------

HAPROXY_CONFIG = """\
global
    maxconn 1024

defaults
    mode http
    timeout connect 5s
    timeout client 60s
    timeout server 60s
    option redispatch
    retry-on conn-failure empty-response response-timeout
"""

HAPROXY_PAIR = """
frontend front{count}
    bind 127.0.0.1:{port}
    default_backend back{count}

backend back{count}
    balance roundrobin
    option httpchk GET /ready
    http-check expect status 200
    http-request disable-l7-retry unless METH_GET || METH_HEAD
    default-server check inter 1s fall 2 rise 2
{servers}
"""


def _throwaway_postgres() -> tuple[str, str]:
    """A PostgreSQL server started with ``.ci/postgres.sh``: its URL and data folder."""
    run = subprocess.run(
        ["bash", str(REPO / ".ci" / "postgres.sh")], capture_output=True, text=True, check=False
    )
    exports = dict(
        line.removeprefix("export ").split("=", 1) for line in run.stdout.splitlines() if "=" in line
    )
    if run.returncode != 0 or "TEST_DATABASE_URL" not in exports:
        raise SystemExit(f"cannot start PostgreSQL: {run.stderr[-2000:]}")
    return exports["TEST_DATABASE_URL"].strip("'\""), exports["TEST_PGDATA"].strip("'\"")


def start_haproxy(
    folder: Path, ports: list[int], counts: list[int]
) -> tuple[subprocess.Popen[bytes], dict[int, str]]:
    """HAProxy with one frontend per replica count (round robin over the first ``count`` of ``ports``), until
    every frontend answers ``/health``."""
    executable = shutil.which("haproxy") or shutil.which("/usr/sbin/haproxy")
    if executable is None:
        raise SystemExit("--replicas needs HAProxy: apt-get install haproxy")
    fronts = {count: _free_port() for count in counts}
    config = HAPROXY_CONFIG + "".join(
        HAPROXY_PAIR.format(
            count=count,
            port=port,
            servers="\n".join(f"    server r{i} 127.0.0.1:{p}" for i, p in enumerate(ports[:count])),
        )
        for count, port in fronts.items()
    )
    (folder / "haproxy.cfg").write_text(config)
    process = subprocess.Popen(
        [executable, "-db", "-f", str(folder / "haproxy.cfg")],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    urls = {count: f"http://127.0.0.1:{port}" for count, port in fronts.items()}
    deadline = time.monotonic() + 60
    for url in urls.values():
        while True:
            if process.poll() is not None:
                raise SystemExit(
                    f"HAProxy stopped: {process.stderr.read().decode() if process.stderr else ''}"
                )
            try:
                if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                process.kill()
                raise SystemExit("HAProxy did not answer /health within 60 s")
            time.sleep(0.1)
    return process, urls


def run_replicas(args: argparse.Namespace, client_counts: list[int]) -> int:
    """The scenarios through HAProxy at each count of ``--replicas``, interleaved (see the docstring)."""
    counts = [int(c) for c in args.replicas.split(",")]
    folder = Path(tempfile.mkdtemp(prefix="bench-service-"))
    data = ""
    if args.database_url:
        database_url = args.database_url
    else:
        database_url, data = _throwaway_postgres()
    servers: list[subprocess.Popen[bytes]] = []
    haproxy: subprocess.Popen[bytes] | None = None
    rounds: list[dict[str, dict[str, Any]]] = []
    try:
        first, first_url = start_server(database_url, 1, args.cache_bytes)  # seeds the database, once
        servers.append(first)
        with httpx.Client(
            base_url=first_url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60
        ) as http:
            count = add_templates(http, args.templates)
            template_id, vision = _ids(http)
        ports = [int(first_url.rsplit(":", 1)[1])]
        for _ in range(1, max(counts)):
            process, url = start_server(database_url, 1, args.cache_bytes)
            servers.append(process)
            ports.append(int(url.rsplit(":", 1)[1]))
        haproxy, urls = start_haproxy(folder, ports, counts)
        scenarios: dict[str, Request] = {
            "floor": lambda http: http.get("/health"),
            "get": lambda http: http.get(f"{T}/{template_id}", params={"projectId": vision}),
            "list": lambda http: http.get(T, params={"limit": args.templates}),
        }
        names = list(scenarios)
        for index in range(args.runs):
            measured: dict[str, dict[str, Any]] = {}
            order = names[index % len(names) :] + names[: index % len(names)]
            replica_order = counts[index % len(counts) :] + counts[: index % len(counts)]
            for replicas in replica_order:
                for clients in client_counts:
                    for name in order:
                        print(
                            f"round {index + 1}: {name} at {clients} clients, {replicas} replica(s)",
                            file=sys.stderr,
                            flush=True,
                        )
                        result = run_scenario(
                            urls[replicas], scenarios[name], clients, args.seconds, args.warmup
                        )
                        measured[f"{name}@{clients}x{replicas}"] = result
            rounds.append(measured)
    finally:
        if haproxy is not None:
            haproxy.terminate()
            haproxy.wait(timeout=30)
        for process in servers:
            stop_server(process)
        if data:
            subprocess.run(
                ["bash", str(REPO / ".ci" / "postgres.sh"), "stop", data], capture_output=True, check=False
            )
        shutil.rmtree(folder, ignore_errors=True)

    results: dict[str, Any] = {}
    for key in rounds[0]:
        name, rest = key.split("@")
        clients_text = rest.split("x")[0]
        per_round = [r[key] for r in rounds]
        results[key] = {
            "rps": _summary([r["rps"] for r in per_round]),
            "p50_ms": _summary([r["p50_ms"] for r in per_round]),
            "rps_vs_floor": _summary([r[key]["rps"] / r[f"floor@{rest}"]["rps"] for r in rounds]),
            "rps_vs_1_replica": _summary(
                [r[key]["rps"] / r[f"{name}@{clients_text}x{counts[0]}"]["rps"] for r in rounds]
            ),
            "hit_share": statistics.median(r["hit_share"] for r in per_round),
            "failures": sum(r["failures"] for r in per_round),
            "target": TARGETS.get(name),
        }
    print(
        f"{args.runs} interleaved rounds x {args.seconds:g} s per scenario, replicas {args.replicas} behind "
        f"HAProxy (one worker each), postgresql, {count} templates, {os.cpu_count()} cpus"
    )
    print(
        f"{'scenario':20} {'req/s':>8} {'p50 ms':>8} {'rps/floor med':>14} {'min':>6} "
        f"{'vs ' + str(counts[0]):>6} {'hits':>6} target"
    )
    met = True
    for key, r in results.items():
        target = r["target"]
        verdict = ""
        if target is not None:
            ok = r["rps_vs_floor"]["median"] >= target
            met = met and ok
            verdict = f">= {target:g} {'met' if ok else 'MISSED'}"
        print(
            f"{key:20} {r['rps']['median']:8.0f} {r['p50_ms']['median']:8.2f} "
            f"{r['rps_vs_floor']['median']:14.3f} {r['rps_vs_floor']['min']:6.3f} "
            f"{r['rps_vs_1_replica']['median']:6.2f} {r['hit_share']:6.2f} {verdict}"
        )
    failed = sum(r["failures"] for r in results.values())
    summary = {
        "benchmark": "service-replicas",
        "clients": client_counts,
        "replicas": counts,
        "seconds": args.seconds,
        "runs": args.runs,
        "templates": count,
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "targets_met": met,
        "results": results,
    }
    print(json.dumps(summary, sort_keys=True))
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--clients", default="8,32", help="client thread counts (default 8,32)")
    parser.add_argument(
        "--seconds", type=float, default=3.0, help="measured seconds per scenario (default 3)"
    )
    parser.add_argument("--warmup", type=float, default=1.0, help="unmeasured seconds first (default 1)")
    parser.add_argument("--runs", type=int, default=3, help="interleaved rounds (default 3)")
    parser.add_argument("--workers", type=int, default=1, help="server worker processes (default 1)")
    parser.add_argument("--templates", type=int, default=100, help="templates in the list (default 100)")
    parser.add_argument("--misses", action="store_true", help="add get-miss: a write before every read")
    parser.add_argument("--database-url", help="default: a fresh SQLite file")
    parser.add_argument("--scenarios", help="only these (comma-separated; the floor always runs)")
    parser.add_argument(
        "--cache-bytes", type=int, help="the server's TEMPLATE_ENGINE_CACHE_BYTES (0: no response cache)"
    )
    parser.add_argument(
        "--replicas", help="replica counts behind HAProxy on one PostgreSQL, such as 1,2,3 (issue 22)"
    )
    parser.add_argument("--quick", action="store_true", help="2 clients, 1 round of 1 s: a smoke run")
    args = parser.parse_args(argv)
    if args.quick:
        args.clients, args.seconds, args.warmup, args.runs = "2", 1.0, 0.2, 1
    client_counts = [int(c) for c in args.clients.split(",")]
    if args.replicas:
        return run_replicas(args, client_counts)

    folder = Path(tempfile.mkdtemp(prefix="bench-service-"))
    database_url = args.database_url or f"sqlite:///{folder / 'bench.db'}"
    process, url = start_server(database_url, args.workers, args.cache_bytes)
    rounds: list[dict[str, dict[str, Any]]] = []
    try:
        with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60) as http:
            count = add_templates(http, args.templates)
            template_id, vision = _ids(http)
        defaults = f"/api/v1/defaults/projects/{vision}"

        def get_after_write(http: httpx.Client) -> httpx.Response:
            changed = http.put(
                defaults, json={"spec": {"labels": [{"name": "bench", "value": str(time.time())}]}}
            )
            if not changed.is_success:
                return changed
            return http.get(f"{T}/{template_id}", params={"projectId": vision})

        scenarios: dict[str, Request] = {
            "floor": lambda http: http.get("/health"),
            "get": lambda http: http.get(f"{T}/{template_id}", params={"projectId": vision}),
            "list": lambda http: http.get(T, params={"limit": args.templates}),
        }
        if args.misses:
            scenarios["get-miss"] = get_after_write
        if args.scenarios:
            wanted = {"floor", *args.scenarios.split(",")}
            scenarios = {name: request for name, request in scenarios.items() if name in wanted}
        names = list(scenarios)
        for index in range(args.runs):
            measured: dict[str, dict[str, Any]] = {}
            order = names[index % len(names) :] + names[: index % len(names)]
            for clients in client_counts:
                for name in order:
                    print(f"round {index + 1}: {name} at {clients} clients", file=sys.stderr, flush=True)
                    result = run_scenario(
                        url, scenarios[name], clients, args.seconds, args.warmup, process.pid
                    )
                    measured[f"{name}@{clients}"] = result
            rounds.append(measured)
    finally:
        stop_server(process)
        shutil.rmtree(folder, ignore_errors=True)

    results: dict[str, Any] = {}
    for key in rounds[0]:
        name, clients = key.split("@")
        per_round = [r[key] for r in rounds]
        ratios = [r[key]["rps"] / r[f"floor@{clients}"]["rps"] for r in rounds]
        cpu = [r[key]["server_cpu_ms"] for r in rounds]
        capacity = [
            r[f"floor@{clients}"]["server_cpu_ms"] / max(c, 1e-9) for r, c in zip(rounds, cpu, strict=True)
        ]
        results[key] = {
            "rps": _summary([r["rps"] for r in per_round]),
            "p50_ms": _summary([r["p50_ms"] for r in per_round]),
            "rps_vs_floor": _summary(ratios),
            "server_cpu_ms": _summary(cpu),
            "cpu_floor_vs_this": _summary(capacity),
            "hit_share": statistics.median(r["hit_share"] for r in per_round),
            "failures": sum(r["failures"] for r in per_round),
            "target": TARGETS.get(name),
        }
    backend = database_url.split(":")[0].split("+")[0]
    print(
        f"{args.runs} interleaved rounds x {args.seconds:g} s per scenario, "
        f"{args.workers} worker process(es), {backend}, {count} templates"
    )
    header = (
        f"{'scenario':16} {'req/s':>8} {'p50 ms':>8} {'rps/floor med':>14} {'min':>6} {'hits':>6} "
        f"{'cpu ms/req':>10} {'floor cpu/this':>14} target"
    )
    print(header)
    met = True
    for key, r in results.items():
        target = r["target"]
        verdict = ""
        if target is not None:
            ok = r["rps_vs_floor"]["median"] >= target
            met = met and ok
            verdict = f">= {target:g} {'met' if ok else 'MISSED'}"
        print(
            f"{key:16} {r['rps']['median']:8.0f} {r['p50_ms']['median']:8.2f} "
            f"{r['rps_vs_floor']['median']:14.3f} {r['rps_vs_floor']['min']:6.3f} {r['hit_share']:6.2f} "
            f"{r['server_cpu_ms']['median']:10.3f} {r['cpu_floor_vs_this']['median']:14.3f} {verdict}"
        )
    failed = sum(r["failures"] for r in results.values())
    summary = {
        "benchmark": "service",
        "clients": client_counts,
        "seconds": args.seconds,
        "runs": args.runs,
        "workers": args.workers,
        "cache_bytes": args.cache_bytes,
        "templates": count,
        "database": backend,
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "targets_met": met,
        "results": results,
    }
    print(json.dumps(summary, sort_keys=True))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
