"""Every pair of the example org (``templates/``) produces objects that the independent validators accept
(``independent_check.py``: jsonschema-rs on the strict CRD schemas, kubernetes-validate on every pod
template and claim), and a runnable pair's objects have no problem by the engine's own checks either."""

from __future__ import annotations

from pathlib import Path

import pytest
from independent_check import independent_errors

from template_engine import load_org
from template_engine.cluster.validity import manifests_problems
from template_engine.compose import MergeCache
from template_engine.diffing.pairs import Outcome, compose_pair, pairs

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def outcomes() -> dict[str, Outcome]:
    org = load_org(REPO / "templates")
    cache: MergeCache = {}
    return {pair.id: compose_pair(org, pair, cache=cache) for pair in pairs(org)}


def test_the_example_org_has_pairs_of_every_framework(outcomes: dict[str, Outcome]) -> None:
    kinds = set()
    for outcome in outcomes.values():
        assert outcome.composition is not None, (outcome.pair.id, outcome.problems)
        manifests = outcome.composition.manifests
        assert manifests is not None and manifests.objects, outcome.pair.id
        kinds.add(manifests.objects[0]["kind"])
    assert len(outcomes) >= 15
    assert kinds >= {"PyTorchJob", "TFJob", "MPIJob"}


def test_every_pair_validates_independently(outcomes: dict[str, Outcome]) -> None:
    failed = {}
    for pair_id, outcome in outcomes.items():
        assert outcome.composition is not None and outcome.composition.manifests is not None
        objects = outcome.composition.manifests.objects
        errors = independent_errors(objects)
        if outcome.runnable:
            errors += [f"{p.place()}: {p.rule}: {p.message}" for p in manifests_problems(objects)]
        if errors:
            failed[pair_id] = errors
    assert failed == {}
