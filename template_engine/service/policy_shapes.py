"""The policy routes' shapes: Run:ai's request bodies of each kind's policy
(``<Kind>PolicyOverwriteRequestV2``, ``<Kind>PolicyChangeRequestV2``), its ``PolicyListResponse``, and what
each kind's routes say of themselves in the OpenAPI document.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, create_model

from template_engine.kinds import DISTRIBUTED, KINDS, WorkloadKind
from template_engine.service.policy_api import policy_type
from template_engine.service.schemas import PolicyChange, PolicyIn, PolicyMetaOut, PolicyOverwrite


@dataclass(frozen=True, slots=True)
class Texts:
    """What the routes of a kind's policy say of themselves in the OpenAPI document."""

    get: str
    put: str
    patch: str
    delete: str


_DISTRIBUTED_TEXTS = Texts(
    get=(
        "The policy of a scope (``meta`` and ``policy``, when it has one of its own) and its effective "
        "policy: the merged defaults, and every rule and imposed data source of its branch, each rule "
        'with its ``sourceOfRule``.  The ETag (:func:`~..policy_api.policy_version`; ``"0"``: the scope '
        "never had a policy or defaults of its own) is for ``If-Match``."
    ),
    put=(
        "Replace a scope's policy: its rules, imposed data sources and defaults (what ``policy`` does not"
        " give is removed; the defaults' ``masterSpecSameAsWorker`` is kept)."
    ),
    patch=(
        "Change a scope's policy: clear the policy (defaults and rules) of the fields at the ``reset`` "
        "paths (Run:ai's ``worker.compute.gpuDevicesRequest``, or the service's ``rules.worker.tty``: "
        ":func:`~..policy_reset.reset_targets`), then merge ``policy`` in (objects field by field, lists "
        "whole; ``null`` changes nothing)."
    ),
    delete=(
        "Remove a scope's policy: its rules, imposed data sources and defaults (the defaults' "
        "``masterSpecSameAsWorker`` is kept)."
    ),
)


def texts_of(kind: WorkloadKind) -> Texts:
    if kind is DISTRIBUTED:
        return _DISTRIBUTED_TEXTS
    shape = "split by leader and worker" if kind.roled_policy else "flat (no roles)"
    field = f"{kind.primary}.compute.gpuDevicesRequest" if kind.roled_policy else "compute.gpuDevicesRequest"
    noun = kind.noun
    return Texts(
        get=f"The {noun} policy of a scope (``meta`` and ``policy``, when it has one of its own: Run:ai's "
        f"{kind.policy_type}PolicyV2, {shape}) and its effective policy: the defaults {kind.a_noun} gets "
        f"from the policy side (each scope's shared defaults on the {noun}'s fields, then its {noun} "
        "policy's), and every rule and imposed data source of its branch, each rule with its "
        '``sourceOfRule``.  The ETag (the policy\'s version; ``"0"``: the scope never had one) is for '
        "``If-Match``.",
        put=f"Replace a scope's {noun} policy: its defaults (the {noun}'s own), rules and imposed data "
        "sources (what ``policy`` does not give is removed).  The scope's shared defaults are not touched.",
        patch=f"Change a scope's {noun} policy: clear the policy (defaults and rules) of the fields at "
        f"the ``reset`` paths (Run:ai's ``{field}``, or a path under defaults, rules or imposedAssets), then "
        "merge ``policy`` in (objects field by field, lists whole; ``null`` changes nothing).",
        delete=f"Remove a scope's {noun} policy: its defaults, rules and imposed data sources.",
    )


class _RolesIn(BaseModel):
    """A body's part per role (``imposedAssets`` of a distributed inference): no other key."""

    model_config = ConfigDict(extra="forbid")


def body_models(kind: WorkloadKind) -> tuple[type[PolicyOverwrite], type[PolicyChange]]:
    """Run:ai's ``<Kind>PolicyOverwriteRequestV2`` and ``<Kind>PolicyChangeRequestV2`` of ``kind``: the
    distributed ones as they are; another kind's ``policy.imposedAssets`` per its roles
    (``DistributedInferenceImposedAssets``) or one list of ids for a flat policy (``ImposedAssets``)."""
    if kind is DISTRIBUTED:
        return PolicyOverwrite, PolicyChange
    name = kind.policy_type
    roles: dict[str, Any] = {role: (list[str] | None, None) for role in kind.roles}
    imposed: Any = (
        create_model(
            f"{name}ImposedAssetsIn",
            __base__=_RolesIn,
            __doc__=f"Run:ai's {name}ImposedAssets: data source asset ids, per role.",
            **roles,
        )
        if kind.roled_policy
        else list[str]
    )
    policy_in = create_model(
        f"{name}PolicyIn",
        __base__=PolicyIn,
        __doc__=f"Run:ai's {name}PolicyDefaultsAndRulesV2, read as a {kind.policy_file} is: ``defaults`` "
        "(the kind's own value defaults, keyed lists as ``{instances: [...]}``, and attribute defaults), "
        "``rules`` in the kind's vocabulary, ``imposedAssets`` as asset ids.",
        rules=(
            dict[str, Any] | None,
            Field(default=None, description=f"Run:ai's {name}PolicyRulesV2, read as {kind.policy_file} is."),
        ),
        imposedAssets=(imposed | None, None),
    )
    overwrite = create_model(
        f"{name}PolicyOverwrite",
        __base__=PolicyOverwrite,
        __doc__=f"Run:ai's {name}PolicyOverwriteRequestV2.",
        policy=(policy_in | None, None),
    )
    change = create_model(
        f"{name}PolicyChange",
        __base__=PolicyChange,
        __doc__=f"Run:ai's {name}PolicyChangeRequestV2: ``reset``, then ``policy`` merged in.",
        policy=(policy_in | None, None),
    )
    return overwrite, change


class PolicyListEntryOut(BaseModel):
    """Run:ai's ``PolicyListEntry``: a policy's type (``PolicyType``), its ``meta`` and, when the stored
    policy no longer reads, its ``status``."""

    type: str = Field(json_schema_extra={"enum": [policy_type(kind) for kind in KINDS]})
    meta: PolicyMetaOut
    status: dict[str, Any] | None = None


class PolicyListOut(BaseModel):
    """Run:ai's ``PolicyListResponse``."""

    policies: list[PolicyListEntryOut]
