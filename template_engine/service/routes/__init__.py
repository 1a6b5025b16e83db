"""One module per resource; :data:`ROUTERS` lists them in the order the OpenAPI document shows them."""

from __future__ import annotations

from fastapi import APIRouter

from template_engine.service.routes import (
    assets,
    defaults,
    health,
    orgunits,
    policies,
    templates,
    tokens,
    workloads,
)

ROUTERS: tuple[APIRouter, ...] = (
    health.router,
    tokens.router,
    templates.router,
    defaults.router,
    policies.router,
    orgunits.router,
    assets.router,
    workloads.router,
)
