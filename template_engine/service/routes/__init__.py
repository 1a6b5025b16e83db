"""One module per resource; :data:`ROUTERS` lists them in the order the OpenAPI document shows them, then
the browser UI under ``/ui`` (:mod:`template_engine.service.ui`, not in the OpenAPI document)."""

from __future__ import annotations

from fastapi import APIRouter

from template_engine.service.metrics import router as metrics_router
from template_engine.service.routes import (
    assets,
    cluster,
    defaults,
    health,
    orgunits,
    policies,
    templates,
    tokens,
    workloads,
)
from template_engine.service.ui import router as ui_router

ROUTERS: tuple[APIRouter, ...] = (
    health.router,
    metrics_router,
    tokens.router,
    templates.router,
    defaults.router,
    policies.router,
    orgunits.router,
    assets.router,
    workloads.router,
    cluster.clusters,
    cluster.router,
    ui_router,
)
