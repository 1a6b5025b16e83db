"""The rule vocabulary's supplement: fields Run:ai documents with rules beyond its OpenAPI document
(issue 31)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from template_engine.policy.vocabulary import RuleFamily, Section, vocabulary
from template_engine.policy.vocabulary_source import SUPPLEMENT, VOCABULARY_FILE, Supplement, extract, updated

SUBSET = Path(__file__).resolve().parent / "fixtures" / "runai" / "runai-openapi-subset.json"
WHOLE = SUBSET.with_name("runai-openapi-1.224.0.json")


def test_the_generated_vocabulary_is_the_subset_document_with_its_supplement() -> None:
    """The subset document has the distributed policy's schemas only: it gives the file's distributed
    sections, the other kinds' kept as they are (``.ci/run``'s ``--check``)."""
    document = json.loads(SUBSET.read_text(encoding="utf-8"))
    current = json.loads(VOCABULARY_FILE.read_text(encoding="utf-8"))
    text = json.dumps(updated(current, extract(document)), indent=1, sort_keys=True) + "\n"
    assert VOCABULARY_FILE.read_text(encoding="utf-8") == text


def test_the_whole_document_gives_the_whole_file() -> None:
    """Every kind's vocabulary (issue 32) is what Run:ai's whole document gives, and its distributed sections
    are the subset's."""
    document = json.loads(WHOLE.read_text(encoding="utf-8"))
    extracted = extract(document)
    assert sorted(extracted["kinds"]) == ["distributed-inference", "inference", "training", "workspace"]
    assert (
        VOCABULARY_FILE.read_text(encoding="utf-8") == json.dumps(extracted, indent=1, sort_keys=True) + "\n"
    )


@pytest.mark.parametrize("replica", ["worker", "master"])
def test_mig_profile_takes_string_rules_on_both_replicas(replica: str) -> None:
    compute = vocabulary()[replica].fields["compute"]  # type: ignore[index]
    assert isinstance(compute, Section)
    mig = compute.fields["migProfile"]
    assert isinstance(mig, RuleFamily) and mig.family == "StringRules"
    assert set(mig.keys) == {"canEdit", "required", "options"}


def test_every_supplement_names_its_source_and_is_said_in_the_file() -> None:
    listed = json.loads(VOCABULARY_FILE.read_text(encoding="utf-8"))["supplements"]
    assert [e["path"] for e in listed] == [".".join(s.path) for s in SUPPLEMENT]
    assert all(s.source.startswith("https://github.com/run-ai/docs/") for s in SUPPLEMENT)


def test_a_supplement_the_document_comes_to_list_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    document = json.loads(SUBSET.read_text(encoding="utf-8"))
    stale = (*SUPPLEMENT, Supplement(("compute", "cpuCoreRequest"), "NumberRules", "https://example"))
    monkeypatch.setattr("template_engine.policy.vocabulary_source.SUPPLEMENT", stale)
    with pytest.raises(ValueError, match=r"compute\.cpuCoreRequest is in the OpenAPI document now"):
        extract(copy.deepcopy(document))
