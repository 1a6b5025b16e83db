"""``complyToProject`` and its companions, for templates and assets alike (Run:ai's list parameters).

A list (or an asset's read) asked ``complyToProject=P`` answers, for each entry, what keeps it from being
used in a workload of project P: a template's ``complianceIssues`` (its composition seen from P, the issues
of the replica asked) and an asset's ``compliance`` (Run:ai's ``ComplianceInfo``: ``imposed``,
``compliance``, ``reason``; :func:`template_engine.asset_compliance.asset_compliance` seen from P).
``complyToReplicaType`` (``Worker``, ``Master``) narrows it to one replica, both when absent (a master's
fields then read ``masterSpec.<field>``; a template of a kind of one replica has no master, and the parameter
says nothing of it); ``complyToWorkloadType`` other than a template's own type (its kind's
``workload_type``) is that template's issue, and other than ``Distributed`` (the only type assets are
checked for here) every asset's.  Either companion without ``complyToProject`` is a 400.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import Query

from template_engine.asset_compliance import AssetCompliance, asset_compliance
from template_engine.errors import Problem
from template_engine.kinds import DISTRIBUTED, TEMPLATE_KINDS, WorkloadKind, kind_named
from template_engine.models.spec import WORKER_ONLY_FIELDS
from template_engine.org import Org
from template_engine.paths import format_path
from template_engine.policy.vocabulary import Replica
from template_engine.pricing import Pricer
from template_engine.runnable import RunnableIssue
from template_engine.service.budget import REQUEST_BUDGET, over_budget
from template_engine.service.composer import composed, composition_units, org_for, unit_name
from template_engine.service.context import Ctx, Placement
from template_engine.service.errors import bad_request
from template_engine.service.storage.repository import AssetRow, TemplateRow
from template_engine.service.stored import asset_scope, stored_asset

ComplyToProject = Annotated[
    int | None,
    Query(
        ge=0,
        le=10**18 - 1,
        description="Give each entry what keeps it from being used in a workload of this project "
        "(templates: complianceIssues; assets: compliance).",
    ),
]
ComplyToReplicaType = Annotated[
    Literal["Worker", "Master"] | None,
    Query(description="With complyToProject: the issues of this replica only (both when absent)."),
]
#: Run:ai's ``WorkloadType`` values of the kinds it has templates of (``Workspace``, ``Training``...).
TemplateWorkloadType: Any = Literal[tuple(kind.workload_type for kind in TEMPLATE_KINDS)]
ComplyToWorkloadType = Annotated[
    TemplateWorkloadType | None,
    Query(
        description="With complyToProject: the workload type to comply with (a template of another type "
        "has that as its issue; assets: only Distributed workloads are composed here, another type is an "
        "issue of every asset)."
    ),
]

#: The replicas ``complyToReplicaType`` asks for (both when absent).
_REPLICAS: dict[str | None, tuple[Replica, ...]] = {
    None: ("worker", "master"),
    "Worker": ("worker",),
    "Master": ("master",),
}


class Comply:
    """``complyToProject`` and its companions: the project and what to report of it."""

    def __init__(self, ctx: Ctx, project: int | None, replica: str | None, workload_type: str | None) -> None:
        if project is None:
            given = [
                n for n, v in (("complyToReplicaType", replica), ("complyToWorkloadType", workload_type)) if v
            ]
            if given:
                raise bad_request(
                    [
                        Problem(f"{name} needs complyToProject", (name,), None, "complyToProject too")
                        for name in given
                    ]
                )
            self.target: Placement | None = None
        else:
            self.target = ctx.project_placement(project, "complyToProject")
            ctx.access.require_read(self.target.ref)
        self.replica = replica
        self.workload_type = workload_type

    def _other_type(self, what: str, kind: WorkloadKind = DISTRIBUTED) -> dict[str, Any] | None:
        """The issue of an entry of ``kind`` when another workload type is asked."""
        if self.workload_type in (None, kind.workload_type):
            return None
        return {"field": "workloadType", "details": what.format(type=self.workload_type)}

    def issues(self, ctx: Ctx, row: TemplateRow, own: Placement) -> list[dict[str, Any]] | None:
        """The ``complianceIssues`` of one template, or ``None`` when no project was named."""
        target = self.target
        if target is None:
            return None
        assert target.project is not None
        kind = kind_named(row.kind)
        other = self._other_type(
            f"a {kind.workload_type} template cannot be submitted as a {{type}} workload", kind
        )
        if other is not None:
            return [other]
        if not own.contains(target):
            return [
                {
                    "field": None,
                    "details": f"the template is not available in project {target.project.name!r} "
                    f"({target.project.id}): it belongs to another {own.type}",
                }
            ]
        outcome = composed(ctx, row, own, target)[0]
        if isinstance(outcome, list):
            return [{"field": format_path(p.path) or None, "details": p.message} for p in outcome]
        same = outcome.master_same_as_worker
        # A kind of one replica has no master: complyToReplicaType (Run:ai's, "for distributed") says nothing.
        replica = self.replica if kind.is_distributed else None
        found = []
        for issue in outcome.runnable.issues:
            if replica == "Master" and same and next(iter(issue.field), None) in WORKER_ONLY_FIELDS:
                continue  # the master is the worker without its worker-only fields
            if replica == "Worker" and issue.replica == "master":
                continue
            if replica == "Master" and issue.replica == "worker" and not same:
                continue
            found.append(runai_issue(issue, prefixed=replica is None and issue.replica == "master"))
        return found

    def assets(self, ctx: Ctx, rows: list[AssetRow]) -> dict[str, dict[str, Any]] | None:
        """Run:ai's ``ComplianceInfo`` of each asset of ``rows`` by its id, or ``None`` when no project was
        named.  The checks are priced first: beyond the request's budget, a 413 and none is made."""
        target = self.target
        if target is None:
            return None
        other = self._other_type(
            "only Distributed workloads are composed here: whether the asset complies with the policy of a "
            "{type} workload is not known"
        )
        if other is not None:
            return {row.id: {"imposed": False, "compliance": False, "reason": [other]} for row in rows}
        org = org_for(ctx, target, None)
        replicas = _REPLICAS[self.replica]
        pricer = Pricer()
        price = sum(len(replicas) * (composition_units(org) + pricer.data(row.document)) for row in rows)
        if price > REQUEST_BUDGET:
            raise over_budget(f"checking the compliance of {len(rows)} assets", price)
        return {row.id: self._asset(ctx, org, row, target, replicas) for row in rows}

    def _asset(
        self, ctx: Ctx, org: Org, row: AssetRow, target: Placement, replicas: tuple[Replica, ...]
    ) -> dict[str, Any]:
        asset = stored_asset(row, asset_scope(row, unit_name(ctx)))
        if isinstance(asset, list):
            reason = [{"field": format_path(p.path) or None, "details": p.message} for p in asset]
            return {"imposed": False, "compliance": False, "reason": reason}
        found: list[tuple[Replica, AssetCompliance]] = [
            (replica, asset_compliance(org, asset, target.view(), replica)) for replica in replicas
        ]
        reasons: list[dict[str, Any]] = []
        for replica, compliance in found:
            for issue in compliance.issues:
                prefixed = len(replicas) > 1 and replica == "master" and issue.rule is not None
                entry: dict[str, Any] = {
                    "field": format_path(("masterSpec", *issue.field) if prefixed else issue.field) or None,
                    "details": issue.message,
                }
                if issue.rule is not None:
                    entry["rule"] = issue.rule
                if entry not in reasons:
                    reasons.append(entry)
        info: dict[str, Any] = {"imposed": any(c.imposed for _, c in found), "compliance": not reasons}
        if reasons:
            info["reason"] = reasons
        return info


def runai_issue(issue: RunnableIssue, prefixed: bool) -> dict[str, Any]:
    """A runnable issue as Run:ai answers one (a ``complianceIssues`` entry, ``ComplianceIssue``): its field
    (under ``masterSpec.`` when ``prefixed``), its words and its rule (``required`` for a mandatory field
    not provided)."""
    entry: dict[str, Any] = {
        "field": format_path(("masterSpec", *issue.field) if prefixed else issue.field),
        "details": issue.message,
    }
    if issue.rule is not None:
        entry["rule"] = issue.rule
    elif issue.mandatory:
        entry["rule"] = "required"
    return entry
