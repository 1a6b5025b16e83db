"""Lost updates of the policies: read-modify-write writers over two servers on one database (issue 17).

Starts two real servers (``template-engine serve``, one process each, each with its own connection pool) on
one database: a throwaway PostgreSQL started with ``.ci/postgres.sh`` (or ``--database-url``, an empty
database; ``--sqlite`` for a fresh SQLite file), the example org seeded by the first.  Then ``--writers``
threads (default 6), half on each server, each make ``--rounds`` changes (default 5) to the tenant's policy
the way a client edits a document: ``GET /api/v2/policy/distributed?scope=tenant``, add one environment
variable of its own to ``policy.defaults.worker``, ``PUT`` the whole policy back with ``If-Match`` set to the
ETag read (``"0"`` when the answer had none), and on 412 or 409 read again and retry.

A change is *acknowledged* when its ``PUT`` answered 200, and *lost* when the final policy does not hold its
variable.  Before issue 17 the service sent no ETag and ignored ``If-Match``: 30 acknowledged, 24 lost (the
issue's figure); a correct service loses none.  The figures depend on how the writers interleave, so they
move from run to run; the lost count of a correct service is 0 in every run.

Run ``python benchmarks/lost_updates.py`` (``PYTHONPATH=/tmp/base`` first to run an older checkout's
servers); the last line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
from bench_service import REPO, TOKEN, start_server, stop_server

P = "/api/v2/policy/distributed"
TENANT = {"name": "tenant", "scope": "tenant"}


def _postgres() -> tuple[str, str]:
    """A throwaway PostgreSQL server: its URL and its data folder (for stopping it)."""
    out = subprocess.run(
        ["bash", str(REPO / ".ci" / "postgres.sh")],
        capture_output=True,
        text=True,
        check=True,
        env={k: v for k, v in os.environ.items() if k not in ("TEST_DATABASE_URL", "TEST_PGDATA")},
    ).stdout
    found = dict(
        line.removeprefix("export ").split("=", 1) for line in out.splitlines() if line.startswith("export ")
    )
    return found["TEST_DATABASE_URL"].strip("'"), found["TEST_PGDATA"].strip("'")


def _name(writer: int, round_: int) -> str:
    return f"WRITER_{writer}_ROUND_{round_}"


def _variables(policy: dict[str, Any]) -> list[dict[str, Any]]:
    worker = ((policy.get("policy") or {}).get("defaults") or {}).get("worker") or {}
    found: list[dict[str, Any]] = (worker.get("environmentVariables") or {}).get("instances") or []
    return found


def edit(http: httpx.Client, writer: int, round_: int, statuses: Counter[int], lock: threading.Lock) -> None:
    """One change, read-modify-write, retried until it is acknowledged."""
    while True:
        read = http.get(P, params=TENANT)
        read.raise_for_status()
        current = read.json()
        policy = dict(current.get("policy") or {})
        defaults = dict(policy.get("defaults") or {})
        worker = dict(defaults.get("worker") or {})
        variables = [*_variables(current), {"name": _name(writer, round_), "value": "x"}]
        worker["environmentVariables"] = {"instances": variables}
        policy["defaults"] = {**defaults, "worker": worker}
        written = http.put(
            P,
            json={"meta": TENANT, "policy": policy},
            headers={"If-Match": read.headers.get("ETag", '"0"')},
        )
        with lock:
            statuses[written.status_code] += 1
        if written.status_code == 200:
            return
        if written.status_code not in (409, 412):
            raise SystemExit(f"PUT answered {written.status_code}: {written.text[:500]}")


def run(database_url: str, writers: int, rounds: int) -> dict[str, Any]:
    first, one = start_server(database_url)
    second, two = start_server(database_url)  # after the first: the database is seeded once
    try:
        statuses: Counter[int] = Counter()
        lock = threading.Lock()

        def work(writer: int) -> None:
            url = (one, two)[writer % 2]
            headers = {"Authorization": f"Bearer {TOKEN}"}
            with httpx.Client(base_url=url, headers=headers, timeout=120) as http:
                for round_ in range(rounds):
                    edit(http, writer, round_, statuses, lock)

        with ThreadPoolExecutor(max_workers=writers) as pool:
            list(pool.map(work, range(writers)))
        with httpx.Client(base_url=two, headers={"Authorization": f"Bearer {TOKEN}"}) as http:
            final = http.get(P, params=TENANT).json()
    finally:
        stop_server(first)
        stop_server(second)
    held = {v["name"] for v in _variables(final)}
    wanted = {_name(w, r) for w in range(writers) for r in range(rounds)}
    return {
        "writers": writers,
        "servers": 2,
        "acknowledged": statuses[200],
        "lost": len(wanted - held),
        "refused_412": statuses[412],
        "refused_409": statuses[409],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--writers", type=int, default=6, help="writer threads (default 6)")
    parser.add_argument("--rounds", type=int, default=5, help="changes per writer (default 5)")
    parser.add_argument("--database-url", help="an empty database (default: a throwaway PostgreSQL)")
    parser.add_argument("--sqlite", action="store_true", help="a fresh SQLite file instead of PostgreSQL")
    args = parser.parse_args(argv)
    data = None
    if args.sqlite:
        database_url = f"sqlite:///{Path(tempfile.mkdtemp(prefix='lost-updates-')) / 'bench.db'}"
    elif args.database_url:
        database_url = args.database_url
    else:
        database_url, data = _postgres()
    try:
        figures = run(database_url, args.writers, args.rounds)
    finally:
        if data is not None:
            subprocess.run(["bash", str(REPO / ".ci" / "postgres.sh"), "stop", data], check=False)
    backend = "SQLite" if args.sqlite else "PostgreSQL"
    print(
        f"{figures['writers']} writers over 2 servers on one {backend}: {figures['acknowledged']} "
        f"acknowledged, {figures['lost']} lost ({figures['refused_412']} refused with 412, "
        f"{figures['refused_409']} with 409, each retried)"
    )
    print(json.dumps({"backend": backend, **figures, "python": sys.version.split()[0]}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
