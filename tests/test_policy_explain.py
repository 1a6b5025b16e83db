"""``explain`` with policies (POLICY.md "Outputs"): the rules that govern a field, with their source, and a
value set by ``defaultFrom`` explained by that rule."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from template_engine import Composition
from template_engine.explain import Entry, explain
from template_engine.paths import parse_path

WriteTree = Callable[[Mapping[str, Any]], Path]
Preview = Callable[..., Composition]

JOB = """\
meta:
  name: job
spec:
  image: python:3.11
  distributedFramework: PyTorch
  numWorkers: 2
"""

DEFAULT_FROM = """\
rules:
  worker:
    compute:
      cpuCoreLimit:
        defaultFrom:
          field: cpuCoreRequest
          factor: 2
"""


def entries(composition: Composition, field: str) -> list[dict[str, Any]]:
    return [e.to_dict() for e in explain(composition, parse_path(field))]


def only(composition: Composition, field: str, replica: str = "worker") -> Entry:
    """The one entry of ``replica`` for ``field`` itself (explain also lists what is below it)."""
    path = parse_path(field)
    found = [e for e in explain(composition, path) if e.replica == replica and e.path == path]
    assert len(found) == 1, found
    return found[0]


@pytest.fixture
def compose_with(write_tree: WriteTree, preview: Preview) -> Callable[..., Composition]:
    def run(
        files: Mapping[str, Any],
        template: str = "job",
        project: str | None = "vision",
        department: str | None = None,
    ) -> Composition:
        return preview(write_tree(files), template, project, department)

    return run


# -- defaultFrom as an origin --------------------------------------------------------------------------------


def test_a_value_set_by_default_from_names_the_rule_as_its_origin(
    compose_with: Callable[..., Composition],
) -> None:
    c = compose_with(
        {
            "system/policy.yaml": DEFAULT_FROM,
            "projects/vision/templates/job.yaml": JOB + "  compute:\n    cpuCoreRequest: 3\n",
        }
    )
    entry = only(c, "compute.cpuCoreLimit")
    assert entry.action == "set" and entry.value == 6
    out = entry.to_dict()
    assert out["file"] == "system/policy.yaml" and out["line"] == 4  # the rule object of cpuCoreLimit
    assert out["layer"].startswith("defaultFrom rule of the system policy")
    assert "cpuCoreRequest x 2" in out["layer"]
    assert any(r.startswith("default ") and "system/policy.yaml:4" in r for r in out["rules"])
    assert "defaultFrom rule of the system policy" in entry.render()
    # The sibling it was derived from keeps its own origin.
    assert only(c, "compute.cpuCoreRequest").to_dict()["file"] == "projects/vision/templates/job.yaml"


def test_a_same_as_worker_master_inherits_the_default_from_origin(
    compose_with: Callable[..., Composition],
) -> None:
    c = compose_with(
        {
            "system/policy.yaml": DEFAULT_FROM,
            "projects/vision/templates/job.yaml": JOB + "  compute:\n    cpuCoreRequest: 3\n",
        }
    )
    master = only(c, "compute.cpuCoreLimit", "master")
    assert master.action == "derived" and master.value == 6
    assert master.location is not None and master.location.file == "system/policy.yaml"
    assert master.location.layer is not None and master.location.layer.startswith("defaultFrom rule")
    assert master.rules == ()  # rules.worker does not govern the master


def test_a_value_written_by_a_layer_keeps_its_layer_as_origin(
    compose_with: Callable[..., Composition],
) -> None:
    c = compose_with(
        {
            "system/policy.yaml": DEFAULT_FROM,
            "projects/vision/templates/job.yaml": JOB
            + "  compute:\n    cpuCoreRequest: 3\n    cpuCoreLimit: 5\n",
        }
    )
    entry = only(c, "compute.cpuCoreLimit")
    assert entry.value == 5
    assert entry.location is not None and entry.location.file == "projects/vision/templates/job.yaml"
    assert entry.location.layer == "template job"
    assert any(r.startswith("default ") for r in entry.rules)  # it still governs the field


def test_chained_default_from_values_each_name_their_rule(compose_with: Callable[..., Composition]) -> None:
    policy = """\
rules:
  worker:
    compute:
      cpuCoreLimit:
        defaultFrom:
          field: cpuCoreRequest
          factor: 2
      cpuCoreRequest:
        defaultFrom:
          field: gpuDevicesRequest
          factor: 4
"""
    c = compose_with(
        {
            "system/policy.yaml": policy,
            "projects/vision/templates/job.yaml": JOB + "  compute:\n    gpuDevicesRequest: 2\n",
        }
    )
    request, limit = only(c, "compute.cpuCoreRequest"), only(c, "compute.cpuCoreLimit")
    assert (request.value, limit.value) == (8, 16)
    assert request.location is not None and request.location.line == 8
    assert limit.location is not None and limit.location.line == 4
    assert "gpuDevicesRequest x 4" in str(request.location.layer)
    assert "cpuCoreRequest x 2" in str(limit.location.layer)


def test_a_default_from_on_an_item_attribute_is_the_origin_of_each_item(
    compose_with: Callable[..., Composition],
) -> None:
    policy = """\
rules:
  worker:
    ports:
      attributes:
        external:
          defaultFrom:
            field: container
"""
    job = JOB + "  ports:\n  - name: web\n    container: 8080\n    serviceType: NodePort\n"
    c = compose_with({"system/policy.yaml": policy, "projects/vision/templates/job.yaml": job})
    entry = only(c, "ports[name=web].external")
    assert entry.value == 8080
    assert entry.location is not None and entry.location.file == "system/policy.yaml"
    assert "defaultFrom rule" in str(entry.location.layer)
    assert only(c, "ports[name=web].container").location.file == "projects/vision/templates/job.yaml"  # type: ignore[union-attr]


# -- the rules that govern a field ---------------------------------------------------------------------------


def test_the_governing_rules_are_named_with_their_source(compose_with: Callable[..., Composition]) -> None:
    policy = "rules:\n  worker:\n    numWorkers:\n      min: 1\n      max: 4\n"
    c = compose_with({"system/policy.yaml": policy, "projects/vision/templates/job.yaml": JOB})
    entry = only(c, "numWorkers")
    assert entry.rules == ("between 1 and 4 (system policy, system/policy.yaml:3)",)
    assert entry.to_dict()["rules"] == list(entry.rules)
    assert entry.render().endswith("[governed by between 1 and 4 (system policy, system/policy.yaml:3)]")
    assert only(c, "image").rules == ()  # a field without rules
    assert "rules" not in only(c, "image").to_dict()


def test_a_field_locked_by_default_says_so(compose_with: Callable[..., Composition]) -> None:
    policy = "rules:\n  worker:\n    nodePools:\n      required: true\n"
    c = compose_with(
        {"system/policy.yaml": policy, "projects/vision/templates/job.yaml": JOB + "  nodePools:\n  - a100\n"}
    )
    rules = only(c, "nodePools").rules
    assert "required (system policy, system/policy.yaml:3)" in rules
    assert "cannot be edited (the default for this field) (system policy, system/policy.yaml:3)" in rules


def test_instances_rules_govern_the_locked_items(compose_with: Callable[..., Composition]) -> None:
    policy = "rules:\n  worker:\n    environmentVariables:\n      instances:\n        locked: [HTTP_PROXY]\n"
    defaults = (
        "spec:\n  environmentVariables:\n  - name: HTTP_PROXY\n    value: http://proxy\n"
        "  - name: TZ\n    value: UTC\n"
    )
    c = compose_with(
        {
            "system/policy.yaml": policy,
            "system/defaults.yaml": defaults,
            "projects/vision/templates/job.yaml": JOB,
        }
    )
    locked = only(c, "environmentVariables[name=HTTP_PROXY]")
    assert locked.action == "added"
    assert locked.rules and "HTTP_PROXY" in locked.rules[0] and "system/policy.yaml:4" in locked.rules[0]
    assert only(c, "environmentVariables[name=TZ]").rules == ()


def test_can_add_governs_every_item(compose_with: Callable[..., Composition]) -> None:
    policy = "rules:\n  worker:\n    environmentVariables:\n      instances:\n        canAdd: false\n"
    job = JOB + "  environmentVariables:\n  - name: A\n    value: '1'\n"
    c = compose_with({"system/policy.yaml": policy, "projects/vision/templates/job.yaml": job})
    assert only(c, "environmentVariables[name=A]").rules == (
        "no items can be added (system policy, system/policy.yaml:4)",
    )
    assert only(c, "environmentVariables[name=A].value").rules == ()


def test_attribute_rules_govern_that_attribute_of_every_item(
    compose_with: Callable[..., Composition],
) -> None:
    policy = (
        "rules:\n  worker:\n    ports:\n      attributes:\n        serviceType:\n"
        "          options:\n          - value: ClusterIP\n"
    )
    job = JOB + (
        "  ports:\n  - name: a\n    container: 80\n    serviceType: ClusterIP\n"
        "  - name: b\n    container: 81\n    serviceType: NodePort\n"
    )
    c = compose_with({"departments/research/policy.yaml": policy, "projects/vision/templates/job.yaml": job})
    want = ("one of ClusterIP (department research policy, departments/research/policy.yaml:5)",)
    assert only(c, "ports[name=a].serviceType").rules == want
    assert only(c, "ports[name=b].serviceType").rules == want
    assert only(c, "ports[name=a].container").rules == ()
    assert only(c, "ports[name=a]").rules == ()


def test_master_rules_govern_the_master_only(compose_with: Callable[..., Composition]) -> None:
    policy = "rules:\n  master:\n    image:\n      required: true\n"
    c = compose_with({"system/policy.yaml": policy, "projects/vision/templates/job.yaml": JOB})
    assert only(c, "image", "master").rules == ("required (system policy, system/policy.yaml:3)",)
    assert only(c, "image", "worker").rules == ()


@pytest.mark.parametrize(
    ("project", "department", "governed"),
    [("vision", None, True), (None, "research", False)],
    ids=["from-the-project", "from-the-department"],
)
def test_a_project_rule_governs_only_views_from_that_project(
    compose_with: Callable[..., Composition], project: str | None, department: str | None, governed: bool
) -> None:
    files = {
        "projects/vision/policy.yaml": "rules:\n  worker:\n    numWorkers:\n      max: 4\n",
        "departments/research/templates/dept-job.yaml": JOB.replace("name: job", "name: dept-job"),
    }
    c = compose_with(files, "dept-job", project, department)
    assert bool(only(c, "numWorkers").rules) is governed


def test_a_governed_field_nothing_sets_is_still_explained(compose_with: Callable[..., Composition]) -> None:
    policy = "rules:\n  worker:\n    nodeType:\n      required: true\n"
    c = compose_with({"system/policy.yaml": policy, "projects/vision/templates/job.yaml": JOB})
    found = entries(c, "nodeType")
    assert [(e["replica"], e["action"]) for e in found] == [("worker", "unset")]
    assert found[0]["rules"] == ["required (system policy, system/policy.yaml:3)"]
    assert "value" not in found[0]


def test_explain_without_a_policy_names_no_rules(compose_with: Callable[..., Composition]) -> None:
    c = compose_with({"projects/vision/templates/job.yaml": JOB})
    assert all("rules" not in e.to_dict() for e in explain(c))
    assert c.policy.empty and not c.policy_origins


# -- the example org ----------------------------------------------------------------------------------------


def test_the_example_org_explains_research_auto_deletion(example_root: Path, preview: Preview) -> None:
    c = preview(example_root, "vit-finetune", "vision")
    entry = only(c, "autoDeletionTimeAfterCompletionSeconds")
    grace = only(c, "terminationGracePeriodSeconds").value
    assert entry.value == grace * 60
    out = entry.to_dict()
    assert out["file"] == "departments/research/policy.yaml"
    assert "defaultFrom rule of the department research policy" in out["layer"]
    assert "terminationGracePeriodSeconds x 60" in out["layer"]
    assert any("departments/research/policy.yaml" in r for r in out["rules"])
    # Governed by the system's gpuDevicesRequest rules (max and step).
    rules = only(c, "compute.gpuDevicesRequest").rules
    assert any(r.startswith("at most 8 (system policy, system/policy.yaml:") for r in rules)
    assert any(r.startswith("in steps of 1 (system policy, system/policy.yaml:") for r in rules)


def test_the_example_org_outside_research_has_no_auto_deletion_default(
    example_root: Path, preview: Preview
) -> None:
    c = preview(example_root, "xgboost-ctr", "recsys")
    assert "autoDeletionTimeAfterCompletionSeconds" not in c.combined_spec
