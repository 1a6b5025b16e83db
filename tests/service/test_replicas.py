"""Three replicas on one PostgreSQL behind a real HAProxy, one killed with SIGKILL under load (issue 22).

Three ``template-engine serve`` processes (``--dev``, the example org of ``templates/`` seeded once, by the
first) on one PostgreSQL database, behind Debian's HAProxy configured as an operator would: an HTTP health
check on :data:`HEALTH_PATH` every 100 ms (down after 2 failures, up after 2 successes), ``retry-on`` the
failures a retry cannot make worse and ``option redispatch`` to another server, L7 retries for ``GET`` only
(a ``POST`` whose server died may have been committed: it is never replayed).  Threads drive readers
(composed ``GET`` of templates), updaters (``PATCH`` with ``If-Match`` on the ETag just read, each on its own
template), racers (three ``PATCH`` at once on one template with the same ``If-Match``) and a creator through
HAProxy, then one replica is killed with SIGKILL, HAProxy's checks take it out, it is started again on its
port and the checks take it back.

Every phase ends on a count of answered requests, never a duration, and every wait is bounded
(``tests/service/waiting.py``).  The figures are printed (``pytest -s``); docs/operations.md ("Replicas
behind a load balancer") gives those of a run.  HAProxy missing FAILS the test, naming the package, as a
missing Chromium fails the browser tests: ``.ci/run`` installs it.
"""

from __future__ import annotations

import csv
import io
import itertools
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest import ADMIN, TEMPLATES, bearer
from servers import free_port
from waiting import LIVE_TIMEOUT, READY_WITHIN, wait_until

T = "/api/v1/workload-templates/distributed"
EXE = Path(sys.executable).with_name("template-engine")

#: The path HAProxy's health check asks each replica (``option httpchk GET``): ``/ready``, which answers 200
#: only when the replica's database answers and its schema is current (docs/operations.md), as the
#: Deployment's readiness probe in ``deploy/kubernetes/`` does.
HEALTH_PATH = "/ready"

#: Requests answered (through HAProxy, all kinds together) in each phase: before the kill, while the
#: replica is down, after it is back.  Counts, not durations: a slow machine makes the test slower, not wrong.
PHASE_REQUESTS = 150

#: At most this many requests per load thread: the test is bounded even if a phase never ends.
THREAD_REQUESTS = 4000

#: The racers: this many ``PATCH`` at once with one ``If-Match``; exactly one may win.
RACERS = 3

READERS, UPDATERS = 4, 3

HAPROXY_CONFIG = """\
global
    stats socket {stats} mode 600 level admin
    maxconn 512

defaults
    mode http
    timeout connect 2s
    timeout client 120s
    timeout server 120s
    timeout check 2s
    retries 3
    option redispatch
    retry-on conn-failure empty-response response-timeout 502 503 504

frontend api
    bind 127.0.0.1:{port}
    default_backend replicas

backend replicas
    balance roundrobin
    option httpchk GET {health}
    http-check expect status 200
    # A write whose server died may have been committed: never replayed (connection failures still are,
    # the request was never sent).
    http-request disable-l7-retry unless METH_GET || METH_HEAD
    default-server check inter 100ms fall 2 rise 2
{servers}
"""


def haproxy_executable() -> str:
    """Debian's HAProxy; the test FAILS (never skips) when there is none, saying what to install."""
    found = shutil.which("haproxy") or shutil.which("/usr/sbin/haproxy")
    if found is None:
        pytest.fail(
            "the replica test puts the servers behind HAProxy and there is none on PATH: install Debian's "
            "package (`apt-get install haproxy`, which scripts/test, the README's test command, does when it "
            "is missing).",
            pytrace=False,
        )
    return found


def haproxy_config(port: int, stats: Path, servers: dict[str, int]) -> str:
    lines = "\n".join(f"    server {name} 127.0.0.1:{p}" for name, p in servers.items())
    return HAPROXY_CONFIG.format(port=port, stats=stats, health=HEALTH_PATH, servers=lines)


# -- the processes -------------------------------------------------------------------------------------------


@dataclass
class Replica:
    name: str
    database_url: str
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, *extra: str) -> None:
        command = [str(EXE), "serve", "--port", str(self.port), "--database-url", self.database_url]
        command += ["--dev", "--log-level", "warning", *extra]
        self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def healthy(self) -> bool:
        assert self.process is not None and self.process.poll() is None, f"{self.name} stopped"
        try:
            return httpx.get(f"{self.url}{HEALTH_PATH}", timeout=LIVE_TIMEOUT).status_code == 200
        except httpx.TransportError:
            return False

    def kill(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=READY_WITHIN)

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=READY_WITHIN)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


class Balancer:
    """HAProxy in the foreground (``-db``) on a free port, with its stats socket in ``folder``."""

    def __init__(self, folder: Path, servers: dict[str, int]) -> None:
        self.port = free_port()
        self.stats = folder / "haproxy.sock"
        config = folder / "haproxy.cfg"
        config.write_text(haproxy_config(self.port, self.stats, servers))
        command = [haproxy_executable(), "-db", "-f", str(config)]
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        self.url = f"http://127.0.0.1:{self.port}"

    def stat(self) -> dict[str, dict[str, str]]:
        """``show stat`` of the stats socket: each server of the backend's row (status, downtime, ...)."""
        assert self.process.poll() is None, self.process.communicate()[0]
        with socket.socket(socket.AF_UNIX) as sock:
            sock.settimeout(READY_WITHIN)
            sock.connect(str(self.stats))
            sock.sendall(b"show stat\n")
            data = b""
            while chunk := sock.recv(65536):
                data += chunk
        rows = csv.DictReader(io.StringIO(data.decode().removeprefix("# ")))
        return {r["svname"]: r for r in rows if r["pxname"] == "replicas" and r["svname"] != "BACKEND"}

    def status(self, server: str) -> str:
        try:
            return self.stat()[server]["status"]
        except (FileNotFoundError, ConnectionRefusedError):
            return "no socket yet"

    def stop(self) -> str:
        self.process.terminate()
        try:
            return self.process.communicate(timeout=READY_WITHIN)[0].decode()
        except subprocess.TimeoutExpired:
            self.process.kill()
            return self.process.communicate()[0].decode()


# -- the load ------------------------------------------------------------------------------------------------


@dataclass
class Ledger:
    """Every answer through HAProxy: when, what kind of request, its status (0: no answer at all)."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    answers: list[tuple[float, str, int]] = field(default_factory=list)

    def record(self, kind: str, status: int) -> None:
        with self.lock:
            self.answers.append((time.monotonic(), kind, status))

    def count(self) -> int:
        with self.lock:
            return len(self.answers)

    def errors(self, start: float = 0.0, end: float = float("inf")) -> Counter[str]:
        """Failed answers by ``kind status`` in ``[start, end]``; a racer's 412 is an expected answer."""
        with self.lock:
            return Counter(
                f"{kind} {status}"
                for at, kind, status in self.answers
                if start <= at <= end and not (200 <= status < 300 or (kind == "race" and status == 412))
            )


@dataclass
class Outcomes:
    """What the writers were told: the acknowledged writes, and what every read after one saw."""

    updates: dict[str, list[tuple[int, str]]] = field(default_factory=dict)  # id -> [(version, args)]
    #: id -> the args of the updates sent since the last acknowledged one that got no answer or a 5xx: a
    #: write whose replica was killed after its commit may be there without an acknowledgement.
    unanswered: dict[str, list[str]] = field(default_factory=dict)
    created: dict[str, str] = field(default_factory=dict)  # id -> name
    races: list[Counter[int]] = field(default_factory=list)  # each race's statuses
    stale_reads: list[str] = field(default_factory=list)


def _version(response: httpx.Response) -> int:
    return int(response.headers["ETag"].strip('"'))


def _state(response: httpx.Response) -> tuple[int, str]:
    """A template's version and ``spec.args``: what an update wrote."""
    return _version(response), str(response.json()["spec"].get("args"))


def _call(
    ledger: Ledger, kind: str, send: Callable[..., httpx.Response], url: str, **options: Any
) -> httpx.Response | None:
    """``send(url, **options)``, its answer recorded in ``ledger`` (``None``: no answer at all)."""
    try:
        response = send(url, **options)
    except httpx.TransportError:
        ledger.record(kind, 0)
        return None
    ledger.record(kind, response.status_code)
    return response


class Load:
    """The load threads through ``url``, until :meth:`finish`."""

    def __init__(self, url: str, project: str, readable: list[str], owned: list[str], raced: str) -> None:
        self.url, self.project = url, project
        self.readable, self.owned, self.raced = readable, owned, raced
        self.ledger, self.outcomes = Ledger(), Outcomes()
        self.done = threading.Event()
        self.failures: list[BaseException] = []
        self.threads = [threading.Thread(target=self._guarded, args=(self._read, i)) for i in range(READERS)]
        self.threads += [
            threading.Thread(target=self._guarded, args=(self._update, i)) for i in range(UPDATERS)
        ]
        self.threads += [
            threading.Thread(target=self._guarded, args=(self._create, 0)),
            threading.Thread(target=self._guarded, args=(self._race, 0)),
        ]

    def client(self) -> httpx.Client:
        return httpx.Client(base_url=self.url, headers=bearer(ADMIN), timeout=LIVE_TIMEOUT)

    def start(self) -> None:
        for thread in self.threads:
            thread.start()

    def finish(self) -> None:
        self.done.set()
        for thread in self.threads:
            thread.join(timeout=READY_WITHIN)
        assert not any(t.is_alive() for t in self.threads), "a load thread did not end"
        assert not self.failures, self.failures

    def _guarded(self, work: Callable[[int], None], index: int) -> None:
        try:
            work(index)
        except BaseException as exc:  # reported by finish()
            self.failures.append(exc)

    def _rounds(self) -> Iterator[int]:
        return itertools.takewhile(lambda _: not self.done.is_set(), range(THREAD_REQUESTS))

    def _read(self, index: int) -> None:
        with self.client() as http:
            for number in self._rounds():
                template = self.readable[(index + number) % len(self.readable)]
                params = {"projectId": self.project}
                _call(self.ledger, "read", http.get, f"{T}/{template}", params=params)

    def _update(self, index: int) -> None:
        """Read, ``PATCH`` with ``If-Match`` on that version, then read again: the read must see the write."""
        template = self.owned[index]
        acknowledged = self.outcomes.updates.setdefault(template, [])
        unanswered = self.outcomes.unanswered.setdefault(template, [])
        url = f"{T}/{template}"
        with self.client() as http:
            for number in self._rounds():
                current = _call(self.ledger, "read", http.get, url)
                if current is None or current.status_code != 200:
                    continue
                args = f"updater-{index}-{number}"
                match = {"If-Match": current.headers["ETag"]}
                body = {"spec": {"args": args}}
                written = _call(self.ledger, "update", http.patch, url, json=body, headers=match)
                if written is None or written.status_code >= 500:
                    unanswered.append(args)
                if written is None or written.status_code != 200:
                    continue
                acknowledged.append((_version(written), args))
                unanswered.clear()
                seen = _call(self.ledger, "read", http.get, url)
                if seen is not None and seen.status_code == 200 and _state(seen) != acknowledged[-1]:
                    self.outcomes.stale_reads.append(
                        f"{template}: wrote {acknowledged[-1]}, read {_state(seen)}"
                    )

    def _create(self, _: int) -> None:
        with self.client() as http:
            for number in self._rounds():
                name = f"replicated-{number}"
                body = {"meta": {"name": name, "scopeType": "system"}, "spec": {"image": f"r:{number}"}}
                created = _call(self.ledger, "create", http.post, T, json=body)
                if created is not None and created.status_code == 202:
                    self.outcomes.created[created.json()["meta"]["id"]] = name

    def _race_once(
        self, http: httpx.Client, args: str, start: threading.Barrier, match: dict[str, str]
    ) -> int:
        body = {"spec": {"args": args}}
        start.wait(timeout=READY_WITHIN)
        answer = _call(self.ledger, "race", http.patch, f"{T}/{self.raced}", json=body, headers=match)
        return 0 if answer is None else answer.status_code

    def _race(self, _: int) -> None:
        """:data:`RACERS` clients ``PATCH`` the same template with the same ``If-Match`` at once."""
        clients = [self.client() for _ in range(RACERS)]
        try:
            with clients[0] as reader, ThreadPoolExecutor(RACERS) as pool:
                for number in self._rounds():
                    current = _call(self.ledger, "read", reader.get, f"{T}/{self.raced}")
                    if current is None or current.status_code != 200:
                        continue
                    match = {"If-Match": current.headers["ETag"]}
                    start = threading.Barrier(RACERS)
                    racers = [(http, f"racer-{i}-{number}", start, match) for i, http in enumerate(clients)]
                    statuses = list(pool.map(lambda racer: self._race_once(*racer), racers))
                    self.outcomes.races.append(Counter(statuses))
        finally:
            for http in clients:
                http.close()


# -- the test ------------------------------------------------------------------------------------------------


def _ids(http: httpx.Client) -> tuple[list[str], str]:
    entries = http.get(T, params={"limit": 100}).json()["entries"]
    projects = http.get("/api/v1/org-unit/projects").json()["projects"]
    vision = next(p["id"] for p in projects if p["name"] == "vision")
    system = [e["meta"]["id"] for e in entries if e["meta"]["scopeType"] == "system"]  # each fits vision
    return system, str(vision)


def _new_template(http: httpx.Client, name: str) -> str:
    created = http.post(T, json={"meta": {"name": name, "scopeType": "system"}, "spec": {"image": "a:1"}})
    assert created.status_code == 202, created.text
    template_id: str = created.json()["meta"]["id"]
    return template_id


@pytest.mark.slow
def test_a_replica_killed_under_load(postgres_url: str, tmp_path: Path) -> None:
    haproxy_executable()
    replicas = [Replica(f"r{i}", postgres_url) for i in range(3)]
    replicas[0].start("--seed", str(TEMPLATES))  # seeded once, by the first
    balancer: Balancer | None = None
    try:
        wait_until(replicas[0].healthy, "the first replica did not answer")
        for replica in replicas[1:]:
            replica.start()
        for replica in replicas[1:]:
            wait_until(replica.healthy, f"{replica.name} did not answer")
        balancer = Balancer(tmp_path, {r.name: r.port for r in replicas})
        each_up = lambda: all(balancer.status(r.name) == "UP" for r in replicas)  # noqa: E731
        wait_until(each_up, "HAProxy did not see the three replicas UP")
        with httpx.Client(base_url=balancer.url, headers=bearer(ADMIN), timeout=LIVE_TIMEOUT) as http:
            readable, project = _ids(http)
            owned = [_new_template(http, f"owned-{i}") for i in range(UPDATERS)]
            raced = _new_template(http, "raced")
        load = Load(balancer.url, project, readable, owned, raced)
        victim = replicas[1]
        load.start()
        try:
            wait_until(lambda: load.ledger.count() >= PHASE_REQUESTS, "the load did not start")
            killed = time.monotonic()
            victim.kill()
            wait_until(
                lambda: balancer.status(victim.name).startswith("DOWN"), "HAProxy did not mark it DOWN"
            )
            down = time.monotonic()
            served_then = load.ledger.count()
            wait_until(
                lambda: load.ledger.count() >= served_then + PHASE_REQUESTS, "no load while it was down"
            )
            restarted = time.monotonic()
            victim.start()
            wait_until(victim.healthy, "the killed replica did not start again")
            answering = time.monotonic()
            wait_until(lambda: balancer.status(victim.name) == "UP", "HAProxy did not mark it UP again")
            up = time.monotonic()
            served_then = load.ledger.count()
            wait_until(
                lambda: load.ledger.count() >= served_then + PHASE_REQUESTS, "no load once it was back"
            )
            victim_requests = int(balancer.stat()[victim.name]["stot"])
        finally:
            load.finish()
        stats = balancer.stat()

        ledger, outcomes = load.ledger, load.outcomes
        # Every answer outside the kill window is a success (or a racer's 412); reads never fail, even in
        # the window: HAProxy retries them on another replica.
        assert ledger.errors(0.0, killed) == Counter(), ledger.errors(0.0, killed)
        assert ledger.errors(up) == Counter(), ledger.errors(up)
        window = ledger.errors(killed, up)
        assert not [kind for kind in window if kind.startswith("read ")], window
        # Concurrent If-Match writes on one ETag: never two winners; outside the window, exactly one winner
        # and the others 412.
        assert outcomes.races and all(race[200] <= 1 for race in outcomes.races), outcomes.races
        clean = [race for race in outcomes.races if set(race) <= {200, 412}]
        assert clean and all(race == Counter({200: 1, 412: RACERS - 1}) for race in clean), clean
        # Every read right after an acknowledged update saw it, whichever replica answered.
        assert outcomes.stale_reads == []

        # Afterwards, through each replica directly: every acknowledged creation is there, and each owned
        # template holds its last acknowledged update at that version (an update acknowledged on version N
        # was based on N - 1: versions grow by one per acknowledged write, none twice).
        lost = 0
        for replica in replicas:
            with httpx.Client(base_url=replica.url, headers=bearer(ADMIN), timeout=LIVE_TIMEOUT) as http:
                for template, name in outcomes.created.items():
                    found = http.get(f"{T}/{template}")
                    lost += found.status_code != 200 or found.json()["meta"]["name"] != name
                for template, acknowledged in outcomes.updates.items():
                    versions = [version for version, _ in acknowledged]
                    assert versions == sorted(set(versions)), versions
                    version, args = _state(http.get(f"{T}/{template}"))
                    last_version, last_args = acknowledged[-1]
                    if version == last_version:
                        lost += args != last_args
                    else:  # only an unanswered update after the last acknowledged one may be later
                        lost += version < last_version or args not in outcomes.unanswered[template]
        assert lost == 0
        assert all(outcomes.updates.values()) and outcomes.created

        # HAProxy took the dead replica out and back: one transition to DOWN, and it served again after.
        assert int(stats[victim.name]["chkdown"]) == 1, stats[victim.name]
        assert int(stats[victim.name]["stot"]) > victim_requests
        acknowledged_writes = sum(map(len, outcomes.updates.values())) + len(outcomes.created)
        acknowledged_writes += sum(race[200] for race in outcomes.races)
        figures = {
            "requests": ledger.count(),
            "acknowledged writes": acknowledged_writes,
            "races": len(outcomes.races),
            "errors in the kill window": dict(window),
            "kill to DOWN (s)": round(down - killed, 2),
            "restart to answering (s)": round(answering - restarted, 2),
            "answering to UP (s)": round(up - answering, 2),
            "out of rotation, kill to UP (s)": round(up - killed, 2),
            "HAProxy downtime (s)": int(stats[victim.name]["downtime"]),
            "lost writes": lost,
        }
        print("\nreplicas under a kill:", figures)
    finally:
        if balancer is not None:
            balancer.stop()
        for replica in replicas:
            replica.stop()
