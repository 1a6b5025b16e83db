"""Properties of the mapping over compositions generated from the spec models (``spec_values.py``).

(a) When the engine finds nothing the cluster would refuse (``manifests_of``'s own problems and
    ``validity.manifests_problems``: the cluster part of ``compose``'s runnable), the independent validators
    (``independent_check.py``) accept every object.
(b) Every set leaf field of the combined specs appears in the objects (an origin ``SpecSource`` of its replica
    whose path is the field's or a prefix of it), or is in ``mapping.NOT_REPRESENTABLE`` (itself or a parent,
    list items as ``[]``), or a NOT_REPRESENTABLE warning names it (or a parent). A field whose value the
    mapping refuses (a master of JAX; a command that is not shell words; supplementalGroups that are not ids)
    is reported by that refusal instead.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from independent_check import independent_errors
from spec_values import leaf_paths, specs, table_name

from template_engine.cluster.mapping import NOT_REPRESENTABLE, Manifests, SpecSource, manifests_of
from template_engine.cluster.settings import DEFAULT_SETTINGS
from template_engine.cluster.validity import manifests_problems
from template_engine.errors import Replica, WarningKind
from template_engine.merge.plan import SPEC_PLAN, item_key
from template_engine.models.spec import WORKER_ONLY_FIELDS, MasterSpec, WorkerSpec
from template_engine.paths import Match, Path, format_path, is_prefix

PROPERTIES = settings(max_examples=100, derandomize=True, deadline=None)
FRAMEWORKS = ("PyTorch", "TF", "XGBoost", "JAX", "MPI")
TOPOLOGIES = ("same-master", "separate-master", "workers-only")
#: A refusal of the mapping, and the fields (by their names, either replica) it reports.
REFUSED_FIELDS = {
    "mapping.shellWords": (("command",), ("args",)),
    "mapping.supplementalGroups": (("security", "supplementalGroups"),),
    "mapping.quantity": tuple(
        ("compute", f) for f in ("cpuCoreRequest", "cpuCoreLimit", "cpuMemoryRequest", "cpuMemoryLimit")
    ),
}


@dataclass(frozen=True)
class Case:
    spec: dict[str, Any]
    master_spec: dict[str, Any] | None
    topology: str
    project: str | None

    def render(self) -> Manifests:
        same = self.topology == "same-master"
        return manifests_of(
            self.spec,
            self.master_spec,
            same,
            name="train-job",
            project=self.project,
            settings=DEFAULT_SETTINGS,
        )

    def leaves(self) -> Iterable[tuple[Replica, Path]]:
        yield from (("worker", path) for path in leaf_paths(self.spec))
        if self.master_spec is not None and self.topology == "separate-master":
            yield from (("master", path) for path in leaf_paths(self.master_spec))


@st.composite
def cases(draw: st.DrawFn) -> Case:
    spec = draw(specs(WorkerSpec))
    spec["distributedFramework"] = draw(st.sampled_from(FRAMEWORKS))
    spec["image"] = draw(st.sampled_from(["python:3.11", "nvcr.io/nvidia/pytorch:24.05-py3"]))
    topology = draw(st.sampled_from(TOPOLOGIES))
    master: dict[str, Any] | None = None
    if topology == "same-master":  # compose's combined master spec: the workers' without worker-only fields
        master = {k: v for k, v in spec.items() if k not in WORKER_ONLY_FIELDS}
    elif topology == "separate-master":
        master = {**draw(specs(MasterSpec)), "image": "python:3.11-slim"}
    return Case(spec, master, topology, draw(st.sampled_from(["vision", None])))


def engine_problems(manifests: Manifests) -> list[str]:
    found = [*manifests.problems, *manifests_problems(manifests.objects)]
    return [f"{p.kind} {p.place()}: {p.rule}" for p in found]


def test_objects_the_engine_accepts_validate_independently() -> None:
    accepted: list[int] = []

    @PROPERTIES
    @given(case=cases())
    def check(case: Case) -> None:
        manifests = case.render()
        if engine_problems(manifests):
            return
        accepted.append(1)
        assert independent_errors(manifests.objects) == []

    check()
    assert len(accepted) >= 25, "too few generated compositions were accepted for the property to mean much"


def unrepresented(case: Case, manifests: Manifests, seen: set[tuple[str, str]] | None = None) -> list[str]:
    """The set leaves of ``case`` that neither the objects, the table, a warning nor a refusal account for."""
    noted = [
        (s.replica, s.path)
        for table in manifests.origins
        for s in table.values()
        if isinstance(s, SpecSource)
    ]
    warned = [(w.replica, w.field) for w in manifests.warnings if w.kind is WarningKind.NOT_REPRESENTABLE]
    rules = {p.rule for p in manifests.problems}
    refused = [field for rule in rules for field in REFUSED_FIELDS.get(rule, ())]
    missing = []
    for replica, path in case.leaves():
        if replica == "master" and "mapping.jaxMaster" in rules:
            continue
        names = table_name(path)
        if any(
            names == key or names.startswith(f"{key}.") or names.startswith(f"{key}[")
            for key in NOT_REPRESENTABLE
        ):
            continue
        # a keyed item's key is in its identity (a Match): written wherever the item is
        key = len(path) > 1 and isinstance(path[-2], Match) and path[-2].field == path[-1]
        item = path[:-1] if key else path
        if any(
            r == replica and (is_prefix(at, item) or (key and is_prefix(item, at)))
            for r, at in [*noted, *warned]
        ):
            if seen is not None:
                seen.add((replica, names))
            continue
        if _accounted(case.spec if replica == "worker" else case.master_spec or {}, path):
            continue
        if any(is_prefix(field, path) for field in refused):
            continue
        missing.append(f"{replica} {format_path(path)}")
    return missing


def _port_listed_before(ports: list[Any], item: Any) -> bool:
    """Whether an item of ``ports`` before ``item`` (a keyed item's ``Match``) is on its container port."""
    key = SPEC_PLAN.child("ports").key
    assert key is not None
    numbers = [p.get("container") for p in ports if isinstance(p, dict)]
    matches = [item_key(p, key) for p in ports if isinstance(p, dict)]
    index = matches.index(item) if item in matches else None
    return index is not None and numbers[index] in numbers[:index]


def _accounted(spec: dict[str, Any], path: Path) -> bool:
    """The fields the mapping reads without writing them, and the reason each is still represented."""
    compute = spec.get("compute") or {}
    kind = compute.get("gpuRequestType")
    if path == ("compute", "gpuRequestType"):
        return True  # a selector: which of the GPU request fields below is written
    if path == ("compute", "gpuMemoryRequest") and kind == "portion":
        return True  # gpuRequestType portion: the portion is written, not the memory
    if (
        path == ("compute", "gpuMemoryRequest")
        and kind is None
        and compute.get("gpuPortionRequest") is not None
    ):
        return True  # no gpuRequestType: a portion, when given, is written and the memory is not
    if path == ("compute", "gpuPortionRequest") and kind == "memory":
        return True
    if path == ("compute", "largeShmRequest") and compute.get("largeShmRequest") is False:
        return True  # no shared-memory volume
    if path == ("preemptibility",):
        # with a priorityClass, the class says it (KAI reads preemptibility from the class's value; a warning
        # if they disagree); without one, priorityClassName is the settings' class for it (SettingSource)
        return True
    if path == ("numWorkers",) and spec.get("numWorkers") == 1:
        return True  # XGBoost/MPI workers only: the one worker is the lead (Derived), no Worker replica
    if len(path) == 3 and path[0] == "ports" and path[2] == "container":
        # several items (services) on one container port: the container lists it once, from the first
        return _port_listed_before(spec.get("ports") or [], path[1])
    devices = compute.get("gpuDevicesRequest")
    if path == ("compute", "gpuDevicesRequest") and devices in (0, 1):
        return True  # no GPU; or one device, the default of a portion or memory request
    # a topology key without a type asks for no affinity
    return path == ("podAffinity", "key") and (spec.get("podAffinity") or {}).get("type") is None


def test_every_set_field_is_in_the_objects_or_said_not_representable() -> None:
    @PROPERTIES
    @given(case=cases())
    def check(case: Case) -> None:
        assert unrepresented(case, case.render()) == []

    check()
