"""``GET /health``: no token, no database; the floor of every latency figure.  ``GET /ready``: no token, one
round trip to the database (the readiness probe)."""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from template_engine.service.routes.common import JsonRoute
from template_engine.service.schemas import HealthOut, ReadyOut
from template_engine.service.storage.database import READY_TIMEOUT, Readiness, head_revision

router = APIRouter(tags=["Health"], route_class=JsonRoute)


@router.get("/health", response_model=HealthOut)
async def health() -> dict[str, str]:
    """The process is up and serving."""
    return {"status": "ok"}


_UNREADY: dict[int | str, dict[str, Any]] = {
    503: {
        "model": ReadyOut,
        "description": "The database does not answer within the timeout, or its schema is not this "
        "service's (behind: run `template-engine db upgrade`; ahead: a newer release upgraded it)",
    }
}


@router.get("/ready", response_model=ReadyOut, response_model_exclude_none=True, responses=_UNREADY)
async def ready(request: Request) -> JSONResponse:
    """The service can answer: the database answers one statement (bounded by a short timeout) and its
    schema is at the revision this service knows.  A load balancer or Kubernetes' readiness probe sends
    traffic only while this is 200; ``/health`` (no database) is the liveness probe."""
    readiness: Readiness = request.app.state.readiness
    head = head_revision()
    try:
        problem = await asyncio.wait_for(run_in_threadpool(readiness.problem), READY_TIMEOUT * 2)
    except TimeoutError:
        problem = f"database unreachable: no answer within {READY_TIMEOUT * 2:g} seconds"
    if problem is None:
        return JSONResponse({"status": "ready", "revision": head})
    return JSONResponse({"status": "unready", "reason": problem, "revision": head}, status_code=503)


@router.get("/favicon.ico", include_in_schema=False, status_code=204)
async def favicon() -> Response:
    """Browsers ask every origin for an icon by themselves: "no content" instead of a 404 in their console."""
    return Response(status_code=204)
