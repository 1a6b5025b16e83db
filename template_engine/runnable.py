"""Whether a combined spec can be submitted as is, and every reason why not.

Problems are data: :func:`check` returns them all, in a stable order (worker first, then master; within a
replica in the order of the checks below).  Nothing here raises.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from template_engine.errors import CompositionWarning, Location, Replica, WarningKind
from template_engine.kinds import DISTRIBUTED, WorkloadKind
from template_engine.loader.values import spec_value_problems
from template_engine.merge.plan import PlanNode, item_key
from template_engine.paths import Path, format_path
from template_engine.quantity import parse_quantity
from template_engine.walk import items


def issue_line(replica: str, field: str, message: str) -> str:
    """``replica field: message``, the one line an issue is shown as (``diff``, ``impact``, ``manifests``,
    the UI's scope page); the field is left out when the sentence starts with it already, as ``check``'s
    table does: ``worker: numWorkers is 6, ...``, not ``worker numWorkers: numWorkers is 6, ...``."""
    where = replica if not field or message.startswith(field) else f"{replica} {field}"
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
    #: For an object the cluster would refuse (docs/cluster.md, "Validity"): the place in the object
    #: (``PyTorchJob.spec.pytorchReplicaSpecs.Worker.template.spec.containers[0].name``) and the check
    #: (``kubernetes.dns1123Label``); ``field`` is then the spec field that set the value, where one did.
    object_path: str | None = None
    check: str | None = None

    def one_line(self) -> str:
        """:func:`issue_line` of this issue."""
        return issue_line(self.replica, format_path(self.field), self.message)

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
    ("storage", "pvc"): ("path",),
    ("storage", "nfs"): ("server", "path", "mountPath"),
    ("storage", "s3"): ("bucket", "path"),
    ("storage", "git"): ("repository", "path"),
    ("storage", "hostPath"): ("path", "mountPath"),
    ("storage", "configMapVolume"): ("configMap", "mountPath"),
    ("storage", "secretVolume"): ("secret", "mountPath"),
    ("storage", "emptyDirVolume"): ("path",),
    ("storage", "dataVolume"): ("id", "mountPath"),
}

_MPI_ONLY = ("slotsPerWorker", "sshAuthMountPath", "mpiLauncherCreationPolicy")
_PYTORCH_ONLY = ("minReplicas", "maxReplicas")


def _items(spec: Mapping[str, Any], names: tuple[str, ...], plan: PlanNode) -> Iterator[tuple[Path, Any]]:
    """``(path, item)`` of each mapping item of the list at ``names``."""
    value: Any = spec
    node = plan
    for name in names:
        if not isinstance(value, Mapping):
            return
        value = value.get(name)
        node = node.child(name)
    if not isinstance(value, list):
        return
    for segment, item in items(value, node):
        if isinstance(item, Mapping):
            yield (*names, segment), item


def _spec_issues(
    spec: Mapping[str, Any], replica: Replica, plan: PlanNode, kind: WorkloadKind
) -> list[RunnableIssue]:
    issues: list[RunnableIssue] = []

    def add(path: Path, message: str) -> None:
        issues.append(RunnableIssue(replica, path, message))

    def missing(path: Path, message: str) -> None:
        issues.append(RunnableIssue(replica, path, message, mandatory=True))

    for field in kind.mandatory.get(replica, ()):
        value: Any = spec
        for name in field:
            value = value.get(name) if isinstance(value, Mapping) else None
        if value is None or value == "":
            missing(field, f"mandatory {format_path(field)} is not provided")

    for names, required in REQUIRED_ITEM_FIELDS.items():
        for path, item in _items(spec, names, plan):
            for attr in required:
                if item.get(attr) in (None, ""):
                    missing((*path, attr), f"mandatory {attr} of {format_path(path)} is not provided")
            if names == ("tolerations",):
                if item.get("operator") != "Exists" and not item.get("key"):
                    add((*path, "key"), f"{format_path(path)} needs a key unless its operator is Exists")
                if item.get("seconds") is not None and item.get("effect") != "NoExecute":
                    add((*path, "seconds"), f"{format_path(path)} sets seconds without effect NoExecute")
            if names == ("exposedUrls",) and item.get("authorizedUsers") and item.get("authorizedGroups"):
                add(path, f"{format_path(path)} sets both authorizedUsers and authorizedGroups")
            if names == ("storage", "pvc") and not item.get("claimName") and not item.get("claimInfo"):
                add((*path, "claimName"), f"{format_path(path)} needs claimName or claimInfo")

    for path, item in _items(spec, ("environmentVariables",), plan):
        given = [source for source in VALUE_SOURCES if item.get(source) is not None]
        if len(given) > 1:
            sources = ", ".join(given)
            add(path, f"{format_path(path)} has more than one value source ({sources}); give exactly one")

    compute = spec.get("compute")
    if isinstance(compute, Mapping):
        issues.extend(_compute_issues(compute, replica))

    low, high = spec.get("minReplicas"), spec.get("maxReplicas")
    if isinstance(low, int) and isinstance(high, int) and low > high:
        add(("minReplicas",), f"minReplicas {low} is above maxReplicas {high}")
    issues.extend(_autoscaling_issues(spec.get("autoscaling"), replica))

    # Run:ai's value rules once more, on the rendered values: a file or a body is held to them as written,
    # and a value written as an expression ("{{ project.name }}_db") is held to them here, as rendered.
    mandatory = {issue.field for issue in issues if issue.mandatory}
    for problem in spec_value_problems(spec, ()):
        # said above: a quantity in its own words, an empty mandatory value as not provided
        if problem.path not in _QUANTITY_CHECKED and problem.path not in mandatory:
            path = keyed_path(spec, problem.path, plan)
            add(path, f"{format_path(path)}: {problem.message}; expected {problem.expected}")
    return issues


def _autoscaling_issues(autoscaling: Any, replica: Replica) -> list[RunnableIssue]:
    """An inference's autoscaling as Run:ai's document states it: ``minReplicas`` at most ``maxReplicas``,
    a ``metricThreshold`` for a ``metric``, a ``metric`` where the replicas may differ (but 0 to 1)."""
    if not isinstance(autoscaling, Mapping):
        return []
    out: list[RunnableIssue] = []
    low, high = autoscaling.get("minReplicas"), autoscaling.get("maxReplicas")
    if isinstance(low, int) and isinstance(high, int):
        if low > high:
            out.append(
                RunnableIssue(
                    replica,
                    ("autoscaling", "minReplicas"),
                    f"autoscaling.minReplicas {low} is above autoscaling.maxReplicas {high}",
                )
            )
        elif low < high and (low, high) != (0, 1) and autoscaling.get("metric") is None:
            out.append(
                RunnableIssue(
                    replica,
                    ("autoscaling", "metric"),
                    f"autoscaling.metric is mandatory when minReplicas {low} is below maxReplicas {high}",
                    mandatory=True,
                )
            )
    if autoscaling.get("metric") is not None and autoscaling.get("metricThreshold") is None:
        out.append(
            RunnableIssue(
                replica,
                ("autoscaling", "metricThreshold"),
                "autoscaling.metricThreshold is mandatory with autoscaling.metric",
                mandatory=True,
            )
        )
    return out


def keyed_path(spec: Any, path: Path, plan: PlanNode) -> Path:
    """``path`` in ``spec`` (list items by position) with each keyed list item named by its key, as issues
    name them.  A position ``spec`` does not have, or a segment through a value that is not a list or a
    mapping, is kept as it is (a request's path may name a part its schema refused)."""
    out: list[Any] = []
    value, node = spec, plan
    for segment in path:
        if isinstance(segment, int) and isinstance(value, list) and 0 <= segment < len(value):
            item = value[segment]
            key = node.key
            match = item_key(item, key) if key is not None and isinstance(item, Mapping) else None
            out.append(segment if match is None else match)
            value = item
        else:
            out.append(segment)
            value = value.get(segment) if isinstance(value, Mapping) and isinstance(segment, str) else None
            node = node.child(segment) if isinstance(segment, str) else node
    return tuple(out)


#: The quantities :func:`_compute_issues` checks itself.
_QUANTITY_CHECKED = frozenset(
    ("compute", name) for name in ("cpuMemoryRequest", "cpuMemoryLimit", "gpuMemoryRequest", "gpuMemoryLimit")
)


def _compute_issues(compute: Mapping[str, Any], replica: Replica) -> list[RunnableIssue]:
    issues: list[RunnableIssue] = []

    def add(name: str, message: str) -> None:
        issues.append(RunnableIssue(replica, ("compute", name), message))

    for name in ("cpuMemoryRequest", "cpuMemoryLimit", "gpuMemoryRequest", "gpuMemoryLimit"):
        value = compute.get(name)
        if value is not None and parse_quantity(value) is None:
            add(name, f"compute.{name} {value!r} is not a valid quantity (such as 512Mi, 20M or 1Gi)")
    for request, limit in (
        ("cpuCoreRequest", "cpuCoreLimit"),
        ("cpuMemoryRequest", "cpuMemoryLimit"),
        ("gpuPortionRequest", "gpuPortionLimit"),
        ("gpuMemoryRequest", "gpuMemoryLimit"),
    ):
        want, cap = parse_quantity(compute.get(request)), parse_quantity(compute.get(limit))
        if want is not None and cap is not None and want > cap:
            add(request, f"compute.{request} {compute[request]} is above compute.{limit} {compute[limit]}")
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
