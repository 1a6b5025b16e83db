"""The contract's layer table: which layers make a spec, in which order, and who decides the master's shape.

DESIGN.md "Layers and precedence", lowest precedence first::

    scope defaults      system, then the department, then the project (``spec`` or ``master.spec``)
    imposed assets      the data sources the view's policies impose (POLICY.md), system first
    template assets     environment, compute, then each data source (and its ``overrides.containerPath``)
    template            the template's ``spec`` (``master.spec`` for the master)
    submission          a workload submission's ``spec`` (``masterSpec``), service only

:data:`ORDER` is that table as data, :data:`POLICY_SIDE` and :data:`REQUEST_SIDE` its two halves (what the
platform sets, what the person who picks a template or submits brings); :func:`worker_layers` and
:func:`master_layers` read it, and :func:`same_as_worker` resolves ``masterSpecSameAsWorker`` along the same
order.  Everything here is pure: the layers are built from an :class:`~template_engine.org.Org`, merged
elsewhere.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from template_engine.errors import CompositionError, Location, NotFoundError, Problem, Replica
from template_engine.kinds import DISTRIBUTED, WorkloadKind
from template_engine.merge.engine import Layer
from template_engine.models.data_sources import CONTAINER_PATH_FIELD
from template_engine.models.documents import ASSET_FOLDERS, AssetKind, DatasourceAsset, TemplateAssets
from template_engine.org import (
    Asset,
    Defaults,
    Org,
    Scope,
    Template,
    View,
    asset_ref,
    defaults_ref,
    out_of_scope,
    policy_ref,
    policy_user,
    template_user,
)
from template_engine.paths import Match, Path, value_at
from template_engine.policy.document import ImposedAsset
from template_engine.policy.effective import EffectivePolicy, effective

__all__ = [
    "CONTAINER_PATH_FIELD",
    "ORDER",
    "POLICY_SIDE",
    "REQUEST_SIDE",
    "NotApplied",
    "SameAsWorker",
    "Submission",
    "asset_layer",
    "default_layers",
    "effective_policy",
    "has_own_master",
    "imposed_items",
    "master_layers",
    "not_applied",
    "policy_side_layers",
    "same_as_worker",
    "scope_label",
    "worker_layers",
]


@dataclass(frozen=True, slots=True)
class Submission:
    """A workload submission's own layer (service only): the highest precedence of all."""

    spec: Mapping[str, Any] | None = None
    master_same_as_worker: bool | None = None
    master_spec: Mapping[str, Any] | None = None
    label: str = "workload submission"
    file: str = "request body"
    #: The workload's name: the name of its job on the cluster (docs/cluster.md).
    name: str | None = None


def scope_label(scope: Scope) -> str:
    """The label of a scope's defaults layer: ``system defaults``, ``department research defaults``..."""
    return "system defaults" if scope.name is None else f"{scope.type} {scope.name} defaults"


def _section(data: Mapping[str, Any], *names: str) -> Mapping[str, Any] | None:
    """``data[names[0]][names[1]]...`` where every step is a mapping, else ``None`` (null is no opinion)."""
    value = value_at(data, *names)
    return value if isinstance(value, Mapping) and value else None


# -- kinds: what a layer written for every kind gives one kind ----------------------------------------------


def role_of(kind: WorkloadKind, master: bool) -> Replica:
    """The role a composition's spec is of: the kind's first, or (``master``) its second."""
    return kind.roles[1] if master and len(kind.roles) > 1 else kind.primary


@dataclass(frozen=True, slots=True)
class NotApplied:
    """A field a layer gives that the kind's spec does not have: it is left out of that kind's compositions
    (issue 32: nothing is dropped silently; ``explain`` says it)."""

    kind: WorkloadKind
    field: str
    location: Location

    def message(self) -> str:
        return (
            f"{self.field} is not applied to {self.kind.a_noun}: Run:ai's {self.kind.noun} spec has no field "
            f"{self.field!r}"
        )


def _for_kind(layer: Layer, kind: WorkloadKind, role: Replica) -> Layer:
    """``layer`` as ``kind``'s ``role`` takes it: the fields its spec does not have left out (the same layer
    when it has them all, as a distributed composition always does)."""
    fields = kind.fields(role)
    if all(name in fields for name in layer.spec):
        return layer
    kept = {name: value for name, value in layer.spec.items() if name in fields}
    return Layer(layer.label, layer.file, kept, layer.lines, layer.root, layer.kind)


def _left_out(layer: Layer, kind: WorkloadKind, role: Replica) -> list[NotApplied]:
    fields = kind.fields(role)
    return [
        NotApplied(kind, name, layer.location((name,)))
        for name, value in layer.spec.items()
        if name not in fields and value is not None
    ]


def not_applied(
    org: Org, template: Template | None, view: View, kind: WorkloadKind, submission: Submission | None = None
) -> tuple[NotApplied, ...]:
    """The fields the layers of a composition of ``kind`` give that its spec does not have, lowest layer
    first: a shared default's ``backoffLimit`` in an inference, an environment asset's ``stdin``..."""
    out: list[NotApplied] = []
    for master in (False, True) if kind.is_distributed else (False,):
        role = role_of(kind, master)
        for source in ORDER:
            for layer in source(org, template, view, submission, master, None):
                out += _left_out(layer, kind, role)
    return tuple(out)


# -- the sources, one per row of the table ------------------------------------------------------------------


def default_layers(
    org: Org, view: View, master: bool, kind: WorkloadKind | None = DISTRIBUTED
) -> list[Layer]:
    """The ``spec`` (``master.spec``) of each scope's defaults along ``view``, system first; for a ``kind``
    but distributed, each followed by the value defaults of the scope's policy of that kind (a kind's own
    defaults: docs/concepts.md, "One default, every kind").  ``kind`` ``None``: the shared defaults as
    written, for every kind."""
    layers = []
    root: tuple[str, ...] = ("master", "spec") if master else ("spec",)
    role = role_of(kind or DISTRIBUTED, master)
    for scope in view.chain():
        org.require_intact(defaults_ref(scope))
        entry = org.defaults.get(scope)
        if entry is not None:
            spec = _section(entry.source.data, *root)
            if spec is not None:
                layer = Layer(
                    scope_label(scope), entry.source.file, spec, entry.source.lines, root, scope.type
                )
                layers.append(layer if kind is None else _for_kind(layer, kind, role))
        if kind is not None and kind is not DISTRIBUTED:
            layers += _kind_defaults(org, scope, kind, role)
    return layers


def _kind_defaults(org: Org, scope: Scope, kind: WorkloadKind, role: Replica) -> list[Layer]:
    """The value defaults of ``scope``'s policy of ``kind`` for ``role`` (its ``defaults``), if any."""
    org.require_intact(policy_ref(scope, kind.name))
    policy = org.policy_of(scope, kind)
    if policy is None:
        return []
    found = policy.value_defaults.get(role)
    if not found:
        return []
    label = f"{scope_label(scope).removesuffix(' defaults')} {kind.name} policy defaults"
    return [Layer(label, policy.file, found, policy.lines, policy.value_default_roots[role], scope.type)]


def scope_defaults(
    org: Org,
    template: Template | None,
    view: View,
    submission: Submission | None,
    master: bool,
    kind: WorkloadKind | None = DISTRIBUTED,
) -> list[Layer]:
    """The scope defaults: system, then the view's department, then its project."""
    return default_layers(org, view, master, kind)


def effective_policy(org: Org, view: View, kind: WorkloadKind = DISTRIBUTED) -> EffectivePolicy:
    """The policies of ``kind`` of the view's branch (system, department, project); a broken one fails the
    composition."""
    chain = []
    for scope in view.chain():
        org.require_intact(policy_ref(scope, kind.name))
        found = org.policy_of(scope, kind)
        if found is not None:
            chain.append(found)
    return effective(chain, kind=kind)


def _imposed(
    org: Org, view: View, master: bool, kind: WorkloadKind = DISTRIBUTED
) -> list[tuple[ImposedAsset, Asset, str, dict[str, Any]]]:
    """Each imposed data source of the view: its asset, storage kind and item (keyed by the asset name)."""
    out = []
    for imposed in effective_policy(org, view, kind).imposed_on(role_of(kind, master)):
        org.require_intact(asset_ref("datasource", imposed.name))
        asset = org.asset("datasource", imposed.name)
        user = policy_user(imposed.scope)
        problem = out_of_scope(
            asset, user, org.chain_of(imposed.scope), ("imposedAssets", imposed.replica), imposed.location
        )
        if problem is not None:
            raise CompositionError([problem])
        storage = asset.source.data["spec"]["storage"]
        storage_kind = next(k for k, v in storage.items() if v)
        item = dict(storage[storage_kind][0])
        own_key = "id" if storage_kind == "dataVolume" else "name"
        if item.get(own_key) is None:
            item[own_key] = imposed.name
        out.append((imposed, asset, storage_kind, item))
    return out


def imposed_assets(
    org: Org,
    template: Template | None,
    view: View,
    submission: Submission | None,
    master: bool,
    kind: WorkloadKind | None = DISTRIBUTED,
) -> list[Layer]:
    """The data sources the view's policies impose (``imposedAssets.worker``, or ``.master``)."""
    policy = "policy" if kind is None or kind is DISTRIBUTED else f"{kind.name} policy"
    return [
        Layer(
            f"datasource asset {imposed.name} (imposed by the {imposed.scope} {policy})",
            asset.source.file,
            {"storage": {storage: [item]}},
            asset.source.lines,
            ("spec",),
            "imposed",
        )
        for imposed, asset, storage, item in _imposed(org, view, master, kind or DISTRIBUTED)
    ]


def imposed_items(
    org: Org, view: View, master: bool, kind: WorkloadKind = DISTRIBUTED
) -> dict[tuple[Path, Match], ImposedAsset]:
    """The items imposed assets bring, by (keyed list path, item key): protected as if locked."""
    out: dict[tuple[Path, Match], ImposedAsset] = {}
    for imposed, _asset, storage, item in _imposed(org, view, master, kind):
        own_key = "id" if storage == "dataVolume" else "name"
        out[(("storage", storage), Match(own_key, item[own_key]))] = imposed
    return out


def template_assets(
    org: Org,
    template: Template | None,
    view: View,
    submission: Submission | None,
    master: bool,
    kind: WorkloadKind | None = DISTRIBUTED,
) -> list[Layer]:
    """The assets the template names (``assets``, or ``master.assets``); an asset's fields that ``kind``'s
    spec does not have are left out (``kind`` ``None``: as written)."""
    if template is None:
        return []
    if not master:
        layers = _asset_layers(org, template.doc.assets, template, ("assets",))
    elif template.doc.master is None:
        return []
    else:
        layers = _asset_layers(org, template.doc.master.assets, template, ("master", "assets"))
    if kind is None or kind is DISTRIBUTED:
        return layers
    return [_for_kind(layer, kind, role_of(kind, master)) for layer in layers]


def template_spec(
    org: Org,
    template: Template | None,
    view: View,
    submission: Submission | None,
    master: bool,
    kind: WorkloadKind | None = DISTRIBUTED,
) -> list[Layer]:
    """The template's own ``spec`` (``master.spec``)."""
    if template is None:
        return []
    written = template.source
    if master:
        own = _section(written.data, "master", "spec") if template.doc.master is not None else None
        if own is None:
            return []
        label = f"template {template.name} master"
        return [Layer(label, written.file, own, written.lines, ("master", "spec"), "template")]
    if not written.data.get("spec"):
        return []
    return [
        Layer(
            f"template {template.name}",
            written.file,
            written.data["spec"],
            written.lines,
            ("spec",),
            "template",
        )
    ]


def submission_spec(
    org: Org,
    template: Template | None,
    view: View,
    submission: Submission | None,
    master: bool,
    kind: WorkloadKind | None = DISTRIBUTED,
) -> list[Layer]:
    """A workload submission's ``spec`` (``masterSpec``)."""
    if submission is None:
        return []
    if master:
        if not submission.master_spec:
            return []
        label = f"{submission.label} master"
        return [Layer(label, submission.file, submission.master_spec, {}, ("masterSpec",))]
    if not submission.spec:
        return []
    return [Layer(submission.label, submission.file, submission.spec, {}, ("spec",))]


#: One row of the table: ``(org, template, view, submission, master, kind)`` -> its layers, lowest first
#: (``kind`` ``None``: every field as written, whatever the kind has).
LayerSource = Callable[
    [Org, Template | None, View, Submission | None, bool, WorkloadKind | None], list[Layer]
]

#: What the platform sets (POLICY.md "Two sides of every composition"): the same for every template seen from
#: one view, so their merge can be shared (``merge_layers(..., start=)``), and it is the policy-side value.
POLICY_SIDE: tuple[LayerSource, ...] = (scope_defaults, imposed_assets)
#: What the person who picks a template or submits a workload brings.
REQUEST_SIDE: tuple[LayerSource, ...] = (template_assets, template_spec, submission_spec)
#: The contract's layer order, lowest precedence first.
ORDER: tuple[LayerSource, ...] = POLICY_SIDE + REQUEST_SIDE


def policy_side_layers(org: Org, view: View, master: bool, kind: WorkloadKind = DISTRIBUTED) -> list[Layer]:
    """The policy side's layers of every composition of ``kind`` seen from ``view``, lowest first."""
    layers: list[Layer] = []
    for source in POLICY_SIDE:
        layers += source(org, None, view, None, master, kind)
    return layers


def worker_layers(
    org: Org,
    template: Template | None,
    view: View,
    submission: Submission | None = None,
    defaults: Sequence[Layer] | None = None,
    kind: WorkloadKind = DISTRIBUTED,
) -> list[Layer]:
    """The worker spec's layers (a kind's first role), lowest precedence first.

    ``defaults``, the policy-side layers when the caller already has them (the same objects its merge of them
    holds, see :func:`policy_side_layers`), stand in for the rows of :data:`POLICY_SIDE`.
    """
    return _layers(org, template, view, submission, False, defaults, kind)


def master_layers(
    org: Org,
    template: Template | None,
    view: View,
    submission: Submission | None = None,
    defaults: Sequence[Layer] | None = None,
    kind: WorkloadKind = DISTRIBUTED,
) -> list[Layer]:
    """The master spec's layers, lowest precedence first, for a master composed on its own (see
    :func:`has_own_master`); ``defaults`` as for :func:`worker_layers`."""
    return _layers(org, template, view, submission, True, defaults, kind)


def _layers(
    org: Org,
    template: Template | None,
    view: View,
    submission: Submission | None,
    master: bool,
    defaults: Sequence[Layer] | None,
    kind: WorkloadKind,
) -> list[Layer]:
    if defaults is not None:
        layers = list(defaults)
    else:
        layers = []
        for source in POLICY_SIDE:
            layers += source(org, template, view, submission, master, kind)
    for source in REQUEST_SIDE:
        layers += source(org, template, view, submission, master, kind)
    return layers


# -- the master's topology ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SameAsWorker:
    """``masterSpecSameAsWorker`` resolved along the layer order, and who decided it."""

    value: bool
    #: The layer that decided: the submission, the template, the nearest scope defaults that set the flag,
    #: or ``None`` (nobody did: the contract's default, true).
    decided_by: Submission | Template | Defaults | None
    #: The nearest scope defaults that set the flag, whether or not the template or the submission overrule
    #: them (``None``: no defaults did).
    defaults: Defaults | None


def same_as_worker(
    org: Org,
    template: Template | None,
    view: View,
    submission: Submission | None = None,
    kind: WorkloadKind = DISTRIBUTED,
) -> SameAsWorker:
    """Resolve ``masterSpecSameAsWorker``: scope defaults (system, department, project), then the template,
    then the submission; true when none sets it.  A submission that says true and gives a ``masterSpec`` is
    a :class:`~template_engine.errors.CompositionError`.  A kind without a master: true, decided by none."""
    value = True
    if not kind.is_distributed:
        return SameAsWorker(True, None, None)
    decided_by: Submission | Template | Defaults | None = None
    defaults: Defaults | None = None
    for scope in view.chain():
        entry = org.defaults.get(scope)
        if entry is not None and entry.doc.masterSpecSameAsWorker is not None:
            value, decided_by, defaults = entry.doc.masterSpecSameAsWorker, entry, entry
    if template is not None and template.doc.masterSpecSameAsWorker is not None:
        value, decided_by = template.doc.masterSpecSameAsWorker, template
    if submission is not None and submission.master_same_as_worker is not None:
        value, decided_by = submission.master_same_as_worker, submission
        if value is True and submission.master_spec:
            raise CompositionError(
                [
                    Problem(
                        "masterSpecSameAsWorker is true and a masterSpec is given",
                        ("masterSpec",),
                        Location(submission.file),
                        "either masterSpecSameAsWorker false or no masterSpec",
                    )
                ]
            )
    return SameAsWorker(value, decided_by, defaults)


def has_own_master(template: Template | None, submission: Submission | None = None) -> bool:
    """Whether something above the scope defaults gives the master a spec of its own: the template's master
    section (with a spec or assets) or the submission's ``masterSpec``.  Without it, a master that is not the
    same as the worker does not exist: the template runs workers only."""
    if submission is not None and submission.master_spec:
        return True
    if template is None or template.doc.master is None:
        return False
    own = _section(template.source.data, "master", "spec")
    return own is not None or template.doc.master.assets is not None


# -- assets -------------------------------------------------------------------------------------------------


def _asset_layers(org: Org, assets: TemplateAssets | None, template: Template, root: Path) -> list[Layer]:
    if assets is None:
        return []
    layers = []
    named: tuple[tuple[AssetKind, str | None], ...] = (
        ("environment", assets.environment),
        ("compute", assets.compute),
    )
    for asset_kind, name in named:
        if name is None:
            continue
        layers.append(asset_layer(_asset(org, asset_kind, name, template, (*root, asset_kind))))
    for index, ref in enumerate(assets.datasources or ()):
        asset = _asset(org, "datasource", ref.name, template, (*root, "datasources", index, "name"))
        assert isinstance(asset.doc, DatasourceAsset)
        layer = asset_layer(asset)
        layers.append(layer)
        ((kind, (item,)),) = layer.spec["storage"].items()
        own_key = "id" if kind == "dataVolume" else "name"
        if ref.overrides is not None and ref.overrides.containerPath is not None:
            override = {own_key: item[own_key], CONTAINER_PATH_FIELD[kind]: ref.overrides.containerPath}
            layers.append(
                Layer(
                    f"template {template.name} (containerPath of {ref.name})",
                    template.source.file,
                    {"storage": {kind: [override]}},
                    template.source.lines,
                    (*root, "datasources", index, "overrides", "containerPath"),
                    "template",
                )
            )
    return layers


def asset_layer(asset: Asset) -> Layer:
    """The layer an asset is in a composition: an environment's or a compute's ``spec``; a data source's
    one item under its ``storage`` kind, keyed by the asset's name (``id`` of a ``dataVolume``) when it has
    none."""
    if asset.kind != "datasource":
        data = asset.source.data.get("spec") or {}
        label = f"{asset.kind} asset {asset.name}"
        return Layer(label, asset.source.file, data, asset.source.lines, ("spec",), asset.kind)
    storage = asset.source.data["spec"]["storage"]
    kind = next(k for k, v in storage.items() if v)
    item = dict(storage[kind][0])
    own_key = "id" if kind == "dataVolume" else "name"
    if item.get(own_key) is None:
        item[own_key] = asset.name
    return Layer(
        f"datasource asset {asset.name}",
        asset.source.file,
        {"storage": {kind: [item]}},
        asset.source.lines,
        ("spec",),
        "datasource",
    )


def _asset(org: Org, kind: AssetKind, name: str, template: Template, path: Path) -> Asset:
    org.require_intact(asset_ref(kind, name))
    try:
        asset = org.asset(kind, name)
    except NotFoundError:
        line = template.source.lines.get(path)
        raise CompositionError(
            [
                Problem(
                    f"template {template.name!r} refers to an unknown {kind} asset {name!r}",
                    path,
                    Location(template.source.file, line[0] if line else None, line[1] if line else None),
                    f"a file assets/{ASSET_FOLDERS[kind]}/{name}.yaml",
                )
            ]
        ) from None
    line = template.source.lines.get(path)
    where = Location(template.source.file, line[0] if line else None, line[1] if line else None)
    user = template_user(template.name, template.scope)
    problem = out_of_scope(asset, user, org.chain_of(template.scope), path, where)
    if problem is not None:
        raise CompositionError([problem])
    return asset
