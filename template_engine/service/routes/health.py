"""``GET /health``: no token, no database; the floor of every latency figure."""

from __future__ import annotations

from fastapi import APIRouter, Response

from template_engine.service.routes.common import JsonRoute
from template_engine.service.schemas import HealthOut

router = APIRouter(tags=["Health"], route_class=JsonRoute)


@router.get("/health", response_model=HealthOut)
async def health() -> dict[str, str]:
    """The process is up and serving."""
    return {"status": "ok"}


@router.get("/favicon.ico", include_in_schema=False, status_code=204)
async def favicon() -> Response:
    """Browsers ask every origin for an icon by themselves: "no content" instead of a 404 in their console."""
    return Response(status_code=204)
