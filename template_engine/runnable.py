"""Whether a combined spec can be submitted as is, and every reason why not.

Problems are data: :func:`check` returns them all, in a stable order (worker first, then master; within a
replica in the order of the checks below).  Nothing here raises.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from template_engine.errors import CompositionWarning, Location, Replica, WarningKind
from template_engine.kinds import DISTRIBUTED, WorkloadKind
from template_engine.loader.values import spec_value_problems
from template_engine.merge.plan import PlanNode
from template_engine.models.data_sources import DATA_SOURCES
from template_engine.paths import Path, format_path, value_at
from template_engine.quantity import parse_quantity
from template_engine.walk import items_at, keyed_path


def issue_line(replica: str, field: str, message: str) -> str:
    """``replica field: message``, the one line an issue is shown as (``check``, ``impact``, ``manifests``,
    the UI's scope page), the parts that are given: a caller leaves ``field`` out when the sentence names it
    already (:attr:`RunnableIssue.names_field`), ``worker: numWorkers is 6, ...``, not ``worker numWorkers:
    numWorkers is 6, ...``.  Nothing here reads the message."""
    where = f"{replica} {field}" if replica and field else replica or field
    return f"{where}: {message}" if where else message


@dataclass(frozen=True, slots=True)
class RunnableIssue:
    """One reason a combined spec cannot be submitted: the replica, the field (a typed path, rendered as text
    only at the edges) and a sentence."""

    replica: Replica
    field: Path
    message: str
    #: For a compliance issue (POLICY.md): Run:ai's ``PolicyRuleEnum`` and where the rule (or the imposed
    #: asset entry) is written; ``None`` for an issue that is not about a policy.
    rule: str | None = None
    source: Location | None = None
    #: A mandatory field that is not provided (Run:ai answers those with the rule ``required``): callers
    #: branch on this, never on the message.
    mandatory: bool = dataclasses.field(default=False, compare=False)
    #: The sentence begins with the field itself (``numWorkers is 6, above ...``), so a line of the issue
    #: does not name the field twice.  Set where the issue is worded; nobody reads the message to find out.
    names_field: bool = dataclasses.field(default=False, compare=False)
    #: For an object the cluster would refuse (docs/cluster.md, "Validity"): the place in the object
    #: (``PyTorchJob.spec.pytorchReplicaSpecs.Worker.template.spec.containers[0].name``) and the check
    #: (``kubernetes.dns1123Label``); ``field`` is then the spec field that set the value, where one did.
    object_path: str | None = None
    check: str | None = None

    def one_line(self) -> str:
        """:func:`issue_line` of this issue."""
        return issue_line(self.replica, "" if self.names_field else format_path(self.field), self.message)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "replica": self.replica,
            "field": format_path(self.field),
            "message": self.message,
            "rule": self.rule,
        }
        if self.source is not None:
            out["source"] = self.source.place()
        if self.object_path is not None:
            out["object"] = self.object_path
            out["check"] = self.check
        return out


@dataclass(frozen=True, slots=True)
class Runnable:
    issues: tuple[RunnableIssue, ...]
    warnings: tuple[CompositionWarning, ...]

    @property
    def is_runnable(self) -> bool:
        return not self.issues

    @property
    def issue(self) -> str | None:
        return self.issues[0].message if self.issues else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "isRunnable": self.is_runnable,
            "issue": self.issue,
            "issues": [i.to_dict() for i in self.issues],
            "warnings": [w.to_dict() for w in self.warnings],
        }


#: Where an environment variable's value may come from; Run:ai takes exactly one (an item that only excludes
#: has none, and it never reaches a combined spec).
VALUE_SOURCES = ("value", "secret", "configMap", "podFieldRef", "userCredential")

#: Attributes each list item must have to be submitted (runai-facts section 4; DESIGN.md "Runnable").
REQUIRED_ITEM_FIELDS: dict[tuple[str, ...], tuple[str, ...]] = {
    ("ports",): ("container", "serviceType"),
    ("exposedUrls",): ("container",),
    ("relatedUrls",): ("url", "type"),
    ("tolerations",): ("operator", "effect"),
    ("compute", "extendedResources"): ("quantity",),
    **{("storage", kind.storage): kind.required for kind in DATA_SOURCES},
}

_MPI_ONLY = ("slotsPerWorker", "sshAuthMountPath", "mpiLauncherCreationPolicy")
_PYTORCH_ONLY = ("minReplicas", "maxReplicas")


def _spec_issues(
    spec: Mapping[str, Any], replica: Replica, plan: PlanNode, kind: WorkloadKind
) -> list[RunnableIssue]:
    issues: list[RunnableIssue] = []

    def add(path: Path, message: str) -> None:
        issues.append(RunnableIssue(replica, path, message))

    def about(path: Path, rest: str) -> None:
        """An issue whose sentence begins with its field: the field's path, then ``rest``."""
        issues.append(RunnableIssue(replica, path, format_path(path) + rest, names_field=True))

    def missing(path: Path, message: str) -> None:
        issues.append(RunnableIssue(replica, path, message, mandatory=True))

    for field in kind.mandatory.get(replica, ()):
        value = value_at(spec, *field)
        if value is None or value == "":
            missing(field, f"mandatory {format_path(field)} is not provided")

    for names, required in REQUIRED_ITEM_FIELDS.items():
        for path, item in items_at(spec, names, plan):
            for attr in required:
                if item.get(attr) in (None, ""):
                    missing((*path, attr), f"mandatory {attr} of {format_path(path)} is not provided")
            if names == ("tolerations",):
                if item.get("operator") != "Exists" and not item.get("key"):
                    add((*path, "key"), f"{format_path(path)} needs a key unless its operator is Exists")
                if item.get("seconds") is not None and item.get("effect") != "NoExecute":
                    add((*path, "seconds"), f"{format_path(path)} sets seconds without effect NoExecute")
            if names == ("exposedUrls",) and item.get("authorizedUsers") and item.get("authorizedGroups"):
                about(path, " sets both authorizedUsers and authorizedGroups")
            if names == ("storage", "pvc") and not item.get("claimName") and not item.get("claimInfo"):
                add((*path, "claimName"), f"{format_path(path)} needs claimName or claimInfo")

    for path, item in items_at(spec, ("environmentVariables",), plan):
        given = [source for source in VALUE_SOURCES if item.get(source) is not None]
        if len(given) > 1:
            sources = ", ".join(given)
            about(path, f" has more than one value source ({sources}); give exactly one")

    compute = spec.get("compute")
    if isinstance(compute, Mapping):
        issues.extend(_compute_issues(compute, replica))

    low, high = spec.get("minReplicas"), spec.get("maxReplicas")
    if isinstance(low, int) and isinstance(high, int) and low > high:
        about(("minReplicas",), f" {low} is above maxReplicas {high}")
    issues.extend(_autoscaling_issues(spec.get("autoscaling"), replica))

    # Run:ai's value rules once more, on the rendered values: a file or a body is held to them as written,
    # and a value written as an expression ("{{ project.name }}_db") is held to them here, as rendered.
    mandatory = {issue.field for issue in issues if issue.mandatory}
    for problem in spec_value_problems(spec, ()):
        # said above: a quantity in its own words, an empty mandatory value as not provided
        if problem.path not in _QUANTITY_CHECKED and problem.path not in mandatory:
            path = keyed_path(spec, problem.path, plan)
            about(path, f": {problem.message}; expected {problem.expected}")
    return issues


def _autoscaling_issues(autoscaling: Any, replica: Replica) -> list[RunnableIssue]:
    """An inference's autoscaling as Run:ai's document states it: ``minReplicas`` at most ``maxReplicas``,
    a ``metricThreshold`` for a ``metric``, a ``metric`` where the replicas may differ (but 0 to 1)."""
    if not isinstance(autoscaling, Mapping):
        return []
    out: list[RunnableIssue] = []

    def about(name: str, rest: str, mandatory: bool = False) -> RunnableIssue:
        """An issue whose sentence begins with its field, ``autoscaling.NAME``."""
        field = ("autoscaling", name)
        return RunnableIssue(replica, field, format_path(field) + rest, mandatory=mandatory, names_field=True)

    low, high = autoscaling.get("minReplicas"), autoscaling.get("maxReplicas")
    if isinstance(low, int) and isinstance(high, int):
        if low > high:
            out.append(about("minReplicas", f" {low} is above autoscaling.maxReplicas {high}"))
        elif low < high and (low, high) != (0, 1) and autoscaling.get("metric") is None:
            rest = f" is mandatory when minReplicas {low} is below maxReplicas {high}"
            out.append(about("metric", rest, mandatory=True))
    if autoscaling.get("metric") is not None and autoscaling.get("metricThreshold") is None:
        out.append(about("metricThreshold", " is mandatory with autoscaling.metric", mandatory=True))
    return out


#: The quantities :func:`_compute_issues` checks itself.
_QUANTITY_CHECKED = frozenset(
    ("compute", name) for name in ("cpuMemoryRequest", "cpuMemoryLimit", "gpuMemoryRequest", "gpuMemoryLimit")
)


def _compute_issues(compute: Mapping[str, Any], replica: Replica) -> list[RunnableIssue]:
    issues: list[RunnableIssue] = []

    def add(name: str, message: str) -> None:
        issues.append(RunnableIssue(replica, ("compute", name), message))

    def about(name: str, rest: str) -> None:
        """An issue whose sentence begins with its field, ``compute.NAME``."""
        field = ("compute", name)
        issues.append(RunnableIssue(replica, field, format_path(field) + rest, names_field=True))

    for name in ("cpuMemoryRequest", "cpuMemoryLimit", "gpuMemoryRequest", "gpuMemoryLimit"):
        value = compute.get(name)
        if value is not None and parse_quantity(value) is None:
            about(name, f" {value!r} is not a valid quantity (such as 512Mi, 20M or 1Gi)")
    for request, limit in (
        ("cpuCoreRequest", "cpuCoreLimit"),
        ("cpuMemoryRequest", "cpuMemoryLimit"),
        ("gpuPortionRequest", "gpuPortionLimit"),
        ("gpuMemoryRequest", "gpuMemoryLimit"),
    ):
        want, cap = parse_quantity(compute.get(request)), parse_quantity(compute.get(limit))
        if want is not None and cap is not None and want > cap:
            about(request, f" {compute[request]} is above compute.{limit} {compute[limit]}")
    kind = compute.get("gpuRequestType")
    if kind == "portion" and compute.get("gpuPortionRequest") is None:
        add("gpuPortionRequest", "gpuRequestType portion needs compute.gpuPortionRequest")
    if kind == "memory" and compute.get("gpuMemoryRequest") is None:
        add("gpuMemoryRequest", "gpuRequestType memory needs compute.gpuMemoryRequest")
    devices = compute.get("gpuDevicesRequest")
    if isinstance(devices, int) and devices > 1 and kind == "memory":
        add("gpuRequestType", "gpuRequestType memory is not allowed with more than one GPU device")
    return issues


def _framework_warnings(spec: Mapping[str, Any]) -> list[CompositionWarning]:
    framework = spec.get("distributedFramework")
    if framework is None:
        return []
    out: list[CompositionWarning] = []
    for names, owner in ((_MPI_ONLY, "MPI"), (_PYTORCH_ONLY, "PyTorch")):
        if framework == owner:
            continue
        for name in names:
            if spec.get(name) is not None:
                out.append(
                    CompositionWarning(
                        WarningKind.FRAMEWORK_IGNORES_FIELD,
                        "worker",
                        (name,),
                        f"{name} means something only for {owner}; {framework} ignores it",
                    )
                )
    return out


def check(
    worker: Mapping[str, Any],
    master: Mapping[str, Any] | None,
    master_separate: bool,
    plan: PlanNode,
    extra_warnings: tuple[CompositionWarning, ...] = (),
    kind: WorkloadKind = DISTRIBUTED,
) -> Runnable:
    """Every issue of the rendered combined specs of a ``kind``; the master is checked only when composed
    separately (a kind of one role has none)."""
    primary = kind.primary
    issues = _spec_issues(worker, primary, plan, kind)
    if master is not None and master_separate and len(kind.roles) > 1:
        issues.extend(_spec_issues(master, kind.roles[1], plan, kind))
    framework = _framework_warnings(worker) if kind.is_distributed else []
    return Runnable(tuple(issues), (*framework, *extra_warnings))


__all__ = ["REQUIRED_ITEM_FIELDS", "Runnable", "RunnableIssue", "check"]
