"""An asset against a project's effective policy (``asset_compliance``): what Run:ai's asset lists answer as
``compliance`` with ``complyToProject``.  Small orgs in memory, one rule each."""

from __future__ import annotations

import pytest

from template_engine.asset_compliance import AssetCompliance, asset_compliance
from template_engine.loader.sources import MappingSource
from template_engine.loader.tree import load_org
from template_engine.org import Org
from template_engine.paths import Match
from template_engine.policy.vocabulary import Replica

ORG = """\
departments:
- name: research
  projects: [vision]
- name: applied
  projects: [recsys]
"""
SYSTEM_POLICY = """\
rules:
  worker:
    image:
      required: true
    compute:
      gpuDevicesRequest:
        max: 8
    security:
      allowPrivilegeEscalation:
        canEdit: false
    environmentVariables:
      instances:
        locked: [PIP_INDEX_URL]
  master:
    compute:
      gpuDevicesRequest:
        max: 1
"""
SYSTEM_DEFAULTS = """\
spec:
  security:
    allowPrivilegeEscalation: false
  environmentVariables:
  - name: PIP_INDEX_URL
    value: https://pypi.internal/simple
"""
RESEARCH_POLICY = """\
rules:
  worker:
    ports:
      attributes:
        serviceType:
          options:
          - value: ClusterIP
    exposedUrls:
      instances:
        canAdd: false
imposedAssets:
  worker: [datasets]
"""
FILES = {
    "org.yaml": ORG,
    "system/policy.yaml": SYSTEM_POLICY,
    "system/defaults.yaml": SYSTEM_DEFAULTS,
    "departments/research/policy.yaml": RESEARCH_POLICY,
    "assets/computes/big.yaml": "meta: {name: big}\nspec:\n  compute:\n    gpuDevicesRequest: 16\n",
    "assets/computes/one.yaml": "meta: {name: one}\nspec:\n  compute:\n    gpuDevicesRequest: 1\n",
    "assets/environments/web.yaml": (
        "meta: {name: web}\nspec:\n  image: python:3.11\n  ports:\n"
        "  - {name: ui, container: 8080, serviceType: LoadBalancer}\n"
    ),
    "assets/environments/pip.yaml": (
        "meta: {name: pip}\nspec:\n  environmentVariables:\n  - {name: PIP_INDEX_URL, value: https://pypi.org/simple}\n"
    ),
    "assets/environments/escalate.yaml": (
        "meta: {name: escalate}\nspec:\n  security:\n    allowPrivilegeEscalation: true\n"
    ),
    "assets/environments/urls.yaml": (
        "meta: {name: urls}\nspec:\n  exposedUrls:\n  - {name: board, container: 6006, url: https://tb.example}\n"
    ),
    "assets/environments/home.yaml": (
        "meta: {name: home}\nspec:\n  workingDir: '/home/{{ project.name }}'\n  image: '{{ registry }}/x'\n"
    ),
    "assets/datasources/datasets.yaml": (
        "meta: {name: datasets}\nspec:\n  storage:\n    pvc:\n    - {claimName: datasets, path: /datasets}\n"
    ),
    "departments/applied/assets/computes/applied-gpu.yaml": (
        "meta: {name: applied-gpu}\nspec:\n  compute:\n    gpuDevicesRequest: 2\n"
    ),
}


@pytest.fixture(scope="module")
def org() -> Org:
    return load_org(MappingSource(FILES))


def comply(org: Org, kind: str, name: str, project: str, replica: Replica = "worker") -> AssetCompliance:
    return asset_compliance(org, org.asset(kind, name), org.view_of(project), replica)  # type: ignore[arg-type]


def test_a_value_above_the_maximum_does_not_comply_for_the_replica_the_rule_is_on(org: Org) -> None:
    found = comply(org, "compute", "big", "vision")
    assert not found.complies and not found.imposed
    assert [(i.field, i.rule) for i in found.issues] == [(("compute", "gpuDevicesRequest"), "max")]
    assert "is 16, above the maximum 8 of the system policy" in found.issues[0].message
    assert comply(org, "compute", "one", "vision").complies
    assert [i.rule for i in comply(org, "compute", "big", "vision", "master").issues] == ["max"]
    assert comply(org, "compute", "one", "vision", "master").complies


def test_what_the_asset_does_not_set_is_not_its_issue(org: Org) -> None:
    # image is required, and a compute asset cannot give one: the template's or the submission's business
    assert comply(org, "compute", "one", "recsys").complies


def test_an_attribute_option_holds_in_the_department_that_rules_it(org: Org) -> None:
    found = comply(org, "environment", "web", "vision")
    assert [(i.field, i.rule) for i in found.issues] == [
        (("ports", Match("name", "ui"), "serviceType"), "options")
    ]
    assert comply(org, "environment", "web", "recsys").complies


def test_a_locked_instance_changed_a_value_locked_and_an_item_added_where_none_may_be(org: Org) -> None:
    pip = comply(org, "environment", "pip", "recsys")
    assert [(i.field, i.rule) for i in pip.issues] == [
        (("environmentVariables", Match("name", "PIP_INDEX_URL")), "locked")
    ]
    escalate = comply(org, "environment", "escalate", "recsys")
    assert [(i.field, i.rule) for i in escalate.issues] == [
        (("security", "allowPrivilegeEscalation"), "canEdit")
    ]
    urls = comply(org, "environment", "urls", "vision")
    assert [(i.field, i.rule) for i in urls.issues] == [(("exposedUrls", Match("name", "board")), "canAdd")]
    assert comply(org, "environment", "urls", "recsys").complies


def test_an_imposed_data_source_is_imposed_on_its_replica(org: Org) -> None:
    worker = comply(org, "datasource", "datasets", "vision")
    assert worker.imposed and worker.complies
    master = comply(org, "datasource", "datasets", "vision", "master")
    assert not master.imposed and master.complies
    assert not comply(org, "datasource", "datasets", "recsys").imposed


def test_an_asset_of_another_department_is_not_for_the_project(org: Org) -> None:
    assert comply(org, "compute", "applied-gpu", "recsys").complies
    found = comply(org, "compute", "applied-gpu", "vision")
    assert not found.complies
    (issue,) = found.issues
    assert issue.rule is None
    assert issue.message.startswith("a workload in project vision may not use compute asset 'applied-gpu'")


def test_the_asset_s_expressions_render_in_the_project_and_a_name_none_defines_is_its_issue(org: Org) -> None:
    found = comply(org, "environment", "home", "vision")
    assert [i.field for i in found.issues] == [("image",)]
    assert "registry" in found.issues[0].message


def test_a_broken_policy_of_the_view_makes_nothing_comply() -> None:
    files = {**FILES, "projects/vision/policy.yaml": "rules:\n  worker:\n    image:\n      requird: true\n"}
    broken = load_org(MappingSource(files))
    found = comply(broken, "compute", "one", "vision")
    assert not found.complies and found.issues
    assert comply(broken, "compute", "one", "recsys").complies
