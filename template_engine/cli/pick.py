"""Which pair a one-pair command composes: ``--project``, ``--department``, ``--cluster`` and ``--template``,
read the same way by ``preview``, ``explain`` and ``manifests``."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TypeVar

import click

from template_engine.cli.options import fail
from template_engine.compose import Composition, compose
from template_engine.errors import Problem, TemplateEngineError
from template_engine.loader.tree import reference_problems
from template_engine.org import Org, View

F = TypeVar("F", bound=Callable[..., object])


def cluster_option(func: F) -> F:
    """``--cluster C``: as seen from cluster C (no department), in an org whose org.yaml names clusters."""
    return click.option(
        "--cluster", help="As seen from this cluster (no department), in an org that names clusters."
    )(func)


def org_problems(org: Org) -> list[Problem]:
    """What ``validate`` reports of ``org``: every problem of its broken files, then its references."""
    return [p for file in sorted(org.broken) for p in org.broken[file]] + reference_problems(org)


def pick_view(org: Org, project: str | None, department: str | None, cluster: str | None) -> View:
    """The view the options name (the system's when they name none)."""
    return org.view_of(project, department, cluster)


def compose_one(
    org: Org,
    template: str,
    project: str | None,
    department: str | None,
    cluster: str | None,
    variables: Mapping[str, str],
) -> Composition:
    """The pair the options name, composed: a template seen from the view the options give, or from its own
    scope when they give none.  A template or scope that cannot be found may be one of the org's broken
    files: their problems are said too."""
    try:
        view = pick_view(org, project, department, cluster)
        found = org.find_template(template, view)
    except TemplateEngineError as exc:
        more = [p for p in org_problems(org) if p not in exc.problems]
        fail(TemplateEngineError([*exc.problems, *more]))
    if project is None and department is None and cluster is None:
        view = org.own_view(found)
    try:
        return compose(org, found, view, variables)
    except TemplateEngineError as exc:
        fail(exc)
