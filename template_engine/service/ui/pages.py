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
from template_engine.diffing.fields import FieldChange, Side
from template_engine.diffing.pairs import Pair
from template_engine.errors import Location, Problem, TemplateEngineError
from template_engine.kinds import DISTRIBUTED, WorkloadKind
from template_engine.layers import default_layers, effective_policy
from template_engine.merge.engine import merge_layers
from template_engine.merge.plan import SPEC_PLAN
from template_engine.org import Scope, Template, View
from template_engine.policy.document import FieldRules
from template_engine.policy.effective import effective
from template_engine.policy.wording import rule_phrases
from template_engine.pricing import Pricer
from template_engine.service.budget import REQUEST_BUDGET
from template_engine.service.context import Ctx, Placement
from template_engine.service.errors import ApiError
from template_engine.service.ids import parse_id
from template_engine.service.impact import (
    Affected,
    StoredOrg,
    place_name,
    shown_changes,
)
from template_engine.service.yamltext import dump_yaml
from template_engine.views.model import DiffRow, DiffView, PageView, diff_view, seen_from

__all__ = [
    "AffectedView",
    "Counts",
    "Edited",
    "PolicyView",
    "RoleDefaults",
    "ScopeNode",
    "TemplateState",
    "affected_views",
    "compose_template",
    "kind_page",
    "org_tree",
    "placement_of",
    "policy_view",
    "rule_text",
    "scope_label",
    "scope_templates",
    "template_preview",
    "why",
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
class Counts:
    """How the templates seen from a scope fare (:func:`scope_templates`): runnable, not runnable (a
    template that fails to compose included) and non-compliant (at least one policy issue)."""

    runnable: int = 0
    not_runnable: int = 0
    non_compliant: int = 0

    @property
    def total(self) -> int:
        return self.runnable + self.not_runnable

    @classmethod
    def of(cls, rows: list[TemplateState]) -> Counts:
        runnable = sum(row.runnable for row in rows)
        return cls(runnable, len(rows) - runnable, sum(row.compliance_issues > 0 for row in rows))


@dataclass(frozen=True, slots=True)
class ScopeNode:
    """A scope of the tree, with what the caller may do there and how its templates fare."""

    key: str
    type: str
    name: str
    description: str | None
    writable: bool
    children: tuple[ScopeNode, ...] = ()
    #: ``None`` when the tree's counts are over the page's budget (:func:`org_tree`).
    counts: Counts | None = Counts()

    @property
    def href_key(self) -> str:
        return quote(self.key, safe=":")


#: The work the tree's counts may cost: one request's budget (:data:`..budget.REQUEST_BUDGET`), as a list
#: that must compose everything it shows.  Beyond it the tree is shown without counts, and says why.
TREE_BUDGET = REQUEST_BUDGET


@dataclass(frozen=True, slots=True)
class Tree:
    """The org tree, and why its counts are left out when they are."""

    root: ScopeNode
    withheld: str | None = None


def _tree_price(stored: StoredOrg, places: list[Placement]) -> int:
    """The units of composing every template visible from each of ``places`` (:mod:`template_engine.pricing`),
    priced before any composes."""
    pricer = Pricer()
    total = 0
    for place in places:
        view = place.view()
        for template in stored.org.visible(view).values():
            total += pricer.composition(stored.org, Pair(place.key, view, template))
    return total


def org_tree(ctx: Ctx, stored: StoredOrg | None = None, budget: int | None = None) -> Tree:
    """The system, its departments and their projects: those the caller may read, each with the
    :class:`Counts` of the templates seen from it when ``stored`` is given (the scope page's rows).  The
    counts compose every visible template of every scope shown: their price is held to ``budget`` before
    any composes (:data:`TREE_BUDGET` when not given), and beyond it the tree comes without counts
    (``withheld`` says why)."""
    budget = TREE_BUDGET if budget is None else budget
    access = ctx.access
    projects = ctx.repo.projects()
    shown: list[tuple[Placement, list[Placement]]] = []
    for department in ctx.repo.departments():
        place = Placement("department", department)
        if access.can_read(place.ref):
            children = [
                Placement("project", department, p) for p in projects if p.department_id == department.id
            ]
            shown.append((place, [child for child in children if access.can_read(child.ref)]))
    system = Placement("system")
    places = [system, *(place for place, children in shown for place in (place, *children))]
    withheld = None
    if stored is not None:
        price = _tree_price(stored, places)
        if price > budget:
            withheld = (
                f"the counts would compose every template of {len(places)} scopes, up to {price:,} units of "
                f"work, over a page's {budget:,}: open a scope to see its templates"
            )

    def counts(place: Placement) -> Counts | None:
        if stored is None:
            return Counts()
        return None if withheld is not None else Counts.of(scope_templates(stored, place))

    def node(place: Placement, children: tuple[ScopeNode, ...] = ()) -> ScopeNode:
        unit = place.project or place.department
        name = unit.name if unit is not None else "system"
        description = unit.description if unit is not None else None
        return ScopeNode(
            place.key, place.type, name, description, access.can_write(place.ref), children, counts(place)
        )

    departments = tuple(node(place, tuple(node(child) for child in children)) for place, children in shown)
    return Tree(node(system, departments), withheld)


# -- a scope's templates--------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TemplateState:
    """One template as seen from a scope: its workload kind (Run:ai's ``workloadType``: ``Distributed``,
    ``Training``...), whether it composes, is runnable, complies with the policies."""

    id: str
    name: str
    scope: str
    workload_type: str
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


def kind_page(page: PageView, kind: WorkloadKind) -> PageView:
    """The explain page of a template of ``kind`` with the sections of its roles only: a kind of one role
    (training, workspace, inference) has no master section."""
    return replace(page, replicas=tuple(r for r in page.replicas if r.replica in kind.roles))


def bounded_scope_templates(
    stored: StoredOrg, place: Placement, budget: int | None = None
) -> tuple[list[TemplateState], int]:
    """The scope page's rows: :func:`scope_templates` for the templates (in name order) whose compositions
    fit ``budget`` (:data:`TREE_BUDGET` when not given; at least one), priced before any composes, and how
    many are left out."""
    budget = TREE_BUDGET if budget is None else budget
    view = place.view()
    pricer = Pricer()
    names: list[str] = []
    spent = 0
    visible = sorted(stored.org.visible(view).items())
    for name, template in visible:
        spent += pricer.composition(stored.org, Pair(place.key, view, template))
        if spent > budget and names:
            break
        names.append(name)
    return scope_templates(stored, place, frozenset(names)), len(visible) - len(names)


def scope_templates(
    stored: StoredOrg, place: Placement, only: frozenset[str] | None = None
) -> list[TemplateState]:
    """Every template visible from the scope (its own and those of the scopes above it; a nearer scope's
    template shadows a farther one of the same name, as for the pairs of ``impact``), composed from it;
    with ``only``, those of these names."""
    view = place.view()
    out = []
    for name, template in sorted(stored.org.visible(view).items()):
        if only is not None and name not in only:
            continue
        row = stored.rows.get((template.scope, name))
        if row is None:  # pragma: no cover - every template of a stored org has its row
            continue
        outcome = compose_template(stored, template, view)
        description = template.doc.meta.description
        if isinstance(outcome, list):
            first = outcome[0].one_line() if outcome else None
            out.append(
                TemplateState(
                    row.id,
                    name,
                    str(template.scope),
                    template.kind.workload_type,
                    description,
                    "fails to compose",
                    False,
                    0,
                    0,
                    first,
                )
            )
            continue
        issues = outcome.runnable.issues
        first_issue = issues[0] if issues else None
        text = None
        if first_issue is not None:
            text = first_issue.one_line()
        out.append(
            TemplateState(
                row.id,
                name,
                str(template.scope),
                template.kind.workload_type,
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
    """One rule object of the effective policy: its field, what it says (:func:`rule_text`, and the JSON it
    was written as), and its source: the scope and the stored document (and line) that wrote it."""

    replica: str
    field: str
    rule: tuple[str, ...]
    written: str
    scope: str
    place: str


def rule_text(rules: FieldRules) -> tuple[str, ...]:
    """What a rule object says (:func:`~template_engine.policy.wording.rule_phrases`, as ``explain`` says
    it), or ``no constraint``."""
    return rule_phrases(rules) or ("no constraint",)


@dataclass(frozen=True, slots=True)
class ImposedRow:
    replica: str
    name: str
    scope: str
    place: str


@dataclass(frozen=True, slots=True)
class RoleDefaults:
    """The merged defaults of one role of a kind, as YAML (empty: none), and the heading they are shown
    under (``Worker (spec)``, ``Master (master.spec)``, ``Leader``)."""

    role: str
    heading: str
    text: str


@dataclass(frozen=True, slots=True)
class PolicyView:
    """The effective policy of ``kind`` of a scope: every rule of its branch with the scope and document that
    wrote it, the imposed data sources, and per role of the kind the merged defaults of its scopes (each
    scope's shared defaults, and for a kind but distributed its policy's own value defaults)."""

    kind: WorkloadKind
    rules: tuple[RuleRow, ...]
    imposed: tuple[ImposedRow, ...]
    defaults: tuple[RoleDefaults, ...]
    problems: tuple[str, ...]

    @property
    def own_defaults(self) -> bool:
        """Whether the kind's policies give value defaults of their own (every kind's but a distributed
        training's, whose value defaults are the scopes' defaults documents)."""
        return self.kind is not DISTRIBUTED


def _scope_text(scope: Scope) -> str:
    return "system" if scope.name is None else str(scope)


def _heading(kind: WorkloadKind, index: int, role: str) -> str:
    """A distributed training's defaults are a template's ``spec`` and ``master.spec``; another kind's are
    named by their role."""
    if kind is DISTRIBUTED:
        return f"{role.capitalize()} ({'spec' if index == 0 else 'master.spec'})"
    return role.capitalize()


def policy_view(stored: StoredOrg, place: Placement, kind: WorkloadKind = DISTRIBUTED) -> PolicyView:
    """The effective policy of ``kind`` of ``place`` (:func:`~template_engine.layers.effective_policy`, the
    one a composition of the kind gets); a stored document of the branch that no longer reads is listed
    in ``problems``, and the policy shown is that of the others."""
    org = stored.org
    view = place.view()
    name = place_name(stored.labels)
    problems: list[str] = []
    try:
        policy = effective_policy(org, view, kind)
    except TemplateEngineError as exc:
        problems += [p.one_line() for p in exc.problems]
        chain = [found for scope in view.chain() if (found := org.policy_of(scope, kind)) is not None]
        policy = effective(chain, kind=kind)
    rules = tuple(
        RuleRow(
            r.replica,
            r.field_text,
            rule_text(r),
            json.dumps(dict(r.written), sort_keys=True, ensure_ascii=False, default=str),
            _scope_text(r.scope),
            name(r.location),
        )
        for r in policy.rules
    )
    imposed = tuple(
        ImposedRow(i.replica, i.name, _scope_text(i.scope), name(i.location)) for i in policy.imposed
    )
    specs: list[dict[str, Any]] = []
    try:
        for index, role in enumerate(kind.roles):
            plan = SPEC_PLAN if kind is DISTRIBUTED else kind.plan(role)
            specs.append(merge_layers(plan, default_layers(org, view, index > 0, kind)).spec)
    except TemplateEngineError as exc:
        specs = []
        problems += [p.one_line() for p in exc.problems if p.one_line() not in problems]
    broken_files = [f"db:defaults/{key}" for key in place.chain_keys()]
    for file in broken_files:
        problems += [f"{stored.labels.get(file, file)}: {p.one_line()}" for p in org.broken.get(file, ())]
    defaults = tuple(
        RoleDefaults(role, _heading(kind, index, role), dump_yaml(spec) if spec else "")
        for index, (role, spec) in enumerate(zip(kind.roles, specs or [{}] * len(kind.roles), strict=True))
    )
    return PolicyView(kind, rules, imposed, defaults, tuple(problems))


# -- a pending change ----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Edited:
    """The document a preview is of: its file in the stored org (``db:defaults/KEY``, the policy's file) and
    the version the form was read at, which the preview is against.  The sentences name the posted text
    ``your edit`` (the stored org's label would give the version a save would make) and the version it
    replaces by that version."""

    file: str
    document: str
    scope: str
    version: int

    @property
    def before(self) -> str:
        return f"the {self.document} of {self.scope}, version {self.version}"


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
    #: The rows of ``diff``, each with why the field changes (:func:`why`) as its text.
    rows: tuple[DiffRow, ...]
    #: Changes not listed (past :data:`~template_engine.service.impact.MAX_CHANGES_SHOWN` in one preview).
    omitted: int = 0


def _view_key(ids: Mapping[str, Any]) -> str:
    """The UI's scope key of a view as ``affectedTemplates`` gives it (``project:3``)."""
    if ids.get("scopeType") == "project":
        return f"project:{ids.get('projectId')}"
    if ids.get("scopeType") == "department":
        return f"department:{ids.get('departmentId')}"
    return "system"


def _named(location: Location | None, labels: Mapping[str, str], edited: Edited | None, side: Side) -> str:
    """A layer of a change as the preview names it: ``your edit`` for the posted document on the new side,
    the version it was read at on the old side, any other stored document by its label and version."""
    if location is None:
        return ""
    if edited is not None and location.file == edited.file:
        return "your edit" if side == "new" else edited.before
    named: str = place_name(labels)(location)
    return named


def why(change: FieldChange, labels: Mapping[str, str], edited: Edited | None = None) -> str:
    """Why a field changes, in a few words (the field and both values are columns of their own): the layer
    that now sets it, that excluded it, or that no longer sets it; ``order changed`` for a reordered list;
    and whether the master changes the same way (``combinedMasterSpec`` the same as the worker's); empty
    when no layer names the value."""
    if change.kind == "reordered":
        text = "order changed"
    else:
        text = change.cause(lambda location, side: _named(location, labels, edited, side))
        if not text and change.kind == "removed":
            text = "no longer set"
    if change.also_master:
        return f"{text}; the master too" if text else "the master too"
    return text


def affected_views(
    found: list[Affected],
    bodies: list[dict[str, Any]],
    labels: Mapping[str, str],
    edited: Edited | None = None,
) -> list[AffectedView]:
    """The preview's list: each affected template and its changes, the documents named by version (the
    posted one as :class:`Edited` says); ``bodies`` are the same templates as ``affectedTemplates`` gives
    them (their ids)."""
    out = []
    for item, body, shown in zip(found, bodies, shown_changes(found), strict=True):
        listed = item.diff.changes[:shown]
        diff = replace(item.diff, changes=tuple(listed))
        view = diff_view(diff, "the stored version")
        rows = tuple(
            replace(row, text=why(change, labels, edited))
            for row, change in zip(view.rows, listed, strict=True)
        )
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
                view,
                rows,
                len(item.diff.changes) - shown,
            )
        )
    return out


# -- a template's pending change -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TemplatePreview:
    """A template as the form's text would make it, composed as seen from its scope and stored nowhere
    (the API's ``POST /api/v1/workload-templates/{segment}/preview``): whether it is runnable, why not, and
    each combined spec of its kind (``combinedSpec``; a distributed training's ``combinedMasterSpec``) as
    YAML."""

    runnable: bool
    issues: tuple[str, ...]
    specs: tuple[tuple[str, str], ...]

    @property
    def status(self) -> str:
        return "runnable" if self.runnable else "not runnable"


def _issue_text(issue: Mapping[str, Any]) -> str:
    field = issue.get("field") or ""
    where = f"{issue.get('replica')} {field}".strip()
    return f"{where}: {issue.get('message')}"


def template_preview(body: Mapping[str, Any]) -> TemplatePreview:
    """The preview of the API's answer ``body`` (Run:ai's template of its kind)."""
    runnable = body.get("runnable") or {}
    return TemplatePreview(
        bool(runnable.get("isRunnable")),
        tuple(_issue_text(issue) for issue in runnable.get("issues") or ()),
        tuple(
            (name, dump_yaml(value) if value else "{}\n")
            for name, value in body.items()
            if name.startswith("combined") and value is not None
        ),
    )
