"""The org's cluster settings and the objects a composition becomes, as the service answers them.

Both are extensions of Run:ai's API (docs/http-api.md, "Cluster settings and manifests"):

- ``/api/v1/cluster-settings``: the document a ``cluster.yaml`` holds, stored in the database
  (``cluster_settings``); ``{}`` with ETag ``"0"`` when none is stored (every setting then has its default,
  docs/cluster.md).  A write is checked by :class:`~template_engine.cluster.settings.ClusterSettings`
  exactly as the file is (the loader's :func:`~template_engine.loader.validate.validate`: the same problems,
  the same field paths).
- ``.../manifests``: the objects of a stored template seen from a view, or of a stored workload, as
  ``{"objects": [...], "warnings": [...], "runnable": {...}}``; with ``annotate``, ``sources`` names the
  origin of every value of every object (:func:`value_sources`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any

from pydantic import BaseModel

from template_engine.cluster.mapping import Derived, Manifests, SettingSource, SpecSource
from template_engine.cluster.mapping import Source as ValueSource
from template_engine.cluster.outcome import cluster_outcome
from template_engine.cluster.problems import ObjectPath
from template_engine.cluster.settings import DEFAULT_SETTINGS, ClusterSettings
from template_engine.compose import Composition
from template_engine.errors import Location
from template_engine.loader.validate import validate
from template_engine.paths import format_path
from template_engine.policy.document import origin_kind
from template_engine.runnable import Runnable
from template_engine.service.context import Ctx, Placement
from template_engine.service.documents import BODY
from template_engine.service.errors import bad_request
from template_engine.service.schemas import RunnableIssueOut, RunnableOut
from template_engine.service.storage.repository import ClusterRow, WorkloadRow
from template_engine.service.stored import (
    CLUSTER_SOURCE,
    cluster_unit_file,
    stored_cluster,
    stored_cluster_unit,
)

# -- settings -----------------------------------------------------------------------------------------------


def check_settings(data: dict[str, Any]) -> ClusterSettings:
    """The settings of a request body, or a 400 with every problem, as ``cluster.yaml`` would have them."""
    doc, problems = validate(ClusterSettings, data, BODY, {})
    if doc is None:
        raise bad_request(problems, "The cluster settings are not valid.")
    return doc


def settings_body(row: ClusterRow | None, effective: bool) -> dict[str, Any]:
    """The stored document (``{}``: none), or with ``effective`` every setting, defaults filled in."""
    if not effective:
        return dict(row.document) if row is not None else {}
    settings, _, _ = stored_cluster(row)
    return settings.model_dump(mode="json")


# -- manifests ----------------------------------------------------------------------------------------------


class ValueSourceOut(BaseModel):
    """Where one value of one object comes from."""

    #: The object's index in ``objects``, and the value's path inside it.
    object: int
    path: str
    #: ``spec``: a field of a combined spec; ``setting``: a cluster setting; ``derived``: the mapping decided.
    source: str
    replica: str | None = None
    field: str | None = None
    setting: str | None = None
    reason: str | None = None
    #: The layer and the stored document (and line, for a file) that set it.
    layer: str | None = None
    file: str | None = None
    line: int | None = None


class ManifestsOut(BaseModel):
    """The objects the cluster would run (an extension: docs/http-api.md)."""

    objects: list[dict[str, Any]]
    warnings: list[RunnableIssueOut]
    runnable: RunnableOut
    #: With ``annotate=true``: the source of every value of every object.
    sources: list[ValueSourceOut] | None = None


#: What one value's origin is, as the answer says it.
Resolve = Callable[[ValueSource], dict[str, Any]]


def _leaves(value: Any, path: ObjectPath) -> Iterator[ObjectPath]:
    if isinstance(value, Mapping) and value:
        for key, item in value.items():
            yield from _leaves(item, (*path, key))
    elif isinstance(value, list) and value:
        for index, item in enumerate(value):
            yield from _leaves(item, (*path, index))
    else:
        yield path


def _object_path(path: ObjectPath) -> str:
    out = ""
    for step in path:
        out += f"[{step}]" if isinstance(step, int) else (f".{step}" if out else str(step))
    return out


def value_sources(manifests: Manifests, resolve: Resolve) -> list[dict[str, Any]]:
    """Every leaf of every object with the origin of its value (a leaf with none known is left out)."""
    out = []
    for index, obj in enumerate(manifests.objects):
        for path in _leaves(obj, ()):
            found = manifests.source_of(index, path)
            if found is not None:
                out.append({"object": index, "path": _object_path(path), **resolve(found)})
    return out


@dataclass(frozen=True, slots=True)
class StoredSettings:
    """The cluster settings a composition or a workload runs with: the model, the stored document (``{}``:
    none stored), its version (``None``: none stored) and the file that names it (the org's
    ``db:cluster-settings``, or a cluster's ``db:clusters/NAME``)."""

    settings: ClusterSettings
    document: Mapping[str, Any]
    version: int | None
    file: str


#: The settings of an org that stores none: every setting its default.
NO_SETTINGS = StoredSettings(DEFAULT_SETTINGS, {}, None, CLUSTER_SOURCE)


def settings_for(ctx: Ctx, place: Placement | None) -> StoredSettings:
    """The cluster settings of the scope ``place`` (a composition's view, a workload's project): its own
    cluster's in an org with clusters, as the core's ``Org.settings_of`` takes them; the org's otherwise."""
    unit = place.cluster if place is not None else None
    if unit is None:
        row = ctx.repo.cluster_settings()
        settings, _, _ = stored_cluster(row)
        version = row.audit.version if row is not None else None
        return StoredSettings(settings, row.document if row is not None else {}, version, CLUSTER_SOURCE)
    entry, _ = stored_cluster_unit(unit, ())
    version = unit.settings_version if unit.settings is not None else None
    return StoredSettings(entry.settings, unit.settings or {}, version, cluster_unit_file(unit.name))


def _setting(stored: StoredSettings, key: str) -> dict[str, Any]:
    root = key.split(".", 1)[0]
    if stored.version is not None and root in stored.document:
        layer = f"cluster settings, version {stored.version}"
        return {"source": "setting", "setting": key, "layer": layer, "file": stored.file}
    return {"source": "setting", "setting": key, "layer": "cluster settings' default"}


def _other(found: ValueSource, stored: StoredSettings | None) -> dict[str, Any]:
    if isinstance(found, SettingSource):
        return _setting(stored or NO_SETTINGS, found.key)
    assert isinstance(found, Derived)
    return {"source": "derived", "reason": found.reason}


def _located(location: Location | None) -> dict[str, Any]:
    if location is None:
        return {}
    out: dict[str, Any] = {"layer": location.layer, "file": location.file}
    if location.line is not None:
        out["line"] = location.line
    return out


def composition_resolver(composition: Composition, cluster: StoredSettings | None) -> Resolve:
    """Origins in a composition: a spec field's layer and stored document (a policy's ``defaultFrom`` rule
    for a value it set, as explain says it), a cluster setting's document or its default."""

    def resolve(found: ValueSource) -> dict[str, Any]:
        if not isinstance(found, SpecSource):
            return _other(found, cluster)
        out: dict[str, Any] = {"source": "spec", "replica": found.replica, "field": format_path(found.path)}
        result = composition.worker if found.replica == "worker" else composition.master
        location = result.locate(found.path) if result is not None else None
        origin = composition.policy_origins.get((found.replica, found.path))
        if origin is not None:
            location = replace(
                origin.location, layer=f"{origin_kind(origin)} of the {origin.scope} policy", kind="policy"
            )
        return out | _located(location)

    return resolve


def workload_resolver(row: WorkloadRow, cluster: StoredSettings) -> Resolve:
    """Origins in a stored workload: its stored effective spec, a cluster setting, or the mapping."""

    def resolve(found: ValueSource) -> dict[str, Any]:
        if not isinstance(found, SpecSource):
            return _other(found, cluster)
        return {
            "source": "spec",
            "replica": found.replica,
            "field": format_path(found.path),
            "layer": f"workload {row.name}, version {row.audit.version}",
            "file": f"db:workloads/{row.id}",
        }

    return resolve


def manifests_body(
    manifests: Manifests | None, runnable: Mapping[str, Any], annotate: bool, resolve: Resolve | None
) -> dict[str, Any]:
    """``{"objects", "warnings", "runnable"}``, and with ``annotate`` the ``sources`` of every value."""
    body: dict[str, Any] = {
        "objects": list(manifests.objects) if manifests is not None else [],
        "warnings": [w.to_dict() for w in manifests.warnings] if manifests is not None else [],
        "runnable": dict(runnable),
    }
    if annotate:
        body["sources"] = value_sources(manifests, resolve) if manifests is not None and resolve else []
    return body


def workload_manifests(
    row: WorkloadRow, project: str | None, cluster: StoredSettings
) -> tuple[Manifests, dict[str, Any]]:
    """The objects of a stored workload, from its stored effective spec and its cluster's settings as they
    are now (:func:`settings_for` its project), named after the workload; and its ``runnable`` (what the
    cluster would refuse in them)."""
    settings = cluster.settings
    manifests, refused = cluster_outcome(
        row.spec,
        row.master_spec,
        row.master_same_as_worker,
        template_name=None,
        workload_name=row.name,
        project=project,
        settings=settings,
    )
    return manifests, Runnable(refused, ()).to_dict()


__all__ = [
    "ManifestsOut",
    "ValueSourceOut",
    "check_settings",
    "composition_resolver",
    "manifests_body",
    "settings_body",
    "settings_for",
    "value_sources",
    "workload_manifests",
    "workload_resolver",
]
