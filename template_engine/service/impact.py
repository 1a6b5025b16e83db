"""What a pending change to a scope's defaults or policy does: every template whose effective spec or
compliance would change, field by field.

This is ``template-engine impact`` on the database: :func:`stored_org` reads every stored document into one
engine :class:`~template_engine.org.Org` (the ``db:`` file names of :mod:`.composer`, and the export's file
names for policies), and :func:`affected` compares the org before a write with the org after it, in the same
transaction, with :func:`~template_engine.diff.diff_orgs` (the engine of the CLI's ``impact`` and ``diff``).
A ``validateOnly`` write and the UI's preview then roll the transaction back, so nothing is stored.

A stored document has no file and no lines: :func:`place_name` names it by what it is and its version
(``defaults of department research, version 4``), where the CLI names ``file:line``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from template_engine.diff import PairDiff, diff_orgs
from template_engine.errors import Location
from template_engine.kinds import DISTRIBUTED, kind_named
from template_engine.org import Org, Scope, View
from template_engine.pricing import TEXT_UNIT_SHIFT, data_bytes
from template_engine.service.budget import REQUEST_BUDGET, REQUEST_BYTES, admit_diff, over_budget
from template_engine.service.context import Ctx
from template_engine.service.policy_store import OrgUnits, policy_file
from template_engine.service.schemas import TENANT_ID, DefaultsDocument, PolicyOut
from template_engine.service.storage.repository import TemplateRow
from template_engine.service.stored import CLUSTER_SOURCE, asset_scope, org_of_rows

__all__ = [
    "Affected",
    "AffectedTemplateOut",
    "DefaultsWriteOut",
    "PolicyWriteOut",
    "StoredOrg",
    "affected",
    "affected_body",
    "place_name",
    "stored_org",
]


@dataclass(frozen=True, slots=True)
class StoredOrg:
    """The whole stored org as the engine reads it, the template rows behind its templates, the scopes'
    ids, and the name of each stored document (by its ``file``) for provenance."""

    org: Org
    rows: Mapping[tuple[Scope, str], TemplateRow]
    units: OrgUnits
    labels: Mapping[str, str]

    def ids(self, view: View) -> dict[str, Any]:
        """A view as Run:ai names scopes: ``scopeType`` and the ids of its department and project."""
        out: dict[str, Any] = {"scopeType": "system"}
        if view.department is not None:
            department, _ = self.units.ids.get(Scope("department", view.department), (None, None))
            out = {"scopeType": "department", "departmentId": str(department)}
        if view.project is not None:
            _, project = self.units.ids.get(Scope("project", view.project), (None, None))
            out = {**out, "scopeType": "project", "projectId": project}
        return out


def _scope_words(scope: Scope) -> str:
    return "the system" if scope.name is None else str(scope)


def admit_reading(ctx: Ctx) -> None:
    """Refuse (``413``) a ``validateOnly`` whose two reads of the stored org (before and after the change)
    would cost more than a request's budget in their bytes alone (:data:`~template_engine.pricing.
    TEXT_UNIT_SHIFT`), priced from the stored sizes before any document is read."""
    chars = ctx.repo.stored_chars()
    price = 2 * (chars >> TEXT_UNIT_SHIFT)
    if price > REQUEST_BUDGET:
        raise over_budget(f"reading the {chars:,} characters of stored documents before and after", price)


def stored_org(ctx: Ctx) -> StoredOrg:
    """Every department, project, defaults document, policy, asset and template of the database as one
    ``Org``, made by the one builder of stored rows (:func:`..stored.org_of_rows`, as a composition's): a
    stored document the engine no longer accepts is broken, as a broken file of a folder is."""
    repo = ctx.repo
    units = OrgUnits.read(repo)
    labels: dict[str, str] = {}

    def placed(rows: Iterable[Any]) -> list[tuple[Scope, Any]]:
        # The foreign keys delete a scope's rows with it: a row always has its scope.
        return [(units.scopes[row.scope_key], row) for row in rows if row.scope_key in units.scopes]

    defaults = placed(repo.all_defaults())
    for scope, row in defaults:
        labels[f"db:defaults/{row.scope_key}"] = (
            f"defaults of {_scope_words(scope)}, version {row.audit.version}"
        )
    policies = placed(repo.every_policy())
    for scope, row in policies:
        kind = kind_named(row.kind)
        what = "policy" if kind is DISTRIBUTED else f"{kind.name} policy"
        labels[policy_file(scope, kind)] = f"{what} of {_scope_words(scope)}, version {row.audit.version}"
    assets = [(asset_scope(row, units.name_of), row) for row in repo.assets()]
    for _, asset_row in assets:
        labels[f"db:assets/{asset_row.id}"] = (
            f"{asset_row.kind} asset {asset_row.name}, version {asset_row.audit.version}"
        )
    templates = placed(repo.templates())
    rows: dict[tuple[Scope, str], TemplateRow] = {}
    for scope, template_row in templates:
        labels[f"db:templates/{template_row.id}"] = (
            f"template {template_row.name}, version {template_row.audit.version}"
        )
        rows[(scope, template_row.name)] = template_row
    cluster = repo.cluster_settings()
    if cluster is not None:
        labels[CLUSTER_SOURCE] = f"cluster settings, version {cluster.audit.version}"
    org = org_of_rows(units.tree, defaults, policies, assets, templates, (), cluster, units.clusters.values())
    kept = {(tpl.scope, tpl.name) for by_name in org.templates.values() for tpl in by_name.values()}
    return StoredOrg(org, {k: v for k, v in rows.items() if k in kept}, units, labels)


def place_name(labels: Mapping[str, str]) -> Any:
    """The :data:`~template_engine.views.model.PlaceName` of a stored org: the document and its version,
    and the line for a policy (its rules are located in the YAML an export writes for it)."""

    def name(location: Location) -> str:
        text = labels.get(location.file, location.file)
        return f"{text}, line {location.line}" if location.line is not None else text

    return name


@dataclass(frozen=True, slots=True)
class Affected:
    """A template whose effective output would change, seen from one view, and the row it is stored in."""

    diff: PairDiff
    row: TemplateRow | None

    @property
    def view(self) -> View:
        return self.diff.pair.view


def affected(before: StoredOrg, after: StoredOrg) -> list[Affected]:
    """Every (view, template) pair whose effective spec or compliance differs between two versions of the
    stored org, in the engine's pair order (what ``template-engine impact`` lists for the same change).

    Priced first: a ``413`` when the compositions it needs would cost more than a request's budget
    (:mod:`.budget`), before any is made."""
    result = diff_orgs(before.org, after.org, admit=admit_diff(before.org, after.org))
    out = []
    for found in result.pairs:
        key = (found.pair.template.scope, found.pair.template.name)
        out.append(Affected(found, after.rows.get(key) or before.rows.get(key)))
    return out


def _status(diff: PairDiff, side: str) -> str | None:
    outcome = diff.old if side == "old" else diff.new
    return outcome.status() if outcome is not None else None


#: The most field changes one answer lists, over all its templates (a 1 MiB document can change 20,000
#: fields of every template of a scope: the answer lists the templates, and the first changes of each).
MAX_CHANGES_SHOWN = 2_000


def shown_changes(found: list[Affected]) -> list[int]:
    """How many of each template's changes an answer lists: all of them until :data:`MAX_CHANGES_SHOWN`
    have been listed, or until the next one would pass the bytes of an answer (:data:`~.budget.REQUEST_BYTES`,
    each change priced by :func:`~template_engine.pricing.data_bytes` before the answer is written), then
    none (``changesOmitted`` counts the rest)."""
    left, room = MAX_CHANGES_SHOWN, REQUEST_BYTES
    out = []
    for item in found:
        shown = 0
        for change in item.diff.changes[:left]:
            size = data_bytes(change.to_dict())  # its values by reference: measured, not copied
            if size > room:
                left = 0  # nothing more fits: the next changes are counted, not shown
                break
            room -= size
            shown += 1
        out.append(shown)
        left -= shown if left else 0
    return out


def affected_body(found: list[Affected], stored: StoredOrg) -> list[dict[str, Any]]:
    """``affectedTemplates`` of a ``validateOnly`` answer (:class:`AffectedTemplateOut`)."""
    out = []
    for item, shown in zip(found, shown_changes(found), strict=True):
        template = item.diff.pair.template
        scope_ids = stored.units.ids.get(template.scope, (None, None))
        scope_id: Any = scope_ids[1] if template.scope.type == "project" else scope_ids[0]
        if template.scope.type == "cluster":  # Run:ai names a cluster by its UUID
            scope_id = stored.units.clusters[str(template.scope.name)][0].uuid
        entry: dict[str, Any] = {
            "id": item.row.id if item.row is not None else None,
            "name": template.name,
            "scopeType": template.scope.type,
            "scopeId": str(scope_id) if scope_id is not None else str(TENANT_ID),
            "pair": item.diff.id,
            "view": stored.ids(item.view),
            "status": item.diff.status,
            "before": _status(item.diff, "old"),
            "after": _status(item.diff, "new"),
            "changes": [change.to_dict() for change in item.diff.changes[:shown]],
            "changesOmitted": len(item.diff.changes) - shown,
        }
        out.append(entry)
    return out


# -- the documented shapes of the addition ------------------------------------------------------------------


class AffectedTemplateOut(BaseModel):
    """A template whose effective spec or compliance a write would change, seen from one scope."""

    id: str | None
    name: str
    scopeType: str
    scopeId: str
    pair: str
    view: dict[str, Any]
    status: str
    before: str | None
    after: str | None
    changes: list[dict[str, Any]]
    changesOmitted: int = 0


class DefaultsWriteOut(DefaultsDocument):
    """The defaults a write stores; with ``validateOnly=true``, nothing is stored and ``affectedTemplates``
    lists every template whose effective spec or compliance the write would change."""

    affectedTemplates: list[AffectedTemplateOut] | None = None


class PolicyWriteOut(PolicyOut):
    """Run:ai's ``DistributedPolicyV2``; with ``validateOnly=true``, also ``affectedTemplates``."""

    affectedTemplates: list[AffectedTemplateOut] | None = None


class DryRun(Exception):
    """Ends a ``validateOnly`` write: raised inside its transaction, which then rolls back (releasing the
    write lock); ``answer`` is called after that, so composing every affected template from the two stored
    orgs read inside the transaction never holds the database's write lock."""

    def __init__(self, answer: Callable[[], Any]) -> None:
        super().__init__("validateOnly")
        self.answer = answer
