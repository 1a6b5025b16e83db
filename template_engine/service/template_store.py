"""Stored templates of every kind, read and written: a create, update or preview body checked whole (one 400
naming every problem of the schema, the rules, the scope and the assets), the scope's name rule, and the
reads (composed as seen from the template's scope or a project below it, explained, as cluster objects).
The routes (:mod:`.routes.templates`) parse and answer; the rules are here.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel

from template_engine.errors import Problem
from template_engine.explain import explain
from template_engine.kinds import WorkloadKind
from template_engine.models.documents import AnyTemplateDocument, asset_refs
from template_engine.paths import Path, parse_path
from template_engine.scopes import LEVEL_BY_ALIAS
from template_engine.service.auth import Principal
from template_engine.service.bodies import pruned, refuse, schema_problems, under
from template_engine.service.cache import uncommitted
from template_engine.service.cluster_api import composition_resolver, manifests_body, settings_for
from template_engine.service.composer import (
    Composed,
    asset_scope_problems,
    compose_row,
    composed,
    template_body,
)
from template_engine.service.context import Ctx, Placement, Store
from template_engine.service.documents import clear_fields, merge_patch, strip_nulls, template_problems
from template_engine.service.errors import ApiError, bad_request, not_found
from template_engine.service.etags import check_if_match
from template_engine.service.placements import scope_from_body, scope_of, template_scope, view_from_query
from template_engine.service.quota import admit_write
from template_engine.service.schemas import TEMPLATE_SHAPES
from template_engine.service.storage.repository import Audit, TemplateRow
from template_engine.service.storage.tables import now

#: Every name of a scope level a body may give (Run:ai's ``ScopeType``).
_SCOPE_TYPES = frozenset(LEVEL_BY_ALIAS)


def asset_problems(
    ctx: Ctx, doc: AnyTemplateDocument, own: Placement | None = None
) -> tuple[list[str], list[Problem]]:
    """The ids of the assets a template document names, and a problem on the field of each unknown one and,
    with the template's scope ``own``, of each outside its scope (the core's :func:`..org.out_of_scope`)."""
    refs = asset_refs(doc)
    found = ctx.repo.assets_named((kind, name) for kind, name, _ in refs)
    problems = [
        Problem(
            f"unknown {kind} asset {name!r}",
            path,
            None,
            f"the name of an {kind} asset" if kind[0] in "aeiou" else f"the name of a {kind} asset",
        )
        for kind, name, path in refs
        if (kind, name) not in found
    ]
    if own is not None:
        used = [(found[(kind, name)], path) for kind, name, path in refs if (kind, name) in found]
        problems += asset_scope_problems(ctx, doc.meta.name, own, used)
    return [found[(kind, name)].id for kind, name, _ in refs if (kind, name) in found], problems


def _patch_roots(kind: WorkloadKind) -> tuple[str, ...]:
    """The roots ``fieldsToClear`` may name in a template of ``kind``."""
    master = ("masterSpecSameAsWorker", "master") if kind.is_distributed else ()
    return ("meta", "spec", "assets", *master)


def _document(raw: Any) -> dict[str, Any]:
    """The stored template document: the body without nulls, its meta without the scope."""
    doc: dict[str, Any] = strip_nulls(raw if isinstance(raw, dict) else {})
    meta = doc.get("meta")
    # A meta that is not an object (a number, a boolean, text) is the body's schema problem at ``meta``.
    kept = meta if isinstance(meta, dict) else {}
    doc["meta"] = {k: kept[k] for k in ("name", "description") if k in kept}
    return doc


def _checked(
    document: dict[str, Any], problems: list[Problem], kind: WorkloadKind
) -> tuple[AnyTemplateDocument | None, list[Problem]]:
    """The document of ``kind`` and the problems beyond ``problems`` (the body's schema problems, already
    worded): with none the document's own schema is checked too; with some, only the rules, on what they
    leave: a rule's problem at or under a field the schema refused is not said again (a 5,000-character
    description is longer than its own 250, and that is all that is said of it), as at the files' door."""
    if problems:
        doc, rules = template_problems(document, pruned(document, problems), kind)
        refused = [p.path for p in problems if p.path]
        return doc, [p for p in rules if not under(p.path, refused)]
    return template_problems(document, kind=kind)


def _load(
    ctx: Ctx, template_id: uuid.UUID, kind: WorkloadKind | None = None, lock: bool = False
) -> tuple[TemplateRow, Placement]:
    """The template and its scope; 404 when there is none, or (``kind`` given) it is of another kind."""
    row = ctx.repo.template(str(template_id), lock=lock)
    if row is None or (kind is not None and row.kind != kind.name):
        raise not_found(f"template {template_id}" if kind is None else f"{kind.noun} template {template_id}")
    return row, template_scope(ctx, row)


def name_taken(
    ctx: Ctx, own: Placement, name: str, template_id: str | None = None, status: int = 400
) -> None:
    """A ``status`` error when another template of the scope, of any kind, has ``name``: a create or update
    answers 400, the status Run:ai declares for them (``400BadRequest``; it declares no 409 there),
    ``name-availability`` 409, the one it declares (``409Conflict``)."""
    other = ctx.repo.template_named(own.key, name)
    if other is not None and other.id != template_id:
        raise ApiError(
            status,
            problems=[Problem(f"a template named {name!r} already exists in this scope", ("meta", "name"))],
        )


#: An answer and the version of what it shows (its ETag).
Answer = tuple[dict[str, Any], int]


def _answer(ctx: Ctx, template_id: str, own: Placement) -> Answer:
    row = ctx.repo.template(template_id)
    assert row is not None
    return template_body(row, own, own, compose_row(ctx, row, own, own)), row.audit.version


def _scope_in(ctx: Ctx, raw: dict[str, Any], problems: list[Problem]) -> Placement | None:
    """The scope a create or preview body names, with its problems added to ``problems``; ``None`` when the
    body's meta cannot name one (its schema problems say why)."""
    meta = pruned(raw, problems).get("meta")
    if not isinstance(meta, dict) or meta.get("scopeType") not in _SCOPE_TYPES:
        return None
    scope_id = meta.get("scopeId")
    if isinstance(scope_id, int) and not isinstance(scope_id, bool):
        scope_id = str(scope_id)
    if scope_id is not None and not isinstance(scope_id, str):
        return None
    own, more = scope_of(ctx, meta["scopeType"], scope_id, ("meta", "scopeType"), ("meta", "scopeId"))
    problems += more
    return own


def _new(
    ctx: Ctx, raw: dict[str, Any], write: bool, kind: WorkloadKind, body: type[BaseModel]
) -> tuple[Placement, dict[str, Any], AnyTemplateDocument, list[str]]:
    """A create or preview body of ``kind`` (its model ``body``) checked whole: its scope (403 when the caller
    may not write or read it), document and asset ids; one 400 with every problem."""
    problems = schema_problems(body, raw)
    document = _document(raw)
    doc, more = _checked(document, problems, kind)
    own = _scope_in(ctx, raw, problems)
    if own is not None:
        if write:
            ctx.access.require_write(own.ref)
        else:
            ctx.access.require_read(own.ref)
    asset_ids, unknown = asset_problems(ctx, doc, own) if doc is not None else ([], [])
    refuse([*problems, *more, *unknown])
    assert own is not None and doc is not None
    return own, document, doc, asset_ids


def create_template(store: Store, principal: Principal, raw: dict[str, Any], kind: WorkloadKind) -> Answer:
    """Create a template of ``kind`` in the scope its body names (a name taken there, by a template of any
    kind, is one of the 400's problems)."""
    with store.write(principal) as ctx:
        own, document, doc, asset_ids = _new(ctx, raw, True, kind, TEMPLATE_SHAPES[kind.name].create)
        name_taken(ctx, own, doc.meta.name)
        template_id = str(uuid.uuid4())
        admit_write(ctx.repo, "template", own.type, own.id, document)
        ctx.repo.add_template(template_id, own.type, own.id, document, ctx.subject, kind.name)
        ctx.repo.set_template_assets(template_id, asset_ids)
        return _answer(ctx, template_id, own)


def preview_template(
    store: Store, principal: Principal, raw: dict[str, Any], project_id: str | None, kind: WorkloadKind
) -> dict[str, Any]:
    """A template body composed without storing it (as seen from its scope, or ``project_id``); nothing of it
    is cached (it is keyed on no row)."""
    with uncommitted(), store.read(principal) as ctx:
        own, document, doc, _ = _new(ctx, raw, False, kind, TEMPLATE_SHAPES[kind.name].preview)
        view = view_from_query(ctx, own, project_id)
        stamp = now()
        audit = Audit(0, ctx.subject, stamp, ctx.subject, stamp)
        zero = str(uuid.UUID(int=0))
        row = TemplateRow(zero, doc.meta.name, own.type, own.key, None, None, document, audit, kind=kind.name)
        return template_body(row, own, view, compose_row(ctx, row, own, view))


def _seen(
    ctx: Ctx, template_id: uuid.UUID, kind: WorkloadKind | None, project_id: str | None
) -> tuple[TemplateRow, Composed]:
    """A template the caller may read (of ``kind``, when given) composed as seen from its own scope or from
    ``project_id`` below it, with its answer."""
    row, own = _load(ctx, template_id, kind)
    ctx.access.require_read(own.ref)
    return row, composed(ctx, row, own, view_from_query(ctx, own, project_id))


def read_template(
    store: Store,
    principal: Principal,
    template_id: uuid.UUID,
    project_id: str | None,
    kind: WorkloadKind | None,
) -> Answer:
    """A template (of ``kind``, or of any) composed as seen from its scope or from ``project_id`` below it."""
    with store.read(principal) as ctx:
        row, (_, body) = _seen(ctx, template_id, kind, project_id)
    return body, row.audit.version


#: A write's change: the stored row to the new document and the problems found on the way.
Change = Callable[[TemplateRow], tuple[dict[str, Any], list[Problem]]]


def replacing(raw: dict[str, Any], kind: WorkloadKind) -> Change:
    """A PUT's change: the body is the new document (its scope and kind stay)."""
    problems = schema_problems(TEMPLATE_SHAPES[kind.name].replace, raw)
    document = _document(raw)
    return lambda _row: (document, problems)


def patching(raw: dict[str, Any], kind: WorkloadKind) -> Change:
    """A PATCH's change: ``fieldsToClear`` cleared, then the given fields merged in."""
    problems = schema_problems(TEMPLATE_SHAPES[kind.name].patch, raw)
    patch = strip_nulls(pruned(raw, problems))
    paths = patch.pop("fieldsToClear", None)
    paths = paths if isinstance(paths, list) else []

    def change(row: TemplateRow) -> tuple[dict[str, Any], list[Problem]]:
        found = list(problems)
        try:
            cleared = clear_fields(row.document, paths, _patch_roots(kind), protected=("meta", "meta.name"))
        except ApiError as exc:
            found += exc.problems
            cleared = dict(row.document)
        return merge_patch(cleared, patch), found

    return change


def update_template(
    store: Store,
    principal: Principal,
    template_id: uuid.UUID,
    if_match: str | None,
    kind: WorkloadKind,
    change: Change,
) -> Answer:
    """Change a template of ``kind`` (:func:`replacing`, :func:`patching`): its new document checked whole."""
    with store.write(principal) as ctx:
        row, own = _load(ctx, template_id, kind, lock=True)
        ctx.access.require_write(own.ref)
        check_if_match(if_match, row.audit.version)
        document, problems = change(row)
        doc, more = _checked(document, problems, kind)
        asset_ids, unknown = asset_problems(ctx, doc, own) if doc is not None else ([], [])
        refuse([*problems, *more, *unknown])
        assert doc is not None
        if doc.meta.name != row.name:
            name_taken(ctx, own, doc.meta.name, row.id)
        admit_write(ctx.repo, "template", own.type, own.id, document, row.id)
        ctx.repo.update_template(row.id, row.audit.version, document, ctx.subject)
        ctx.repo.set_template_assets(row.id, asset_ids)
        return _answer(ctx, row.id, own)


def delete_template(
    store: Store, principal: Principal, template_id: uuid.UUID, if_match: str | None, kind: WorkloadKind
) -> None:
    with store.write(principal) as ctx:
        row, own = _load(ctx, template_id, kind, lock=True)
        ctx.access.require_write(own.ref)
        check_if_match(if_match, row.audit.version)
        ctx.repo.delete_template(row.id, row.audit.version)


def _field_path(field: str | None) -> Path:
    try:
        return parse_path(field) if field else ()
    except ValueError as exc:
        raise bad_request(
            [Problem(str(exc), ("field",), None, "a field path such as compute.gpuDevicesRequest")]
        ) from None


def explanation(
    store: Store,
    principal: Principal,
    template_id: uuid.UUID,
    project_id: str | None,
    field: str | None,
    kind: WorkloadKind,
) -> dict[str, Any]:
    """Which layer set, added or excluded every field (under ``field``), with the template's ``runnable``."""
    path = _field_path(field)
    with store.read(principal) as ctx:
        outcome, body = _seen(ctx, template_id, kind, project_id)[1]
    runnable = body["runnable"]
    if isinstance(outcome, list):
        return {"entries": [], "warnings": [], "runnable": runnable}
    entries = [e.to_dict() for e in explain(outcome, path)]
    warnings = [w.to_dict() for w in outcome.runnable.warnings]
    return {"entries": entries, "warnings": warnings, "runnable": runnable}


def template_manifests(
    store: Store,
    principal: Principal,
    template_id: uuid.UUID,
    project_id: str | None,
    annotate: bool | None,
    kind: WorkloadKind,
) -> dict[str, Any]:
    """The objects and claims a template becomes, seen from its scope or a project below it."""
    with store.read(principal) as ctx:
        row, own = _load(ctx, template_id, kind)
        ctx.access.require_read(own.ref)
        view = view_from_query(ctx, own, project_id)
        outcome, body = composed(ctx, row, own, view)
        cluster = settings_for(ctx, view) if annotate else None
    if isinstance(outcome, list):
        return manifests_body(None, body["runnable"], bool(annotate), None)
    resolve = composition_resolver(outcome, cluster)
    return manifests_body(outcome.manifests, body["runnable"], bool(annotate), resolve)


def name_free(store: Store, principal: Principal, name: str, scope_type: str, scope_id: str | None) -> None:
    """Nothing when a create would take ``name`` in the scope; a 409 when a template of any kind has it."""
    with store.read(principal) as ctx:
        own = scope_from_body(ctx, scope_type, scope_id, ("scopeId",))
        ctx.access.require_read(own.ref)
        name_taken(ctx, own, name, status=409)
