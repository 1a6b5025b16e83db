"""``GET /metrics``: the process's counters in Prometheus' text format, through ``prometheus-client``.

What is counted (every label bounded: a route is its path template, :class:`.access_log.RouteTemplates`):

* ``template_engine_http_requests_total{method, route, status}`` and
  ``template_engine_http_request_duration_seconds{method, route}`` (a histogram), from each
  :class:`.access_log.Finished` (:func:`observe_request`);
* ``template_engine_compositions_total``, ``template_engine_composition_units_total`` (their price in the
  request budget's units of work, :func:`.budget.rows_price`'s) and
  ``template_engine_composition_duration_seconds`` (:func:`observe_composition`, from
  :func:`.composer.compose_row`);
* ``template_engine_answer_cache_total{result="hit"|"miss"}`` (:data:`.cache.STATS`' hits and misses);
* ``template_engine_db_pool_checked_out`` and ``template_engine_db_pool_size``: the connections of the
  service's SQLAlchemy pool in use and its configured size (:func:`watch_pool`).

``serve --workers N`` runs N processes behind one port, and a scrape reaches one of them: the parent gives
them ``PROMETHEUS_MULTIPROC_DIR`` (a directory of its own, removed when it stops), so every worker writes its
values there and a scrape answered by any worker sums them all (prometheus-client's multiprocess mode; the
pool gauges are ``livesum``: the sum over the workers alive).  One process serves its own registry.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from fastapi import APIRouter, Response
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
    multiprocess,
)
from sqlalchemy import Engine, event

from template_engine.service.access_log import Finished
from template_engine.service.cache import STATS

#: The environment variable prometheus-client reads, once, when it is imported.
MULTIPROC_DIR = "PROMETHEUS_MULTIPROC_DIR"
#: Whether this process writes its values to :data:`MULTIPROC_DIR` (read as prometheus-client reads it).
MULTIPROCESS = bool(os.environ.get(MULTIPROC_DIR) or os.environ.get(MULTIPROC_DIR.lower()))

#: Latency buckets in seconds: from a cached answer (under a millisecond) to a request at its work budget.
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)

REQUESTS = Counter(
    "template_engine_http_requests",
    "HTTP requests answered, by method, route template and status.",
    ["method", "route", "status"],
)
LATENCY = Histogram(
    "template_engine_http_request_duration_seconds",
    "Seconds from a request's arrival to its answer's end, by method and route template.",
    ["method", "route"],
    buckets=LATENCY_BUCKETS,
)
COMPOSITIONS = Counter("template_engine_compositions", "Compositions of stored templates made.")
COMPOSITION_UNITS = Counter(
    "template_engine_composition_units",
    "The price of the compositions made, in the request budget's units of work (docs/http-api.md).",
)
COMPOSITION_SECONDS = Histogram(
    "template_engine_composition_duration_seconds",
    "Seconds one composition of a stored template took.",
    buckets=LATENCY_BUCKETS,
)
ANSWER_CACHE = Counter(
    "template_engine_answer_cache",
    "Template reads answered from the answer cache (hit) or composed (miss).",
    ["result"],
)
POOL_CHECKED_OUT = Gauge(
    "template_engine_db_pool_checked_out",
    "Database connections of the service's pool in use.",
    multiprocess_mode="livesum",
)
POOL_SIZE = Gauge(
    "template_engine_db_pool_size",
    "The configured size of the service's database pool (connections kept open).",
    multiprocess_mode="livesum",
)


def observe_request(finished: Finished) -> None:
    """Count one answered request (an observer of :class:`.access_log.AccessLog`)."""
    status = str(finished.status) if finished.status is not None else "none"
    REQUESTS.labels(finished.method, finished.route, status).inc()
    LATENCY.labels(finished.method, finished.route).observe(finished.duration_ms / 1000)


def observe_composition(units: int, seconds: float) -> None:
    COMPOSITIONS.inc()
    COMPOSITION_UNITS.inc(units)
    COMPOSITION_SECONDS.observe(seconds)


@contextmanager
def composing(units: Callable[[], int]) -> Iterator[None]:
    """Time one composition and count it with its price ``units()`` (asked for when it ends)."""
    started = time.perf_counter()
    try:
        yield
    finally:
        observe_composition(units(), time.perf_counter() - started)


def _count_cache(name: str, count: int) -> None:
    if name in ("hits", "misses"):
        ANSWER_CACHE.labels("hit" if name == "hits" else "miss").inc(count)


STATS.listen(_count_cache)


def watch_pool(engine: Engine) -> Callable[[], None]:
    """Count ``engine``'s pool in the pool gauges; the function returned stops (call it when the engine is
    disposed of).  A pool without a fixed size (SQLite's in-memory one) adds nothing to the size."""
    size = getattr(engine.pool, "size", None)
    pool_size = size() if callable(size) else 0
    POOL_SIZE.inc(pool_size)

    def checkout(*_: Any) -> None:
        POOL_CHECKED_OUT.inc()

    def checkin(*_: Any) -> None:
        POOL_CHECKED_OUT.dec()

    event.listen(engine, "checkout", checkout)
    event.listen(engine, "checkin", checkin)

    def stop() -> None:
        POOL_SIZE.dec(pool_size)
        event.remove(engine, "checkout", checkout)
        event.remove(engine, "checkin", checkin)
        if MULTIPROCESS:  # this worker's live gauges leave the sum
            multiprocess.mark_process_dead(os.getpid())  # type: ignore[no-untyped-call]

    return stop


def scrape() -> bytes:
    """The text of every metric: this process's, or every worker's summed (multiprocess mode)."""
    if not MULTIPROCESS:
        return generate_latest(REGISTRY)
    registry = CollectorRegistry()
    multiprocess.MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
    return generate_latest(registry)


router = APIRouter(tags=["Health"])


@router.get("/metrics", include_in_schema=False)
def metrics() -> Response:
    """Prometheus' text format (prometheus-client's ``CONTENT_TYPE_LATEST``); no token, as ``/health``."""
    return Response(scrape(), media_type=CONTENT_TYPE_LATEST)
