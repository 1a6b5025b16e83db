"""The checks of an org's policy files that need the whole org: every imposed asset is a data
source the org has, of a scope that contains the policy's (:func:`~template_engine.org.out_of_scope`), and
one scope per branch rules each field (POLICY.md "One owner per field")."""

from __future__ import annotations

from collections.abc import Mapping

from template_engine.errors import Problem
from template_engine.models.documents import AssetKind
from template_engine.org import SYSTEM, Asset, ClusterEntry, Org, Scope, out_of_scope, policy_user
from template_engine.policy.document import PolicyDocument
from template_engine.policy.effective import ownership_problems


def branches(
    departments: Mapping[str, tuple[str, ...]], clusters: Mapping[str, tuple[str, ...]] | None = None
) -> list[tuple[Scope, ...]]:
    """Every branch of the org, from the system down to each cluster (of an org that names ``clusters``, each
    with its departments), each department and each project."""
    out: list[tuple[Scope, ...]] = [(SYSTEM,)]
    cluster_of = {d: c for c, ds in (clusters or {}).items() for d in ds}
    for department, projects in departments.items():
        top: tuple[Scope, ...] = (SYSTEM,)
        cluster = cluster_of.get(department)
        if cluster is not None:
            top = (SYSTEM, Scope("cluster", cluster))
            if top not in out:
                out.append(top)
        top = (*top, Scope("department", department))
        out.append(top)
        out.extend((*top, Scope("project", project)) for project in projects)
    return out


def org_policy_problems(
    policies: Mapping[Scope, PolicyDocument],
    departments: Mapping[str, tuple[str, ...]],
    assets: Mapping[AssetKind, Mapping[str, Asset]],
    broken_assets: set[str],
    clusters: Mapping[str, tuple[str, ...]] | None = None,
) -> dict[str, list[Problem]]:
    """The problems of each policy file that only the whole org shows, by file."""
    found: dict[str, list[Problem]] = {}
    tree = Org(departments, clusters={c: ClusterEntry(c, ds) for c, ds in (clusters or {}).items()})
    for document in policies.values():
        for imposed in document.imposed:
            datasource = assets.get("datasource", {}).get(imposed.name)
            if datasource is not None:
                scopes = tree.chain_of(imposed.scope)
                path = ("imposedAssets", imposed.replica)
                problem = out_of_scope(datasource, policy_user(imposed.scope), scopes, path, imposed.location)
                if problem is not None:
                    found.setdefault(document.file, []).append(problem)
                continue
            if imposed.name in broken_assets:
                continue
            other = next((kind for kind, by in assets.items() if imposed.name in by), None)
            message = (
                f"imposed asset {imposed.name!r} is {'an' if other[0] in 'aeiou' else 'a'} {other} asset, "
                "not a data source"
                if other is not None
                else f"imposed asset {imposed.name!r} is not a data source of this org"
            )
            known = sorted(assets.get("datasource", {}))
            found.setdefault(document.file, []).append(
                Problem(
                    message,
                    ("imposedAssets", imposed.replica),
                    imposed.location,
                    "one of: " + ", ".join(known) if known else "a file assets/datasources/NAME.yaml",
                )
            )
    for branch in branches(departments, clusters):
        chain = [policies[scope] for scope in branch if scope in policies]
        for file, problems in ownership_problems(chain).items():
            listed = found.setdefault(file, [])
            listed.extend(p for p in problems if p not in listed)
    return found
