"""From database rows to the engine's :class:`~template_engine.org.Org`, and compositions to response bodies.

A composition only needs the layers of one view: the defaults and policies of its scopes, the template, the
assets the template names and the data sources the policies impose. :func:`org_for` reads just those rows into
an ``Org`` (``Source(file="db:<table>/<key>", data=<the stored document>)``), so a request costs a handful of
indexed reads whatever the size of the database. Validated documents are cached by row identity and version.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any, TypeVar

from pydantic import BaseModel

from template_engine.compose import Composition, compose
from template_engine.errors import Problem, TemplateEngineError
from template_engine.kinds import WorkloadKind, kind_named
from template_engine.layers import Submission
from template_engine.models.documents import asset_refs
from template_engine.org import Asset, Org, Template, out_of_scope, policy_user, template_user
from template_engine.paths import Path, format_path
from template_engine.policy.document import ImposedAsset
from template_engine.pricing import Pricer
from template_engine.service.budget import rows_price
from template_engine.service.cache import (
    CURRENT_READING,
    MODEL_BYTES_PER_JSON_BYTE,
    STATS,
    json_size,
)
from template_engine.service.context import Ctx, Placement
from template_engine.service.metrics import composing
from template_engine.service.placements import public_id
from template_engine.service.policy_store import stored_policy
from template_engine.service.schemas import TENANT_ID
from template_engine.service.storage.repository import UNIT_TABLES, AssetRow, Audit, TemplateRow
from template_engine.service.stored import UnitName, asset_scope, org_of_rows, stored_asset, stored_template

M = TypeVar("M", bound=BaseModel)


def template_of(row: TemplateRow, own: Placement) -> tuple[Template | None, list[Problem]]:
    return stored_template(row, own.scope())


def unit_name(ctx: Ctx) -> UnitName:
    """The name of a department or project by its id, read through the request's context (cached there)."""

    def name_of(kind: str, unit_id: int) -> str:
        return str(ctx.unit(UNIT_TABLES[kind], unit_id).name)

    return name_of


def asset_scope_problems(
    ctx: Ctx, name: str, own: Placement, used: Iterable[tuple[AssetRow, Path]]
) -> list[Problem]:
    """The problems of a template ``name`` of scope ``own`` that uses stored assets (each with the field
    naming it) outside their scope: the core's :func:`~template_engine.org.out_of_scope`, as a folder's
    ``validate`` and ``db import`` answer (a stored asset the engine no longer reads is left to the
    composition, which names its problems)."""
    chain = own.view().chain()
    user = template_user(name, own.scope())
    problems = []
    for row, path in used:
        asset = stored_asset(row, asset_scope(row, unit_name(ctx)))
        problem = out_of_scope(asset, user, chain, path, None) if isinstance(asset, Asset) else None
        if problem is not None:
            problems.append(problem)
    return problems


def imposed_scope_problems(
    ctx: Ctx, own: Placement, imposed: Iterable[ImposedAsset], root: Path
) -> list[Problem]:
    """The problems of the policy of ``own`` that imposes stored data sources outside their scope (on the
    field ``root`` + ``imposedAssets.<replica>``): the core's :func:`~template_engine.org.out_of_scope`, as
    a folder's ``policy.yaml`` gets."""
    wanted = list(imposed)
    found = ctx.repo.assets_named(("datasource", i.name) for i in wanted)
    chain = own.view().chain()
    problems = []
    for item in wanted:
        row = found.get(("datasource", item.name))
        asset = stored_asset(row, asset_scope(row, unit_name(ctx))) if row is not None else None
        path = (*root, "imposedAssets", item.replica)
        problem = (
            out_of_scope(asset, policy_user(own.scope()), chain, path, None)
            if isinstance(asset, Asset)
            else None
        )
        if problem is not None:
            problems.append(problem)
    return problems


def org_for(ctx: Ctx, view: Placement, template: Template | None) -> Org:
    """The part of the org a composition of ``template`` seen from ``view`` draws on: the defaults and the
    policies of the view's scopes, the assets the template names and the data sources the policies impose,
    made into an ``Org`` by the one builder of stored rows (:func:`..stored.org_of_rows`)."""
    chain = dict(zip(view.chain_keys(), view.view().chain(), strict=True))
    defaults = [(chain[key], row) for key, row in ctx.repo.defaults(list(chain)).items()]
    policy_rows = [(chain[row.scope_key], row) for row in ctx.repo.every_policy(list(chain))]
    policies = [stored_policy(row, scope) for scope, row in policy_rows]
    wanted = [(kind, name) for kind, name, _ in asset_refs(template.doc)] if template is not None else []
    wanted += [("datasource", i.name) for p in policies if not isinstance(p, list) for i in p.imposed]
    assets = [(asset_scope(row, unit_name(ctx)), row) for row in ctx.repo.assets_named(wanted).values()]
    departments: dict[str, tuple[str, ...]] = {}
    if view.department is not None:
        departments[view.department.name] = (view.project.name,) if view.project is not None else ()
    clusters = [(view.cluster, tuple(departments))] if view.cluster is not None else []
    more = (template,) if template is not None else ()
    settings = ctx.repo.cluster_settings()
    return org_of_rows(departments, defaults, policy_rows, assets, (), more, settings, clusters)


def compose_row(ctx: Ctx, row: TemplateRow, own: Placement, view: Placement) -> Composition | list[Problem]:
    """The template of ``row`` composed as seen from ``view``, or the problems that stop it."""
    template, problems = template_of(row, own)
    if template is None:
        return problems
    STATS.add("compositions")
    org = org_for(ctx, view, template)
    with composing(lambda: composition_units(org)):
        try:
            return compose(org, template, view.view())
        except TemplateEngineError as exc:
            return list(exc.problems)


def composition_units(org: Org) -> int:
    """The price of a composition of stored rows (:func:`.budget.rows_price`): the documents it read, the
    template, the defaults and the policies of its scopes (``org`` is :func:`org_for`'s)."""
    documents: list[Any] = [found.source.data for found in org.defaults.values()]
    documents += [t.source.data for by_name in org.templates.values() for t in by_name.values()]
    documents += [p.data for p in org.policies.values()]
    return rows_price(Pricer(), documents)


Composed = tuple[Composition | list[Problem], dict[str, Any]]


def composed(ctx: Ctx, row: TemplateRow, own: Placement, view: Placement) -> Composed:
    """The composition of a stored template seen from ``view`` and its response body, shared by every request
    of this process that read the same org revision (a list, its other pages and filters, single reads).

    Outside such a request (no revision read first) it is composed afresh.  The body is shared: callers copy
    it before adding to it.
    """

    def build() -> Composed:
        outcome = compose_row(ctx, row, own, view)
        return outcome, template_body(row, own, view, outcome)

    reading = CURRENT_READING.get()
    if reading is None:
        return build()
    key = (reading.revision, row.id, row.audit.version, own.key, view.key)
    found: Composed = reading.compositions.get(key, build, _composed_size)
    return found


def _composed_size(found: Composed) -> int:
    return MODEL_BYTES_PER_JSON_BYTE * json_size(found[1])


def compose_submission(
    ctx: Ctx,
    view: Placement,
    row: TemplateRow | None,
    own: Placement | None,
    submission: Submission,
    kind: WorkloadKind | None = None,
) -> Composition:
    """A workload of ``kind`` (none: the template's, else distributed): project defaults, the template (if
    any) and the submission; raises the engine's errors."""
    template = None
    if row is not None and own is not None:
        template, problems = template_of(row, own)
        if template is None:
            raise TemplateEngineError(problems)
    org = org_for(ctx, view, template)
    return compose(org, template, view.view(), submission=submission, kind=kind)


# -- response bodies ----------------------------------------------------------------------------------------


def timestamp(value: datetime) -> str:
    """``2022-01-01T03:49:52.531Z``, as Run:ai writes times."""
    return value.strftime("%Y-%m-%dT%H:%M:%S.") + f"{value.microsecond // 1000:03d}Z"


def audit_fields(audit: Audit) -> dict[str, Any]:
    return {
        "createdBy": audit.created_by,
        "createdAt": timestamp(audit.created_at),
        "updatedBy": audit.updated_by,
        "updatedAt": timestamp(audit.updated_at),
    }


def template_meta(row: TemplateRow, own: Placement, view: Placement) -> dict[str, Any]:
    """Run:ai's ``TemplateMetaFields``: every key its answers carry, ``null`` where there is no value (a
    system template seen from its own scope has no description, cluster, department or project)."""
    meta: dict[str, Any] = {"id": row.id, "name": row.name}
    meta["description"] = (row.document.get("meta") or {}).get("description")
    meta |= {"workloadType": kind_named(row.kind).workload_type, "scopeType": row.scope_type}
    meta["scopeId"] = scope_id(own)
    # the cluster UUID of the scope it is seen from (none in an org without clusters)
    meta["clusterId"] = view.cluster.uuid if view.cluster is not None else None
    meta["departmentId"] = str(view.department.id) if view.department is not None else None
    # an integer in Run:ai's TemplateMetaFields
    meta["projectId"] = view.project.id if view.project is not None else None
    return meta | audit_fields(row.audit)


def scope_id(own: Placement) -> str:
    """A scope's ``scopeId`` as Run:ai writes it: always text, the tenant's id for the top scope, a cluster's
    UUID, a department's or project's id."""
    row = own.own
    return public_id(own.type, row) if row is not None else str(TENANT_ID)


def template_body(
    row: TemplateRow, own: Placement, view: Placement, outcome: Composition | list[Problem]
) -> dict[str, Any]:
    """Run:ai's template of the row's kind: ``meta``, ``spec``, ``assets``, ``runnable``, ``combinedSpec``,
    and for a distributed one ``masterSpecSameAsWorker``, ``master`` and ``combinedMasterSpec``.

    A template that cannot be composed (a Jinja2 error, a stored document the engine no longer accepts)
    is answered all the same, not runnable, with the problems as its issues and no combined specs.
    """
    if isinstance(outcome, Composition):
        body = outcome.to_response()
        body["meta"] = template_meta(row, own, view)
        return body
    data = row.document
    issues = [{"replica": "worker", "field": _field(p.path), "message": p.message} for p in outcome] or [
        {"replica": "worker", "field": "", "message": "the template cannot be composed"}
    ]
    broken: dict[str, Any] = {
        "meta": template_meta(row, own, view),
        "spec": dict(data.get("spec") or {}),
        "assets": dict(data.get("assets") or {}),
    }
    if kind_named(row.kind).is_distributed:
        same = data.get("masterSpecSameAsWorker")
        broken["masterSpecSameAsWorker"] = same if isinstance(same, bool) else True
        broken["master"] = dict(data["master"]) if isinstance(data.get("master"), Mapping) else None
    broken["runnable"] = {
        "isRunnable": False,
        "issue": issues[0]["message"],
        "issues": issues,
        "warnings": [],
    }
    broken["combinedSpec"] = None
    if kind_named(row.kind).is_distributed:
        broken["combinedMasterSpec"] = None
    return broken


def _field(path: Iterable[Any]) -> str:
    return format_path(tuple(path))
