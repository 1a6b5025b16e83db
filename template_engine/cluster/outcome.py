"""A composition's objects and the runnable issues of what the cluster would refuse in them.

:func:`cluster_outcome` is the step :func:`template_engine.compose.compose` runs after the runnable check:
it renders the objects (:mod:`~template_engine.cluster.mapping`), checks them
(:mod:`~template_engine.cluster.validity`) and turns each refusal into a
:class:`~template_engine.runnable.RunnableIssue` that names the object path, the check, and the spec field
that set the value.  A refusal whose field (or an item or attribute of it) already has an issue (an image
no layer sets is already "mandatory") is not said again; neither is a refusal of a master the same as the
workers, whose values are the workers' (its issues are the workers', as ``runnable`` says them).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from template_engine.cluster.mapping import Derived, Manifests, SpecSource, job_name, manifests_of
from template_engine.cluster.problems import ObjectProblem
from template_engine.cluster.settings import ClusterSettings
from template_engine.cluster.validity import manifests_problems
from template_engine.errors import Replica
from template_engine.kinds import DISTRIBUTED, WorkloadKind
from template_engine.paths import Path, is_prefix
from template_engine.runnable import RunnableIssue

#: Replica types that run the master's spec.
_LEADS = frozenset({"Master", "Chief", "Launcher"})


def cluster_outcome(
    spec: Mapping[str, Any],
    master_spec: Mapping[str, Any] | None,
    same_as_worker: bool,
    *,
    template_name: str | None,
    workload_name: str | None,
    project: str | None,
    settings: ClusterSettings,
    known: Iterable[RunnableIssue] = (),
    kind: WorkloadKind = DISTRIBUTED,
) -> tuple[Manifests, tuple[RunnableIssue, ...]]:
    """The objects of a composition of ``kind`` and the issues of what the cluster refuses in them (a kind
    of one role has no master: ``master_spec`` is ``None``)."""
    if workload_name is not None:
        name, source = workload_name, Derived("the workload's name")
    else:
        raw = template_name or "workload"
        name = job_name(raw)
        source = Derived(f"the template's name {raw!r} as a job name (a submission names its own)")
    manifests = manifests_of(
        spec,
        master_spec,
        same_as_worker,
        name=name,
        project=project,
        settings=settings,
        name_source=source,
        kind=kind,
    )
    problems = [*manifests.problems, *manifests_problems(manifests.objects)]
    said = [(i.replica, i.field) for i in known]
    issues: list[RunnableIssue] = []
    for problem in problems:
        issue = _issue(manifests, problem)
        if issue.field and any(
            replica == issue.replica and (is_prefix(field, issue.field) or is_prefix(issue.field, field))
            for replica, field in said
        ):
            continue  # the field has an issue already: fixing it fixes the object
        said.append((issue.replica, issue.field))
        issues.append(issue)
    return manifests, tuple(issues)


def _issue(manifests: Manifests, problem: ObjectProblem) -> RunnableIssue:
    index = problem.index
    if index is None:
        index = next((i for i, obj in enumerate(manifests.objects) if obj.get("kind") == problem.kind), None)
    source = manifests.source_of(index, problem.path) if index is not None else None
    field: Path = ()
    replica: Replica = _replica_of(problem)
    if isinstance(source, SpecSource):
        field, replica = source.path, source.replica
    return RunnableIssue(
        replica,
        field,
        f"the cluster refuses {problem.place()}: {problem.message}",
        object_path=problem.place(),
        check=problem.rule,
    )


def _replica_of(problem: ObjectProblem) -> Replica:
    return "master" if any(step in _LEADS for step in problem.path[2:3]) else "worker"


__all__ = ["cluster_outcome"]
