"""``policy``: the effective policy of a scope, in Run:ai's ``effective`` shape."""

from __future__ import annotations

from pathlib import Path as FsPath
from typing import Any

import click

from template_engine.cli.options import emit, fail, output_option, root_option
from template_engine.errors import TemplateEngineError
from template_engine.layers import effective_policy
from template_engine.loader.tree import load_org, resolve_root
from template_engine.org import Scope
from template_engine.policy.effective import effective_shape

__all__ = ["policy"]


def source_of_rule(scope: Scope) -> dict[str, Any]:
    """Run:ai's ``sourceOfRule``: the scope, and the department or project it names (by name here)."""
    out: dict[str, Any] = {"scope": "tenant" if scope.type == "system" else scope.type}
    if scope.type == "department":
        out["departmentId"] = scope.name
    elif scope.type == "project":
        out["projectId"] = scope.name
    return out


@click.command()
@root_option
@click.option("--project", "-p", help="The effective policy of this project (system, department, project).")
@click.option("--department", "-d", help="The effective policy of this department (system, department).")
@output_option("yaml")
def policy(root: FsPath, project: str | None, department: str | None, output: str) -> None:
    """Print the effective policy of a scope: every rule with its sourceOfRule, and the imposed assets."""
    try:
        org = load_org(resolve_root(root))
        view = org.view_of(project, department)
        shape = effective_shape(effective_policy(org, view), source_of_rule)
    except TemplateEngineError as exc:
        fail(exc)
    scope: dict[str, Any] = {"scope": "project" if project else "department" if department else "tenant"}
    if view.department is not None:
        scope["departmentId"] = view.department
    if view.project is not None:
        scope["projectId"] = view.project
    emit({"meta": scope, "effective": shape}, output)
