"""Round trip of the seed's response sample (``shared/seeds/002_745f5cba44e9876e.txt``).

A single system template whose ``spec`` is the seed's ``spec``, with no other layer, must compose to that spec
(``combinedSpec``) and to the seed's ``combinedMasterSpec`` -- both with the master the same as the worker and
with the seed's ``master.spec`` composed separately.

Where the seed's own sample disagrees with DESIGN.md, DESIGN.md decides (noted at each test):
- the sample sends ``masterSpecSameAsWorker: true`` together with a ``master`` section, which DESIGN.md
  rejects;
- its ``combinedSpec`` carries ``imagePullSecrets`` that no layer (not even its own ``spec``) sets, so the
  expected ``combinedSpec`` is the seed's ``spec``, not its ``combinedSpec``;
- its ``runnable`` says "mandatory image is not provided" although ``spec.image`` is set;
- it holds values Run:ai's own schema refuses (a secret named ``postgress_secret``, a probe path that is not
  a path), which every door refuses as the API does, so the round trips use the sample with those values
  made valid (:func:`runai_valid`).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from template_engine import Composition, InputError
from template_engine.loader.values import spec_value_problems
from template_engine.models.spec import WORKER_ONLY_FIELDS

SEED = "seeds/002_745f5cba44e9876e.txt"
TEMPLATE = "my-template-name"
Preview = Callable[..., Composition]
WriteTree = Callable[[Mapping[str, Any]], Path]


def _json_documents(text: str) -> list[Any]:
    """Every JSON object in the page that starts at the beginning of a line (the samples)."""
    decoder = json.JSONDecoder()
    found = []
    pos = 0
    while (start := text.find("\n{", pos)) != -1:
        try:
            value, end = decoder.raw_decode(text, start + 1)
        except json.JSONDecodeError:
            pos = start + 1
            continue
        found.append(value)
        pos = end
    return found


def prune(value: Any) -> Any:
    """Without empty mappings/lists, nulls and ``exclude: true`` items (what a combined spec omits)."""
    if isinstance(value, dict):
        out = {k: prune(v) for k, v in value.items()}
        return {k: v for k, v in out.items() if v not in (None, {}, [])}
    if isinstance(value, list):
        return [prune(v) for v in value if not (isinstance(v, dict) and v.get("exclude") is True)]
    return value


@pytest.fixture(scope="module")
def sample(shared_dir: Path) -> dict[str, Any]:
    page = shared_dir / SEED
    assert page.is_file(), f"the seed page is missing at {page}"
    responses = [d for d in _json_documents(page.read_text(encoding="utf-8")) if "combinedSpec" in d]
    assert len(responses) == 1
    return responses[0]


#: The parts of the sample that hold a spec.
SPECS = (("spec",), ("master", "spec"), ("combinedSpec",), ("combinedMasterSpec",))


def _at(sample: dict[str, Any], root: tuple[str, ...]) -> Any:
    for part in root:
        sample = sample[part]
    return sample


def runai_valid(sample: dict[str, Any]) -> dict[str, Any]:
    """The sample with the placeholder values Run:ai's schema refuses made valid: a secret name with '_',
    a probe path without its '/'."""
    out = copy.deepcopy(sample)
    for root in SPECS:
        spec = _at(out, root)
        for variable in spec.get("environmentVariables") or ():
            secret = variable.get("secret") or {}
            if "name" in secret:
                secret["name"] = secret["name"].replace("_", "-")
        get = ((spec.get("probes") or {}).get("readiness") or {}).get("handler", {}).get("httpGet") or {}
        if "path" in get and not get["path"].startswith("/"):
            get["path"] = "/" + get["path"]
    return out


@pytest.fixture(scope="module")
def valid(sample: dict[str, Any]) -> dict[str, Any]:
    fixed = runai_valid(sample)
    assert all(spec_value_problems(_at(fixed, root), root) == [] for root in SPECS)
    return fixed


def test_the_samples_values_run_ai_refuses_are_refused_from_a_file_too(
    write_tree: WriteTree, preview: Preview, sample: dict[str, Any]
) -> None:
    root = _system_template(write_tree, {"spec": sample["spec"]})
    with pytest.raises(InputError) as caught:
        preview(root, TEMPLATE)
    fields = {p.path for p in caught.value.problems}
    assert fields == {p.path for p in spec_value_problems(sample["spec"], ("spec",))}
    assert ("spec", "environmentVariables", 0, "secret", "name") in fields
    assert all(p.location is not None and p.location.line for p in caught.value.problems)


def _system_template(write_tree: WriteTree, body: dict[str, Any]) -> Path:
    """A templates folder whose only document is one system template (no defaults, no assets)."""
    doc = {"meta": {"name": TEMPLATE}, **body}
    root = write_tree({"projects/vision/templates/job.yaml": None, f"system/templates/{TEMPLATE}.yaml": doc})
    assert sorted(p.relative_to(root).as_posix() for p in root.rglob("*.yaml")) == [
        "org.yaml",
        f"system/templates/{TEMPLATE}.yaml",
    ]
    return root


def test_the_sample_has_every_part(sample: dict[str, Any]) -> None:
    assert {"spec", "master", "combinedSpec", "combinedMasterSpec"} <= set(sample)
    assert sample["spec"]["image"] == "python:3.8"
    assert "spec" in sample["master"]


def test_the_seeds_master_spec_holds_no_worker_only_field(sample: dict[str, Any]) -> None:
    assert not set(WORKER_ONLY_FIELDS) & set(sample["master"]["spec"])
    assert not set(WORKER_ONLY_FIELDS) & set(sample["combinedMasterSpec"])


def test_same_as_worker_round_trip(write_tree: WriteTree, preview: Preview, valid: dict[str, Any]) -> None:
    root = _system_template(write_tree, {"spec": valid["spec"], "masterSpecSameAsWorker": True})
    composition = preview(root, TEMPLATE)
    response = composition.to_response()
    # The seed's combinedSpec adds imagePullSecrets that no layer sets; DESIGN.md: nothing but the layers.
    assert response["combinedSpec"] == prune(valid["spec"])
    assert response["combinedMasterSpec"] == prune(valid["combinedMasterSpec"])
    assert response["masterSpecSameAsWorker"] is True
    assert response["spec"] == valid["spec"]


def test_separate_master_round_trip(write_tree: WriteTree, preview: Preview, valid: dict[str, Any]) -> None:
    body = {
        "spec": valid["spec"],
        "masterSpecSameAsWorker": False,
        "master": {"spec": valid["master"]["spec"]},
    }
    root = _system_template(write_tree, body)
    response = preview(root, TEMPLATE).to_response()
    assert response["combinedSpec"] == prune(valid["spec"])
    assert response["combinedMasterSpec"] == prune(valid["combinedMasterSpec"])
    assert response["combinedMasterSpec"] == prune(valid["master"]["spec"])
    assert response["masterSpecSameAsWorker"] is False


def test_the_seeds_true_flag_with_a_master_section_is_rejected(
    write_tree: WriteTree, preview: Preview, sample: dict[str, Any]
) -> None:
    # The sample sends masterSpecSameAsWorker: true with a master section; DESIGN.md makes that an error.
    body = {
        "spec": sample["spec"],
        "masterSpecSameAsWorker": True,
        "master": {"spec": sample["master"]["spec"]},
    }
    root = _system_template(write_tree, body)
    with pytest.raises(InputError) as caught:
        preview(root, TEMPLATE)
    assert "masterSpecSameAsWorker" in caught.value.render()
    assert caught.value.problems[0].location is not None
    assert caught.value.problems[0].location.file == f"system/templates/{TEMPLATE}.yaml"


def test_the_seed_spec_composes_with_design_runnable_rules(
    write_tree: WriteTree, preview: Preview, valid: dict[str, Any]
) -> None:
    # The seed says "mandatory image is not provided" though spec.image is set; DESIGN.md checks the combined
    # spec, which has an image, so that message must not appear.
    root = _system_template(write_tree, {"spec": valid["spec"]})
    runnable = preview(root, TEMPLATE).runnable
    assert "mandatory image is not provided" not in [i.message for i in runnable.issues]
    # MPI with minReplicas/maxReplicas: fields only PyTorch reads are warnings.
    assert {("minReplicas",), ("maxReplicas",)} <= {w.field for w in runnable.warnings}
