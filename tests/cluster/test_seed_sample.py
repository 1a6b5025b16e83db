"""The seed page's own workload sample (seed 000) in an org whose defaults declare its container port.

The sample's port ``{name: port-instance-a, container: 8080, serviceType: LoadBalancer}`` and a default's
unnamed ``{container: 8080}`` are two items of ``ports`` (two services, keyed ``name`` and ``container``); the
pod lists container port 8080 once, so the job is one the cluster takes (docs/cluster.md, "ports").
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from independent_check import independent_errors

from template_engine.cluster.validity import manifests_problems
from template_engine.compose import compose
from template_engine.layers import Submission
from template_engine.loader.sources import MappingSource
from template_engine.loader.tree import load_org
from template_engine.paths import Match

SEED = Path(__file__).resolve().parents[1] / "fixtures" / "seeds" / "000_816ae1417f1d8451.txt"

ORG = {
    "org.yaml": "departments:\n- name: research\n  projects:\n  - vision\n",
    "system/defaults.yaml": "spec:\n  ports:\n  - container: 8080\n    serviceType: ClusterIP\n",
}


def seed_spec() -> dict[str, Any]:
    """The sample's ``spec`` as the page prints it."""
    text = SEED.read_text(encoding="utf-8")
    body, _ = json.JSONDecoder().raw_decode(text, text.index('{"name": "my-workload-name"'))
    spec: dict[str, Any] = body["spec"]
    return spec


def consistent(spec: dict[str, Any]) -> dict[str, Any]:
    """The sample with its placeholder mount paths made distinct (the config map and the secret are both
    mounted at "string") and the other placeholders and contradictions that make it not runnable anywhere
    fixed as ``tests/service/test_service_workloads.py::_seed_fixed`` fixes them; its ports untouched."""
    spec = copy.deepcopy(spec)
    spec["storage"]["configMapVolume"][0]["mountPath"] = "/etc/config"
    spec["storage"]["secretVolume"][0]["mountPath"] = "/etc/secret"
    spec["environmentVariables"][0]["secret"]["name"] = "postgress-secret"
    del spec["environmentVariables"][0]["value"]  # the secret is its one value source
    spec["probes"]["readiness"]["handler"]["httpGet"]["path"] = "/healthz"
    del spec["exposedUrls"][0]["authorizedGroups"]
    del spec["tolerations"][0]["seconds"]
    return spec


def test_the_seed_sample_runs_in_an_org_whose_defaults_declare_its_container_port() -> None:
    org = load_org(MappingSource(ORG))
    spec = consistent(seed_spec())
    assert spec["ports"] == seed_spec()["ports"]
    submission = Submission(spec=spec, master_same_as_worker=True, name="my-workload-name")
    composition = compose(org, None, org.view_of("vision"), submission=submission)
    assert composition.combined_spec["ports"] == [
        {"container": 8080, "serviceType": "ClusterIP"},
        {
            "container": 8080,
            "external": 30080,
            "name": "port-instance-a",
            "serviceType": "LoadBalancer",
            "toolName": "my-pytorch",
            "toolType": "pytorch",
        },
    ]
    assert composition.runnable.is_runnable, [i.message for i in composition.runnable.issues]
    manifests = composition.manifests
    assert manifests is not None
    job = manifests.objects[0]
    assert job["kind"] == "MPIJob"
    for replica in job["spec"]["mpiReplicaSpecs"].values():
        container = replica["template"]["spec"]["containers"][0]
        assert container["ports"] == [{"containerPort": 8080, "protocol": "TCP", "name": "port-instance-a"}]
    assert manifests_problems(manifests.objects) == []
    assert independent_errors(manifests.objects) == []
    # the container port's name comes from the template's item, the port itself from the default's
    at = ("spec", "mpiReplicaSpecs", "Worker", "template", "spec", "containers", 0, "ports", 0)
    origins = manifests.origins[0]
    assert origins[(*at, "containerPort")].path == ("ports", Match("container", 8080), "container")
    assert origins[(*at, "name")].path == ("ports", Match("name", "port-instance-a"), "name")
