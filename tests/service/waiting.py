"""How the service tests wait for a live server: readiness is polled under a generous bound, and every client
of a live server has an explicit timeout, so that no test depends on the speed of the machine.

A cold server on a loaded machine is slow: on the 2-core machine the suite runs on, shared by several runs,
``/openapi.json`` once took 3 s to build cold and the first request after a start more than httpx's default
5 s timeout, which failed a test that was right (issue 20).  The bounds here allow for a machine twenty times
slower than a normal run; only something wrong reaches them (a server that never starts, a request that
hangs, a stop that never ends), and the test then fails saying what it waited for.  They are bounds, never
measurements: no test asserts how long anything took.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import httpx

#: The timeout of every client of a live server (loopback, in this process or another): connect, read,
#: write and pool, each.  120 s: a cold start under load (imports, the OpenAPI document, the first
#: composition) takes seconds, never minutes.
LIVE_TIMEOUT = httpx.Timeout(120.0)

#: How long a server may take to become ready (``/health`` answering, or uvicorn's ``started``), or to stop.
READY_WITHIN = 120.0


def wait_until(ready: Callable[[], bool], what: str, within: float = READY_WITHIN) -> None:
    """Poll ``ready`` every 20 ms until it is true; fail naming ``what`` after ``within`` seconds.

    ``ready`` may itself fail (an ``AssertionError`` for a process that died, say), which ends the wait."""
    deadline = time.monotonic() + within
    while not ready():
        assert time.monotonic() < deadline, f"{what} within {within:.0f} s"
        time.sleep(0.02)
