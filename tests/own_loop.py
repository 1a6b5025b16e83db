"""Coroutines of a test run on an event loop of their own, in a thread of their own."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")


def run_in_own_loop(main: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(main)`` in a new thread: a test that ran before in the same pytest-xdist worker (the
    browser tests' Playwright sync API) may leave this thread's event loop running, and ``asyncio.run``
    refuses to start inside a running loop."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, main).result()
