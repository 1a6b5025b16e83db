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

from pydantic import BaseModel, ValidationError

from template_engine.compose import Composition, compose
from template_engine.errors import Location, Problem, TemplateEngineError
from template_engine.layers import Submission
from template_engine.loader.rules import asset_refs
from template_engine.models.documents import (
    ASSET_MODELS,
    AssetKind,
    LayerDocument,
    TemplateDocument,
)
from template_engine.org import Asset, Defaults, Org, Scope, Source, Template, policy_ref
from template_engine.paths import format_path
from template_engine.policy.document import PolicyDocument
from template_engine.service.cache import (
    CACHE,
    CURRENT_READING,
    MODEL_BYTES_PER_JSON_BYTE,
    STATS,
    json_size,
)
from template_engine.service.context import Ctx, Placement
from template_engine.service.policy_store import policy_file, stored_policy
from template_engine.service.schemas import TENANT_ID
from template_engine.service.storage.repository import Audit, TemplateRow

M = TypeVar("M", bound=BaseModel)


def _model(model: type[M], kind: str, key: str, audit: Audit, data: Any) -> M | list[Problem]:
    """The validated document, or the problems that keep a stored document from being used."""

    def build() -> M | list[Problem]:
        try:
            return model.model_validate(data)
        except ValidationError as exc:
            return [
                Problem(f"the stored document is no longer valid: {e['msg']}", tuple(e["loc"]))
                for e in exc.errors(include_url=False)
            ]

    def size() -> int:
        return MODEL_BYTES_PER_JSON_BYTE * json_size(data)

    result: M | list[Problem] = CACHE.get((kind, key, audit.version, audit.updated_at), build, size)
    return result


def template_of(row: TemplateRow, own: Placement) -> tuple[Template | None, list[Problem]]:
    source = Source(f"db:templates/{row.id}", row.document, {})
    doc = _model(TemplateDocument, "template", row.id, row.audit, row.document)
    if isinstance(doc, list):
        return None, [Problem(p.message, p.path, Location(source.file)) for p in doc]
    return Template(row.name, own.scope(), source, doc), []


def org_for(ctx: Ctx, view: Placement, template: Template | None) -> Org:
    """The part of the org a composition of ``template`` seen from ``view`` draws on: the defaults and the
    policies of the view's scopes, the assets the template names and the data sources the policies impose."""
    broken: dict[str, tuple[Problem, ...]] = {}
    broken_refs: dict[tuple[str, ...], str] = {}
    defaults: dict[Scope, Defaults] = {}
    chain = dict(zip(view.chain_keys(), view.view().chain(), strict=True))
    for key, row in ctx.repo.defaults(list(chain)).items():
        source = Source(f"db:defaults/{key}", row.document, {})
        doc = _model(LayerDocument, "defaults", key, row.audit, row.document)
        if isinstance(doc, list):
            broken[source.file] = tuple(doc)
            doc = LayerDocument()
        defaults[chain[key]] = Defaults(chain[key], source, doc)
    policies: dict[Scope, PolicyDocument] = {}
    for key, policy_row in ctx.repo.policies(list(chain)).items():
        scope = chain[key]
        policy = stored_policy(policy_row, scope)
        if isinstance(policy, list):
            broken[policy_file(scope)] = tuple(policy)
            broken_refs[policy_ref(scope)] = policy_file(scope)
        else:
            policies[scope] = policy
    wanted = [(kind, name) for kind, name, _ in asset_refs(template.doc)] if template is not None else []
    wanted += [("datasource", i.name) for p in policies.values() for i in p.imposed]
    assets: dict[AssetKind, dict[str, Asset]] = {}
    for (kind, name), found in ctx.repo.assets_named(wanted).items():
        source = Source(f"db:assets/{found.id}", found.document, {})
        asset_kind: AssetKind = kind  # type: ignore[assignment]
        asset = _model(ASSET_MODELS[asset_kind], "asset", found.id, found.audit, found.document)
        if isinstance(asset, list):
            broken[source.file] = tuple(asset)
            continue
        assets.setdefault(asset_kind, {})[name] = Asset(asset_kind, name, source, asset)
    departments: dict[str, tuple[str, ...]] = {}
    if view.department is not None:
        departments[view.department.name] = (view.project.name,) if view.project is not None else ()
    templates = {template.scope: {template.name: template}} if template is not None else {}
    return Org(departments, defaults, templates, assets, broken, broken_refs, (), policies)


def compose_row(ctx: Ctx, row: TemplateRow, own: Placement, view: Placement) -> Composition | list[Problem]:
    """The template of ``row`` composed as seen from ``view``, or the problems that stop it."""
    template, problems = template_of(row, own)
    if template is None:
        return problems
    STATS.add("compositions")
    try:
        return compose(org_for(ctx, view, template), template, view.view())
    except TemplateEngineError as exc:
        return list(exc.problems)


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
    ctx: Ctx, view: Placement, row: TemplateRow | None, own: Placement | None, submission: Submission
) -> Composition:
    """A workload: project defaults, the template (if any) and the submission; raises the engine's errors."""
    template = None
    if row is not None and own is not None:
        template, problems = template_of(row, own)
        if template is None:
            raise TemplateEngineError(problems)
    return compose(org_for(ctx, view, template), template, view.view(), submission=submission)


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
    meta: dict[str, Any] = {"id": row.id, "name": row.name}
    description = (row.document.get("meta") or {}).get("description")
    if description is not None:
        meta["description"] = description
    meta |= {"workloadType": "Distributed", "scopeType": row.scope_type}
    meta["scopeId"] = scope_id(own)
    if view.department is not None:
        meta["departmentId"] = str(view.department.id)
    if view.project is not None:
        meta["projectId"] = view.project.id  # an integer in Run:ai's TemplateMetaFields
    return meta | audit_fields(row.audit)


def scope_id(own: Placement) -> str:
    """A scope's ``scopeId`` as Run:ai writes it: always text, the tenant's id for the top scope."""
    return str(own.id) if own.id is not None else str(TENANT_ID)


def template_body(
    row: TemplateRow, own: Placement, view: Placement, outcome: Composition | list[Problem]
) -> dict[str, Any]:
    """The seed's template response: ``meta``, ``spec``, ``master``, ``runnable``, the combined specs.

    A template that cannot be composed (a Jinja2 error, a stored document the engine no longer accepts)
    is answered all the same, not runnable, with the problems as its issues and no combined specs.
    """
    if isinstance(outcome, Composition):
        body = outcome.to_response()
        body["meta"] = template_meta(row, own, view)
        return body
    data = row.document
    same = data.get("masterSpecSameAsWorker")
    issues = [{"replica": "worker", "field": _field(p.path), "message": p.message} for p in outcome] or [
        {"replica": "worker", "field": "", "message": "the template cannot be composed"}
    ]
    return {
        "meta": template_meta(row, own, view),
        "spec": dict(data.get("spec") or {}),
        "assets": dict(data.get("assets") or {}),
        "masterSpecSameAsWorker": same if isinstance(same, bool) else True,
        "master": dict(data["master"]) if isinstance(data.get("master"), Mapping) else None,
        "runnable": {"isRunnable": False, "issue": issues[0]["message"], "issues": issues, "warnings": []},
        "combinedSpec": None,
        "combinedMasterSpec": None,
    }


def _field(path: Iterable[Any]) -> str:
    return format_path(tuple(path))
