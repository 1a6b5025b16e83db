"""What each UI page shows, as plain values: the org tree, a scope's templates with their state, the
effective policy of a scope, and the templates a pending change would affect.

The explain page is :func:`template_engine.views.model.explain_page` itself, with the stored documents and
their versions as provenance (:func:`~template_engine.service.impact.place_name`).  Everything here reads a
request's :class:`~template_engine.service.context.Ctx` or a
:class:`~template_engine.service.impact.StoredOrg` and returns values; the routes render them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import quote

from template_engine.compose import Composition, compose
from template_engine.errors import Problem, TemplateEngineError
from template_engine.layers import default_layers
from template_engine.merge.engine import merge_layers
from template_engine.merge.plan import SPEC_PLAN
from template_engine.org import Scope, Template, View
from template_engine.paths import format_path
from template_engine.policy.effective import effective
from template_engine.service.context import Ctx, Placement, parse_id
from template_engine.service.errors import ApiError
from template_engine.service.impact import (
    Affected,
    StoredOrg,
    named_change,
    place_name,
    shown_changes,
)
from template_engine.service.yamltext import dump_yaml
from template_engine.views.model import DiffView, diff_view, seen_from

__all__ = [
    "AffectedView",
    "PolicyView",
    "ScopeNode",
    "TemplateState",
    "affected_views",
    "compose_template",
    "org_tree",
    "placement_of",
    "policy_view",
    "scope_label",
    "scope_templates",
]


def placement_of(ctx: Ctx, key: str) -> Placement:
    """The scope a UI path names: ``system``, ``department:ID`` or ``project:ID`` (the database's scope
    keys); 404 for one that does not exist or cannot be read that way."""
    if key == "system":
        return Placement("system")
    kind, _, ident = key.partition(":")
    if kind not in ("department", "project") or not ident:
        raise ApiError(404, f"No such scope: {key!r}.")
    try:
        number = parse_id(ident, "scope")
    except ApiError:
        raise ApiError(404, f"No such scope: {key!r}.") from None
    return ctx.placement(kind, number)


def scope_label(place: Placement) -> str:
    """``project vision (department research)``, ``department research``, ``the system scope``."""
    return seen_from(place.view())


# -- the org tree---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ScopeNode:
    """A scope of the tree, with what the caller may do there."""

    key: str
    type: str
    name: str
    description: str | None
    writable: bool
    children: tuple[ScopeNode, ...] = ()

    @property
    def href_key(self) -> str:
        return quote(self.key, safe=":")


def org_tree(ctx: Ctx) -> ScopeNode:
    """The system, its departments and their projects: those the caller may read."""
    access = ctx.access
    departments = []
    projects = ctx.repo.projects()
    for department in ctx.repo.departments():
        place = Placement("department", department)
        if not access.can_read(place.ref):
            continue
        children = []
        for project in projects:
            if project.department_id != department.id:
                continue
            child = Placement("project", department, project)
            if access.can_read(child.ref):
                children.append(
                    ScopeNode(
                        child.key,
                        "project",
                        project.name,
                        project.description,
                        access.can_write(child.ref),
                    )
                )
        departments.append(
            ScopeNode(
                place.key,
                "department",
                department.name,
                department.description,
                access.can_write(place.ref),
                tuple(children),
            )
        )
    system = Placement("system")
    return ScopeNode("system", "system", "system", None, access.can_write(system.ref), tuple(departments))


# -- a scope's templates--------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TemplateState:
    """One template as seen from a scope: whether it composes, is runnable, complies with the policies."""

    id: str
    name: str
    scope: str
    description: str | None
    status: str
    runnable: bool
    issues: int
    compliance_issues: int
    first_issue: str | None


def compose_template(stored: StoredOrg, template: Template, view: View) -> Composition | list[Problem]:
    """The template composed as seen from ``view`` on the stored org, or the problems that stop it."""
    try:
        return compose(stored.org, template, view)
    except TemplateEngineError as exc:
        return list(exc.problems)


def scope_templates(stored: StoredOrg, place: Placement) -> list[TemplateState]:
    """Every template visible from the scope (its own and those of the scopes above it; a nearer scope's
    template shadows a farther one of the same name, as for the pairs of ``impact``), composed from it."""
    view = place.view()
    out = []
    for name, template in sorted(stored.org.visible(view).items()):
        row = stored.rows.get((template.scope, name))
        if row is None:  # pragma: no cover - every template of a stored org has its row
            continue
        outcome = compose_template(stored, template, view)
        description = template.doc.meta.description
        if isinstance(outcome, list):
            first = outcome[0].one_line() if outcome else None
            out.append(
                TemplateState(
                    row.id, name, str(template.scope), description, "fails to compose", False, 0, 0, first
                )
            )
            continue
        issues = outcome.runnable.issues
        first_issue = issues[0] if issues else None
        text = None
        if first_issue is not None:
            text = f"{first_issue.replica} {format_path(first_issue.field)}: {first_issue.message}"
        out.append(
            TemplateState(
                row.id,
                name,
                str(template.scope),
                description,
                "runnable" if outcome.runnable.is_runnable else "not runnable",
                outcome.runnable.is_runnable,
                len(issues),
                sum(issue.rule is not None for issue in issues),
                text,
            )
        )
    return out


# -- the effective policy of a scope -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RuleRow:
    replica: str
    field: str
    rule: str
    scope: str
    place: str


@dataclass(frozen=True, slots=True)
class ImposedRow:
    replica: str
    name: str
    scope: str
    place: str


@dataclass(frozen=True, slots=True)
class PolicyView:
    """The effective policy of a scope: every rule of its branch with the scope and document that wrote it,
    the imposed data sources, and the merged defaults of its scopes (worker and master)."""

    rules: tuple[RuleRow, ...]
    imposed: tuple[ImposedRow, ...]
    worker_defaults: str
    master_defaults: str
    problems: tuple[str, ...]


def _scope_text(scope: Scope) -> str:
    return "system" if scope.name is None else str(scope)


def policy_view(stored: StoredOrg, place: Placement) -> PolicyView:
    org = stored.org
    view = place.view()
    name = place_name(stored.labels)
    chain = [org.policies[scope] for scope in view.chain() if scope in org.policies]
    policy = effective(chain)
    rules = tuple(
        RuleRow(
            r.replica,
            r.field_text,
            json.dumps(dict(r.written), sort_keys=True, ensure_ascii=False, default=str),
            _scope_text(r.scope),
            name(r.location),
        )
        for r in policy.rules
    )
    imposed = tuple(
        ImposedRow(i.replica, i.name, _scope_text(i.scope), name(i.location)) for i in policy.imposed
    )
    problems: list[str] = []
    try:
        worker = merge_layers(SPEC_PLAN, default_layers(org, view, False)).spec
        master = merge_layers(SPEC_PLAN, default_layers(org, view, True)).spec
    except TemplateEngineError as exc:
        worker, master = {}, {}
        problems = [p.one_line() for p in exc.problems]
    broken_files = [f"db:defaults/{key}" for key in place.chain_keys()]
    for file in broken_files:
        problems += [f"{stored.labels.get(file, file)}: {p.one_line()}" for p in org.broken.get(file, ())]
    return PolicyView(
        rules,
        imposed,
        dump_yaml(worker) if worker else "",
        dump_yaml(master) if master else "",
        tuple(problems),
    )


# -- a pending change ----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AffectedView:
    """A template a pending change would affect, seen from one scope, with its field-level diff."""

    template_id: str | None
    name: str
    scope: str
    seen_from: str
    view_key: str
    pair: str
    before: str | None
    after: str | None
    diff: DiffView
    #: Changes not listed (past :data:`~template_engine.service.impact.MAX_CHANGES_SHOWN` in one preview).
    omitted: int = 0


def _view_key(ids: Mapping[str, Any]) -> str:
    """The UI's scope key of a view as ``affectedTemplates`` gives it (``project:3``)."""
    if ids.get("scopeType") == "project":
        return f"project:{ids.get('projectId')}"
    if ids.get("scopeType") == "department":
        return f"department:{ids.get('departmentId')}"
    return "system"


def affected_views(
    found: list[Affected], bodies: list[dict[str, Any]], labels: Mapping[str, str]
) -> list[AffectedView]:
    """The preview's list: each affected template and its changes, the documents named by version;
    ``bodies`` are the same templates as ``affectedTemplates`` gives them (their ids)."""
    out = []
    for item, body, shown in zip(found, bodies, shown_changes(found), strict=True):
        listed = item.diff.changes[:shown]
        diff = replace(item.diff, changes=tuple(named_change(c, labels) for c in listed))
        template = item.diff.pair.template
        out.append(
            AffectedView(
                body.get("id"),
                template.name,
                str(template.scope),
                seen_from(item.view),
                _view_key(body.get("view") or {}),
                item.diff.id,
                body.get("before"),
                body.get("after"),
                diff_view(diff, "the stored version"),
                len(item.diff.changes) - shown,
            )
        )
    return out
