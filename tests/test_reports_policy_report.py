"""``check -o policy-report``: PolicyReport and ClusterPolicyReport objects, valid against the CRDs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonschema
import yaml
from reports_helpers import at_repo, check_json, crd_schema, run

from template_engine.reports.rules import PAIR_RULES

__all__ = ["at_repo"]


def _reports(*args: str) -> tuple[int, list[dict[str, Any]]]:
    result = run("check", "--root", "templates", "-o", "policy-report", *args)
    return result.exit_code, [doc for doc in yaml.safe_load_all(result.stdout) if doc is not None]


def test_valid_against_the_crds_one_per_scope(at_repo: Path) -> None:
    code, reports = _reports()
    assert code == 1
    for report in reports:
        jsonschema.Draft7Validator(crd_schema(report["kind"])).validate(report)
        assert report["apiVersion"] == "wgpolicyk8s.io/v1alpha2"
    namespaced = {r["metadata"]["namespace"] for r in reports if r["kind"] == "PolicyReport"}
    assert namespaced == {"runai-nlp", "runai-recsys", "runai-speech", "runai-vision"}
    clusters = [r for r in reports if r["kind"] == "ClusterPolicyReport"]
    assert len(clusters) == 1 and "namespace" not in clusters[0]["metadata"]
    views = {res["properties"]["view"] for res in clusters[0]["results"]}
    assert views == {"(system)", "(applied)", "(research)"}


def test_one_result_per_rule_and_pair_pass_and_fail(at_repo: Path) -> None:
    _, reports = _reports()
    nlp = next(r for r in reports if r["metadata"].get("namespace") == "runai-nlp")
    pairs = {res["properties"]["template"] for res in nlp["results"]}
    assert len(nlp["results"]) == len(pairs) * len(PAIR_RULES)
    horovod = [res for res in nlp["results"] if res["properties"]["template"] == "mpi-horovod"]
    assert [res["rule"] for res in horovod] == list(PAIR_RULES)
    failed = [res for res in horovod if res["result"] == "fail"]
    assert [res["rule"] for res in failed] == ["policy/locked"]
    assert "request side changed it" in failed[0]["message"]
    assert failed[0]["properties"]["locations"] == "system/templates/mpi-horovod.yaml:14"
    assert all(res["result"] == "pass" for res in horovod if res["rule"] != "policy/locked")
    for res in horovod:
        assert res["source"] == "template-engine"
        assert res["resources"] == [
            {
                "apiVersion": "kubeflow.org/v2beta1",
                "kind": "MPIJob",
                "name": "mpi-horovod",
                "namespace": "runai-nlp",
            }
        ]
    summary = nlp["summary"]
    assert summary["fail"] == sum(res["result"] == "fail" for res in nlp["results"]) == 1
    assert summary["pass"] == len(nlp["results"]) - 1


def test_every_issue_is_in_a_failed_result(at_repo: Path) -> None:
    _, reports = _reports()
    messages = " ".join(res["message"] for r in reports for res in r["results"] if res["result"] == "fail")
    for row in check_json()["results"]:
        for issue in row["issues"]:
            assert issue["message"] in messages
