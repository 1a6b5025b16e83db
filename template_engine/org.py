"""The organisation as plain values: scopes, defaults, assets and templates, wherever they were read from.

The loader builds an :class:`Org` from a templates folder and the service builds one from its database; the
composition only ever sees this.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal, NamedTuple

from template_engine.cluster.settings import DEFAULT_SETTINGS, ClusterSettings
from template_engine.errors import InputError, Location, NotFoundError, Problem
from template_engine.kinds import WorkloadKind, kind_named
from template_engine.models.documents import (
    AnyTemplateDocument,
    AssetKind,
    ComputeAsset,
    DatasourceAsset,
    EnvironmentAsset,
    LayerDocument,
    asset_refs,
)
from template_engine.paths import Path
from template_engine.scopes import LEVELS, ScopeType, depth


class Scope(NamedTuple):
    """``Scope("system", None)``, ``Scope("cluster", "east")``, ``Scope("department", "research")``,
    ``Scope("project", "vision")``: a level of :data:`template_engine.scopes.LEVELS` and a name."""

    type: ScopeType
    name: str | None

    def __str__(self) -> str:
        return "system" if self.name is None else f"{self.type} {self.name}"


SYSTEM = Scope("system", None)


@dataclass(frozen=True, slots=True)
class Source:
    """A document as read: its raw data, the file it came from and the line of every field."""

    file: str
    data: Mapping[str, Any]
    lines: Mapping[Path, tuple[int, int]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Defaults:
    scope: Scope
    source: Source
    doc: LayerDocument

    @property
    def file(self) -> str:
        """The file the document was read from (``source.file``)."""
        return self.source.file


@dataclass(frozen=True, slots=True)
class Template:
    name: str
    scope: Scope
    source: Source
    doc: AnyTemplateDocument

    @property
    def file(self) -> str:
        """The file the document was read from (``source.file``)."""
        return self.source.file

    @property
    def kind(self) -> WorkloadKind:
        """The template's workload kind (its ``kind:``; none is distributed)."""
        return kind_named(self.doc.kind)

    def asset_refs(self) -> tuple[tuple[AssetKind, str], ...]:
        """The assets the template names, as ``(kind, name)``: its own (environment, compute, data sources
        in order), then its master's (:func:`~template_engine.models.documents.asset_refs`)."""
        return tuple((kind, name) for kind, name, _path in asset_refs(self.doc))


@dataclass(frozen=True, slots=True)
class Asset:
    """An environment, compute or data source asset, with its scope.

    The scope is Run:ai's ``AssetMeta.scope``: ``tenant`` (here the system scope, :data:`SYSTEM`: usable
    everywhere), ``department`` (usable in the department and its projects) or ``project`` (usable in the
    project only).  A folder says it by the asset's place (``loader/layout.py``), the database by the row's
    columns (``service/stored.py``).
    """

    kind: AssetKind
    name: str
    source: Source
    doc: EnvironmentAsset | ComputeAsset | DatasourceAsset
    scope: Scope = SYSTEM

    @property
    def file(self) -> str:
        """The file the document was read from (``source.file``)."""
        return self.source.file


def template_user(name: str, scope: Scope) -> str:
    """A template as :func:`out_of_scope` names it: ``template 'train' of project vision``."""
    return f"template {name!r} of {scope}"


def policy_user(scope: Scope) -> str:
    """A policy as :func:`out_of_scope` names it: ``the policy of department research``."""
    return f"the policy of {scope}"


def out_of_scope(
    asset: Asset, user: str, chain: tuple[Scope, ...], path: Path, location: Location | None
) -> Problem | None:
    """The one problem of a document that uses an asset outside the asset's scope, or ``None``.

    ``user`` names the document (``template 'train' of project vision``, ``the policy of department
    research``) and ``chain`` is its scope with the scopes that contain it, system first
    (:meth:`Org.chain_of`).  Run:ai's rule: an asset is usable in its scope and the scopes below it (a
    tenant asset everywhere, a department's in the department and its projects, a project's in the
    project).  Every door (the loader, ``db import``, the API) answers with this problem, word for word but
    for the file that names the asset.
    """
    if asset.scope in chain:
        return None
    return Problem(
        f"{user} may not use {asset.kind} asset {asset.name!r}: the asset belongs to {asset.scope}"
        f" ({asset.file}), and an asset is usable only in its own scope and the scopes below it",
        path,
        location,
        "an asset of " + _either([str(scope) for scope in chain]),
    )


def _either(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]


@dataclass(frozen=True, slots=True)
class View:
    """Where a template is seen from: the cluster, department and project whose layers apply (any may be
    absent: an org of one cluster declares none, a department's own view has no project)."""

    department: str | None = None
    project: str | None = None
    cluster: str | None = None

    def chain(self) -> tuple[Scope, ...]:
        """The view's scopes in the order of :data:`~template_engine.scopes.LEVELS`, system first."""
        scopes = [SYSTEM]
        for level in LEVELS[1:]:
            name = getattr(self, level.view_field or "")
            if name is not None:
                scopes.append(Scope(level.type, name))
        return tuple(scopes)

    @property
    def nearest(self) -> Scope:
        """The view's own scope: the lowest of its chain."""
        return self.chain()[-1]


@dataclass(frozen=True, slots=True)
class ClusterEntry:
    """A cluster of ``org.yaml``: its departments and its settings (``clusters/NAME/cluster.yaml``)."""

    name: str
    departments: tuple[str, ...] = ()
    settings: ClusterSettings = DEFAULT_SETTINGS
    #: Where the settings were read (``None``: their defaults).
    source: Source | None = None


@dataclass(frozen=True)
class Org:
    """Everything a composition can draw on."""

    departments: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    defaults: Mapping[Scope, Defaults] = field(default_factory=dict)
    templates: Mapping[Scope, Mapping[str, Template]] = field(default_factory=dict)
    assets: Mapping[AssetKind, Mapping[str, Asset]] = field(default_factory=dict)
    #: Problems of files that could not be read; compositions that need such a file fail with them.
    broken: Mapping[str, tuple[Problem, ...]] = field(default_factory=dict)
    #: Which broken file would have provided a document (a :data:`Ref`: ``defaults_ref(scope)``,
    #: ``policy_ref(scope)``, ``template_ref(scope, name)`` or ``asset_ref(kind, name)``) -> that file.
    broken_refs: Mapping[tuple[str, ...], str] = field(default_factory=dict)
    #: Entries of the folder that are ignored but may be a mistake (hidden files); ``validate`` shows them.
    warnings: tuple[Problem, ...] = ()
    #: The distributed policy of each scope that has one (``template_engine.policy.document.PolicyDocument``).
    policies: Mapping[Scope, Any] = field(default_factory=dict)
    #: The org's cluster settings (``cluster.yaml``; their defaults when it has none).
    cluster: ClusterSettings = DEFAULT_SETTINGS
    #: Where the cluster settings were read (``None``: the defaults).
    cluster_source: Source | None = None
    #: The templates ``org.yaml`` lists as drafts, as ``(scope, name)``: ``check`` does not fail on them.
    drafts: frozenset[tuple[Scope, str]] = frozenset()
    #: The policies of the other kinds, by scope and kind name (``training``...): a scope's
    #: ``training-policy.yaml`` and its siblings (``WorkloadKind.policy_file``).
    kind_policies: Mapping[tuple[Scope, str], Any] = field(default_factory=dict)
    #: The clusters ``org.yaml`` names, each with its departments and settings; empty for an org of one
    #: cluster that names none (its settings are :attr:`cluster`), as every org was before issue 33.
    clusters: Mapping[str, ClusterEntry] = field(default_factory=dict)

    @cached_property
    def _cluster_by_department(self) -> dict[str, str]:
        return {d: entry.name for entry in self.clusters.values() for d in entry.departments}

    def cluster_of(self, department: str) -> str | None:
        """The cluster a department belongs to (``None`` in an org that names no clusters)."""
        return self._cluster_by_department.get(department)

    def check_cluster(self, cluster: str) -> None:
        if cluster not in self.clusters:
            expected = (
                _known(list(self.clusters))
                if self.clusters
                else "no --cluster: org.yaml names no clusters (the org runs on one, set by cluster.yaml)"
            )
            raise NotFoundError([Problem(f"unknown cluster {cluster!r}", (), None, expected)])

    def settings_of(self, view: View) -> tuple[ClusterSettings, Source | None]:
        """The cluster settings a view's workloads run with, and where they were read: its cluster's, or the
        org's one ``cluster.yaml`` when the org names no clusters."""
        entry = self.clusters.get(view.cluster) if view.cluster is not None else None
        if entry is None:
            return self.cluster, self.cluster_source
        return entry.settings, entry.source

    def policy_of(self, scope: Scope, kind: WorkloadKind) -> Any:
        """The policy of ``kind`` at ``scope`` (a ``PolicyDocument``), or ``None``."""
        if kind.name == "distributed":
            return self.policies.get(scope)
        return self.kind_policies.get((scope, kind.name))

    def require_intact(self, ref: tuple[str, ...]) -> None:
        """Raise the problems of the broken file that would have provided ``ref``, if there is one."""
        file = self.broken_refs.get(ref)
        if file is not None:
            raise InputError(self.broken.get(file, (Problem("file could not be read", (), None),)))

    @cached_property
    def _department_by_project(self) -> dict[str, str]:
        """Each project's department, the first that lists it (``org.yaml``'s order): built once, so that
        :meth:`department_of`, asked for every project (``views``, every composition's view), is a look-up
        and not a walk of every department's projects."""
        out: dict[str, str] = {}
        for department, projects in self.departments.items():
            for project in projects:
                out.setdefault(project, department)
        return out

    def department_of(self, project: str) -> str:
        found = self._department_by_project.get(project)
        if found is not None:
            return found
        raise NotFoundError([Problem(f"unknown project {project!r}", (), None, _known(self.projects()))])

    def projects(self) -> list[str]:
        return [p for projects in self.departments.values() for p in projects]

    def check_department(self, department: str) -> None:
        if department not in self.departments:
            raise NotFoundError(
                [Problem(f"unknown department {department!r}", (), None, _known(list(self.departments)))]
            )

    def view_of(
        self, project: str | None = None, department: str | None = None, cluster: str | None = None
    ) -> View:
        """The view of a project (its department and cluster implied), of a department alone (its cluster
        implied) or of a cluster alone."""
        if project is not None:
            owner = self.department_of(project)
            if department is not None and department != owner:
                raise NotFoundError(
                    [
                        Problem(
                            f"project {project!r} belongs to department {owner!r}, not {department!r}",
                            (),
                            None,
                            f"--department {owner} or no --department",
                        )
                    ]
                )
            return self._within(cluster, View(owner, project, self.cluster_of(owner)))
        if department is not None:
            self.check_department(department)
            return self._within(cluster, View(department, None, self.cluster_of(department)))
        if cluster is not None:
            self.check_cluster(cluster)
            return View(cluster=cluster)
        return View()

    def _within(self, cluster: str | None, view: View) -> View:
        """``view``, when it is in ``cluster`` (or no cluster is asked); else the problem."""
        if cluster is None or cluster == view.cluster:
            return view
        self.check_cluster(cluster)
        unit = f"project {view.project!r}" if view.project else f"department {view.department!r}"
        raise NotFoundError(
            [
                Problem(
                    f"{unit} belongs to cluster {view.cluster!r}, not {cluster!r}",
                    (),
                    None,
                    "another --cluster",
                )
            ]
        )

    def scope_view(self, scope: Scope) -> View:
        """The view down to ``scope``: the scope and the scopes that contain it."""
        if scope.name is None:
            return View()
        return self.view_of(**{scope.type: scope.name})

    def chain_of(self, scope: Scope) -> tuple[Scope, ...]:
        """``scope`` and the scopes that contain it, system first: the scopes whose assets it may use."""
        return self.scope_view(scope).chain()

    def own_view(self, template: Template) -> View:
        """The view down to a template's own scope."""
        return self.scope_view(template.scope)

    def visible(self, view: View) -> dict[str, Template]:
        """Templates visible from ``view``; the nearest scope's template shadows farther ones."""
        out: dict[str, Template] = {}
        for scope in view.chain():
            out.update(self.templates.get(scope, {}))
        return out

    def find_template(self, name: str, view: View) -> Template:
        """The template ``name`` as seen from ``view``.

        With no department or project, the system template of that name, or else the only one anywhere.
        """
        if view.nearest == SYSTEM:
            system = self.templates.get(SYSTEM, {})
            if name in system:
                return system[name]
            found = [t for by_name in self.templates.values() for t in by_name.values() if t.name == name]
            if len(found) == 1:
                return found[0]
            for ref in self.broken_refs:
                if isinstance(ref, TemplateRef) and ref.name == name:
                    self.require_intact(ref)
            if len(found) > 1:
                where = ", ".join(str(t.scope) for t in found)
                raise NotFoundError(
                    [
                        Problem(
                            f"template {name!r} exists in several scopes ({where})",
                            (),
                            None,
                            "--project, --department or --cluster to say which view to compose",
                        )
                    ]
                )
        for scope in reversed(view.chain()):
            if name in self.templates.get(scope, {}):
                break
            self.require_intact(template_ref(scope, name))
        template = self.visible(view).get(name)
        if template is None:
            nearest = view.nearest
            where = "the system scope" if nearest.name is None else f"{nearest.type} {nearest.name!r}"
            raise NotFoundError(
                [
                    Problem(
                        f"no template {name!r} is visible from {where}",
                        (),
                        None,
                        _known(sorted(self.visible(view))),
                    )
                ]
            )
        return template

    def asset(self, kind: AssetKind, name: str) -> Asset:
        self.require_intact(asset_ref(kind, name))
        found = self.assets.get(kind, {}).get(name)
        if found is None:
            raise NotFoundError(
                [
                    Problem(
                        f"unknown {kind} asset {name!r}", (), None, _known(sorted(self.assets.get(kind, {})))
                    )
                ]
            )
        return found

    def views(self) -> list[tuple[View, Template]]:
        """Every (project, template) pair a project sees, then each system and department template seen from
        its own scope (a project template's own view is already one of the pairs)."""
        out: list[tuple[View, Template]] = []
        for project in sorted(self.projects()):
            view = self.view_of(project)
            out.extend((view, t) for _, t in sorted(self.visible(view).items()))
        for scope in sorted(self.templates, key=lambda s: (depth(s.type), s.name or "")):
            if scope.type == "project":
                continue
            for _, template in sorted(self.templates[scope].items()):
                out.append((self.own_view(template), template))
        return out


# -- references: a document that a file would have provided ------------------------------------------------
#
# Named tuples of text, first the kind of document, so that refs of different kinds never compare equal and
# sort by kind, then by scope and name.  Build them with the functions below (typed as any :data:`Ref`, so
# that a set or a map of refs of several kinds needs no annotation); read them by field name after an
# ``isinstance``.


class DefaultsRef(NamedTuple):
    """The defaults of a scope."""

    document: Literal["defaults"]
    scope_type: ScopeType
    #: Empty for the system scope.
    scope_name: str

    @property
    def scope(self) -> Scope:
        return Scope(self.scope_type, self.scope_name or None)


class PolicyRef(NamedTuple):
    """The policy of one workload kind at a scope."""

    document: Literal["policy"]
    scope_type: ScopeType
    #: Empty for the system scope.
    scope_name: str
    #: The kind's name (``template_engine.kinds``).
    kind: str = "distributed"

    @property
    def scope(self) -> Scope:
        return Scope(self.scope_type, self.scope_name or None)


class TemplateRef(NamedTuple):
    """A template of a scope, by name."""

    document: Literal["template"]
    scope_type: ScopeType
    #: Empty for the system scope.
    scope_name: str
    name: str

    @property
    def scope(self) -> Scope:
        return Scope(self.scope_type, self.scope_name or None)


class AssetRef(NamedTuple):
    """An asset, by kind and name."""

    document: Literal["asset"]
    kind: str
    name: str


#: What a broken file would have provided (the keys of :attr:`Org.broken_refs`).
Ref = DefaultsRef | PolicyRef | TemplateRef | AssetRef


def defaults_ref(scope: Scope) -> Ref:
    return DefaultsRef("defaults", scope.type, scope.name or "")


def policy_ref(scope: Scope, kind: str = "distributed") -> Ref:
    """The policy of ``kind`` (a kind's name) at ``scope``."""
    return PolicyRef("policy", scope.type, scope.name or "", kind)


def template_ref(scope: Scope, name: str) -> Ref:
    return TemplateRef("template", scope.type, scope.name or "", name)


def asset_ref(kind: str, name: str) -> Ref:
    return AssetRef("asset", kind, name)


def _known(names: list[str]) -> str:
    return "one of: " + ", ".join(names) if names else "none is defined"
