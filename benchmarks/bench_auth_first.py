"""The token before the body (issue 30, build item 4): what an anonymous caller's 1 MiB body costs the
service, as CPU time and as a ratio to ``GET /health`` measured in the same rounds.

One process: the service app on an empty SQLite file, driven by a ``TestClient`` in this process, so
``time.process_time()`` around a request counts the server's work (and the client's, the same for all):

  health      baseline: ``GET /health``
  defaults    anonymous ``PUT /api/v1/defaults/system``, a JSON body just under the 1 MiB limit (issue: 32 ms)
  resources   anonymous ``PUT /api/v1/org-unit/projects/1/resources``, a JSON array of the same size
  viewer      a viewer's ``PUT /api/v1/defaults/system`` with that body (403)
  templates   anonymous ``POST /api/v1/workload-templates/distributed``, a route that checked the token first
              already (issue: 1 ms)

Rounds (``--runs``, default 20) run each scenario once, in an order that rotates from round to round; the
figures are each scenario's median and minimum CPU milliseconds, its median ratio to that round's
``health``, and the statuses it answered.  The last line is one JSON object.  ``PYTHONPATH=/tmp/base``
measures another checkout (the one before the change, for the before figures).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.append(str(REPO))  # after PYTHONPATH: PYTHONPATH=/tmp/base measures another checkout

from template_engine.service.app import create_app  # noqa: E402
from template_engine.service.settings import DEFAULT_MAX_BODY_BYTES, Settings  # noqa: E402

with warnings.catch_warnings():
    warnings.filterwarnings("ignore", message=".*httpx2.*")
    from fastapi.testclient import TestClient

AUTH = """\
tokens:
  - {subject: alice, token: bench-admin, role: system-admin}
  - {subject: dave, token: bench-viewer, role: viewer}
"""
JSON = {"Content-Type": "application/json"}


def _body(size: int, array: bool) -> bytes:
    """A JSON body of about ``size`` bytes, many small values (what a parser pays for)."""
    item = b'{"name":"V0000000","value":"x"},'
    count = (size - 64) // len(item)
    items = b"[" + (item * count)[:-1] + b"]"
    body = items if array else b'{"spec":{"environmentVariables":' + items + b"}}"
    assert len(body) < size, len(body)
    return body


def _cpu(run: Callable[[], Any]) -> float:
    start = time.process_time()
    run()
    return time.process_time() - start


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "auth.yaml").write_text(AUTH)
        app = create_app(
            Settings(database_url=f"sqlite:///{folder / 'b.db'}", auth_file=folder / "auth.yaml")
        )
        obj, array = _body(DEFAULT_MAX_BODY_BYTES, False), _body(DEFAULT_MAX_BODY_BYTES, True)
        with TestClient(app) as client:
            viewer = {**JSON, "Authorization": "Bearer bench-viewer"}
            scenarios: dict[str, Callable[[], Any]] = {
                "health": lambda: client.get("/health"),
                "defaults": lambda: client.put("/api/v1/defaults/system", content=obj, headers=JSON),
                "resources": lambda: client.put(
                    "/api/v1/org-unit/projects/1/resources", content=array, headers=JSON
                ),
                "viewer": lambda: client.put("/api/v1/defaults/system", content=obj, headers=viewer),
                "templates": lambda: client.post(
                    "/api/v1/workload-templates/distributed", content=obj, headers=JSON
                ),
            }
            statuses = {
                name: sorted({run().status_code for _ in range(2)}) for name, run in scenarios.items()
            }
            names = list(scenarios)
            cpu: dict[str, list[float]] = {name: [] for name in names}
            ratio: dict[str, list[float]] = {name: [] for name in names}
            for round_ in range(args.runs):
                shift = round_ % len(names)
                seen = {name: _cpu(scenarios[name]) for name in names[shift:] + names[:shift]}
                for name in names:
                    cpu[name].append(seen[name])
                    ratio[name].append(seen[name] / max(seen["health"], 1e-6))
    result = {
        "body_bytes": len(obj),
        "runs": args.runs,
        "scenarios": {
            name: {
                "median_ms": round(statistics.median(cpu[name]) * 1000, 2),
                "min_ms": round(min(cpu[name]) * 1000, 2),
                "median_ratio_to_health": round(statistics.median(ratio[name]), 1),
                "statuses": statuses[name],
            }
            for name in names
        },
    }
    for name, figures in result["scenarios"].items():  # type: ignore[union-attr]
        ms, times = figures["median_ms"], figures["median_ratio_to_health"]
        print(f"{name:10} {ms:8.2f} ms  x{times:<7} {figures['statuses']}")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
