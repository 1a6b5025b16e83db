"""The policy of every workload kind (issue 32): read in Run:ai's shape of the kind (a training's, a
workspace's and an inference's flat; a distributed inference's by leader and worker), checked with the
kind's vocabulary and spec models, applied and shown as Run:ai shows it."""

from __future__ import annotations

import copy
import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from template_engine.kinds import (
    DISTRIBUTED,
    DISTRIBUTED_INFERENCE,
    INFERENCE,
    TRAINING,
    WORKSPACE,
    WorkloadKind,
)
from template_engine.loader.yaml_safe import load_yaml
from template_engine.org import SYSTEM, Scope
from template_engine.paths import format_path
from template_engine.policy import vocabulary_source
from template_engine.policy.apply import apply_policy
from template_engine.policy.bounds import field_bounds, value_bounds
from template_engine.policy.document import PolicyDocument, read_policy
from template_engine.policy.effective import effective, effective_shape, ownership_problems
from template_engine.policy.vocabulary import ItemsFamily, RuleFamily, Section, kind_vocabulary, vocabulary

PROJECT = Scope("project", "vision")


def read(text: str, kind: WorkloadKind, scope: Scope = SYSTEM) -> tuple[PolicyDocument | None, list[Any]]:
    file = f"{'system' if scope == SYSTEM else 'projects/vision'}/{kind.policy_file}"
    loaded = load_yaml(text, file)
    return read_policy(loaded.data, file, loaded.lines, scope, kind=kind)


def problems_of(text: str, kind: WorkloadKind) -> list[tuple[str, int | None, str]]:
    doc, problems = read(text, kind)
    assert doc is None
    return [(format_path(p.path), p.location.line, p.message) for p in problems]


TRAINING_POLICY = """\
defaults:
  backoffLimit: 3
  compute:
    cpuCoreRequest: 1
    extendedResources:
      attributes: {quantity: 2}
  environmentVariables:
    instances:
      - {name: HTTP_PROXY, value: http://proxy:3128}
rules:
  completions: {max: 4}
  compute:
    gpuDevicesRequest: {max: 8}
    cpuCoreLimit: {defaultFrom: {field: cpuCoreRequest, factor: 2}}
  environmentVariables:
    instances: {locked: [HTTP_PROXY]}
imposedAssets: [shared-datasets]
"""


# -- the vocabulary of each kind -----------------------------------------------------------------------------


def test_each_kind_has_the_vocabulary_of_its_own_schemas() -> None:
    assert kind_vocabulary(DISTRIBUTED) is vocabulary()
    assert set(kind_vocabulary(TRAINING)) == {"worker"}
    assert set(kind_vocabulary(DISTRIBUTED_INFERENCE)) == {"leader", "worker"}
    training = kind_vocabulary(TRAINING)["worker"].fields
    assert "completions" in training and "parallelism" in training and "numWorkers" not in training
    inference = kind_vocabulary(INFERENCE)["worker"].fields
    assert "backoffLimit" not in inference and isinstance(inference["autoscaling"], Section)
    assert set(kind_vocabulary(WORKSPACE)["worker"].fields) == set(vocabulary()["master"].fields)
    leader = kind_vocabulary(DISTRIBUTED_INFERENCE)["leader"].fields
    assert "nodePools" not in leader and isinstance(leader["environmentVariables"], ItemsFamily)


@pytest.mark.parametrize("kind", [TRAINING, WORKSPACE, INFERENCE, DISTRIBUTED_INFERENCE], ids=str)
def test_every_role_of_every_kind_takes_the_documented_mig_profile(kind: WorkloadKind) -> None:
    for section in kind_vocabulary(kind).values():
        compute = section.fields["compute"]
        assert isinstance(compute, Section)
        assert isinstance(compute.fields["migProfile"], RuleFamily)


# -- reading -------------------------------------------------------------------------------------------------


def test_a_training_policy_reads_flat_under_its_one_role() -> None:
    doc, problems = read(TRAINING_POLICY, TRAINING)
    assert problems == [] and doc is not None
    assert doc.kind is TRAINING
    assert {(r.replica, r.field_text) for r in doc.rules} == {
        ("worker", "completions"),
        ("worker", "compute.gpuDevicesRequest"),
        ("worker", "compute.cpuCoreLimit"),
        ("worker", "environmentVariables.instances"),
    }
    assert [(a.replica, a.name) for a in doc.imposed] == [("worker", "shared-datasets")]
    assert [(d.replica, d.field_text, d.value) for d in doc.attribute_defaults] == [
        ("worker", "compute.extendedResources.attributes.quantity", 2)
    ]
    # The value defaults, as a spec of the role (a keyed list's instances are its items), with where they
    # sit in the file: what a merge layer of them needs.
    assert doc.value_defaults == {
        "worker": {
            "backoffLimit": 3,
            "compute": {"cpuCoreRequest": 1},
            "environmentVariables": [{"name": "HTTP_PROXY", "value": "http://proxy:3128"}],
        }
    }
    assert doc.value_default_roots == {"worker": ("defaults",)}
    assert doc.value_default_root("worker") == ("defaults",)
    assert doc.lines[("defaults", "backoffLimit")][0] == 2
    assert doc.lines[("defaults", "compute", "cpuCoreRequest")][0] == 4


def test_a_value_default_may_be_a_keyed_list_written_as_a_spec_writes_it() -> None:
    doc, problems = read("defaults:\n  annotations:\n    - {name: team, value: vision}\n", WORKSPACE)
    assert problems == [] and doc is not None
    assert doc.value_defaults == {"worker": {"annotations": [{"name": "team", "value": "vision"}]}}
    assert doc.attribute_defaults == ()


@pytest.mark.parametrize(
    ("kind", "text", "path", "line", "words"),
    [
        (
            TRAINING,
            "rules:\n  numWorkers: {max: 4}\n",
            "rules.numWorkers",
            2,
            "unknown field for rules 'numWorkers': a training has no such field (a distributed training "
            "has it)",
        ),
        (
            INFERENCE,
            "rules:\n  image: {required: true}\n  backoffLimit: {max: 3}\n",
            "rules.backoffLimit",
            3,
            "unknown field for rules 'backoffLimit': an inference has no such field (a distributed training, "
            "a training and a workspace have it)",
        ),
        (
            WORKSPACE,
            "rules:\n  compute:\n    gpuDevicesRequst: {max: 2}\n",
            "rules.compute.gpuDevicesRequst",
            3,
            "unknown field for rules 'gpuDevicesRequst' (did you mean 'gpuDevicesRequest'?): a workspace has "
            "no such field",
        ),
        (
            TRAINING,
            "defaults:\n  backoffLimit: 2\n  numWorkers: 3\n",
            "defaults.numWorkers",
            3,
            "unknown field for defaults 'numWorkers': a training has no such field (a distributed training "
            "has it)",
        ),
        (
            DISTRIBUTED_INFERENCE,
            "defaults:\n  worker:\n    backoffLimit: 2\n",
            "defaults.worker.backoffLimit",
            3,
            "unknown field for defaults 'backoffLimit': a distributed inference has no such field (a "
            "distributed training, a training and a workspace have it)",
        ),
    ],
)
def test_a_field_the_kind_lacks_is_a_problem_naming_the_field_and_the_kind(
    kind: WorkloadKind, text: str, path: str, line: int, words: str
) -> None:
    assert problems_of(text, kind) == [(path, line, words)]


def test_a_flat_policy_written_by_role_is_told_it_is_flat() -> None:
    found = problems_of(
        "defaults:\n  worker:\n    backoffLimit: 2\nrules:\n  worker:\n    backoffLimit: {max: 3}\n", TRAINING
    )
    flat = "a training's policy is flat, without roles (Run:ai's Training policy)"
    assert found == [
        ("defaults.worker", 2, f"unknown field for defaults 'worker': {flat}"),
        ("rules.worker", 5, f"unknown field for rules 'worker': {flat}"),
    ]


def test_a_flat_policy_keeps_todays_wording_at_the_flat_paths() -> None:
    found = problems_of(
        "rules:\n  compute:\n    gpuDevicesRequest: {max: 9999999999, canEdt: false}\n"
        "imposedAssets: {worker: [a]}\n",
        TRAINING,
    )
    assert found == [
        (
            "rules.compute.gpuDevicesRequest.max",
            3,
            "max 9999999999 is outside what compute.gpuDevicesRequest can hold",
        ),
        (
            "rules.compute.gpuDevicesRequest.canEdt",
            3,
            "unknown rule for an integer field 'canEdt' (did you mean 'canEdit'?)",
        ),
        ("imposedAssets", 4, "imposedAssets must be a list of data source names"),
    ]


def test_a_value_default_is_checked_against_the_kinds_spec_model() -> None:
    found = problems_of("defaults:\n  completions: 0\n  backoffLimit: nope\n", TRAINING)
    assert sorted(found) == [
        ("defaults.backoffLimit", 3, "invalid value 'nope'"),
        ("defaults.completions", 2, "invalid value 0"),
    ]


def test_a_rule_number_is_held_to_the_kinds_own_bounds_of_the_field() -> None:
    """``completions`` is a training's alone: its model's ``ge=1`` bounds a rule's ``min``."""
    assert field_bounds("worker", ("completions",), (), "integer", workload=TRAINING) is not None
    assert field_bounds("worker", ("completions",), (), "integer", workload=TRAINING).low == 1  # type: ignore[union-attr]
    assert value_bounds("worker", ("autoscaling", "maxReplicas"), (), "integer", workload=INFERENCE).low == 1  # type: ignore[union-attr]
    (found,) = problems_of("rules:\n  completions: {min: 0}\n", TRAINING)
    assert found == ("rules.completions.min", 2, "min 0 is outside what completions can hold")


def test_a_distributed_inference_policy_reads_by_leader_and_worker() -> None:
    doc, problems = read(
        """\
defaults:
  leader:
    image: vllm/vllm-openai
    compute:
      extendedResources:
        attributes: {quantity: 1}
rules:
  leader:
    compute:
      gpuDevicesRequest: {max: 2}
  worker:
    image: {required: true}
imposedAssets:
  worker: [models]
""",
        DISTRIBUTED_INFERENCE,
    )
    assert problems == [] and doc is not None
    assert {(r.replica, r.field_text) for r in doc.rules} == {
        ("leader", "compute.gpuDevicesRequest"),
        ("worker", "image"),
    }
    assert [(a.replica, a.name) for a in doc.imposed] == [("worker", "models")]
    assert [(d.replica, d.field_text) for d in doc.attribute_defaults] == [
        ("leader", "compute.extendedResources.attributes.quantity")
    ]
    assert doc.value_defaults == {"leader": {"image": "vllm/vllm-openai"}}
    assert doc.value_default_roots == {"leader": ("defaults", "leader")}


def test_a_distributed_inference_has_no_master() -> None:
    found = problems_of(
        "rules:\n  master:\n    image: {required: true}\n"
        "  worker:\n    compute:\n      gpuDevicesRequest: {max: 9999999999}\n",
        DISTRIBUTED_INFERENCE,
    )
    assert found == [
        ("rules.master", 2, "unknown replica 'master'"),
        (
            "rules.worker.compute.gpuDevicesRequest.max",
            6,
            "max 9999999999 is outside what compute.gpuDevicesRequest can hold",
        ),
    ]


def test_a_distributed_policy_reads_as_before_and_has_no_value_defaults() -> None:
    doc, problems = read("rules:\n  worker:\n    numWorkers: {max: 4}\n", DISTRIBUTED)
    assert problems == [] and doc is not None
    assert doc.kind is DISTRIBUTED and doc.value_defaults == {} and doc.lines == {}
    default_kind, _ = read_policy({"rules": {"worker": {"numWorkers": {"max": 4}}}}, "p.yaml", {}, SYSTEM)
    assert default_kind is not None and default_kind.kind is DISTRIBUTED
    found = problems_of("defaults:\n  worker:\n    backoffLimit: 3\n", DISTRIBUTED)
    assert [(p, line) for p, line, _ in found] == [("defaults.worker.backoffLimit", 3)]
    assert found[0][2].startswith("a policy's defaults hold only the attribute defaults of keyed lists")


def test_a_copy_of_a_policy_is_equal_to_it() -> None:
    """A policy names its kind, so that a deep copy (``Org`` comparisons) or a pickled one is equal to it."""
    doc, _ = read(TRAINING_POLICY, TRAINING)
    assert copy.deepcopy(doc) == doc


# -- the effective policy, ownership, Run:ai's shape ---------------------------------------------------------


def test_the_effective_shape_of_a_one_role_kind_is_flat() -> None:
    doc, _ = read(TRAINING_POLICY, TRAINING)
    assert doc is not None
    shape = effective_shape(effective([doc], kind=TRAINING), lambda scope: {"scope": "tenant"})
    assert shape["defaults"] == {"compute": {"extendedResources": {"attributes": {"quantity": 2}}}}
    assert shape["rules"]["completions"] == {"max": 4, "sourceOfRule": {"scope": "tenant"}}
    assert shape["rules"]["compute"]["gpuDevicesRequest"] == {"max": 8, "sourceOfRule": {"scope": "tenant"}}
    assert shape["rules"]["environmentVariables"] == {
        "instances": {"locked": ["HTTP_PROXY"], "sourceOfRule": {"scope": "tenant"}}
    }
    assert shape["imposedAssets"] == ["shared-datasets"]


def test_the_effective_shape_of_a_distributed_inference_is_by_role() -> None:
    doc, _ = read(
        "rules:\n  leader:\n    image: {required: true}\nimposedAssets:\n  worker: [m]\n",
        DISTRIBUTED_INFERENCE,
    )
    assert doc is not None
    shape = effective_shape(effective([doc], kind=DISTRIBUTED_INFERENCE), lambda scope: {"scope": "tenant"})
    assert shape == {
        "rules": {"leader": {"image": {"required": True, "sourceOfRule": {"scope": "tenant"}}}},
        "imposedAssets": {"worker": ["m"]},
    }


def test_a_branch_of_another_kinds_policy_is_a_mistake_of_the_caller() -> None:
    doc, _ = read(TRAINING_POLICY, TRAINING)
    assert doc is not None
    with pytest.raises(ValueError, match="is a training policy, not a distributed one"):
        effective([doc])
    assert effective([], kind=INFERENCE).kind is INFERENCE


def test_a_field_ruled_twice_in_a_flat_branch_is_told_at_its_flat_path() -> None:
    system, _ = read("rules:\n  completions: {max: 4}\n", TRAINING)
    project, _ = read("rules:\n  completions: {max: 2}\n", TRAINING, PROJECT)
    assert system is not None and project is not None
    (problem,) = ownership_problems([system, project])[project.file]
    assert problem.path == ("rules", "completions")
    assert problem.message == "field 'completions' already has rules in system/training-policy.yaml:2:3"


# -- applying ------------------------------------------------------------------------------------------------


def test_a_training_policy_applies_to_a_training_spec_with_no_master() -> None:
    doc, _ = read(TRAINING_POLICY, TRAINING)
    assert doc is not None
    policy = effective([doc], kind=TRAINING)
    spec = {
        "completions": 6,
        "compute": {
            "cpuCoreRequest": 1.5,
            "gpuDevicesRequest": 9,
            "extendedResources": [{"resource": "a/b"}],
        },
        "environmentVariables": [{"name": "HTTP_PROXY", "value": "http://other:3128"}],
    }
    side = {"environmentVariables": [{"name": "HTTP_PROXY", "value": "http://proxy:3128"}]}
    outcome = apply_policy(
        policy, TRAINING.plan(), spec, side, {"image": "ignored"}, None, True, frozenset(), {}
    )
    assert outcome.master_spec is None
    assert outcome.spec["compute"]["cpuCoreLimit"] == 3  # defaultFrom: cpuCoreRequest x 2
    assert outcome.spec["compute"]["extendedResources"] == [{"quantity": 2, "resource": "a/b"}]
    assert {(i.replica, i.field, i.rule) for i in outcome.issues} == {
        ("worker", "completions", "max"),
        ("worker", "compute.gpuDevicesRequest", "max"),
        ("worker", "environmentVariables[name=HTTP_PROXY]", "locked"),
    }
    assert {replica for replica, _ in outcome.origins} == {"worker"}


def test_a_default_from_value_is_held_to_the_kinds_bounds() -> None:
    doc, _ = read("rules:\n  parallelism: {defaultFrom: {field: completions, factor: 0.1}}\n", TRAINING)
    assert doc is not None
    outcome = apply_policy(
        effective([doc], kind=TRAINING),
        TRAINING.plan(),
        {"completions": 5},
        {},
        None,
        None,
        False,
        frozenset(),
        {},
    )
    assert "parallelism" not in outcome.spec  # 5 x 0.1 rounds down to 0, below the model's ge=1
    assert [(i.field, i.rule) for i in outcome.issues] == [("parallelism", "min")]
    assert outcome.issues[0].message.startswith("parallelism would be 0 by the defaultFrom rule")
    assert value_bounds("worker", ("parallelism",), (), "integer", workload=TRAINING) is not None
    assert Decimal(1) == value_bounds("worker", ("parallelism",), (), "integer", workload=TRAINING).low  # type: ignore[union-attr]


# -- the maintainer's script ---------------------------------------------------------------------------------


@pytest.mark.parametrize("document", ["runai-openapi-subset.json", "runai-openapi-1.224.0.json"])
def test_the_check_of_the_vocabulary_passes_with_either_document(
    document: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """``.ci/run`` checks against the subset (the distributed sections only); the whole document gives all."""
    path = Path(__file__).resolve().parent / "fixtures" / "runai" / document
    assert vocabulary_source.main(["--check", str(path)]) == 0
    said = capsys.readouterr().out
    if document.endswith("subset.json"):
        assert "has no policy schemas of: distributed-inference, inference, training, workspace" in said
    else:
        assert said == ""


def test_the_check_fails_when_a_kinds_vocabulary_differs(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    current = json.loads(vocabulary_source.VOCABULARY_FILE.read_text(encoding="utf-8"))
    del current["kinds"]["training"]["worker"]["completions"]
    stale = tmp_path / "vocabulary.json"
    stale.write_text(json.dumps(current, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    monkeypatch.setattr(vocabulary_source, "VOCABULARY_FILE", stale)
    whole = Path(__file__).resolve().parent / "fixtures" / "runai" / "runai-openapi-1.224.0.json"
    assert vocabulary_source.main(["--check", str(whole)]) == 1
    assert "differs from what" in capsys.readouterr().out


def test_a_distributed_inference_policy_applies_to_its_leader_and_worker() -> None:
    doc, _ = read(
        "rules:\n  leader:\n    compute: {gpuDevicesRequest: {max: 2}}\n"
        "  worker:\n    image: {required: true}\n",
        DISTRIBUTED_INFERENCE,
    )
    assert doc is not None
    policy = effective([doc], kind=DISTRIBUTED_INFERENCE)
    leader = {"compute": {"gpuDevicesRequest": 4}, "image": "vllm"}
    outcome = apply_policy(
        policy, DISTRIBUTED_INFERENCE.plan(), leader, {}, {"image": ""}, {}, True, frozenset(), {}
    )
    assert outcome.master_spec == {"image": ""}  # the worker's own spec: a same-as-worker flag is not its
    assert {(i.replica, i.field, i.rule) for i in outcome.issues} == {
        ("leader", "compute.gpuDevicesRequest", "max"),
        ("worker", "image", "required"),
    }
