"""Run:ai's distributed policy (``DistributedPolicyV2``) to and from what the service stores for a scope.

A scope's policy over HTTP is two stored documents:

- its **policy document** (the ``policies`` table, a ``policy.yaml``): ``policy.rules`` as given (Run:ai's
  rule vocabulary is the folder's), ``policy.imposedAssets`` as data source ids over HTTP and names stored;
- its **defaults document** (the ``defaults`` table, a ``defaults.yaml``, also served at
  ``/api/v1/defaults``): ``policy.defaults.worker`` is its ``spec``, ``policy.defaults.master`` its
  ``master.spec``, in Run:ai's itemized form: a keyed list (``environmentVariables``, ``ports``,
  ``storage.nfs``...) is ``{instances: [items]}``.  Run:ai's ``attributes`` (the default of an attribute
  for every item of a list) are the policy document's ``defaults``, as a ``policy.yaml`` holds them, and
  read back into ``policy.defaults`` beside the instances.
  ``masterSpecSameAsWorker`` is not part of Run:ai's policy: a policy write keeps it as it is.

Every write is checked before anything is stored, with the loader's rules and wording: the rule vocabulary
(field path, what was expected), each imposed asset an existing data source, one scope of a branch ruling a
field (the policy of every branch through the scope is compared), and the defaults as a defaults document.

The policy of every other kind (``/api/v2/policy/{trainings,workspaces,inferences,distributed-inferences}``:
``WorkloadKind.policy_segment``) is ONE stored document, its policy file (``training-policy.yaml``...: the
``kind_policies`` table): Run:ai's ``<Kind>PolicyDefaultsAndRulesV2`` as it is, flat for a one-role kind,
``leader``/``worker`` for a distributed inference, with imposed assets by name.  Its ``defaults`` are the
kind's own value defaults (and attribute defaults), read as the file's are (``read_policy(..., kind=)``);
the scope's defaults document is not part of it (issue 32: a training policy's defaults reach trainings
only).  Its ``effective`` defaults are what a composition of the kind gets from the policy side: each
scope's shared defaults projected onto the kind's fields, then its policy's, merged
(:func:`~template_engine.layers.default_layers`).
"""

from __future__ import annotations

import copy
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from template_engine.errors import Problem
from template_engine.kinds import DISTRIBUTED, KINDS, WorkloadKind, kind_named
from template_engine.layers import default_layers
from template_engine.loader.policies import branches
from template_engine.merge.engine import merge_layers
from template_engine.merge.plan import SPEC_PLAN, PlanNode
from template_engine.org import Scope
from template_engine.paths import Match, Path
from template_engine.policy.document import FieldRules, PolicyDocument, policy_root, read_policy
from template_engine.policy.effective import effective, effective_shape
from template_engine.policy.vocabulary import REPLICAS, Replica
from template_engine.scopes import scope_type_of
from template_engine.service.bodies import pruned, refuse
from template_engine.service.composer import imposed_scope_problems, org_for, timestamp
from template_engine.service.context import Ctx, Placement
from template_engine.service.documents import (
    BODY,
    defaults_problems,
    merge_patch,
    strip_nulls,
)
from template_engine.service.placements import lineage, runai_scope
from template_engine.service.policy_store import OrgUnits, stored_policies, stored_policy
from template_engine.service.schemas import TENANT_ID
from template_engine.service.storage.repository import Audit, DefaultsRow, PolicyRow

#: The namespace of policy ids: a scope's policy has one id, derived from its scope (``uuid5``).
_POLICY_IDS = uuid.UUID("1d0f3a4e-6f0b-5c59-9a57-3a1c1f0b7e21")
#: Where the parts of a request's ``policy`` sit in a request body.
POLICY: Path = ("policy",)


def policy_id(place: Placement, kind: WorkloadKind = DISTRIBUTED) -> str:
    """The id of the policy of ``kind`` of a scope (a distributed one's, as before issue 32, from its scope
    alone)."""
    key = place.key if kind is DISTRIBUTED else f"{kind.name}:{place.key}"
    return str(uuid.uuid5(_POLICY_IDS, key))


def scope_name(place: Placement) -> str:
    """Run:ai's name of a policy scope: ``tenant`` for the top scope."""
    return "tenant" if place.type == "system" else place.type


# -- defaults: a defaults document <-> Run:ai's itemized form ----------------------------------------------


def _itemized(spec: Mapping[str, Any], node: PlanNode) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, value in spec.items():
        child = node.child(name)
        if child.key is not None and isinstance(value, list):
            out[name] = {"instances": copy.deepcopy(value)}
        elif child.key is not None:  # itemized already (a kind's policy file may write either)
            out[name] = copy.deepcopy(value)
        elif isinstance(value, Mapping) and child.children and not child.whole:
            out[name] = _itemized(value, child)
        else:
            out[name] = copy.deepcopy(value)
    return out


def runai_defaults(spec: Any, master: Any) -> dict[str, Any]:
    """A defaults document's ``spec`` and ``master.spec`` as Run:ai's ``DistributedPolicyDefaultsV2``."""
    out: dict[str, Any] = {}
    if isinstance(spec, Mapping) and spec:
        out["worker"] = _itemized(spec, SPEC_PLAN)
    if isinstance(master, Mapping) and master:
        out["master"] = _itemized(master, SPEC_PLAN)
    return out


def kind_defaults(kind: WorkloadKind, by_role: Mapping[Replica, Any]) -> dict[str, Any]:
    """Each role's value defaults (a spec of the role) as Run:ai's ``defaults`` of ``kind``'s policy: flat for
    a one-role kind (``TrainingPolicyDefaultsV2``), ``{leader: ..., worker: ...}`` for a distributed
    inference; keyed lists in the itemized form (``{instances: [items]}``)."""
    out: dict[str, Any] = {}
    for role in kind.roles:
        spec = by_role.get(role)
        if not isinstance(spec, Mapping) or not spec:
            continue
        found = _itemized(spec, kind.plan(role))
        if kind.roled_policy:
            out[role] = found
        else:
            out = found
    return out


def _plain(value: Mapping[str, Any], node: PlanNode, path: Path, problems: list[Problem]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, given in value.items():
        here = (*path, name)
        child = node.child(name)
        if child.key is not None:
            if not isinstance(given, Mapping):
                problems.append(
                    Problem(
                        f"the defaults of {name} must be given in Run:ai's itemized form",
                        here,
                        None,
                        f"{name}: {{instances: [items]}}",
                    )
                )
                continue
            for part in given:
                if part not in ("instances", "attributes"):  # attributes: the policy document's
                    problems.append(
                        Problem(
                            f"unknown part {part!r} of the defaults of {name}",
                            (*here, part),
                            None,
                            "instances or attributes",
                        )
                    )
            if given.get("instances") is not None:
                out[name] = copy.deepcopy(given["instances"])
        elif isinstance(given, Mapping) and child.children and not child.whole:
            inner = _plain(given, child, here, problems)
            if inner or not given:  # a section that held only attribute defaults is not the document's
                out[name] = inner
        else:
            out[name] = copy.deepcopy(given)
    return out


def _runai_path(path: Path) -> Path:
    """A defaults document's field path as the request's (``spec.ports[0]`` ->
    ``policy.defaults.worker.ports.instances[0]``)."""
    if path[:2] == ("master", "spec"):
        head, rest = (*POLICY, "defaults", "master"), path[2:]
    elif path[:1] == ("spec",):
        head, rest = (*POLICY, "defaults", "worker"), path[1:]
    elif path[:1] == ("master",):
        return (*POLICY, "defaults", "master", *path[1:])
    else:
        return (*POLICY, "defaults", *path)
    out: list[Any] = []
    node = SPEC_PLAN
    for index, part in enumerate(rest):
        out.append(part)
        if isinstance(part, str):
            node = node.child(part)
            following = rest[index + 1] if index + 1 < len(rest) else None
            if node.key is not None and isinstance(following, int | Match):
                out.append("instances")
    return (*head, *out)


def defaults_document(current: Mapping[str, Any], given: Any) -> tuple[dict[str, Any], list[Problem]]:
    """The defaults document a policy's ``defaults`` make of the scope's ``current`` one (its
    ``masterSpecSameAsWorker`` kept), and every problem, on the request's paths."""
    problems: list[Problem] = []
    spec: dict[str, Any] = {}
    master: dict[str, Any] = {}
    where = (*POLICY, "defaults")
    if isinstance(given, Mapping):
        for name, value in given.items():
            if name not in ("worker", "master"):
                problems.append(
                    Problem(
                        f"unknown replica {name!r} of the defaults", (*where, name), None, "worker or master"
                    )
                )
            elif isinstance(value, Mapping):
                plain = _plain(value, SPEC_PLAN, (*where, name), problems)
                spec, master = (plain, master) if name == "worker" else (spec, plain)
            elif value is not None:
                problems.append(
                    Problem(f"defaults.{name} must be an object", (*where, name), None, "an object")
                )
    elif given is not None:
        problems.append(Problem("defaults must be an object", where, None, "{worker: {...}, master: {...}}"))
    out: dict[str, Any] = {}
    if spec:
        out["spec"] = spec
    if "masterSpecSameAsWorker" in current:
        out["masterSpecSameAsWorker"] = current["masterSpecSameAsWorker"]
    if master:
        out["master"] = {"spec": master}
    problems += [replace(p, path=_runai_path(p.path)) for p in defaults_problems(out)]
    return out, problems


def _attribute_parts(given: Any, node: PlanNode) -> dict[str, Any]:
    """The ``attributes`` parts of the keyed lists of a replica's defaults in Run:ai's itemized form."""
    out: dict[str, Any] = {}
    if not isinstance(given, Mapping):
        return out
    for name, value in given.items():
        child = node.child(name)
        if not isinstance(value, Mapping):
            continue
        if child.key is not None:
            if value.get("attributes") is not None:
                out[name] = {"attributes": copy.deepcopy(value["attributes"])}
        elif child.children and not child.whole:
            inner = _attribute_parts(value, child)
            if inner:
                out[name] = inner
    return out


def attribute_defaults(given: Any) -> dict[str, Any]:
    """The attribute defaults of a request's ``policy.defaults`` (``{worker: {compute: {extendedResources:
    {attributes: {quantity: 3}}}}}``): what the scope's policy document holds as its ``defaults``."""
    out: dict[str, Any] = {}
    if isinstance(given, Mapping):
        for replica in REPLICAS:
            found = _attribute_parts(given.get(replica), SPEC_PLAN)
            if found:
                out[replica] = found
    return out


def _drop_attribute_parts(given: Any, node: PlanNode) -> Any:
    if not isinstance(given, Mapping):
        return given
    out: dict[str, Any] = {}
    for name, value in given.items():
        child = node.child(name)
        if child.key is not None and isinstance(value, Mapping):
            out[name] = {k: v for k, v in value.items() if k != "attributes"}
        elif isinstance(value, Mapping) and child.children and not child.whole:
            out[name] = _drop_attribute_parts(value, child)
        else:
            out[name] = value
    return out


def without_attribute_defaults(given: Mapping[str, Any]) -> dict[str, Any]:
    """A request's ``policy.defaults`` without its attribute defaults (what the defaults document holds)."""
    return {replica: _drop_attribute_parts(value, SPEC_PLAN) for replica, value in given.items()}


def _with_attributes(defaults: Mapping[str, Any], policy: PolicyRow | None) -> dict[str, Any]:
    """Run:ai's ``policy.defaults``: the defaults document's, with the policy document's attribute defaults
    beside the instances."""
    held = policy.document.get("defaults") if policy is not None else None
    if not isinstance(held, Mapping) or not held:
        return dict(defaults)
    return merge_patch(defaults, copy.deepcopy(dict(held)))


# -- the policy document: request <-> stored ---------------------------------------------------------------


def _without_sources(value: Any) -> Any:
    """Rules without ``sourceOfRule`` (read-only: what ``effective`` shows, given back)."""
    if isinstance(value, Mapping):
        return {k: _without_sources(v) for k, v in value.items() if k != "sourceOfRule"}
    if isinstance(value, list):
        return [_without_sources(v) for v in value]
    return value


def _names(ctx: Ctx, imposed: Mapping[str, Any]) -> tuple[dict[str, Any], list[Problem]]:
    """Imposed asset ids (per role) as the names a policy document holds; a problem on each id that is not a
    data source's."""
    out: dict[str, Any] = {}
    problems: list[Problem] = []
    for replica, ids in imposed.items():
        out[replica], found = _names_of(ctx, ids, (*POLICY, "imposedAssets", replica))
        problems += found
    return out, problems


def _names_of(ctx: Ctx, ids: Any, where: Path) -> tuple[Any, list[Problem]]:
    """One list of imposed asset ids (at ``where``) as names, and a problem on each that is no data
    source's; anything but a list as it is (the policy's reader says what it must be)."""
    problems: list[Problem] = []
    if not isinstance(ids, list):
        return ids, problems
    names: list[Any] = []
    for index, given in enumerate(ids):
        here = (*where, index)
        row = ctx.repo.asset(given) if isinstance(given, str) and _is_uuid(given) else None
        expected = "the id of a data source asset (GET /api/v1/asset/datasource)"
        if row is None:
            problems.append(Problem(f"no asset has the id {given!r}", here, None, expected))
            names.append(given)
        elif row.kind != "datasource":
            problems.append(
                Problem(
                    f"asset {given} is the {row.kind} asset {row.name!r}, not a data source",
                    here,
                    None,
                    expected,
                )
            )
            names.append(given)
        else:
            names.append(row.name)
    return names, problems


def _is_uuid(text: str) -> bool:
    try:
        uuid.UUID(text)
    except ValueError:
        return False
    return True


def policy_document(
    ctx: Ctx, given: Mapping[str, Any], kind: WorkloadKind = DISTRIBUTED
) -> tuple[dict[str, Any], list[Problem]]:
    """The stored policy document of a request's ``policy`` of ``kind`` (rules as given, imposed assets by
    name): a distributed one's ``defaults`` are its attribute defaults only (its value defaults are the
    scope's defaults document: :func:`defaults_document`), any other kind's as given, its policy file's."""
    out: dict[str, Any] = {}
    problems: list[Problem] = []
    given_defaults = strip_nulls(given.get("defaults"))
    defaults = attribute_defaults(given_defaults) if kind is DISTRIBUTED else given_defaults
    if defaults:
        out["defaults"] = defaults
    rules = strip_nulls(given.get("rules"))
    if rules is not None and rules != {}:
        out["rules"] = _without_sources(rules)
    imposed = strip_nulls(given.get("imposedAssets"))
    if isinstance(imposed, Mapping) and kind.roled_policy:
        imposed = {replica: names for replica, names in imposed.items() if names != []}
        if imposed:
            out["imposedAssets"], problems = _names(ctx, imposed)
    elif isinstance(imposed, list) and not kind.roled_policy:
        if imposed:
            out["imposedAssets"], problems = _names_of(ctx, imposed, (*POLICY, "imposedAssets"))
    elif imposed is not None:
        out["imposedAssets"] = imposed
    return out, problems


def _rule_path(rules: FieldRules, kind: WorkloadKind) -> Path:
    path: Path = (*POLICY, *policy_root(kind, "rules", rules.replica), *rules.path)
    if rules.instances:
        return (*path, "instances")
    if rules.attribute:
        return (*path, "attributes", *rules.attribute)
    return path


def ownership(ctx: Ctx, place: Placement, candidate: PolicyDocument) -> list[Problem]:
    """A problem on each rule of ``candidate`` (the policy of ``place``) for a field that another scope of a
    branch through ``place`` already rules (POLICY.md "One owner per field")."""
    units = OrgUnits.read(ctx.repo)
    kind = candidate.kind
    stored, _broken = stored_policies(ctx.repo, units, kind)
    target = place.scope()
    problems: list[Problem] = []
    seen: set[tuple[Any, str]] = set()
    for branch in branches(units.tree, units.cluster_tree):
        if target not in branch:
            continue
        for scope in branch:
            other = stored.get(scope)
            if scope == target or other is None:
                continue
            theirs = {r.owner_key: r for r in other.rules}
            for rules in candidate.rules:
                owner = theirs.get(rules.owner_key)
                if owner is None or (rules.owner_key, other.file) in seen:
                    continue
                seen.add((rules.owner_key, other.file))
                of_the = f" of the {rules.replica}" if kind.roled_policy else ""
                policy = "policy" if kind is DISTRIBUTED else f"{kind.name} policy"
                problems.append(
                    Problem(
                        f"field {rules.field_text!r}{of_the} already has rules in the "
                        f"{other.scope} {policy} ({owner.location.place()})",
                        _rule_path(rules, kind),
                        None,
                        "one scope of a branch rules a field (remove it here or there)",
                        (owner.location,),
                    )
                )
    return problems


def check_policy(
    ctx: Ctx, place: Placement, document: Mapping[str, Any], kind: WorkloadKind = DISTRIBUTED
) -> list[Problem]:
    """Every problem of the policy document ``document`` as the policy of ``kind`` of ``place``: the loader's
    reading of its policy file (``policy.yaml``, ``training-policy.yaml``...; on the request's paths), then
    one owner per field in every branch through ``place``."""
    parsed, problems = read_policy(document, BODY, {}, place.scope(), kind=kind)
    if parsed is None:  # the rest of the document, for its ownership problems
        parsed, _ = read_policy(pruned(document, problems), BODY, {}, place.scope(), kind=kind)
    problems = [replace(p, path=(*POLICY, *p.path)) for p in problems]
    if parsed is not None:
        problems += ownership(ctx, place, parsed)
        problems += imposed_scope_problems(ctx, place, parsed.imposed, POLICY)
    return problems


# -- the response: DistributedPolicyV2 ---------------------------------------------------------------------


def _source_of(place: Placement) -> dict[Scope, dict[str, Any]]:
    """Run:ai's ``sourceOfRule`` of each scope of ``place``'s branch: ids, not names."""
    return {above.scope(): runai_scope(above) for above in lineage(place)}


def _asset_ids(ctx: Ctx, names: set[str]) -> dict[str, str]:
    found = ctx.repo.assets_named([("datasource", name) for name in names])
    return {name: row.id for (_, name), row in found.items()}


def _imposed_ids(imposed: Any, ids: Mapping[str, str], kind: WorkloadKind = DISTRIBUTED) -> Any:
    """A policy document's imposed asset names as Run:ai's ids: per role (``DistributedImposedAssets``), or
    one list for a flat policy (``ImposedAssets``)."""

    def listed(names: Any) -> list[str]:
        return [ids[n] for n in names if isinstance(n, str) and n in ids]

    if not kind.roled_policy:
        return listed(imposed) if isinstance(imposed, list) else []
    out: dict[str, list[str]] = {}
    if isinstance(imposed, Mapping):
        for replica in kind.roles:
            names = imposed.get(replica)
            if isinstance(names, list):
                out[replica] = listed(names)
    return out


def _imposed_names(imposed: Any) -> set[str]:
    """The names a policy document's ``imposedAssets`` holds (per role, or one list)."""
    lists = imposed.values() if isinstance(imposed, Mapping) else [imposed]
    return {n for v in lists if isinstance(v, list) for n in v if isinstance(n, str)}


def _meta(place: Placement, audits: list[Audit], kind: WorkloadKind = DISTRIBUTED) -> dict[str, Any]:
    created = min(audits, key=lambda a: a.created_at)
    updated = max(audits, key=lambda a: a.updated_at)
    meta: dict[str, Any] = {"id": policy_id(place, kind), "name": place.scope().name or "tenant"}
    meta |= runai_scope(place)
    meta["tenantId"] = TENANT_ID
    meta |= {"createdBy": created.created_by, "createdAt": timestamp(created.created_at)}
    meta |= {"updatedBy": updated.updated_by, "updatedAt": timestamp(updated.updated_at)}
    return meta


def _own(
    ctx: Ctx, place: Placement, policy: PolicyRow | None, defaults: DefaultsRow | None
) -> dict[str, Any]:
    """The scope's own policy: its defaults (a ``null``, no opinion, left out: Run:ai's schema allows none
    in most fields), rules and imposed assets (ids)."""
    out: dict[str, Any] = {}
    if defaults is not None:
        master = defaults.document.get("master")
        found = runai_defaults(
            strip_nulls(defaults.document.get("spec")),
            strip_nulls(master.get("spec")) if isinstance(master, Mapping) else None,
        )
        if found:
            out["defaults"] = found
    found = _with_attributes(out.get("defaults", {}), policy)
    if found:
        out["defaults"] = found
    if policy is not None:
        out |= _rules_and_assets(ctx, policy) | _status(policy, place)
    return out


def _rules_and_assets(ctx: Ctx, policy: PolicyRow) -> dict[str, Any]:
    """A stored policy's ``rules`` and ``imposedAssets`` (ids), in Run:ai's shape of its kind."""
    out: dict[str, Any] = {}
    rules = policy.document.get("rules")
    if isinstance(rules, Mapping) and rules:
        out["rules"] = copy.deepcopy(dict(rules))
    imposed = policy.document.get("imposedAssets")
    if isinstance(imposed, Mapping | list):
        ids = _imposed_ids(imposed, _asset_ids(ctx, _imposed_names(imposed)), kind_named(policy.kind))
        if ids:
            out["imposedAssets"] = ids
    return out


def _status(policy: PolicyRow, place: Placement) -> dict[str, Any]:
    """Run:ai's ``PolicyValidationStatus`` of a stored policy that no longer reads (none when it does)."""
    read = stored_policy(policy, place.scope())
    if isinstance(read, list):
        return {"status": {"validation": {"errorMessage": "; ".join(p.message for p in read)}}}
    return {}


def _kind_form(ctx: Ctx, policy: PolicyRow | None) -> dict[str, Any]:
    """A stored policy of a kind but distributed as a request's ``policy``: its file's ``defaults`` in
    Run:ai's shape of the kind (keyed lists itemized), its rules and imposed assets (ids)."""
    if policy is None:
        return {}
    kind = kind_named(policy.kind)
    out: dict[str, Any] = {}
    defaults = strip_nulls(policy.document.get("defaults"))
    if isinstance(defaults, Mapping) and defaults:
        by_role = defaults if kind.roled_policy else {kind.primary: defaults}
        found = kind_defaults(kind, by_role)
        if found:
            out["defaults"] = found
    return out | _rules_and_assets(ctx, policy)


def _effective(ctx: Ctx, place: Placement, kind: WorkloadKind = DISTRIBUTED) -> dict[str, Any]:
    """The effective policy of ``kind`` of ``place``: the merged defaults of its scopes, and every rule and
    imposed asset of its branch, each rule with its ``sourceOfRule``."""
    org = org_for(ctx, place, None)
    view = place.view()
    chain = [found for scope in view.chain() if (found := org.policy_of(scope, kind)) is not None]
    policy = effective(chain, kind=kind)
    sources = _source_of(place)
    ids = _asset_ids(ctx, {i.name for i in policy.imposed})
    shape = effective_shape(policy, lambda scope: sources[scope], lambda name: ids.get(name, ""))
    imposed = shape.get("imposedAssets")
    if isinstance(imposed, Mapping):
        shape["imposedAssets"] = {replica: [i for i in found if i] for replica, found in imposed.items()}
    elif isinstance(imposed, list):
        shape["imposedAssets"] = [i for i in imposed if i]
    if kind is DISTRIBUTED:
        worker = merge_layers(SPEC_PLAN, default_layers(org, view, False)).spec
        master = merge_layers(SPEC_PLAN, default_layers(org, view, True)).spec
        merged = runai_defaults(worker, master)
    else:
        by_role = {
            role: merge_layers(kind.plan(role), default_layers(org, view, index > 0, kind)).spec
            for index, role in enumerate(kind.roles)
        }
        merged = kind_defaults(kind, by_role)
    defaults = merge_patch(merged, shape.pop("defaults", {}))
    return ({"defaults": defaults} if defaults else {}) | shape


def policy_version(policy_at: int, defaults_at: int) -> int:
    """The version of a scope's policy over HTTP (its ETag): one number for the versions its two stored
    documents are at (:meth:`~..storage.repository.Repository.policy_at`, ``defaults_at``: 0 for one it
    never had, a deleted one's tombstone's otherwise), so that a change to either, through a policy route or
    ``/api/v1/defaults``, changes it.  Cantor's pairing, so no two pairs share a number: no policy and no
    defaults is 0, a first policy document alone 1, first defaults alone 2, both 4.  Neither version goes
    back, even after a delete, so neither does the pair: an ETag once given never names another policy."""
    p, d = policy_at, defaults_at
    return (p + d) * (p + d + 1) // 2 + d


def policy_body(ctx: Ctx, place: Placement, kind: WorkloadKind = DISTRIBUTED) -> tuple[dict[str, Any], int]:
    """``DistributedPolicyV2`` of ``place``: ``meta`` and ``policy`` when the scope has a policy or defaults
    of its own, ``effective`` always, ``effectiveUpdatedAt`` when any scope of its branch has either; and
    :func:`policy_version` of the very rows ``policy`` was made of.  Another ``kind``'s
    (``TrainingPolicyV2``...): of its policy alone, whose version is its row's."""
    if kind is not DISTRIBUTED:
        return _kind_body(ctx, place, kind)
    keys = place.chain_keys()
    own_policy, policy_at = ctx.repo.policy_at(place.key)
    own_defaults, defaults_at = ctx.repo.defaults_at(place.key)
    others = [key for key in keys if key != place.key]
    policies = ctx.repo.policies(others) | ({place.key: own_policy} if own_policy else {})
    defaults = ctx.repo.defaults(others) | ({place.key: own_defaults} if own_defaults else {})
    body: dict[str, Any] = {}
    audits = [own.audit for own in (own_policy, own_defaults) if own is not None]
    if audits:
        body["meta"] = _meta(place, audits)
        body["policy"] = _own(ctx, place, own_policy, own_defaults)
    body["effective"] = _effective(ctx, place)
    stamps = [p.audit.updated_at for p in policies.values()] + [d.audit.updated_at for d in defaults.values()]
    if stamps:
        body["effectiveUpdatedAt"] = timestamp(max(stamps))
    return body, policy_version(policy_at, defaults_at)


def _kind_body(ctx: Ctx, place: Placement, kind: WorkloadKind) -> tuple[dict[str, Any], int]:
    own, version = ctx.repo.policy_at(place.key, kind=kind.name)
    others = [key for key in place.chain_keys() if key != place.key]
    policies = ctx.repo.policies(others, kind=kind.name) | ({place.key: own} if own else {})
    body: dict[str, Any] = {}
    if own is not None:
        body["meta"] = _meta(place, [own.audit], kind)
        body["policy"] = _kind_form(ctx, own) | _status(own, place)
    body["effective"] = _effective(ctx, place, kind)
    stamps = [p.audit.updated_at for p in policies.values()]
    if stamps:
        body["effectiveUpdatedAt"] = timestamp(max(stamps))
    return body, version


def request_form(
    ctx: Ctx, policy: PolicyRow | None, defaults: DefaultsRow | None, kind: WorkloadKind = DISTRIBUTED
) -> dict[str, Any]:
    """The scope's current policy as a request's ``policy`` holds it (what a PATCH resets and merges into)."""
    if kind is not DISTRIBUTED:
        return _kind_form(ctx, policy)
    out: dict[str, Any] = {}
    if defaults is not None:
        master = defaults.document.get("master")
        found = runai_defaults(
            defaults.document.get("spec"), master.get("spec") if isinstance(master, Mapping) else None
        )
        if found:
            out["defaults"] = found
    found = _with_attributes(out.get("defaults", {}), policy)
    if found:
        out["defaults"] = found
    if policy is not None:
        if "rules" in policy.document:
            out["rules"] = copy.deepcopy(policy.document["rules"])
        imposed = policy.document.get("imposedAssets")
        if isinstance(imposed, Mapping):
            out["imposedAssets"] = _imposed_ids(imposed, _asset_ids(ctx, _imposed_names(imposed)))
    return out


# -- GET /api/v2/policy: Run:ai's PolicyListResponse -------------------------------------------------------


def policy_type(kind: WorkloadKind) -> str:
    """Run:ai's ``PolicyType`` of ``kind``'s policy (``training``, ``distributedInference``): its
    ``workloadType`` (``WorkloadKind.policy_type``) in lower camel case, as Run:ai's enum spells it."""
    return kind.policy_type[:1].lower() + kind.policy_type[1:]


def _placement_of(ctx: Ctx, key: str) -> Placement:
    scope_type, _, ident = key.partition(":")
    return ctx.placement(scope_type, int(ident) if ident else None)


def policy_list(
    ctx: Ctx, kinds: Sequence[WorkloadKind], wanted: Callable[[Placement], bool]
) -> list[dict[str, Any]]:
    """Run:ai's ``PolicyListEntry`` of every policy of ``kinds`` the caller may read, at the scopes
    ``wanted`` keeps, kind by kind (:data:`~template_engine.kinds.KINDS`' order), then by scope: ``type``,
    ``meta`` (as the kind's route answers it) and, for a stored policy that no longer reads, ``status``.  A
    scope has a distributed policy when it has a policy document or a defaults document of its own (what
    ``GET /api/v2/policy/distributed`` answers with a ``meta``)."""
    out: list[dict[str, Any]] = []
    for kind in kinds:
        audits: dict[str, list[Audit]] = {}
        rows: dict[str, PolicyRow] = {}
        for row in ctx.repo.all_policies(kind.name):
            audits.setdefault(row.scope_key, []).append(row.audit)
            rows[row.scope_key] = row
        if kind is DISTRIBUTED:
            for defaults in ctx.repo.all_defaults():
                audits.setdefault(defaults.scope_key, []).append(defaults.audit)
        for key in sorted(audits, key=lambda k: (k.partition(":")[0] != "system", k)):
            place = _placement_of(ctx, key)
            if not wanted(place) or not ctx.access.can_read(place.ref):
                continue
            entry: dict[str, Any] = {"type": policy_type(kind), "meta": _meta(place, audits[key], kind)}
            held = rows.get(key)
            if held is not None:
                entry |= _status(held, place)
            out.append(entry)
    return out


#: Run:ai's workload types, one per kind, in the order of the kinds.
WORKLOAD_TYPES = [kind.workload_type for kind in KINDS]


def listed_policies(
    ctx: Ctx,
    workload_type: str | None,
    scope: str | None,
    department_id: str | None,
    project_id: str | None,
    cluster_id: str | None = None,
) -> list[dict[str, Any]]:
    """The policies of every kind the caller may read (Run:ai's ``PolicyListResponse`` entries): those of
    ``workload_type``'s kind (a 400 for another type), of ``scope`` (``tenant`` is the system), of the
    cluster ``cluster_id`` (a UUID) and the scopes below it, of the department ``department_id`` and its
    projects, of the project ``project_id``."""
    if workload_type is not None and workload_type not in WORKLOAD_TYPES:
        refuse(
            [
                Problem(
                    f"unknown workloadType {workload_type!r}",
                    ("workloadType",),
                    None,
                    "one of: " + ", ".join(WORKLOAD_TYPES),
                )
            ]
        )
    kinds = [kind for kind in KINDS if workload_type in (None, kind.workload_type)]
    level = scope_type_of(scope) if scope is not None else None

    def wanted(place: Placement) -> bool:
        if level is not None and place.type != level:
            return False
        if cluster_id is not None and (place.cluster is None or place.cluster.uuid != cluster_id.lower()):
            return False
        if department_id is not None and (
            place.department is None or str(place.department.id) != department_id
        ):
            return False
        return project_id is None or (place.project is not None and str(place.project.id) == project_id)

    return policy_list(ctx, kinds, wanted)
