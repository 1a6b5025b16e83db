"""The (view, template) pairs of an org, what each composes to, and which files that depends on.

A pair has a stable id that doubles as its snapshot file name: ``projects/<project>/<template>`` for a
template seen from a project, ``departments/<department>/<template>`` and ``system/<template>`` for a scope
template seen from its own scope.  Pure: no files are read here.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from template_engine.compose import Composition, MergeCache, compose
from template_engine.errors import Problem, TemplateEngineError
from template_engine.models.documents import AssetKind, TemplateAssets
from template_engine.org import Org, Source, Template, View

#: Characters kept as they are in a pair id segment; anything else is percent-encoded (project names are
#: free text in org.yaml, and a pair id becomes a file path).
_SAFE = re.compile(r"[A-Za-z0-9._-]")


def _segment(name: str) -> str:
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

    def describe(self) -> str:
        return f"template {self.template.name} ({self.template.scope} template) as seen from {self.where}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "pair": self.id,
            "project": self.view.project,
            "department": self.view.department,
            "template": self.template.name,
            "scope": str(self.template.scope),
        }


def pair_id(view: View, template: Template) -> str:
    if view.project is not None:
        return f"projects/{_segment(view.project)}/{_segment(template.name)}"
    if view.department is not None:
        return f"departments/{_segment(view.department)}/{_segment(template.name)}"
    return f"system/{_segment(template.name)}"


def pairs(org: Org) -> list[Pair]:
    """Every pair of ``org`` (``Org.views()``), keyed by a unique id, in that order."""
    return [Pair(pair_id(view, template), view, template) for view, template in org.views()]


# -- what a pair composes to --------------------------------------------------------------------------------


def effective_output(composition: Composition) -> dict[str, Any]:
    """The part of a composed template a snapshot records: what the workload would actually get."""
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


def _asset_refs(assets: TemplateAssets | None) -> list[tuple[AssetKind, str]]:
    if assets is None:
        return []
    refs: list[tuple[AssetKind, str]] = []
    if assets.environment:
        refs.append(("environment", assets.environment))
    if assets.compute:
        refs.append(("compute", assets.compute))
    refs += [("datasource", ref.name) for ref in assets.datasources or ()]
    return refs


def dependencies(org: Org, pair: Pair) -> tuple[str, ...]:
    """The files (relative to the templates folder) whose content decides what ``pair`` composes to.

    A referenced asset the org does not have counts as ``?<kind>/<name>``, so that adding it later shows up
    as a different set of dependencies.
    """
    deps = [
        entry.source.file for scope in pair.view.chain() if (entry := org.defaults.get(scope)) is not None
    ]
    for scope in pair.view.chain():  # the view's policies, and the data sources they impose
        policy = org.policies.get(scope)
        if policy is None:
            continue
        deps.append(policy.file)
        for imposed in policy.imposed:
            asset = org.assets.get("datasource", {}).get(imposed.name)
            deps.append(asset.source.file if asset is not None else f"?datasource/{imposed.name}")
    template = pair.template
    deps.append(template.source.file)
    master = template.doc.master
    for kind, name in _asset_refs(template.doc.assets) + _asset_refs(master.assets if master else None):
        asset = org.assets.get(kind, {}).get(name)
        deps.append(asset.source.file if asset is not None else f"?{kind}/{name}")
    return tuple(deps)


def sources(org: Org) -> dict[str, Source]:
    """Every document the org was built from, by file."""
    found: dict[str, Source] = {}
    for entry in org.defaults.values():
        found[entry.source.file] = entry.source
    for by_name in org.templates.values():
        for template in by_name.values():
            found[template.source.file] = template.source
    for by_kind in org.assets.values():
        for asset in by_kind.values():
            found[asset.source.file] = asset.source
    for policy in org.policies.values():
        found[policy.file] = policy
    return found
