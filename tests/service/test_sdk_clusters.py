"""Two clusters from nothing with the real Run:ai Python SDK (runapy 1.224.0), as issue 33 asks.

A live server on an EMPTY database; the SDK logs in with client credentials and drives its own API classes:
``ClustersApi`` for the clusters (its ``create_cluster`` answers Run:ai's ``DisplayedCluster``),
``DepartmentsApi``/``ProjectsApi`` for a department under each cluster, ``PolicyApi`` for a cluster-scope
policy whose defaults are the cluster's, ``WorkloadTemplatesApi`` for a department template.  The cluster
settings (namespace pattern, priority classes) are the service's extension and go through httpx.  Every
answer is validated against Run:ai's whole OpenAPI document while the server runs (``whole_document``).

Then the same org as a folder: ``db export`` of the database, loaded and composed by the library, gives the
service's answers, pair by pair, the cluster layer included.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import yaml
from click.testing import CliRunner
from sdk_helpers import (
    Lazy,
    LiveOrg,
    install,
    live_org,
    parsed,
)

from template_engine import compose, load_org
from template_engine.cli import main

if TYPE_CHECKING:
    pass

install()

m = Lazy("runai.models")
runai_client = Lazy("runai.runai_client")

CLIENT_ID, SECRET = "cluster-team", "another-long-random-application-secret"
ADMIN = "clusters-admin-token"
T = "/api/v1/workload-templates/distributed"


Live = LiveOrg


@pytest.fixture
def live(tmp_path: Path) -> Iterator[Live]:
    """A new server on an empty SQLite database (no seed) per test; every answer checked against the whole
    document while it runs (:func:`sdk_helpers.live_org`)."""
    with live_org(tmp_path, CLIENT_ID, SECRET, ADMIN) as found:
        yield found


SETTINGS = {
    "east": {
        "namespacePattern": "east-{project}",
        "priorityClasses": [{"name": "scavenger", "value": 10}, {"name": "reserved", "value": 100}],
        "preemptibleClass": "scavenger",
        "nonPreemptibleClass": "reserved",
    },
    "west": {
        "namespacePattern": "west-{project}",
        "priorityClasses": [{"name": "spot", "value": 5}, {"name": "on-demand", "value": 50}],
        "preemptibleClass": "spot",
        "nonPreemptibleClass": "on-demand",
    },
}


def _cluster(live: Live, name: str) -> Any:
    made = live.sdk.organizations.clusters.create_cluster(m.ClusterCreationRequest(name=name, version="2.20"))
    assert made.status_code == 201
    cluster = parsed("DisplayedCluster", made.data)
    settings = live.http.put(
        "/api/v1/cluster-settings", params={"clusterId": cluster.uuid}, json=SETTINGS[name]
    )
    assert settings.status_code == 200, settings.text
    return cluster


def _department(live: Live, name: str, cluster: str) -> Any:
    request = m.DepartmentCreationRequest(name=name, clusterId=cluster, resources=[])
    answer = live.sdk.organizations.departments.create_department(request)
    department = parsed("DepartmentForList", answer.data)
    assert department.cluster_id == cluster
    return department


def _project(live: Live, name: str, department: str, cluster: str) -> str:
    request = {"name": name, "parentId": department, "clusterId": cluster, "resources": []}
    answer = live.sdk.organizations.projects.create_project(request)
    assert answer.data["clusterId"] == cluster
    return str(answer.data["id"])


def _template(live: Live, name: str, department: str) -> Any:
    request = m.DistributedTemplateCreationRequest(
        meta=m.TemplateCreationMetaFields(name=name, scopeType=m.ScopeType.DEPARTMENT, scopeId=department),
        spec=m.DistributedTemplateSpec(
            distributedFramework=m.DistributedFramework.PYTORCH,
            numWorkers=2,
            image="nvcr.io/nvidia/pytorch:24.05-py3",
            preemptibility=m.Preemptibility.PREEMPTIBLE,
            compute=m.SupersetSpecAllOfCompute(gpuDevicesRequest=2),
        ),
        masterSpecSameAsWorker=True,
    )
    answer = live.sdk.workloads.workload_templates.create_distributed_template(request.to_dict())
    assert answer.status_code == 202
    return parsed("DistributedTemplate", answer.data)


def test_two_clusters_from_nothing_through_the_sdk_and_the_same_org_as_a_folder(
    live: Live, tmp_path: Path
) -> None:
    sdk, http = live.sdk, live.http
    east, west = _cluster(live, "east"), _cluster(live, "west")
    listed = sdk.organizations.clusters.get_clusters()
    assert {c["name"] for c in listed.data} == {"east", "west"}
    assert (
        parsed("DisplayedCluster", sdk.organizations.clusters.get_cluster_by_uuid(east.uuid).data).name
        == "east"
    )

    research = _department(live, "research", east.uuid)
    applied = _department(live, "applied", west.uuid)
    vision = _project(live, "vision", research.id, east.uuid)
    recsys = _project(live, "recsys", applied.id, west.uuid)

    # A cluster-scope policy on east: a rule, and the cluster's defaults (Run:ai keeps a scope's defaults in
    # its policy).
    policy = m.DistributedPolicyOverwriteRequestV2(
        meta=m.PolicyCreationFields(scope=m.ScopeType.CLUSTER, name="east", clusterId=east.uuid),
        policy=m.DistributedPolicyDefaultsAndRulesV2(
            defaults=m.DistributedPolicyDefaultsV2(
                worker=m.DistributedPolicyDefaultsV2Worker(nodePools=["h100"])
            ),
            rules=m.DistributedPolicyRulesV2(
                worker=m.DistributedPolicyRulesV2Worker(
                    compute=m.SupersetRulesAllOfCompute(gpuDevicesRequest=m.IntegerRules(max=4))
                )
            ),
        ),
    )
    written = sdk.policies.policy.overwrite_distributed_policy_v2(
        distributed_policy_overwrite_request_v2=policy
    )
    assert parsed("DistributedPolicyV2", written.data).meta.scope == "cluster"
    at_cluster = sdk.policies.policy.get_distributed_policy_v2(scope="cluster", cluster_id=east.uuid)
    assert (
        parsed("DistributedPolicyV2", at_cluster.data).policy.rules.worker.compute.gpu_devices_request.max
        == 4
    )

    # The project's effective policy names the cluster as the rule's source.
    effective = parsed(
        "DistributedPolicyV2",
        sdk.policies.policy.get_distributed_policy_v2(scope="project", project_id=vision).data,
    )
    source = effective.effective.rules.worker.compute.gpu_devices_request.source_of_rule
    assert (source.scope, source.cluster_id) == ("cluster", east.uuid)
    other = sdk.policies.policy.get_distributed_policy_v2(scope="project", project_id=recsys).data
    assert "rules" not in other["effective"] or not other["effective"]["rules"]

    # A template of each department: east's composes with the cluster layer, west's without it.
    research_ddp, applied_ddp = (
        _template(live, "research-ddp", research.id),
        _template(live, "applied-ddp", applied.id),
    )
    seen = http.get(f"{T}/{research_ddp.meta.id}", params={"projectId": vision}).json()
    assert seen["combinedSpec"]["nodePools"] == ["h100"]
    assert seen["runnable"]["isRunnable"] is True
    untouched = http.get(f"{T}/{applied_ddp.meta.id}", params={"projectId": recsys}).json()
    assert "nodePools" not in untouched["combinedSpec"]

    # Its manifests carry its own cluster's namespace and priority class.
    for template, project, namespace, priority in (
        (research_ddp, vision, "east-vision", "scavenger"),
        (applied_ddp, recsys, "west-recsys", "spot"),
    ):
        answer = http.get(f"{T}/{template.meta.id}/manifests", params={"projectId": project})
        assert answer.status_code == 200, answer.text
        objects = answer.json()["objects"]
        assert {o["metadata"]["namespace"] for o in objects} == {namespace}
        pods = [
            replica["template"]["spec"]
            for o in objects
            for replica in (o.get("spec", {}).get("pytorchReplicaSpecs") or {}).values()
        ]
        assert pods and {pod["priorityClassName"] for pod in pods} == {priority}

    # The same org as a folder: db export, composed by the library, is what the service answers.
    out = tmp_path / "exported"
    result = CliRunner().invoke(
        main, ["db", "export", "--root", str(out), "--database-url", live.database_url]
    )
    assert result.exit_code == 0, result.output
    org = load_org(out)
    assert not org.broken, org.broken
    assert set(org.clusters) == {"east", "west"}
    assert yaml.safe_load((out / "org.yaml").read_text())["clusters"][0]["name"] == "east"
    projects = {"vision": vision, "recsys": recsys}
    by_name = {"research-ddp": research_ddp.meta.id, "applied-ddp": applied_ddp.meta.id}
    compared = 0
    for view, template in org.views():
        params = {"projectId": projects[view.project]} if view.project is not None else {}
        served = http.get(f"{T}/{by_name[template.name]}", params=params).json()
        library = compose(org, template, view)
        assert served["combinedSpec"] == library.to_response()["combinedSpec"], (view, template.name)
        if view.project is not None:
            objects = http.get(f"{T}/{by_name[template.name]}/manifests", params=params).json()["objects"]
            assert library.manifests is not None and objects == list(library.manifests.objects)
        compared += 1
    assert compared == 4  # each template from its project and from its own department
