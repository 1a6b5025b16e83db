"""The service's browser UI under ``/ui``: the org tree, each scope's templates with their state, the explain
view, the effective policy of a scope and the impact of a pending change to its defaults or policy.

Server-side Jinja2 pages (the explain view is :mod:`template_engine.views`' own template), a stylesheet and a
small script served from ``/ui/static/``; no build step and no other server.  :mod:`.session` holds the
browser's session and the guards every answer carries, :mod:`.pages` what each page shows, :mod:`.routes`
the pages themselves.
"""

from __future__ import annotations

from template_engine.service.ui.routes import router

__all__ = ["router"]
