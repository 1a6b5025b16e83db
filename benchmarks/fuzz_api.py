"""Schemathesis against the service, in process, for every role: no 5xx, and every answer conforms (issue 17).

Not part of the test suite (``tests/service/test_service_schemathesis.py`` keeps a small, derandomized share
of it); run it for a figure.  The service app is built in this process on an SQLite file seeded once with the
example org (``templates/``), and each role gets its own copy of that file, so one role's writes never change
what another starts from.  The auth file has one token per role: a system admin, a department admin
(``research``), a project editor (``vision``) and a viewer.

For every role, over the server's own OpenAPI document (``/openapi.json``):

- **positive** and **negative** generation on every operation, ``--examples`` requests each (a negative
  pass of ``GET /health``, which has nothing to break, is not an error);
- schemathesis' **stateful** testing: the state machine of the links schemathesis infers between the
  operations (a create's id into the read, the update and the delete), run by hypothesis for
  ``--stateful-examples`` scenarios of at most ``--stateful-steps`` steps, positive steps only unless
  ``--stateful-negative`` (schemathesis' negative steps mostly drop the token, a 401 that says nothing of
  the role); the server's state carries over from one scenario to the next.

Every answer goes through schemathesis' ``not_a_server_error``, ``status_code_conformance``,
``content_type_conformance``, ``response_headers_conformance`` and ``response_schema_conformance``, and
through the suite's check against Run:ai's own schemas (``tests/service/sdk_helpers.py``: every success body
by Run:ai's schema or the SDK's model, every error body an ``Error``, every status one the document declares).
A failing check is recorded and the run goes on: failures are printed grouped by check and operation at the
end, with a reproduction (role, method, path, query, body) for each 5xx.

``python benchmarks/fuzz_api.py --examples 40 --stateful-examples 400 --stateful-steps 20 --seed 17`` (about
45,000 requests, 8 to 10 minutes here; ``--roles viewer --modes stateful`` and smaller numbers for a quick
look); the same seed draws the same inputs (the ids the server makes differ).  The last line is one JSON
object.  The exit status is 1 when any request answered 5xx, 2 when only a conformance check failed, 0
otherwise.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import resource
import shutil
import sqlite3
import sys
import tempfile
import time
import warnings
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "service"))  # sdk_helpers: the check against Run:ai's schemas

import hypothesis  # noqa: E402
from hypothesis import HealthCheck, Phase, given, settings  # noqa: E402
from hypothesis.errors import Unsatisfiable  # noqa: E402

#: One token per role (subjects as in tests/service/conftest.py).
ROLES = {
    "system-admin": "fuzz-admin",
    "department-admin": "fuzz-research-admin",
    "project-editor": "fuzz-vision-editor",
    "viewer": "fuzz-viewer",
}
AUTH_YAML = f"""\
tokens:
  - {{subject: alice, token: {ROLES["system-admin"]}, role: system-admin}}
  - {{subject: bob, token: {ROLES["department-admin"]}, role: department-admin, department: research}}
  - {{subject: carol, token: {ROLES["project-editor"]}, role: project-editor, project: vision}}
  - {{subject: dave, token: {ROLES["viewer"]}, role: viewer}}
"""


def dev_roles() -> dict[str, str]:
    """The four development tokens of ``serve --dev`` by role (``dev-admin``, ``dev-research``,
    ``dev-vision``, ``dev-viewer``: :data:`template_engine.service.auth.DEV_TOKENS`), for ``--dev``."""
    from template_engine.service.auth import DEV_TOKENS

    return {principal.role: token for _, token, principal in DEV_TOKENS}


MODES = ("positive", "negative", "stateful")
#: Restarts of one role's state machine after hypothesis found it flaky, at most.
MAX_RESTARTS = 100
#: Reproductions kept per (check, operation) group besides the 5xx, which are all kept.
KEEP = 3


@dataclass
class Tally:
    """What was sent and what failed, over the whole run."""

    requests: Counter[tuple[str, str]] = field(default_factory=Counter)
    statuses: Counter[tuple[str, int]] = field(default_factory=Counter)
    #: (check title, operation) -> how many answers failed it.
    failures: Counter[tuple[str, str]] = field(default_factory=Counter)
    examples: dict[tuple[str, str], list[str]] = field(default_factory=dict)
    server_errors: list[dict[str, Any]] = field(default_factory=list)
    scenarios: Counter[str] = field(default_factory=Counter)
    restarts: Counter[str] = field(default_factory=Counter)

    def record(self, role: str, mode: str, case: Any, response: Any, checks: list[Any]) -> None:
        """Count one answer and run every check on it; never raise."""
        self.requests[(role, mode)] += 1
        self.statuses[(mode, response.status_code)] += 1
        repro = _reproduction(role, mode, case, response)
        if response.status_code >= 500:
            self.server_errors.append(repro)
        from schemathesis.core.failures import FailureGroup

        try:
            case.validate_response(response, checks=checks)
        except (FailureGroup, AssertionError) as exc:
            for failure in exc.exceptions if isinstance(exc, FailureGroup) else [exc]:
                title = getattr(failure, "title", None) or type(failure).__name__
                key = (str(title), case.operation.label)
                self.failures[key] += 1
                kept = self.examples.setdefault(key, [])
                if len(kept) < KEEP:
                    message = str(getattr(failure, "message", "") or failure)
                    kept.append(f"{json.dumps(repro, default=repr)}\n      {message[:600]}")


def _reproduction(role: str, mode: str, case: Any, response: Any) -> dict[str, Any]:
    from schemathesis.core import NotSet

    body = None if isinstance(case.body, NotSet) else case.body
    try:
        json.dumps(body)
    except (TypeError, ValueError):
        body = repr(body)
    return {
        "role": role,
        "mode": mode,
        "method": case.method,
        "path": case.formatted_path,
        "query": dict(case.query) if case.query else None,
        "headers": {
            name: value
            for name, value in response.request.headers.items()
            if name.lower() not in ("user-agent", "x-schemathesis-testcaseid", "content-length", "connection")
            and name.lower() not in ("accept", "accept-encoding")
        },
        "media_type": case.media_type,
        "body": body,
        "status": response.status_code,
        "answer": response.content[:300].decode("utf-8", "replace"),
    }


def _checks() -> list[Callable[..., Any]]:
    from schemathesis.checks import not_a_server_error
    from schemathesis.specs.openapi.checks import (
        content_type_conformance,
        response_headers_conformance,
        response_schema_conformance,
        status_code_conformance,
    )
    from sdk_helpers import CONFORMANCE

    def runai_conformance(ctx: Any, response: Any, case: Any) -> None:
        """The suite's check: the answer as Run:ai's own schemas describe it."""
        headers = {k.lower(): v for k, v in response.headers.items()}
        kind = headers.get("content-type")
        kind = kind[0] if isinstance(kind, list) and kind else kind
        CONFORMANCE.check(case.method, case.formatted_path, response.status_code, kind, response.content)

    return [
        not_a_server_error,
        status_code_conformance,
        content_type_conformance,
        response_headers_conformance,
        response_schema_conformance,
        runai_conformance,
    ]


def _seeded(folder: Path, auth: Path | None) -> Path:
    """An SQLite file of the example org, seeded the way the service seeds an empty database (``serve
    --seed templates``; with the development tokens when ``auth`` is ``None``, as ``serve --dev``)."""
    from fastapi.testclient import TestClient

    from template_engine.service.app import create_app
    from template_engine.service.settings import Settings

    seeded = folder / "seeded.db"
    app = create_app(
        Settings(
            database_url=f"sqlite:///{seeded}",
            auth_file=auth,
            dev_tokens=auth is None,
            seed=REPO / "templates",
        )
    )
    with TestClient(app):
        pass
    template = folder / "template.db"
    with (
        contextlib.closing(sqlite3.connect(seeded)) as source,
        contextlib.closing(sqlite3.connect(template)) as target,
    ):
        source.backup(target)
    return template


def _app(template: Path, folder: Path, role: str, auth: Path | None) -> Any:
    from template_engine.service.app import create_app
    from template_engine.service.settings import Settings

    database = folder / f"{role}.db"
    shutil.copyfile(template, database)
    return create_app(Settings(database_url=f"sqlite:///{database}", auth_file=auth, dev_tokens=auth is None))


def _settings(examples: int, **extra: Any) -> settings:
    return settings(
        max_examples=examples,
        deadline=None,
        database=None,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
        **extra,
    )


def stateless(
    schema: Any, token: str, role: str, mode: Any, examples: int, seed: int, tally: Tally, checks: list[Any]
) -> None:
    """``examples`` requests of ``mode`` (positive, negative) on every operation, as ``role`` (``token``)."""
    headers = {"Authorization": f"Bearer {token}"}
    for result in schema.get_all_operations():
        operation = result.ok()

        @hypothesis.seed(seed)
        @_settings(examples)
        @given(case=operation.as_strategy(generation_mode=mode))
        def run(case: Any) -> None:
            tally.record(role, mode.value, case, case.call(headers=headers), checks)

        try:
            run()
        except Unsatisfiable:  # nothing in this operation can be made invalid (GET /health)
            assert mode.value == "negative", operation.label


def stateful(
    schema: Any,
    token: str,
    role: str,
    examples: int,
    steps: int,
    seed: int,
    tally: Tally,
    checks: list[Any],
    negative: bool = False,
) -> None:
    """Schemathesis' state machine (links between operations), ``examples`` scenarios of up to ``steps``.

    The server's state carries over from one scenario to the next, so hypothesis may find that a scenario it
    replays draws differently (``Flaky``: a bundle the first run filled stayed empty); schemathesis' own
    runner then starts the state machine again, and so does this one, with the next seed, until ``examples``
    scenarios have run (:attr:`Tally.restarts` counts the restarts)."""
    from hypothesis.errors import Flaky
    from schemathesis import GenerationMode
    from schemathesis.engine.errors import is_inconsistent_replay
    from schemathesis.generation.stateful import run_state_machine_as_test

    headers = {"Authorization": f"Bearer {token}"}
    if not negative:  # schemathesis mixes both modes by default; a negative step often drops the token
        schema.config.generation.update(modes=[GenerationMode.POSITIVE])
    base = schema.as_state_machine()

    class Machine(base):  # type: ignore[misc,valid-type]
        def setup(self) -> None:
            tally.scenarios[role] += 1

        def get_call_kwargs(self, case: Any) -> dict[str, Any]:
            return {"headers": headers}

        def validate_response(self, response: Any, case: Any, **kwargs: Any) -> None:
            tally.record(role, "stateful", case, response, checks)

    for attempt in range(MAX_RESTARTS + 1):
        left = examples - tally.scenarios[role]
        if left <= 0:
            return
        Machine._hypothesis_internal_use_seed = seed + attempt  # what hypothesis.seed() sets on a test
        try:
            run_state_machine_as_test(Machine, settings=_settings(left, stateful_step_count=steps))
            return
        except (Flaky, AssertionError) as exc:
            if not (isinstance(exc, Flaky) or is_inconsistent_replay(exc)):
                raise
            tally.restarts[role] += 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--examples", type=int, default=25, help="requests per operation and mode")
    parser.add_argument("--stateful-examples", type=int, default=30, help="state machine scenarios per role")
    parser.add_argument("--stateful-steps", type=int, default=20, help="most steps in one scenario")
    parser.add_argument("--roles", default=",".join(ROLES), help=f"comma-separated, of: {', '.join(ROLES)}")
    parser.add_argument("--modes", default=",".join(MODES), help=f"comma-separated, of: {', '.join(MODES)}")
    parser.add_argument(
        "--stateful-negative",
        action="store_true",
        help="negative steps in the state machine too (schemathesis' default; many drop the token: 401)",
    )
    parser.add_argument("--seed", type=int, default=0, help="hypothesis' seed")
    parser.add_argument(
        "--dev",
        action="store_true",
        help="the tokens of serve --dev (dev-admin, dev-research, dev-vision, dev-viewer), no auth file",
    )
    args = parser.parse_args(argv)
    tokens = dev_roles() if args.dev else ROLES
    roles = [r for r in args.roles.split(",") if r]
    modes = [m for m in args.modes.split(",") if m]
    unknown = [r for r in roles if r not in ROLES] + [m for m in modes if m not in MODES]
    if unknown:
        parser.error(f"unknown role or mode: {', '.join(unknown)}")

    warnings.filterwarnings("ignore", message=".*httpx2.*")
    import schemathesis
    from schemathesis.python.asgi import shutdown_lifespans

    checks = _checks()
    tally = Tally()
    started, cpu = time.perf_counter(), time.process_time()
    seconds: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="fuzz-api-") as tmp:
        folder = Path(tmp)
        auth: Path | None = None
        if not args.dev:
            auth = folder / "tokens.yaml"
            auth.write_text(AUTH_YAML)
        template = _seeded(folder, auth)
        for role in roles:
            began = time.perf_counter()
            schema = schemathesis.openapi.from_asgi("/openapi.json", _app(template, folder, role, auth))
            for mode in modes:
                if mode == "stateful":
                    stateful(
                        schema,
                        tokens[role],
                        role,
                        args.stateful_examples,
                        args.stateful_steps,
                        args.seed,
                        tally,
                        checks,
                        args.stateful_negative,
                    )
                else:
                    stateless(
                        schema,
                        tokens[role],
                        role,
                        schemathesis.GenerationMode(mode),
                        args.examples,
                        args.seed,
                        tally,
                        checks,
                    )
                print(f"{role:>16} {mode:<8} {tally.requests[(role, mode)]:>7} requests", flush=True)
            seconds[role] = round(time.perf_counter() - began, 1)
        shutdown_lifespans()
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu

    print("\nrequests by role and mode")
    for role in roles:
        counts = "  ".join(f"{mode} {tally.requests[(role, mode)]:>6}" for mode in modes)
        print(
            f"  {role:<16} {counts}  scenarios {tally.scenarios[role]:>4}"
            f" (restarts {tally.restarts[role]})  ({seconds[role]} s)"
        )
    print(f"  total {sum(tally.requests.values())} requests")
    for mode in modes:
        statuses = {status: n for (m, status), n in sorted(tally.statuses.items()) if m == mode}
        print(f"  {mode:<8} statuses {statuses}")
    print(f"\nfailures by check and operation: {sum(tally.failures.values())}")
    for (title, operation), count in sorted(tally.failures.items()):
        print(f"  {count:>6}  {title}: {operation}")
        for example in tally.examples[(title, operation)]:
            print(f"      {example}")
    print(f"\n5xx: {len(tally.server_errors)}")
    for repro in tally.server_errors:
        print(f"  {json.dumps(repro, default=repr)}")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        json.dumps(
            {
                "requests": {f"{r}/{m}": tally.requests[(r, m)] for r in roles for m in modes},
                "total": sum(tally.requests.values()),
                "scenarios": dict(tally.scenarios),
                "restarts": dict(tally.restarts),
                "examples": args.examples,
                "stateful_examples": args.stateful_examples,
                "stateful_steps": args.stateful_steps,
                "seed": args.seed,
                "dev_tokens": args.dev,
                "wall_s": round(wall, 1),
                "cpu_s": round(cpu, 1),
                "peak_mib": round(peak),
                "server_errors": len(tally.server_errors),
                "server_errors_by_operation": dict(
                    Counter(f"{e['method']} {e['path']}" for e in tally.server_errors).most_common()
                ),
                "failures": sum(tally.failures.values()),
                "failures_by_check": dict(
                    Counter(title for title, _ in tally.failures.elements()).most_common()
                ),
            }
        )
    )
    if tally.server_errors:
        return 1
    return 2 if tally.failures else 0


if __name__ == "__main__":
    sys.exit(main())
