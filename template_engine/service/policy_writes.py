"""A scope's policy written: checked whole, stored as its policy and defaults documents, and, validating
only, rolled back and answered with the templates the write would change (:mod:`.impact`).  The routes
(:mod:`.routes.policies`) and the UI's policy form (:func:`write_policy`) both write through here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

from pydantic import BaseModel

from template_engine.errors import Problem
from template_engine.kinds import DISTRIBUTED, WorkloadKind
from template_engine.service.auth import Principal
from template_engine.service.bodies import refuse, schema_problems
from template_engine.service.cache import uncommitted
from template_engine.service.context import Ctx, Placement, Store
from template_engine.service.documents import merge_patch, strip_nulls
from template_engine.service.errors import ApiError
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
from template_engine.service.placements import policy_scope
from template_engine.service.policy_api import (
    check_policy,
    defaults_document,
    policy_body,
    policy_document,
    policy_version,
    request_form,
)
from template_engine.service.policy_reset import reset_policy, reset_targets
from template_engine.service.storage.repository import DefaultsRow, PolicyRow, scope_columns


def read_only(raw: Mapping[str, Any]) -> list[Problem]:
    """A problem on ``policy.status`` when a write gives it: Run:ai's ``PolicyValidationStatus`` is what the
    service answers of a stored policy (read-only), never what a client sets."""
    policy = raw.get("policy")
    if isinstance(policy, Mapping) and policy.get("status") is not None:
        return [
            Problem(
                "policy.status is read-only: the service reports it on a stored policy",
                ("policy", "status"),
                None,
                "no status",
            )
        ]
    return []


@dataclass(frozen=True, slots=True)
class PolicyWrite:
    """The scope's ``DistributedPolicyV2`` after a write, its version (:func:`policy_version`, the ETag) and,
    validating only, the templates it would change (with the names of the stored documents, for
    provenance)."""

    body: dict[str, Any]
    version: int
    affected: list[Affected] | None = None
    labels: dict[str, str] | None = None


def _would_change(body: dict[str, Any], version: int, before: StoredOrg, after: StoredOrg) -> PolicyWrite:
    found = affected(before, after)
    return PolicyWrite(
        {**body, "affectedTemplates": affected_body(found, after)},
        version,
        found,
        {**before.labels, **after.labels},
    )


@dataclass(frozen=True, slots=True)
class _Held:
    """A scope's policy and defaults documents (``None``: it has none) and the versions they are at (a
    deleted document's tombstone's included: 0 only for one the scope never had).  The policy of a kind but
    distributed is one document (``defaults`` ``None``, ``defaults_at`` 0): its version is its row's."""

    policy: PolicyRow | None
    policy_at: int
    defaults: DefaultsRow | None
    defaults_at: int
    kind: WorkloadKind = DISTRIBUTED

    @property
    def version(self) -> int:
        if self.kind is not DISTRIBUTED:
            return self.policy_at
        return policy_version(self.policy_at, self.defaults_at)


def _locked(ctx: Ctx, place: Placement, kind: WorkloadKind = DISTRIBUTED) -> _Held:
    """The scope's policy and defaults documents, locked for this transaction (``FOR UPDATE`` on
    PostgreSQL; SQLite's write transactions are serialised already).

    Every policy write locks whichever of the two rows exist (a deleted document's tombstone is a row), so a
    second writer waits here for the first to commit.  A row that did not exist cannot be locked, and
    PostgreSQL's READ COMMITTED showed this statement the database as it was before the wait: when one is
    missing, both are read again, after the wait, so the version :func:`check_if_match` compares is the one
    the write changes (a row inserted by a writer that locked nothing makes the second insert fail: a 409,
    nothing written).  The policy of another kind is one row, read and locked the same way."""
    if kind is not DISTRIBUTED:
        policy, policy_at = ctx.repo.policy_at(place.key, lock=True, kind=kind.name)
        if not policy_at:
            policy, policy_at = ctx.repo.policy_at(place.key, lock=True, kind=kind.name)
        return _Held(policy, policy_at, None, 0, kind)
    policy, policy_at = ctx.repo.policy_at(place.key, lock=True)
    defaults, defaults_at = ctx.repo.defaults_at(place.key, lock=True)
    if not policy_at or not defaults_at:
        policy, policy_at = ctx.repo.policy_at(place.key, lock=True)
        defaults, defaults_at = ctx.repo.defaults_at(place.key, lock=True)
    return _Held(policy, policy_at, defaults, defaults_at)


def _save(ctx: Ctx, place: Placement, held: _Held, document: dict[str, Any], layer: dict[str, Any]) -> None:
    """Store the scope's policy document (of the held kind) and defaults document (a distributed policy's);
    an empty one is removed, an unchanged one is left as it is (a policy imported from a file keeps its
    text).  Each write names the version read
    (:class:`~template_engine.service.storage.repository.StaleVersion` otherwise)."""
    units = scope_columns(place.type, place.id)  # the unit's column: its rows go with the unit
    repo, subject, policy, defaults = ctx.repo, ctx.subject, held.policy, held.defaults
    kind = held.kind.name
    if document and (policy is None or policy.document != document):
        repo.put_policy(place.key, document, None, held.policy_at, subject, kind=kind, **units)
    elif not document and policy is not None:
        repo.delete_policy(place.key, held.policy_at, subject, kind=kind)
    if held.kind is not DISTRIBUTED:
        return
    if layer and (defaults is None or defaults.document != layer):
        repo.put_defaults(place.key, layer, held.defaults_at, subject, **units)
    elif not layer and defaults is not None:
        repo.delete_defaults(place.key, held.defaults_at, subject)


#: A write's change: the scope's stored policy and defaults to the request's ``policy``.
Change = Callable[[Ctx, PolicyRow | None, DefaultsRow | None], dict[str, Any]]


def write_policy(
    store: Store,
    principal: Principal,
    meta: Mapping[str, Any],
    validate_only: bool,
    change: Change,
    version: int | None = None,
    if_match: str | None = None,
    kind: WorkloadKind = DISTRIBUTED,
) -> PolicyWrite:
    """Check and store a scope's policy of ``kind`` (``meta`` names the scope as a request's ``meta``
    does); with ``validate_only``, roll back and answer what it would make and change.  ``if_match``: the
    request's ``If-Match``, held to :func:`policy_version` (a 412 with the current ETag when it names another,
    in the transaction that writes, after the rows are locked).  ``version`` (the UI's stale-edit check, whose
    form edits only the policy document and keeps the defaults as they are): the version of the scope's policy
    document the change was made on (0: it never had one; a deleted one's otherwise); a 412 when it is
    another.  A policy of another kind than distributed is its one document: its ``defaults`` are its own
    (:func:`~..policy_api.policy_document`), the scope's defaults document is not touched."""
    try:
        with uncommitted(validate_only), store.write(principal) as ctx:
            place = policy_scope(ctx, meta["scope"], meta, ("meta",), 400)
            ctx.access.require_write(place.ref)
            held = _locked(ctx, place, kind)
            policy, defaults = held.policy, held.defaults
            check_if_match(if_match, held.version)
            current = held.policy_at
            if version is not None and version != current:
                raise ApiError(
                    412,
                    f"The policy has changed since it was read (version {current}, not {version}); "
                    "read it again.",
                )
            given = change(ctx, policy, defaults)
            document, problems = policy_document(ctx, given, kind)
            problems += check_policy(ctx, place, document, kind)
            layer, more = (
                defaults_document(defaults.document if defaults else {}, given.get("defaults"))
                if kind is DISTRIBUTED
                else ({}, [])
            )
            refuse(problems + more, "The policy is not valid.")
            if validate_only:
                admit_reading(ctx)  # priced from the stored sizes, before anything is read
            before = stored_org(ctx) if validate_only else None
            _save(ctx, place, held, document, layer)
            body, written = policy_body(ctx, place, kind)
            if before is not None:
                after = stored_org(ctx)
                raise DryRun(partial(_would_change, body, held.version, before, after))
    except DryRun as done:
        answer: PolicyWrite = done.answer()  # after the rollback: composing holds no lock
        return answer
    return PolicyWrite(body, written)


def read_policy(ctx: Ctx, scope: str, ids: dict[str, Any], kind: WorkloadKind) -> tuple[dict[str, Any], int]:
    """The ``DistributedPolicyV2`` (or the kind's) of the scope a query names (``ids``: its ``clusterId``,
    ``departmentId``, ``projectId``), the caller may read, and its version."""
    place = policy_scope(ctx, scope, ids, (), 404)
    ctx.access.require_read(place.ref)
    return policy_body(ctx, place, kind)


def remove_policy(
    ctx: Ctx, scope: str, ids: dict[str, Any], kind: WorkloadKind, if_match: str | None
) -> None:
    """Remove the policy of ``kind`` of the scope a query names (a distributed policy's defaults but
    ``masterSpecSameAsWorker`` with it), for a caller who writes it."""
    place = policy_scope(ctx, scope, ids, (), 404)
    ctx.access.require_write(place.ref)
    held = _locked(ctx, place, kind)
    check_if_match(if_match, held.version)
    layer: dict[str, Any] = {}
    if kind is DISTRIBUTED:
        layer, problems = defaults_document(held.defaults.document if held.defaults else {}, None)
        refuse(problems)
    _save(ctx, place, held, {}, layer)


def overwriting(raw: dict[str, Any], model: type[BaseModel]) -> Change:
    """A PUT's change (its body checked against ``model``, the kind's overwrite request): the body's
    ``policy`` is the new policy."""
    refuse(read_only(raw) + schema_problems(model, raw))
    given = strip_nulls(raw.get("policy") or {})
    return lambda _c, _p, _d: given


def changing(raw: dict[str, Any], model: type[BaseModel], kind: WorkloadKind) -> Change:
    """A PATCH's change (its body checked against ``model``, the kind's change request): the policy cleared
    at the ``reset`` paths, then the body's ``policy`` merged in."""
    refuse(read_only(raw) + schema_problems(model, raw))
    targets = reset_targets([path.removeprefix("policy.") for path in raw.get("reset") or []], kind)

    def change(ctx: Ctx, policy: PolicyRow | None, defaults: DefaultsRow | None) -> dict[str, Any]:
        current = reset_policy(request_form(ctx, policy, defaults, kind), targets)
        return merge_patch(current, strip_nulls(raw.get("policy") or {}))

    return change
