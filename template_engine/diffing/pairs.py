"""The (view, template) pairs of an org, what each composes to, and which files that depends on.

A pair has a stable id that doubles as its snapshot file name: ``projects/<project>/<template>`` for a
template seen from a project, ``departments/<department>/<template>`` and ``system/<template>`` for a scope
template seen from its own scope, whatever the template's workload kind (a template's name is unique in its
scope across the kinds, so the id of a distributed training's pair is what it was before there were kinds).
Pure: no files are read here.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from template_engine.compose import Composition, MergeCache, compose
from template_engine.errors import Problem, TemplateEngineError
from template_engine.kinds import DISTRIBUTED
from template_engine.loader.tree import CLUSTER_FILE
from template_engine.org import Asset, Defaults, Org, Template, View
from template_engine.scopes import LEVEL_BY_TYPE

#: Characters kept as they are in a pair id segment; anything else is percent-encoded (project names are
#: free text in org.yaml, and a pair id becomes a file path).
_SAFE = re.compile(r"[A-Za-z0-9._-]")
_ALL_SAFE = re.compile(r"[A-Za-z0-9._-]+")


def pair_segment(name: str) -> str:
    """A name as a segment of a pair id (and of a report's file name): percent-encoded past
    ``[A-Za-z0-9._-]``."""
    if name not in (".", "..") and _ALL_SAFE.fullmatch(name):
        return name  # nothing to encode (most names): the same text as below, without a match per character
    text = "".join(c if _SAFE.fullmatch(c) else "".join(f"%{b:02X}" for b in c.encode()) for c in name)
    return text.replace(".", "%2E") if text in (".", "..") else text


@dataclass(frozen=True, slots=True)
class Pair:
    """A template as seen from one view: one snapshot, one line of a diff."""

    id: str
    view: View
    template: Template

    @property
    def where(self) -> str:
        """``project vision (department research)``, ``department research``, ``the system scope``."""
        if self.view.project is not None:
            return f"project {self.view.project} (department {self.view.department})"
        if self.view.department is not None:
            return f"department {self.view.department}"
        return "the system scope"

    @property
    def template_words(self) -> str:
        """``project vision template``, with the kind when it is not a distributed training: ``project vision
        training template`` (the id does not say it: a name is unique in its scope across the kinds)."""
        kind = self.template.kind
        return f"{self.template.scope} {'' if kind is DISTRIBUTED else f'{kind.name} '}template"

    def describe(self) -> str:
        return f"template {self.template.name} ({self.template_words}) as seen from {self.where}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "pair": self.id,
            "project": self.view.project,
            "department": self.view.department,
            **({"cluster": self.view.cluster} if self.view.cluster is not None else {}),
            "template": self.template.name,
            "scope": str(self.template.scope),
            "workloadType": self.template.kind.workload_type,
        }


def pair_id(view: View, template: Template) -> str:
    """``projects/P/T``, ``departments/D/T``, ``clusters/C/T`` or ``system/T``: the view's nearest scope."""
    nearest = view.nearest
    if nearest.name is None:
        return f"system/{pair_segment(template.name)}"
    folder = LEVEL_BY_TYPE[nearest.type].folder
    return f"{folder}/{pair_segment(nearest.name)}/{pair_segment(template.name)}"


def settings_file(org: Org, view: View) -> str:
    """The file of the cluster settings a view's objects are built with: ``cluster.yaml``, or its cluster's
    ``clusters/C/cluster.yaml`` in an org that names clusters (present or not)."""
    if view.cluster is not None and view.cluster in org.clusters:
        return f"clusters/{view.cluster}/{CLUSTER_FILE}"
    return CLUSTER_FILE


def pairs(org: Org) -> list[Pair]:
    """Every pair of ``org`` (``Org.views()``), keyed by a unique id, in that order."""
    return [Pair(pair_id(view, template), view, template) for view, template in org.views()]


# -- what a pair composes to --------------------------------------------------------------------------------


def effective_output(composition: Composition) -> dict[str, Any]:
    """The part of a composed template a snapshot records: what the workload would actually get.  A kind of
    one role has no master (Run:ai's shape) and says its ``workloadType``; a distributed training's output
    is as it was before the kinds, so no snapshot of one changes."""
    if not composition.kind.is_distributed:
        return {
            "combinedSpec": composition.combined_spec,
            "runnable": composition.runnable.to_dict(),
            "workloadType": composition.kind.workload_type,
        }
    return {
        "combinedMasterSpec": composition.combined_master_spec,
        "combinedSpec": composition.combined_spec,
        "masterSpecSameAsWorker": composition.master_same_as_worker,
        "runnable": composition.runnable.to_dict(),
    }


@dataclass(frozen=True, slots=True)
class Outcome:
    """A pair's composition, or the problems that stopped it."""

    pair: Pair
    composition: Composition | None
    problems: tuple[Problem, ...] = ()

    @property
    def output(self) -> dict[str, Any] | None:
        return effective_output(self.composition) if self.composition is not None else None

    @property
    def objects(self) -> tuple[dict[str, Any], ...] | None:
        """The cluster objects of the composition (``Composition.manifests``); ``None`` when it does not
        compose."""
        if self.composition is None:
            return None
        manifests = self.composition.manifests
        return manifests.objects if manifests is not None else ()

    @property
    def runnable(self) -> bool:
        return self.composition is not None and self.composition.runnable.is_runnable

    def status(self) -> str:
        if self.composition is None:
            return "fails to compose"
        return "runnable" if self.runnable else "not runnable"


def compose_pair(
    org: Org, pair: Pair, variables: Mapping[str, str] | None = None, cache: MergeCache | None = None
) -> Outcome:
    """Compose one pair; ``cache`` (one dict per org) shares the scope defaults' merges between pairs."""
    try:
        return Outcome(pair, compose(org, pair.template, pair.view, variables, cache=cache))
    except TemplateEngineError as exc:
        return Outcome(pair, None, exc.problems)


# -- what a pair depends on ---------------------------------------------------------------------------------


def dependencies(org: Org, pair: Pair) -> tuple[str, ...]:
    """The files (relative to the templates folder) whose content decides what ``pair`` composes to.

    A referenced asset the org does not have counts as ``?<kind>/<name>``, so that adding it later shows up
    as a different set of dependencies.  Every pair depends on ``cluster.yaml``, present or not: its
    objects are built with the org's cluster settings (their defaults without the file).
    """
    deps = [entry.file for scope in pair.view.chain() if (entry := org.defaults.get(scope)) is not None]
    template = pair.template
    for scope in pair.view.chain():  # the view's policies of the template's kind, and what they impose
        policy = org.policy_of(scope, template.kind)
        if policy is None:
            continue
        deps.append(policy.file)
        for imposed in policy.imposed:
            asset = org.assets.get("datasource", {}).get(imposed.name)
            deps.append(asset.file if asset is not None else f"?datasource/{imposed.name}")
    deps.append(template.file)
    for kind, name in template.asset_refs():
        asset = org.assets.get(kind, {}).get(name)
        deps.append(asset.file if asset is not None else f"?{kind}/{name}")
    deps.append(settings_file(org, pair.view))
    return tuple(deps)


#: A document of an org: a scope's defaults, a template, an asset, a policy, or the cluster settings.
Document = Defaults | Template | Asset | Any


def documents(org: Org) -> dict[str, Document]:
    """Every document the org was built from, by file (nothing is read: see :func:`same_document`).

    ``cluster.yaml`` is always there, as the settings it gives (their defaults without the file): a file
    added with the default settings changes no object, one that changes a setting changes every pair's.
    """
    found: dict[str, Document] = {CLUSTER_FILE: org.cluster}
    for name, cluster in org.clusters.items():
        found[f"clusters/{name}/{CLUSTER_FILE}"] = cluster.settings
    for entry in org.defaults.values():
        found[entry.file] = entry
    for by_name in org.templates.values():
        for template in by_name.values():
            found[template.file] = template
    for by_kind in org.assets.values():
        for asset in by_kind.values():
            found[asset.file] = asset
    for policy in (*org.policies.values(), *org.kind_policies.values()):
        found[policy.file] = policy
    return found


def same_document(old: Document | None, new: Document | None) -> bool:
    """Whether two versions of a file make the same document: the same text read at the same place (the
    loader then gives both versions one object, read or not), or equal documents as read (the same data
    with the same lines).  ``None``, no such document, is the same only as itself."""
    if old is new:
        return True
    if old is None or new is None:
        return False
    if isinstance(old, Defaults | Template | Asset) and isinstance(new, Defaults | Template | Asset):
        return bool(old.source == new.source)
    return bool(old == new)
