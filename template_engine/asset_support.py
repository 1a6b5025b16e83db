"""Whether the assets a template uses may be used by its kind: Run:ai's ``workloadSupportedTypes`` of an
asset (issue 32).

An asset whose ``workloadSupportedTypes`` says ``false`` for a kind (``training: false``), or that is for
another distributed framework (``distFramework: MPI`` in a PyTorch distributed training), is a runnable
issue of every composition of a template of that kind that names it: Run:ai refuses such a workload.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from template_engine.errors import Location
from template_engine.kinds import WorkloadKind
from template_engine.models.documents import WorkloadSupportedTypes, asset_refs
from template_engine.org import Org, Template
from template_engine.runnable import RunnableIssue

__all__ = ["asset_support_issues"]


def asset_support_issues(
    org: Org, template: Template | None, kind: WorkloadKind, spec: Mapping[str, Any]
) -> list[RunnableIssue]:
    """An issue for each asset ``template`` names that its kind may not use (``spec``: the combined spec,
    for a distributed framework)."""
    if template is None:
        return []
    out: list[RunnableIssue] = []
    for asset_kind, name, path in asset_refs(template.doc):
        asset = org.assets.get(asset_kind, {}).get(name)
        if asset is None:
            continue  # an unknown asset fails the composition before this
        types = asset.doc.meta.workloadSupportedTypes
        why = _refusal(types, kind, spec) if types is not None else None
        if why is None:
            continue
        line = template.source.lines.get(path)
        out.append(
            RunnableIssue(
                kind.primary if path[0] != "master" else "master",
                (),
                f"{asset_kind} asset {name!r} may not be used by {kind.a_noun}: {why} ({asset.file})",
                rule="workloadSupportedTypes",
                source=Location(template.source.file, line[0] if line else None, line[1] if line else None),
            )
        )
    return out


def _refusal(types: WorkloadSupportedTypes, kind: WorkloadKind, spec: Mapping[str, Any]) -> str | None:
    if getattr(types, kind.asset_support, None) is False:
        return f"its workloadSupportedTypes.{kind.asset_support} is false"
    framework = spec.get("distributedFramework")
    if (
        kind.is_distributed
        and types.distFramework is not None
        and framework not in (None, types.distFramework)
    ):
        return (
            f"its workloadSupportedTypes.distFramework is {types.distFramework}, the template's {framework}"
        )
    return None
