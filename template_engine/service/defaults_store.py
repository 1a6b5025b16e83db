"""A scope's defaults document read, written and removed: a scope that never had defaults reads as ``{}``
with version 0; a write is checked as a ``defaults.yaml`` is and, validating only, rolled back and answered
with the templates it would change (:mod:`.impact`).  The routes (:mod:`.routes.defaults`) and the UI's
defaults form (:func:`write_defaults`) both write through here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from template_engine.scopes import LEVEL_BY_TYPE, ScopeLevel
from template_engine.service.auth import Principal
from template_engine.service.cache import uncommitted
from template_engine.service.context import SERVED_LEVELS, Ctx, Placement, Store
from template_engine.service.documents import check_defaults, clear_fields, merge_patch, strip_nulls
from template_engine.service.errors import field_error, not_found
from template_engine.service.etags import check_if_match
from template_engine.service.impact import (
    Affected,
    DryRun,
    StoredOrg,
    admit_reading,
    affected,
    affected_body,
    stored_org,
)
from template_engine.service.placements import malformed, path_id
from template_engine.service.storage.repository import scope_columns

_ROOTS = ("spec", "masterSpecSameAsWorker", "master")


@dataclass(frozen=True, slots=True)
class ScopeFamily:
    """One kind of scope with defaults: its path under ``/api/v1/defaults``, the path parameter naming it
    (``None``: the one system scope) and the pattern of its value, how the docs name its defaults, and what
    reading them says.  A family is a served level of the scope table (:func:`family`)."""

    kind: str
    path: str
    param: str | None
    pattern: str
    defaults: str
    reads: str

    @property
    def missing(self) -> tuple[int, ...]:
        """404 for an unknown id in the path; the system scope always exists."""
        return (404,) if self.param else ()


def family(level: ScopeLevel) -> ScopeFamily:
    """The defaults' family of a level: ``/system`` for the top, ``/<folder>/{<id>}`` for the others (a
    cluster named by its UUID, ``{clusterUuid}`` as in Run:ai's cluster routes; a department or project by
    its id)."""
    if not level.named:
        reads = f"The {level.type} defaults (``{{}}`` when there are none)."
        return ScopeFamily(level.type, f"/{level.type}", None, "", f"the {level.type} defaults", reads)
    param, pattern = path_id(level)
    words = f"a {level.type}'s defaults"
    return ScopeFamily(level.type, f"/{level.folder}/{{{param}}}", param, pattern, words, f"A {words}.")


#: The defaults' families, one per served level, top first.
FAMILIES = tuple(family(level) for level in SERVED_LEVELS)


def _scope(ctx: Ctx, kind: str, given: object, lock: bool = False) -> Placement:
    """The scope a defaults path names: the system, or a unit by its id (a cluster by its UUID, which the
    route may give as a ``uuid.UUID``); 404 when there is no such unit."""
    level = LEVEL_BY_TYPE[kind]
    if not level.named:
        return Placement("system")
    scope_id = str(given)
    bad = malformed(kind, scope_id)
    if bad is not None:
        raise field_error((path_id(level)[0],), *bad)
    unit = ctx.unit_id(kind, scope_id)
    if unit is None:
        raise not_found(f"{kind} {scope_id}")
    return ctx.placement(kind, unit, lock=lock)


def read_defaults(
    store: Store, principal: Principal, kind: str, scope_id: str | None
) -> tuple[dict[str, Any], int]:
    """A scope's defaults document (``{}`` when it has none) and its version."""
    with store.read(principal) as ctx:
        place = _scope(ctx, kind, scope_id)
        ctx.access.require_read(place.ref)
        row, version = ctx.repo.defaults_at(place.key)
    return (row.document if row else {}), version


#: A write's change: the stored document (``{}`` when there is none) to the new one.
Change = Callable[[dict[str, Any]], dict[str, Any]]


@dataclass(frozen=True, slots=True)
class DefaultsWrite:
    """What a write stored (or, validating only, would store), its version, and with ``validate_only`` the
    templates it would change and the stored org before it (for their ids and provenance)."""

    document: dict[str, Any]
    version: int
    affected: list[Affected] | None = None
    body: list[dict[str, Any]] | None = None
    labels: dict[str, str] | None = None


def _would_change(
    document: dict[str, Any], current: int, before: StoredOrg, after: StoredOrg
) -> DefaultsWrite:
    found = affected(before, after)
    labels = {**before.labels, **after.labels}
    return DefaultsWrite(document, current, found, affected_body(found, after), labels)


def write_defaults(
    store: Store,
    principal: Principal,
    kind: str,
    scope_id: str | None,
    if_match: str | None,
    change: Change,
    validate_only: bool = False,
) -> DefaultsWrite:
    """Check and store a scope's new defaults; with ``validate_only``, roll back and answer what the write
    would change instead (the same checks, the same 403, 404, 412 and 400)."""
    try:
        with uncommitted(validate_only), store.write(principal) as ctx:
            place = _scope(ctx, kind, scope_id)
            ctx.access.require_write(place.ref)
            row, current = ctx.repo.defaults_at(place.key, lock=True)
            check_if_match(if_match, current)
            document = change(row.document if row else {})
            check_defaults(document)
            if validate_only:
                admit_reading(ctx)  # priced from the stored sizes, before anything is read
            before = stored_org(ctx) if validate_only else None
            version = ctx.repo.put_defaults(
                place.key,
                document,
                current,
                ctx.subject,
                **scope_columns(place.type, place.id),
            )
            if before is not None:
                after = stored_org(ctx)
                raise DryRun(partial(_would_change, document, current, before, after))
    except DryRun as done:
        answer: DefaultsWrite = done.answer()  # after the rollback: composing holds no lock
        return answer
    return DefaultsWrite(document, version)


def replacing(raw: Any) -> Change:
    """A PUT's change: the body is the new document."""
    document = strip_nulls(raw if isinstance(raw, dict) else {})
    return lambda _current: document


def patching(raw: Any) -> Change:
    """A PATCH's change: ``fieldsToClear`` cleared, then the given fields merged in."""
    patch = strip_nulls(raw if isinstance(raw, dict) else {})
    paths = patch.pop("fieldsToClear", None) or []
    return lambda current: merge_patch(clear_fields(current, paths, _ROOTS), patch)


def delete_defaults(
    store: Store, principal: Principal, kind: str, scope_id: str | None, if_match: str | None
) -> None:
    """Remove a scope's defaults (its row stays as a tombstone: versions never go back)."""
    with store.write(principal) as ctx:
        place = _scope(ctx, kind, scope_id)
        ctx.access.require_write(place.ref)
        row, current = ctx.repo.defaults_at(place.key, lock=True)
        check_if_match(if_match, current)
        if row is not None:
            ctx.repo.delete_defaults(place.key, current, ctx.subject)


def written_body(result: DefaultsWrite) -> dict[str, Any]:
    """What a write answers: the document, with ``affectedTemplates`` when validating only."""
    body: dict[str, Any] = dict(result.document)
    if result.body is not None:
        body["affectedTemplates"] = result.body
    return body
