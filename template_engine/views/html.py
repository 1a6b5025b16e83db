"""The explain view and the report index as HTML: Jinja2 with autoescaping on, no external resources.

Every value a page shows is user content (a template's values, file names, messages that quote them), so the
environment escapes everything it prints; the templates never mark a value safe, put one in a ``href``,
``style`` or script, or load anything from elsewhere.  Links are made by the caller (:mod:`site`) from pair
ids, which are percent-encoded names.

The service's browser UI renders the same templates: :func:`make_environment` adds its own folder in front,
and ``explain.html.j2`` then extends the ``layout`` it is given (the service's page frame, with its
stylesheet and script served from its own path) instead of the self-contained ``base.html.j2``.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

import jinja2

from template_engine.views.model import IndexView, PageView

if TYPE_CHECKING:
    from template_engine.views.kinds import KindsPage

__all__ = ["TEMPLATES", "environment", "make_environment", "render_index", "render_kinds", "render_page"]

TEMPLATES = Path(__file__).with_name("templates")


@cache
def environment() -> jinja2.Environment:
    """The views' Jinja2 environment: autoescape on for every template, undefined names are errors."""
    return make_environment()


def make_environment(*folders: Path) -> jinja2.Environment:
    """An environment that finds templates in ``folders`` first, then the views' own (same settings)."""
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader([*folders, TEMPLATES]),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )


def render_page(page: PageView, index_href: str | None = None) -> str:
    """The explain page of one pair; ``index_href`` links back to the report's index."""
    return environment().get_template("explain.html.j2").render(page=page, index_href=index_href)


def render_index(index: IndexView) -> str:
    """The report's index: every pair with its status, linked to its page."""
    return environment().get_template("index.html.j2").render(index=index)


def render_kinds(page: KindsPage, index_href: str | None = None) -> str:
    """A project's "Where kinds differ" page (``views/kinds.py``)."""
    return environment().get_template("kinds.html.j2").render(page=page, index_href=index_href)
