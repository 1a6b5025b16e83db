"""The engine's records as :class:`~.model.Finding` values: each runnable issue at the place its value is
written, each problem at its location, each warning at its own."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from template_engine.compose import Composition
from template_engine.errors import CompositionWarning, Location, Problem
from template_engine.merge.engine import MergeResult
from template_engine.paths import Match, Path, format_path, is_prefix
from template_engine.reports.model import Finding, JobRef
from template_engine.reports.rules import issue_rule, warning_rule
from template_engine.runnable import RunnableIssue


def _merge_of(composition: Composition, replica: str) -> MergeResult:
    if replica == "master" and composition.master is not None:
        return composition.master
    return composition.worker


def _template_place(composition: Composition) -> Location | None:
    """The template file, at its ``spec`` key when its line is known (where a missing field belongs)."""
    template = composition.template
    if template is None:
        return None
    line = template.source.lines.get(("spec",))
    if line is None:
        return Location(template.file, None, None, "template")
    return Location(template.file, line[0], line[1], "template")


def _written(result: MergeResult, path: Path) -> Location | None:
    """Where the value at ``path`` was last written: the layer that set it (``MergeResult.locate``) or, when
    a later layer changed something inside it (an attribute of an item an imposed asset gave), that one."""
    origin = result.origin_of(path)
    inner = [o for p, o in result.set_by.items() if len(p) > len(path) and is_prefix(path, p)]
    latest = max(inner, key=lambda o: o.layer, default=None)
    if latest is not None and (origin is None or latest.layer > origin.layer):
        origin = latest
    return result.location(origin) if origin is not None else None


def issue_location(
    issue: RunnableIssue, composition: Composition
) -> tuple[Location | None, tuple[Location, ...]]:
    """Where a runnable issue is shown, and the places that explain it.

    The value's own place (the last layer that wrote the field or something inside it, else its nearest
    parent);
    for a field no layer sets, the policy rule that requires it, else the template file.  A compliance
    issue's rule (``source``) is a related place when the value's own place is the main one.
    """
    written = _written(_merge_of(composition, issue.replica), issue.field) if issue.field else None
    if written is not None:
        return written, (issue.source,) if issue.source is not None else ()
    if issue.source is not None:
        return issue.source, ()
    return _template_place(composition), ()


def issue_value(issue: RunnableIssue, composition: Composition) -> tuple[bool, Any]:
    """``(True, value)``: the value at the issue's field in its replica's combined spec; ``(False, None)``
    when the issue names no field or the field holds nothing (a mandatory field not provided)."""
    spec: Any = composition.combined_spec
    if issue.replica == "master" and composition.combined_master_spec is not None:
        spec = composition.combined_master_spec
    if not issue.field:
        return False, None
    for segment in issue.field:
        if isinstance(segment, Match) and isinstance(spec, list):
            spec = next(
                (i for i in spec if isinstance(i, Mapping) and i.get(segment.field) == segment.value), None
            )
        elif isinstance(segment, int) and isinstance(spec, list):
            spec = spec[segment] if 0 <= segment < len(spec) else None
        elif isinstance(segment, str) and isinstance(spec, Mapping):
            spec = spec.get(segment)
        else:
            spec = None
        if spec is None:
            return False, None
    return True, spec


def issue_finding(issue: RunnableIssue, composition: Composition) -> Finding:
    location, related = issue_location(issue, composition)
    field = format_path(issue.field) or None
    if issue.object_path is not None:
        field = field or issue.object_path
    return Finding(issue_rule(issue), issue.message, "error", field, issue.replica, location, related)


def warning_finding(warning: CompositionWarning) -> Finding:
    return Finding(
        warning_rule(warning.kind),
        warning.message,
        "warning",
        warning.field_text() or None,
        warning.replica,
        warning.location,
    )


def problem_finding(problem: Problem, rule: str) -> Finding:
    """A problem (of a file, a reference, or a composition that failed) under ``rule``."""
    field = format_path(problem.path) or None
    return Finding(rule, problem.with_expected(), "error", field, None, problem.location, problem.related)


def composition_findings(composition: Composition) -> tuple[Finding, ...]:
    """Every runnable issue of ``composition``, in its order."""
    return tuple(issue_finding(issue, composition) for issue in composition.runnable.issues)


def warning_findings(warnings: Iterable[CompositionWarning]) -> tuple[Finding, ...]:
    return tuple(warning_finding(w) for w in warnings)


def job_ref(composition: Composition) -> JobRef | None:
    """The job object of the composition (the first of its objects), or ``None`` when it has none."""
    manifests = composition.manifests
    if manifests is None or not manifests.objects:
        return None
    job = manifests.objects[0]
    metadata = job.get("metadata") or {}
    namespace = metadata.get("namespace")
    return JobRef(
        str(job.get("apiVersion", "")),
        str(job.get("kind", "")),
        str(metadata.get("name", "")),
        str(namespace) if namespace else None,
    )


__all__ = [
    "composition_findings",
    "issue_finding",
    "issue_location",
    "issue_value",
    "job_ref",
    "problem_finding",
    "warning_finding",
    "warning_findings",
]
