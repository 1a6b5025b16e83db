"""``GET /health``: no token, no database; the floor of every latency figure."""

from __future__ import annotations

from fastapi import APIRouter

from template_engine.service.routes.common import JsonRoute
from template_engine.service.schemas import HealthOut

router = APIRouter(tags=["Health"], route_class=JsonRoute)


@router.get("/health", response_model=HealthOut)
async def health() -> dict[str, str]:
    """The process is up and serving."""
    return {"status": "ok"}
