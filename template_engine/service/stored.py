"""Database rows into the engine's :class:`~template_engine.org.Org`: the one builder.

A composition reads the few rows of one view (:func:`template_engine.service.composer.org_for`), ``impact``
and validateOnly read every row (:func:`template_engine.service.impact.stored_org`); both make their ``Org``
here, so a stored document means the same to both: each row is a ``Source`` named ``db:<table>/<key>``,
validated by its model (cached by row identity and version), and a document the engine no longer accepts is
broken exactly as a broken file of a folder is (a defaults layer then counts as empty, an asset or a
template is left out, a policy is a broken policy reference).  An asset's scope is its row's columns
(:func:`asset_scope`), as a file's is its folder.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from template_engine.cluster.settings import DEFAULT_SETTINGS, ClusterSettings
from template_engine.errors import Location, Problem
from template_engine.kinds import DISTRIBUTED, kind_named
from template_engine.models.documents import ASSET_MODELS, AssetKind, LayerDocument
from template_engine.org import (
    SYSTEM,
    Asset,
    ClusterEntry,
    Defaults,
    Org,
    Scope,
    Source,
    Template,
    policy_ref,
)
from template_engine.policy.document import PolicyDocument
from template_engine.service.cache import CACHE, MODEL_BYTES_PER_JSON_BYTE, json_size
from template_engine.service.policy_store import OrgUnits, policy_file, stored_policy
from template_engine.service.storage.repository import (
    AssetRow,
    Audit,
    ClusterRow,
    ClusterUnitRow,
    DefaultsRow,
    PolicyRow,
    Repository,
    TemplateRow,
)

M = TypeVar("M", bound=BaseModel)


def stored_model(model: type[M], kind: str, key: str, audit: Audit, data: Any) -> M | list[Problem]:
    """The validated document of a row, or the problems that keep it from being used; cached by the row's
    identity and version (a document that is only being previewed is not cached: :data:`CACHE`)."""

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


def defaults_source(key: str, row: DefaultsRow) -> Source:
    return Source(f"db:defaults/{key}", row.document, {})


def asset_source(row: AssetRow) -> Source:
    return Source(f"db:assets/{row.id}", row.document, {})


#: The name of an org unit by its kind (``department``, ``project``) and id.
UnitName = Callable[[str, int], str]


def asset_scope(row: AssetRow, name_of: UnitName) -> Scope:
    """The scope of a stored asset, from its columns (``tables.assets.scope_type``, ``department_id``,
    ``project_id``; Run:ai's ``AssetMeta.scope``): ``tenant`` is the system scope; a department's and a
    project's are named by ``name_of``."""
    unit = row.unit_id
    return Scope(row.scope_type, name_of(row.scope_type, unit)) if unit is not None else SYSTEM  # type: ignore[arg-type]


def stored_asset(row: AssetRow, scope: Scope) -> Asset | list[Problem]:
    """The asset of ``row`` in ``scope``, or the problems of a stored document the engine no longer reads."""
    kind: AssetKind = row.kind  # type: ignore[assignment]
    source = asset_source(row)
    doc = stored_model(ASSET_MODELS[kind], "asset", row.id, row.audit, row.document)
    if isinstance(doc, list):
        return doc
    return Asset(kind, row.name, source, doc, scope)


def stored_assets(repo: Repository) -> tuple[dict[AssetKind, dict[str, Asset]], set[str]]:
    """Every stored asset the engine reads, by kind and name, each in its scope; and the names of those it
    no longer reads."""
    units = OrgUnits.read(repo)
    assets: dict[AssetKind, dict[str, Asset]] = {}
    broken: set[str] = set()
    for row in repo.assets():
        asset = stored_asset(row, asset_scope(row, units.name_of))
        if isinstance(asset, list):
            broken.add(row.name)
        else:
            assets.setdefault(asset.kind, {})[asset.name] = asset
    return assets, broken


def template_source(row: TemplateRow) -> Source:
    return Source(f"db:templates/{row.id}", row.document, {})


#: The name the stored cluster settings go by, as a ``cluster.yaml`` goes by its file name.
CLUSTER_SOURCE = "db:cluster-settings"


def cluster_unit_file(name: str) -> str:
    """The file that names a cluster's stored settings in problems and sources."""
    return f"db:clusters/{name}"


def stored_cluster_unit(
    row: ClusterUnitRow, departments: tuple[str, ...]
) -> tuple[ClusterEntry, list[Problem]]:
    """A cluster of the org from its row: its departments and its settings (their defaults when none are
    stored, or when the stored ones are no longer valid: then the problems are the cluster's broken file
    ``db:clusters/NAME``)."""
    if row.settings is None:
        return ClusterEntry(row.name, departments), []
    file = cluster_unit_file(row.name)
    audit = replace(row.audit, version=row.settings_version)
    settings = stored_model(ClusterSettings, "cluster-unit", str(row.id), audit, row.settings)
    if isinstance(settings, list):
        return ClusterEntry(row.name, departments), [
            Problem(p.message, p.path, Location(file)) for p in settings
        ]
    return ClusterEntry(row.name, departments, settings, Source(file, row.settings, {})), []


def stored_cluster(row: ClusterRow | None) -> tuple[ClusterSettings, Source | None, list[Problem]]:
    """The org's cluster settings from their row (the defaults when there is none), their source, and the
    problems of a stored document the engine no longer accepts (the defaults are then used, and the problems
    are the org's broken file ``db:cluster-settings``)."""
    if row is None:
        return DEFAULT_SETTINGS, None, []
    source = Source(CLUSTER_SOURCE, row.document, {})
    settings = stored_model(ClusterSettings, "cluster", "1", row.audit, row.document)
    if isinstance(settings, list):
        return (
            DEFAULT_SETTINGS,
            None,
            [Problem(p.message, p.path, Location(CLUSTER_SOURCE)) for p in settings],
        )
    return settings, source, []


def kind_document(row: TemplateRow) -> dict[str, Any]:
    """The document of ``row`` as its kind's template model reads it, and as a file of a templates folder
    holds it: the stored document (which never says a kind but a distributed file's own ``kind:``) with
    the row's kind (``tables.templates.kind``) when that is not distributed."""
    kind = kind_named(row.kind)
    if kind is DISTRIBUTED:
        return row.document
    # ``kind:`` right after ``meta``, where a file of the example org says it (an export reads as written)
    head = {key: value for key, value in row.document.items() if key == "meta"}
    return {**head, "kind": kind.name, **{k: v for k, v in row.document.items() if k != "meta"}}


def stored_template(row: TemplateRow, scope: Scope) -> tuple[Template | None, list[Problem]]:
    """The template of ``row`` in ``scope``, of the row's kind, or the problems (located in its document)
    that stop it."""
    source = template_source(row)
    model = kind_named(row.kind).template_model
    assert model is not None  # a stored template is of a kind Run:ai has templates of
    doc = stored_model(model, "template", row.id, row.audit, kind_document(row))
    if isinstance(doc, list):
        return None, [Problem(p.message, p.path, Location(source.file)) for p in doc]
    return Template(row.name, scope, source, doc), []  # type: ignore[arg-type]


def org_of_rows(
    departments: Mapping[str, tuple[str, ...]],
    defaults: Iterable[tuple[Scope, DefaultsRow]],
    policies: Iterable[tuple[Scope, PolicyRow]],
    assets: Iterable[tuple[Scope, AssetRow]],
    templates: Iterable[tuple[Scope, TemplateRow]] = (),
    more_templates: Iterable[Template] = (),
    cluster: ClusterRow | None = None,
    clusters: Iterable[tuple[ClusterUnitRow, tuple[str, ...]]] = (),
) -> Org:
    """The ``Org`` of these rows (``policies``: of every kind, each row's kind its ``Org.policies`` or
    ``Org.kind_policies``; ``more_templates``: templates already made, such as a request's; ``cluster``: the
    stored cluster settings, ``None`` for the defaults)."""
    broken: dict[str, tuple[Problem, ...]] = {}
    settings, settings_source, settings_problems = stored_cluster(cluster)
    if settings_problems:
        broken[CLUSTER_SOURCE] = tuple(settings_problems)
    entries: dict[str, ClusterEntry] = {}
    for unit_row, unit_departments in clusters:
        entry, problems = stored_cluster_unit(unit_row, unit_departments)
        entries[entry.name] = entry
        if problems:
            broken[cluster_unit_file(entry.name)] = tuple(problems)
    broken_refs: dict[tuple[str, ...], str] = {}
    layers: dict[Scope, Defaults] = {}
    for scope, row in defaults:
        source = defaults_source(row.scope_key, row)
        layer = stored_model(LayerDocument, "defaults", row.scope_key, row.audit, row.document)
        if isinstance(layer, list):  # the layer counts as empty; its problems are known
            broken[source.file] = tuple(layer)
            layer = LayerDocument()
        layers[scope] = Defaults(scope, source, layer)
    rules: dict[Scope, PolicyDocument] = {}
    kind_rules: dict[tuple[Scope, str], PolicyDocument] = {}
    for scope, policy_row in policies:
        policy = stored_policy(policy_row, scope)
        file = policy_file(scope, kind_named(policy_row.kind))
        if isinstance(policy, list):
            broken[file] = tuple(policy)
            broken_refs[policy_ref(scope, policy_row.kind)] = file
        elif policy_row.kind == DISTRIBUTED.name:
            rules[scope] = policy
        else:
            kind_rules[(scope, policy_row.kind)] = policy
    found: dict[AssetKind, dict[str, Asset]] = {}
    for asset_scope_of_row, asset_row in assets:
        asset = stored_asset(asset_row, asset_scope_of_row)
        if isinstance(asset, list):
            broken[asset_source(asset_row).file] = tuple(asset)
            continue
        found.setdefault(asset.kind, {})[asset.name] = asset
    by_scope: dict[Scope, dict[str, Template]] = {}
    for scope, template_row in templates:
        template, problems = stored_template(template_row, scope)
        if template is None:
            broken[template_source(template_row).file] = tuple(Problem(p.message, p.path) for p in problems)
            continue
        by_scope.setdefault(scope, {})[template.name] = template
    for template in more_templates:
        by_scope.setdefault(template.scope, {})[template.name] = template
    return Org(
        dict(departments),
        layers,
        by_scope,
        found,
        broken,
        broken_refs,
        (),
        rules,
        settings,
        settings_source,
        kind_policies=kind_rules,
        clusters=entries,
    )


__all__ = [
    "CLUSTER_SOURCE",
    "asset_scope",
    "kind_document",
    "org_of_rows",
    "stored_asset",
    "stored_assets",
    "stored_cluster",
    "stored_model",
    "stored_template",
]
