"""``check -o policy-report``: the Kubernetes policy working group's reports (``wgpolicyk8s.io/v1alpha2``),
as Kyverno's policy reporter and other dashboards read them.

- A ``PolicyReport`` per project, in the project's namespace (the cluster settings' ``namespacePattern``,
  ``runai-<project>`` by default): the pairs seen from that project.
- One ``ClusterPolicyReport`` for what is seen at department or system scope (those views have no
  namespace) and for the problems of the org's files.

Each pair has one result per rule of :data:`~.rules.PAIR_RULES` (``fail`` with every issue of that rule in
its message, else ``pass``; ``cluster/objects`` stands for all the cluster's checks); a pair that does not
compose has the one ``compose/failed`` result, as nothing else could be checked.  ``policy`` is the rule's
group (``policy``, ``runnable``, ``cluster``, ``compose``), ``rule`` its id, ``resources`` the pair's job
object, ``source`` ``template-engine``; ``summary`` counts the results.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from template_engine.reports.model import CheckReport, Finding, PairResult
from template_engine.reports.rules import PAIR_RULES, group_of

API_VERSION = "wgpolicyk8s.io/v1alpha2"
SOURCE = "template-engine"
REPORT_NAME = "template-engine-check"


def _matches(rule_id: str, finding: Finding) -> bool:
    if rule_id == "cluster/objects":
        return group_of(finding.rule) == "cluster"
    if rule_id == "compose/failed":
        return False  # the whole pair: see _pair_results
    return finding.rule == rule_id


def _properties(pair: PairResult, found: Sequence[Finding]) -> dict[str, str]:
    out = {"view": pair.view, "template": pair.template, "templateScope": pair.scope}
    if pair.workload_type is not None:
        out["workloadType"] = pair.workload_type
    places = [f.place() for f in found if f.place()]
    if places:
        out["locations"] = ", ".join(dict.fromkeys(places))
    return out


def _result(pair: PairResult, rule_id: str, found: Sequence[Finding]) -> dict[str, Any]:
    failed = bool(found)
    out: dict[str, Any] = {
        "policy": group_of(rule_id),
        "rule": rule_id,
        "category": group_of(rule_id),
        "result": "fail" if failed else "pass",
        "source": SOURCE,
        "scored": True,
        "message": "; ".join(f.one_line() for f in found) if failed else f"{pair.title}: no {rule_id} issue",
        "properties": _properties(pair, found),
    }
    if failed:
        out["severity"] = "high"
    if pair.job is not None:
        ref = {"apiVersion": pair.job.api_version, "kind": pair.job.kind, "name": pair.job.name}
        if pair.job.namespace is not None:
            ref["namespace"] = pair.job.namespace
        out["resources"] = [ref]
    return out


def pair_results(pair: PairResult) -> list[dict[str, Any]]:
    """The results of one pair: one per rule, or the one ``compose/failed`` of a pair that did not compose."""
    if pair.status == "error":
        return [_result(pair, "compose/failed", pair.findings)]
    return [
        _result(pair, rule_id, [f for f in pair.findings if _matches(rule_id, f)]) for rule_id in PAIR_RULES
    ]


def _problem_result(problem: Finding) -> dict[str, Any]:
    out: dict[str, Any] = {
        "policy": group_of(problem.rule),
        "rule": problem.rule,
        "category": group_of(problem.rule),
        "result": "fail",
        "severity": "high",
        "source": SOURCE,
        "scored": True,
        "message": problem.one_line(),
    }
    if problem.location is not None:
        out["properties"] = {"file": problem.location.file, "location": problem.place()}
    return out


def _summary(results: Sequence[dict[str, Any]]) -> dict[str, int]:
    counts = dict.fromkeys(("pass", "fail", "warn", "error", "skip"), 0)
    for result in results:
        counts[result["result"]] += 1
    return counts


def _report(kind: str, namespace: str | None, results: list[dict[str, Any]], base: str) -> dict[str, Any]:
    metadata: dict[str, Any] = {
        "name": REPORT_NAME,
        "labels": {"app.kubernetes.io/managed-by": SOURCE},
        "annotations": {"template-engine/root": base},
    }
    if namespace is not None:
        metadata["namespace"] = namespace
    return {
        "apiVersion": API_VERSION,
        "kind": kind,
        "metadata": metadata,
        "summary": _summary(results),
        "results": results,
    }


def policy_reports(report: CheckReport) -> list[dict[str, Any]]:
    """A ``PolicyReport`` per project namespace (in the order the projects come), then the
    ``ClusterPolicyReport`` of the department and system views and of the org's problems (when any)."""
    by_namespace: dict[str, list[dict[str, Any]]] = {}
    cluster: list[dict[str, Any]] = []
    for pair in report.pairs:
        if pair.project is not None and pair.namespace is not None:
            by_namespace.setdefault(pair.namespace, []).extend(pair_results(pair))
        else:
            cluster.extend(pair_results(pair))
    cluster += [_problem_result(problem) for problem in report.problems]
    out = [_report("PolicyReport", ns, results, report.base) for ns, results in by_namespace.items()]
    if cluster:
        out.append(_report("ClusterPolicyReport", None, cluster, report.base))
    return out


__all__ = ["API_VERSION", "REPORT_NAME", "SOURCE", "pair_results", "policy_reports"]
