"""Reading policy.yaml: Run:ai's rule vocabulary, with the same quality of errors as the other documents."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
import yaml

from template_engine.loader.yaml_safe import load_yaml
from template_engine.org import SYSTEM, Scope
from template_engine.paths import format_path
from template_engine.policy.document import DefaultFrom, read_policy
from template_engine.policy.effective import effective, effective_shape, ownership_problems

FILE = "system/policy.yaml"


def read(text: str, scope: Scope = SYSTEM, file: str = FILE) -> Any:
    loaded = load_yaml(text, file)
    return read_policy(loaded.data, file, loaded.lines, scope)


def test_a_policy_reads_into_typed_rules() -> None:
    doc, problems = read(
        """\
rules:
  worker:
    numWorkers: {min: 1, max: 16}
    compute:
      gpuDevicesRequest: {max: 8, step: 1}
      cpuMemoryRequest: {max: 64Gi}
      cpuCoreLimit: {defaultFrom: {field: cpuCoreRequest, factor: 2}}
    nodePools: {required: true}
    environmentVariables:
      instances: {locked: [HTTP_PROXY], canAdd: true}
    ports:
      attributes: {serviceType: {options: [{value: ClusterIP}]}}
imposedAssets:
  worker: [shared-datasets]
"""
    )
    assert problems == []
    by_field = {r.field_text: r for r in doc.rules}
    assert set(by_field) == {
        "numWorkers",
        "compute.gpuDevicesRequest",
        "compute.cpuMemoryRequest",
        "compute.cpuCoreLimit",
        "nodePools",
        "environmentVariables.instances",
        "ports.attributes.serviceType",
    }
    assert by_field["numWorkers"].maximum == 16
    assert by_field["compute.cpuMemoryRequest"].maximum == Decimal(64 * 2**30)
    assert by_field["compute.cpuCoreLimit"].default_from == DefaultFrom("cpuCoreRequest", Decimal(2))
    assert by_field["nodePools"].locks_value  # arrays are not editable once ruled
    assert not by_field["numWorkers"].locks_value
    assert by_field["environmentVariables.instances"].locked == ("HTTP_PROXY",)
    assert by_field["ports.attributes.serviceType"].options == ("ClusterIP",)
    assert by_field["numWorkers"].location.line == 3
    assert [a.name for a in doc.imposed] == ["shared-datasets"]
    assert doc.imposed[0].location.line == 14


@pytest.mark.parametrize(
    ("text", "message", "path", "expected"),
    [
        (
            "rules:\n  worker:\n    numWorker: {max: 1}\n",
            "unknown field for rules 'numWorker' (did you mean 'numWorkers'?)",
            "rules.worker.numWorker",
            "numWorkers",
        ),
        (
            "rules:\n  worker:\n    numWorkers: {maxx: 1}\n",
            "unknown rule for an integer field 'maxx' (did you mean 'max'?)",
            "rules.worker.numWorkers.maxx",
            "max",
        ),
        (
            "rules:\n  worker:\n    numWorkers: {max: lots}\n",
            "max must be a whole number, not 'lots'",
            "rules.worker.numWorkers.max",
            "a whole number",
        ),
        (
            "rules:\n  worker:\n    numWorkers: {min: 4, max: 2}\n",
            "min 4 is above max 2",
            "rules.worker.numWorkers.min",
            "min <= max",
        ),
        (
            "rules:\n  worker:\n    numWorkers: {step: 0}\n",
            "step must be above 0, not 0",
            "rules.worker.numWorkers.step",
            "above 0",
        ),
        (
            "rules:\n  worker:\n    compute: {cpuMemoryRequest: {max: lots}}\n",
            "max must be a quantity",
            "rules.worker.compute.cpuMemoryRequest.max",
            "quantity",
        ),
        (
            "rules:\n  worker:\n    image: {min: 1}\n",
            "unknown rule for a string field 'min'",
            "rules.worker.image.min",
            "options",
        ),
        (
            "rules:\n  worker:\n    imagePullPolicy: {options: [{value: Sometimes}]}\n",
            "option 'Sometimes' is not a value of this field",
            "rules.worker.imagePullPolicy.options[0]",
            "IfNotPresent",
        ),
        (
            "rules:\n  worker:\n    compute: {cpuCoreLimit: {defaultFrom: {field: image}}}\n",
            "defaultFrom names 'image', which is not a numeric field of the same section",
            "rules.worker.compute.cpuCoreLimit.defaultFrom.field",
            "cpuCoreRequest",
        ),
        (
            "rules:\n  master:\n    numWorkers: {max: 1}\n",
            "unknown field for rules 'numWorkers'",
            "rules.master.numWorkers",
            "image",
        ),
        (
            "rules:\n  workers: {}\n",
            "unknown replica 'workers' (did you mean 'worker'?)",
            "rules.workers",
            "worker",
        ),
        ("rule: {}\n", "unknown policy section 'rule' (did you mean 'rules'?)", "rule", "rules"),
        (
            "rules:\n  worker:\n    environmentVariables: {instances: {locked: HTTP_PROXY}}\n",
            "locked must be a list of item keys",
            "rules.worker.environmentVariables.instances.locked",
            "KEY",
        ),
        (
            "rules:\n  worker:\n    environmentVariables: {attributes: {value: {required: true}}}\n",
            "unknown part of the rules of environmentVariables 'attributes'",
            "rules.worker.environmentVariables.attributes",
            "instances",
        ),
        (
            "rules:\n  worker:\n    ports: {attributes: {serviceTyp: {required: true}}}\n",
            "unknown attribute for rules 'serviceTyp' (did you mean 'serviceType'?)",
            "rules.worker.ports.attributes.serviceTyp",
            "serviceType",
        ),
        (
            "imposedAssets:\n  worker: shared\n",
            "imposedAssets.worker must be a list of data source names",
            "imposedAssets.worker",
            "name",
        ),
        (
            "imposedAssets:\n  worker: [a, a]\n",
            "data source 'a' is imposed twice",
            "imposedAssets.worker[1]",
            "once",
        ),
        (
            "rules:\n  worker:\n    numWorkers: 3\n",
            "numWorkers must be a mapping, not 3",
            "rules.worker.numWorkers",
            "key: value",
        ),
    ],
)
def test_every_problem_names_the_line_the_path_and_what_is_expected(
    text: str, message: str, path: str, expected: str
) -> None:
    doc, problems = read(text)
    assert doc is None
    (problem,) = problems
    assert message in problem.message
    assert format_path(problem.path) == path
    assert problem.location is not None and problem.location.file == FILE
    assert problem.location.line is not None
    assert problem.expected is not None and expected in problem.expected


def test_one_owner_per_field_per_branch() -> None:
    system, _ = read("rules:\n  worker:\n    compute:\n      gpuDevicesRequest: {max: 8}\n")
    department, _ = read(
        "rules:\n  worker:\n    compute:\n      gpuDevicesRequest: {max: 4}\n    numWorkers: {max: 2}\n",
        Scope("department", "research"),
        "departments/research/policy.yaml",
    )
    found = ownership_problems([system, department])
    (problem,) = found["departments/research/policy.yaml"]
    assert (
        "'compute.gpuDevicesRequest' of the worker already has rules in system/policy.yaml:4:7"
        in problem.message
    )
    assert problem.location is not None and problem.location.line == 4
    # A list's instances and each of its attributes are separate fields; worker and master are separate too.
    system, _ = read(
        "rules:\n  worker:\n    ports: {instances: {canAdd: false}}\n  master:\n    image: {required: true}\n"
    )
    other, _ = read(
        "rules:\n  worker:\n    ports: {attributes: {serviceType: {required: true}}}\n"
        "    image: {required: true}\n",
        Scope("project", "vision"),
        "projects/vision/policy.yaml",
    )
    assert ownership_problems([system, other]) == {}


def test_the_effective_shape_tags_every_rule_with_its_source() -> None:
    system, _ = read("rules:\n  worker:\n    numWorkers: {max: 8}\nimposedAssets: {worker: [shared]}\n")
    project, _ = read(
        "rules:\n  worker:\n    ports: {attributes: {serviceType: {options: [{value: ClusterIP}]}}}\n",
        Scope("project", "vision"),
        "projects/vision/policy.yaml",
    )
    shape = effective_shape(
        effective([system, project]), lambda s: {"scope": s.type, **({"projectId": s.name} if s.name else {})}
    )
    assert shape == {
        "rules": {
            "worker": {
                "numWorkers": {"max": 8, "sourceOfRule": {"scope": "system"}},
                "ports": {
                    "attributes": {
                        "serviceType": {
                            "options": [{"value": "ClusterIP"}],
                            "sourceOfRule": {"scope": "project", "projectId": "vision"},
                        }
                    }
                },
            }
        },
        "imposedAssets": {"worker": ["shared"]},
    }
    assert yaml.safe_dump(shape)  # plain data


@pytest.mark.parametrize(
    ("text", "message", "path"),
    [
        (
            "defaults:\n  worker:\n    tolerations: {attributes: {exclude: true}}\n",
            "exclude has no default",
            "defaults.worker.tolerations.attributes.exclude",
        ),
        (
            "defaults:\n  worker:\n    ports: {attributes: {serviceType: Sideways}}\n",
            "the default of attribute serviceType is not a value of it",
            "defaults.worker.ports.attributes.serviceType",
        ),
        (
            "defaults:\n  workers: {}\n",
            "unknown replica 'workers' (did you mean 'worker'?)",
            "defaults.workers",
        ),
        (
            "defaults:\n  master:\n    compute: {extendedResources: {attribute: {quantity: 3}}}\n",
            "unknown part of the defaults of compute.extendedResources 'attribute' (did you mean",
            "defaults.master.compute.extendedResources.attribute",
        ),
    ],
)
def test_attribute_defaults_are_read_with_the_errors_of_the_rules(text: str, message: str, path: str) -> None:
    doc, problems = read(text)
    assert doc is None
    assert [(p.message.startswith(message), format_path(p.path)) for p in problems] == [(True, path)], (
        problems
    )


def test_attribute_defaults_read_into_typed_values() -> None:
    doc, problems = read(
        "defaults:\n"
        "  worker:\n"
        "    storage:\n"
        "      git: {attributes: {repository: 'https://git.example.com', branch: main}}\n"
        "    compute:\n"
        "      extendedResources: {attributes: {quantity: 3}}\n"
        "  master:\n"
        "    ports: {attributes: {serviceType: ClusterIP}}\n"
    )
    assert problems == []
    found = {(d.replica, d.field_text): (d.value, d.location.line) for d in doc.attribute_defaults}
    assert found == {
        ("worker", "storage.git.attributes.repository"): ("https://git.example.com", 4),
        ("worker", "storage.git.attributes.branch"): ("main", 4),
        ("worker", "compute.extendedResources.attributes.quantity"): (3, 6),
        ("master", "ports.attributes.serviceType"): ("ClusterIP", 8),
    }
    shape = effective_shape(effective([doc]), lambda scope: {"scope": "tenant"})
    assert shape["defaults"]["master"] == {"ports": {"attributes": {"serviceType": "ClusterIP"}}}
