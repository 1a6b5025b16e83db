"""A composition's combined specs -> the Kubernetes objects the cluster runs, each value with its source.

The mapping of ``docs/cluster-contract.md`` ("Mapping", "Scheduling"), field by field in ``docs/cluster.md``.
One job object per composition (``PyTorchJob``, ``TFJob``, ``XGBoostJob``, ``JAXJob`` or ``MPIJob``), then
the ``PersistentVolumeClaim`` of every pvc data source that asks for a new claim.  What the objects cannot
hold is a warning (:data:`~template_engine.errors.WarningKind.NOT_REPRESENTABLE`) that names the field and
says why; what makes the job impossible to build as the cluster would take it is an
:class:`~template_engine.cluster.problems.ObjectProblem` (``mapping.<rule>``).  Each replica's pod is built by
:mod:`~template_engine.cluster.pods`, which the other kinds' objects share
(:mod:`~template_engine.cluster.workloads`: :func:`manifests_of` of a kind of one role is theirs).

Topologies (docs/cluster.md, "Topologies"):

- a master (the same as the workers, or composed separately) is the framework's lead replica: PyTorch and
  XGBoost ``Master``, TF ``Chief``, MPI ``Launcher``; JAX has none, so a master the same as the workers is
  one more ``Worker`` and a separate master cannot be represented;
- workers only: PyTorch, TF and JAX run ``numWorkers`` ``Worker`` replicas; XGBoost and MPI need a lead
  replica, so one of the workers is it (XGBoost's ``Master``; MPI's ``Launcher`` with
  ``runLauncherAsWorker``) and ``numWorkers - 1`` are ``Worker``: the job still runs ``numWorkers`` pods of
  the workers' spec.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from template_engine.cluster.pods import (
    CHOOSERS,
    JOB_NAME_LABEL,
    NOT_REPRESENTABLE,
    Derived,
    Framework,
    Manifests,
    SettingSource,
    Source,
    SpecSource,
    _dedupe,
    _Job,
    _job_metadata,
    _Out,
    _Pod,
    _Replica,
    job_name,
    volume_name,
)
from template_engine.cluster.problems import ObjectPath
from template_engine.cluster.settings import DEFAULT_SETTINGS, ClusterSettings
from template_engine.kinds import DISTRIBUTED, WorkloadKind
from template_engine.models.spec import WORKER_ONLY_FIELDS
from template_engine.paths import Path

FRAMEWORKS: Mapping[str, Framework] = {
    "PyTorch": Framework("PyTorchJob", "kubeflow.org/v1", "pytorchReplicaSpecs", "pytorch", "Master", False),
    "TF": Framework("TFJob", "kubeflow.org/v1", "tfReplicaSpecs", "tensorflow", "Chief", False),
    "XGBoost": Framework("XGBoostJob", "kubeflow.org/v1", "xgbReplicaSpecs", "xgboost", "Master", True),
    "JAX": Framework("JAXJob", "kubeflow.org/v1", "jaxReplicaSpecs", "jax", None, False),
    "MPI": Framework("MPIJob", "kubeflow.org/v2beta1", "mpiReplicaSpecs", "mpi", "Launcher", True),
}

#: The MPI Operator's defaults (``pkg/apis/kubeflow/v2beta1/default.go``), written out as the contract asks.
MPI_DEFAULTS: Mapping[str, Any] = {
    "slotsPerWorker": 1,
    "sshAuthMountPath": "/root/.ssh",
    "launcherCreationPolicy": "AtStartup",
    "mpiImplementation": "OpenMPI",
}
MPI_DEFAULT_CLEAN_POD_POLICY = "None"
#: The fields of the job's one ``runPolicy`` (the workers' values).
RUN_POLICY_FIELDS = ("backoffLimit", "autoDeletionTimeAfterCompletionSeconds")
#: Worker-only fields that only one framework's job holds (``models/spec.py``, ``WorkerSpec``).
FRAMEWORK_ONLY: Mapping[str, str] = {
    "minReplicas": "PyTorchJob",
    "maxReplicas": "PyTorchJob",
    "slotsPerWorker": "MPIJob",
    "sshAuthMountPath": "MPIJob",
    "mpiLauncherCreationPolicy": "MPIJob",
}


def manifests_of(
    spec: Mapping[str, Any],
    master_spec: Mapping[str, Any] | None,
    master_same_as_worker: bool,
    *,
    name: str,
    project: str | None,
    settings: ClusterSettings = DEFAULT_SETTINGS,
    name_source: Source | None = None,
    kind: WorkloadKind = DISTRIBUTED,
) -> Manifests:
    """The objects of a composition of ``kind`` whose combined specs are ``spec`` and ``master_spec``.

    ``name`` is the job's name (a submission's own, or the template's made into a valid name by
    :func:`job_name`); ``project`` gives the namespace and the queue (``None``: neither is written).
    A kind of one role (training, workspace, inference) has no master: ``master_spec`` is ``None`` and
    its objects are :func:`template_engine.cluster.workloads.workload_manifests`'.
    """
    if kind is not DISTRIBUTED:  # the other kinds' builders, imported when one is composed (start-up)
        from template_engine.cluster.workloads import workload_manifests

        return workload_manifests(
            kind, spec, name=name, project=project, settings=settings, name_source=name_source
        )
    framework = FRAMEWORKS.get(str(spec.get("distributedFramework")))
    if framework is None:  # not runnable already: distributedFramework is mandatory (runnable.py)
        return Manifests((), ())
    out = _Out(framework.kind)
    obj: dict[str, Any] = {"apiVersion": framework.api_version, "kind": framework.kind}
    out.note(("kind",), SpecSource("worker", ("distributedFramework",)))
    out.note(("apiVersion",), SpecSource("worker", ("distributedFramework",)))
    obj["metadata"] = _job_metadata(spec, name, project, settings, out, name_source)
    job_spec: dict[str, Any] = {}
    replicas = _replicas(framework, spec, master_spec, master_same_as_worker, out)
    _master_pools(spec, master_spec, master_same_as_worker, out)
    extra: list[tuple[dict[str, Any], dict[ObjectPath, Source]]] = []
    job = _Job(framework, name, project, settings, out, extra, spec)
    built: dict[str, Any] = {}
    for replica in replicas:
        at: ObjectPath = ("spec", framework.replicas_key, replica.type)
        built[replica.type] = _replica_spec(job, replica, at)
    job_spec[framework.replicas_key] = built
    job_spec["runPolicy"] = _run_policy(framework, spec, out)
    for key in RUN_POLICY_FIELDS:
        if not master_same_as_worker and master_spec is not None and master_spec.get(key) is not None:
            out.warn("master", (key,), "the job has one runPolicy, written from the workers' spec")
    if framework.kind == "PyTorchJob":
        _elastic(spec, job_spec, out)
    for key, job_kind in FRAMEWORK_ONLY.items():
        if spec.get(key) is not None and framework.kind != job_kind:
            out.warn("worker", (key,), f"{key} means something only for a {job_kind}")
    if framework.kind == "MPIJob":
        _mpi(spec, job_spec, replicas, out)
    obj["spec"] = job_spec
    objects = (obj, *(o for o, _ in extra))
    origins = (out.origins, *(orig for _, orig in extra))
    warnings = _dedupe(out.warnings)
    return Manifests(objects, origins, warnings, tuple(out.problems))


def _replicas(
    framework: Framework,
    spec: Mapping[str, Any],
    master_spec: Mapping[str, Any] | None,
    same: bool,
    out: _Out,
) -> list[_Replica]:
    workers = _int(spec.get("numWorkers"), 1)
    lead = framework.lead
    if same or master_spec is not None:
        master = master_spec if master_spec is not None else _without_worker_only(spec)
        if lead is None:  # JAX: only workers
            if not same:
                out.refuse(
                    ("spec", framework.replicas_key),
                    "jaxMaster",
                    "the JAX operator runs Worker replicas only: a master with its own spec cannot be "
                    "represented (set masterSpecSameAsWorker: true, or give no master section)",
                )
            return [_Replica("Worker", spec, "worker", workers + (1 if same else 0))]
        out.note(("spec", framework.replicas_key, lead, "replicas"), Derived("one master"))
        # a master the same as the workers holds the workers' values: their source is combinedSpec
        return [
            _Replica(lead, master, "worker" if same else "master", 1),
            _Replica("Worker", spec, "worker", workers),
        ]
    if lead is not None and framework.lead_required:  # one of the workers leads
        lead_spec = _without_worker_only(spec)
        out.note(
            ("spec", framework.replicas_key, lead),
            Derived(f"workers only: the operator needs a {lead}, so one of the numWorkers pods is it"),
        )
        found = [_Replica(lead, lead_spec, "worker", 1, one_of_workers=True)]
        if workers > 1:
            found.append(_Replica("Worker", spec, "worker", workers - 1))
        return found
    return [_Replica("Worker", spec, "worker", workers)]


def _without_worker_only(spec: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in spec.items() if k not in WORKER_ONLY_FIELDS}


def _master_pools(
    spec: Mapping[str, Any], master_spec: Mapping[str, Any] | None, same: bool, out: _Out
) -> None:
    """KAI schedules a job in one node pool, the label the workers' first pool gives: a separate master
    whose first pool differs cannot have its own (a warning names it)."""
    if same or master_spec is None:
        return
    mine, theirs = master_spec.get("nodePools"), spec.get("nodePools")
    first = mine[0] if isinstance(mine, list) and mine else None
    workers = theirs[0] if isinstance(theirs, list) and theirs else None
    if first is not None and first != workers:
        out.warn(
            "master",
            ("nodePools",),
            f"KAI schedules the whole job in one node pool (the label: the workers' {workers!r}); "
            f"the master's {first!r} cannot be its own",
        )


def _int(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _replica_spec(job: _Job, replica: _Replica, at: ObjectPath) -> dict[str, Any]:
    out = job.out
    body: dict[str, Any] = {"replicas": replica.count}
    if (*at, "replicas") not in out.origins:
        path: Path = ("numWorkers",) if replica.type == "Worker" else ()
        out.note((*at, "replicas"), SpecSource("worker", path) if path else Derived("one pod"))
    restart = replica.spec.get("restartPolicy")
    if restart is not None:
        body["restartPolicy"] = restart
        out.note((*at, "restartPolicy"), SpecSource(replica.source, ("restartPolicy",)))
    body["template"] = _Pod(job, replica, (*at, "template")).build()
    return body


def _run_policy(framework: Framework, spec: Mapping[str, Any], out: _Out) -> dict[str, Any]:
    policy: dict[str, Any] = {}
    for key, target in (
        ("cleanPodPolicy", "cleanPodPolicy"),
        ("backoffLimit", "backoffLimit"),
        ("autoDeletionTimeAfterCompletionSeconds", "ttlSecondsAfterFinished"),
    ):
        if spec.get(key) is not None:
            policy[target] = spec[key]
            out.note(("spec", "runPolicy", target), SpecSource("worker", (key,)))
    if framework.kind == "MPIJob" and "cleanPodPolicy" not in policy:
        policy["cleanPodPolicy"] = MPI_DEFAULT_CLEAN_POD_POLICY
        out.note(("spec", "runPolicy", "cleanPodPolicy"), Derived("the MPI Operator's default, written out"))
    return policy


def _elastic(spec: Mapping[str, Any], job_spec: dict[str, Any], out: _Out) -> None:
    elastic: dict[str, Any] = {}
    for key in ("minReplicas", "maxReplicas"):
        if spec.get(key) is not None:
            elastic[key] = spec[key]
            out.note(("spec", "elasticPolicy", key), SpecSource("worker", (key,)))
    if elastic:
        job_spec["elasticPolicy"] = elastic


def _mpi(spec: Mapping[str, Any], job_spec: dict[str, Any], replicas: list[_Replica], out: _Out) -> None:
    for key, target in (
        ("slotsPerWorker", "slotsPerWorker"),
        ("sshAuthMountPath", "sshAuthMountPath"),
        ("mpiLauncherCreationPolicy", "launcherCreationPolicy"),
    ):
        if spec.get(key) is not None:
            job_spec[target] = spec[key]
            out.note(("spec", target), SpecSource("worker", (key,)))
        else:
            job_spec[target] = MPI_DEFAULTS[target]
            out.note(("spec", target), Derived("the MPI Operator's default, written out"))
    job_spec["mpiImplementation"] = MPI_DEFAULTS["mpiImplementation"]
    out.note(("spec", "mpiImplementation"), Derived("the MPI Operator's default, written out"))
    if replicas[0].type == "Launcher" and replicas[0].one_of_workers:
        job_spec["runLauncherAsWorker"] = True
        out.note(("spec", "runLauncherAsWorker"), Derived("workers only: the launcher is one of the workers"))


__all__ = [
    "CHOOSERS",
    "FRAMEWORKS",
    "JOB_NAME_LABEL",
    "NOT_REPRESENTABLE",
    "Derived",
    "Framework",
    "Manifests",
    "SettingSource",
    "Source",
    "SpecSource",
    "job_name",
    "manifests_of",
    "volume_name",
]
