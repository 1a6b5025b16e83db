"""Every kind composed by the same engine (issue 32): templates say their kind, shared defaults reach each
kind that has the field, what a kind lacks is said (never dropped silently), and distributed is unchanged."""

from __future__ import annotations

import textwrap

import pytest

from template_engine.compose import Composition, compose
from template_engine.errors import InputError
from template_engine.kinds import DISTRIBUTED, KIND_BY_NAME, KINDS, TEMPLATE_KINDS
from template_engine.loader.sources import MappingSource
from template_engine.loader.tree import load_org
from template_engine.org import SYSTEM, Org, Scope, View

ORG = "departments:\n- name: research\n  projects: [vision]\n"
SHARED = """\
spec:
  image: registry.acme/base:1
  backoffLimit: 4
  stdin: true
  numWorkers: 2
  labels:
  - name: team
    value: ml
"""


def _org(files: dict[str, str]) -> Org:
    return load_org(MappingSource({"org.yaml": ORG, **{k: textwrap.dedent(v) for k, v in files.items()}}))


def _template(kind: str | None, name: str, spec: str = "") -> str:
    head = f"meta:\n  name: {name}\n" + (f"kind: {kind}\n" if kind else "")
    return head + (f"spec:\n{textwrap.indent(spec, '  ')}" if spec else "")


VISION = View("research", "vision")


def _one(org: Org, name: str) -> Composition:
    for by_name in org.templates.values():
        if name in by_name:
            return compose(org, by_name[name], VISION)
    raise AssertionError(name)


def test_a_default_written_once_reaches_every_kind_that_has_the_field() -> None:
    org = _org(
        {
            "system/defaults.yaml": SHARED,
            "projects/vision/templates/dist.yaml": _template(None, "dist", "distributedFramework: PyTorch\n"),
            "projects/vision/templates/train.yaml": _template("training", "train", "completions: 2\n"),
            "projects/vision/templates/ws.yaml": _template("workspace", "ws"),
            "projects/vision/templates/serve.yaml": _template(
                "inference", "serve", "servingPort:\n  container: 8000\n"
            ),
        }
    )
    got = {name: _one(org, name) for name in ("dist", "train", "ws", "serve")}
    for composition in got.values():
        assert composition.combined_spec["image"] == "registry.acme/base:1"
        assert composition.combined_spec["labels"] == [{"name": "team", "value": "ml"}]
    assert got["dist"].combined_spec["backoffLimit"] == 4
    assert got["train"].combined_spec["backoffLimit"] == 4
    assert got["ws"].combined_spec["stdin"] is True
    assert "backoffLimit" not in got["serve"].combined_spec
    assert "stdin" not in got["serve"].combined_spec
    assert "numWorkers" not in got["train"].combined_spec
    assert got["train"].combined_spec["completions"] == 2
    assert {k: c.kind.name for k, c in got.items()} == {
        "dist": "distributed",
        "train": "training",
        "ws": "workspace",
        "serve": "inference",
    }


def test_what_a_kind_lacks_is_said_with_its_place_not_dropped_silently() -> None:
    org = _org(
        {
            "system/defaults.yaml": SHARED,
            "projects/vision/templates/serve.yaml": _template(
                "inference", "serve", "servingPort:\n  container: 8000\n"
            ),
            "projects/vision/templates/dist.yaml": _template(None, "dist", "distributedFramework: PyTorch\n"),
        }
    )
    serve = _one(org, "serve")
    said = {(n.field, n.location.file, n.location.line) for n in serve.not_applied}
    assert said == {
        ("backoffLimit", "system/defaults.yaml", 3),
        ("stdin", "system/defaults.yaml", 4),
        ("numWorkers", "system/defaults.yaml", 5),
    }
    message = next(n for n in serve.not_applied if n.field == "backoffLimit").message()
    assert (
        message
        == "backoffLimit is not applied to an inference: Run:ai's inference spec has no field 'backoffLimit'"
    )
    assert _one(org, "dist").not_applied == ()


def test_one_role_kinds_answer_runais_shape_without_a_master() -> None:
    org = _org({"projects/vision/templates/train.yaml": _template("training", "train", "image: a/b:1\n")})
    response = _one(org, "train").to_response()
    assert set(response) == {"meta", "spec", "assets", "runnable", "combinedSpec"}
    assert response["meta"]["workloadType"] == "Training"
    assert response["runnable"]["isRunnable"] is True
    assert _one(org, "train").combined_master_spec is None


@pytest.mark.parametrize(
    ("kind", "spec", "missing"),
    [
        ("training", "completions: 1\n", ["image"]),
        ("workspace", "stdin: true\n", ["image"]),
        ("inference", "image: a/b:1\n", ["servingPort.container"]),
        ("inference", "servingPort:\n  protocol: grpc\n", ["image", "servingPort.container"]),
    ],
)
def test_each_kind_has_its_own_mandatory_fields(kind: str, spec: str, missing: list[str]) -> None:
    org = _org({"projects/vision/templates/t.yaml": _template(kind, "t", spec)})
    issues = _one(org, "t").runnable.issues
    assert [i.message for i in issues] == [f"mandatory {field} is not provided" for field in missing]
    assert all(i.mandatory and i.replica == "worker" for i in issues)


def test_an_inference_autoscaling_is_checked_as_runai_states_it() -> None:
    spec = "image: a/b:1\nservingPort:\n  container: 80\nautoscaling:\n  minReplicas: 3\n  maxReplicas: 2\n"
    org = _org({"projects/vision/templates/t.yaml": _template("inference", "t", spec)})
    first, *then = _one(org, "t").runnable.issues
    assert first.message == "autoscaling.minReplicas 3 is above autoscaling.maxReplicas 2"
    # and Knative, which runs it, refuses the same (its own check, at the object's place)
    assert [i.object_path for i in then] == [
        "Service.spec.template.metadata.annotations.autoscaling.knative.dev/max-scale"
    ]
    spec = "image: a/b:1\nservingPort:\n  container: 80\nautoscaling:\n  minReplicas: 1\n  maxReplicas: 4\n"
    org = _org({"projects/vision/templates/t.yaml": _template("inference", "t", spec)})
    assert [i.message for i in _one(org, "t").runnable.issues] == [
        "autoscaling.metric is mandatory when minReplicas 1 is below maxReplicas 4"
    ]


def test_a_template_of_a_kind_is_held_to_its_kinds_fields_with_file_and_line() -> None:
    org = _org(
        {"projects/vision/templates/t.yaml": _template("inference", "t", "image: a/b:1\nbackoffLimit: 2\n")}
    )
    problems = org.broken["projects/vision/templates/t.yaml"]
    assert [(p.path, p.location.line if p.location else None) for p in problems] == [
        (("spec", "backoffLimit"), 6)
    ]
    assert problems[0].message == (
        "unknown field 'backoffLimit': an inference has no such field (a distributed training, a training "
        "and a workspace have it)"
    )
    org = _org({"projects/vision/templates/t.yaml": _template(None, "t", "completions: 2\nnumWorkrs: 2\n")})
    assert [p.message for p in org.broken["projects/vision/templates/t.yaml"]] == [
        "unknown field 'completions': a distributed training has no such field (a training has it)",
        "unknown field 'numWorkrs' (did you mean 'numWorkers'?)",
    ]


def test_an_unknown_kind_is_told_with_the_kinds_there_are() -> None:
    org = _org({"projects/vision/templates/t.yaml": _template("trainig", "t", "image: a/b:1\n")})
    (problem,) = org.broken["projects/vision/templates/t.yaml"]
    assert problem.message == "unknown kind 'trainig' (did you mean 'training'?)"
    assert problem.path == ("kind",)
    assert problem.location is not None and problem.location.line == 3
    assert problem.expected == "one of distributed, training, workspace, inference (no kind: distributed)"


def test_a_kind_without_templates_is_refused_as_a_template_kind() -> None:
    org = _org({"projects/vision/templates/t.yaml": _template("distributed-inference", "t")})
    (problem,) = org.broken["projects/vision/templates/t.yaml"]
    assert problem.message.startswith("Run:ai has no templates of kind 'distributed-inference'")


def test_a_one_role_template_has_no_master_section() -> None:
    text = _template("workspace", "t", "image: a/b:1\n") + "master:\n  spec:\n    image: x/y:1\n"
    org = _org({"projects/vision/templates/t.yaml": text})
    problems = org.broken["projects/vision/templates/t.yaml"]
    assert [p.path for p in problems] == [("master",)]


def test_an_asset_a_kind_may_not_use_makes_its_templates_not_runnable() -> None:
    env = "meta:\n  name: jupyter\n  workloadSupportedTypes:\n    training: false\nspec:\n  image: j/j:1\n"
    files = {
        "assets/environments/jupyter.yaml": env,
        "projects/vision/templates/train.yaml": _template("training", "train")
        + "assets:\n  environment: jupyter\n",
        "projects/vision/templates/ws.yaml": _template("workspace", "ws")
        + "assets:\n  environment: jupyter\n",
    }
    org = _org(files)
    (issue,) = _one(org, "train").runnable.issues
    assert issue.message == (
        "environment asset 'jupyter' may not be used by a training: its workloadSupportedTypes.training is "
        "false (assets/environments/jupyter.yaml)"
    )
    assert issue.source is not None and (issue.source.file, issue.source.line) == (
        "projects/vision/templates/train.yaml",
        5,
    )
    assert _one(org, "ws").runnable.is_runnable


def test_every_template_kind_has_a_model_and_a_route_segment_and_only_distributed_has_a_master() -> None:
    assert [k.name for k in TEMPLATE_KINDS] == ["distributed", "training", "workspace", "inference"]
    assert [k.name for k in KINDS if k.is_distributed] == ["distributed"]
    assert KIND_BY_NAME["distributed-inference"].roles == ("leader", "worker")
    assert DISTRIBUTED.fields() - KIND_BY_NAME["training"].fields() == {
        "numWorkers",
        "distributedFramework",
        "minReplicas",
        "maxReplicas",
        "slotsPerWorker",
        "sshAuthMountPath",
        "mpiLauncherCreationPolicy",
        "cleanPodPolicy",
        "segmentSize",
        "imagePullSecrets",
    }


def test_kind_policy_files_are_read_in_their_scope_and_a_misnamed_one_is_suggested() -> None:
    org = _org({"departments/research/trainig-policy.yaml": "rules: {}\n"})
    problems = org.broken["departments/research/trainig-policy.yaml"]
    assert "did you mean 'training-policy.yaml'?" in problems[0].message
    assert Scope("department", "research") != SYSTEM


def test_a_broken_kind_policy_fails_only_that_kinds_compositions() -> None:
    files = {
        "system/training-policy.yaml": "rules: [1\n",
        "projects/vision/templates/train.yaml": _template("training", "train", "image: a/b:1\n"),
        "projects/vision/templates/dist.yaml": _template(
            None, "dist", "image: a/b:1\ndistributedFramework: TF\n"
        ),
    }
    org = _org(files)
    with pytest.raises(InputError):
        _one(org, "train")
    assert _one(org, "dist").runnable.is_runnable


def test_the_worked_example_of_concepts_md_holds() -> None:
    """docs/concepts.md, "Workload kinds: one default, every kind": the table under its example."""
    org = _org(
        {
            "system/defaults.yaml": "spec:\n  image: registry.acme/base:1\n  backoffLimit: 4\n"
            "  stdin: true\n",
            "system/training-policy.yaml": "defaults:\n  backoffLimit: 6\n",
            "projects/vision/defaults.yaml": "spec:\n  backoffLimit: 2\n",
            "projects/vision/templates/train.yaml": _template("training", "train", "completions: 2\n"),
            "projects/vision/templates/serve.yaml": _template(
                "inference", "serve", "servingPort: {container: 8000}\n"
            ),
            "projects/vision/templates/dist.yaml": _template(None, "dist", "distributedFramework: TF\n"),
        }
    )
    train, serve, dist = (_one(org, name) for name in ("train", "serve", "dist"))
    for got in (train, serve, dist):
        assert got.combined_spec["image"] == "registry.acme/base:1"
    assert (train.combined_spec["backoffLimit"], dist.combined_spec["backoffLimit"]) == (2, 2)
    assert "backoffLimit" not in serve.combined_spec and "stdin" not in serve.combined_spec
    assert (train.combined_spec["stdin"], dist.combined_spec["stdin"]) == (True, True)
    assert train.combined_spec["completions"] == 2
    assert [(n.field, n.location.file) for n in serve.not_applied] == [
        ("backoffLimit", "system/defaults.yaml"),
        ("stdin", "system/defaults.yaml"),
        ("backoffLimit", "projects/vision/defaults.yaml"),
    ]
    # the system training default is beaten by vision's shared default: the scope decides first
    where = train.worker.locate(("backoffLimit",))
    assert where is not None and where.file == "projects/vision/defaults.yaml"
