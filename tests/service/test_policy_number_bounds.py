"""Numbers in policy rules within what the ruled field can hold, at every door (issue 17: ``PATCH
/api/v2/policy/distributed`` stored a 400-digit ``slotsPerWorker.max``, ``db export`` wrote it and
``validate`` found the files valid).

``policy/document.read_policy`` is the one door of a policy: a folder's ``policy.yaml`` (``validate`` and
``check`` at file:line), ``db import``, the API's policy bodies and the UI's policy form refuse alike, with
the field and what was expected; values at the bounds pass everywhere.  A policy's defaults are a defaults
document: a 400-digit ``numWorkers`` there is refused by the model's int32.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from conftest import ADMIN, bearer, ui_sign_in
from fastapi import FastAPI
from fastapi.testclient import TestClient

from template_engine.cli import main
from template_engine.errors import InputError
from template_engine.loader.sources import MappingSource
from template_engine.loader.tree import load_org
from template_engine.paths import format_path
from template_engine.service.importer import import_folder
from template_engine.service.storage.database import create_db_engine, ensure_schema

P = "/api/v2/policy/distributed"
ORG = "departments:\n- name: research\n  projects: [vision]\n"
TEMPLATE = "meta: {name: train}\nspec: {image: 'python:3.11', distributedFramework: PyTorch, numWorkers: 2}\n"
POLICY = "system/policy.yaml"
BIG = "9" * 400

#: A policy beyond the bounds, each broken number on a line of its own.
BEYOND = f"""\
rules:
  worker:
    slotsPerWorker:
      max: {BIG}
      min: -{BIG}
    compute:
      cpuCoreLimit:
        defaultFrom:
          field: cpuCoreRequest
          factor: {BIG}
      gpuPortionRequest:
        max: 1.5
    backoffLimit:
      max: 2147483648
"""
#: Each problem of :data:`BEYOND`: its field, its line, what was expected.
REFUSED = {
    ("rules.worker.slotsPerWorker.max", 4, "a whole number from 1 to 2147483647"),
    ("rules.worker.slotsPerWorker.min", 5, "a whole number from 1 to 2147483647"),
    (
        "rules.worker.compute.cpuCoreLimit.defaultFrom.factor",
        10,
        "a number above 0, at most 1.797e308 (Run:ai's factor is a double)",
    ),
    ("rules.worker.compute.gpuPortionRequest.max", 12, "a number from 0 to 1"),
    ("rules.worker.backoffLimit.max", 14, "a whole number from -2147483648 to 2147483647"),
}
#: The same numbers at the bounds.
AT_BOUNDS = """\
rules:
  worker:
    slotsPerWorker:
      max: 2147483647
      min: 1
      step: 2147483647
    compute:
      cpuCoreLimit:
        defaultFrom:
          field: cpuCoreRequest
          factor: 1.7976931348623157e+308
      gpuPortionRequest:
        max: 1
        min: 0
    backoffLimit:
      max: 2147483647
      min: -2147483648
"""


def _files(policy: str) -> dict[str, str]:
    return {"org.yaml": ORG, POLICY: policy, "projects/vision/templates/train.yaml": TEMPLATE}


def _folder(tmp_path: Path, policy: str) -> Path:
    root = tmp_path / "org"
    for rel, content in _files(policy).items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(content, encoding="utf-8")
    return root


def _rules(text: str) -> dict[str, Any]:
    from template_engine.loader.yaml_safe import load_yaml

    return dict(load_yaml(text, POLICY).data["rules"])


@pytest.fixture(scope="module")
def service(empty_service: FastAPI) -> FastAPI:
    return empty_service


@pytest.fixture
def api(service: FastAPI) -> Iterator[TestClient]:
    with TestClient(service) as client:
        client.headers.update(bearer(ADMIN))
        client.delete(P, params={"scope": "tenant"})
        yield client


def _api_found(response: Any) -> set[tuple[str, str]]:
    assert response.status_code == 400, response.text
    return {(p["field"], p["expected"]) for p in response.json()["problems"]}


def test_a_policy_file_beyond_the_bounds_is_refused_at_its_lines() -> None:
    org = load_org(MappingSource(_files(BEYOND)))
    found = {
        (format_path(p.path), p.location.line if p.location else 0, str(p.expected))
        for p in org.broken.get(POLICY, [])
    }
    assert found == REFUSED


@pytest.mark.parametrize("command", ["validate", "check"])
def test_validate_and_check_fail_at_file_and_line(command: str, tmp_path: Path) -> None:
    result = CliRunner().invoke(main, [command, "--root", str(_folder(tmp_path, BEYOND))])
    assert result.exit_code == 1, result.output
    for field, line, expected in REFUSED:
        if command == "validate":
            assert f"at: {field}\n    in: {POLICY}:{line}:" in result.output, result.output
        else:  # check names them as the issues of the pair the broken policy stops
            assert f"{POLICY}:{line}: {field}: " in result.output, result.output
        assert command == "check" or expected in result.output
    assert "(a 400-digit number)" in result.output and BIG not in result.output
    assert (
        CliRunner().invoke(main, [command, "--root", str(_folder(tmp_path / "ok", AT_BOUNDS))]).exit_code == 0
    )


def test_db_import_refuses_before_storing_anything(tmp_path: Path) -> None:
    engine = create_db_engine(f"sqlite:///{tmp_path / 'import.sqlite'}")
    ensure_schema(engine)
    with pytest.raises(InputError) as refused:
        import_folder(engine, _folder(tmp_path, BEYOND))
    found = {
        (format_path(p.path), p.location.line if p.location else 0, str(p.expected))
        for p in refused.value.problems
    }
    assert found == REFUSED
    assert import_folder(engine, _folder(tmp_path / "ok", AT_BOUNDS)) is not None
    engine.dispose()


def test_the_api_refuses_with_the_field_and_stores_nothing(api: TestClient) -> None:
    wanted = {(f"policy.{field}", expected) for field, _, expected in REFUSED}
    body = {"meta": {"name": "tenant", "scope": "tenant"}, "policy": {"rules": _rules(BEYOND)}}
    assert _api_found(api.put(P, json=body)) == wanted
    assert _api_found(api.patch(P, json=body)) == wanted
    assert _api_found(api.put(P, json=body, params={"validateOnly": True})) == wanted
    assert "policy" not in api.get(P, params={"scope": "tenant"}).json()  # nothing stored
    at_bounds = {"meta": {"name": "tenant", "scope": "tenant"}, "policy": {"rules": _rules(AT_BOUNDS)}}
    written = api.put(P, json=at_bounds)
    assert written.status_code == 200, written.text
    stored = api.get(P, params={"scope": "tenant"}).json()["policy"]["rules"]["worker"]
    assert stored["slotsPerWorker"] == {"max": 2147483647, "min": 1, "step": 2147483647}
    assert stored["backoffLimit"] == {"max": 2147483647, "min": -2147483648}


def test_a_400_digit_number_of_workers_in_a_policy_s_defaults_is_refused(api: TestClient) -> None:
    content = json.dumps(
        {
            "meta": {"name": "tenant", "scope": "tenant"},
            "policy": {"defaults": {"worker": {"numWorkers": "N"}}},
        }
    ).replace('"N"', BIG)
    for method in ("PUT", "PATCH"):
        response = api.request(method, P, content=content, headers={"Content-Type": "application/json"})
        fields = {field for field, _ in _api_found(response)}
        assert fields == {"policy.defaults.worker.numWorkers"}, response.text
    assert "policy" not in api.get(P, params={"scope": "tenant"}).json()


def test_the_ui_s_policy_form_refuses_what_the_api_refuses(service: FastAPI, api: TestClient) -> None:
    with TestClient(service, base_url="http://localhost") as browser:
        csrf = ui_sign_in(browser)
        url = "/ui/scope/system/edit/policy"
        # The version the form was read at (another test of the module may have stored a policy already).
        found = re.search(r'name="version" value="([^"]*)"', browser.get(url).text)
        assert found is not None
        version = found[1]
        before = api.get(P, params={"scope": "tenant"}).json().get("policy")
        for action in ("preview", "save"):
            form = {"csrf": csrf, "version": version, "text": BEYOND, "action": action}
            page = browser.post(url, data=form, follow_redirects=False)
            assert page.status_code == 400, page.text
            shown = html.unescape(page.text)
            for field, _, expected in REFUSED:
                assert field in shown and expected in shown, (field, re.findall("<li>(.*?)</li>", shown))
        assert api.get(P, params={"scope": "tenant"}).json().get("policy") == before  # nothing stored
        form = {"csrf": csrf, "version": version, "text": AT_BOUNDS, "action": "preview"}
        assert browser.post(url, data=form, follow_redirects=False).status_code == 200


def test_a_default_from_value_beyond_its_field_is_an_issue_of_the_preview_not_a_500(api: TestClient) -> None:
    """``cpuCoreRequest`` from ``cpuCoreLimit x 2`` with ``cpuCoreLimit: 1e308`` computed 2e308 (an int no
    float holds) and the mapping raised: the preview answered 500. It is an issue of the preview now."""
    rules = {
        "worker": {
            "compute": {"cpuCoreRequest": {"defaultFrom": {"field": "compute.cpuCoreLimit", "factor": 2}}}
        }
    }
    put = api.put(P, json={"meta": {"name": "tenant", "scope": "tenant"}, "policy": {"rules": rules}})
    assert put.status_code == 200, put.text
    body = {
        "meta": {"name": "huge", "scopeType": "system"},
        "spec": {
            "image": "nvcr.io/nvidia/pytorch:24.05-py3",
            "distributedFramework": "PyTorch",
            "compute": {"cpuCoreLimit": 1.0e308},
        },
    }
    preview = api.post("/api/v1/workload-templates/distributed/preview", json=body)
    assert preview.status_code == 200, preview.text
    runnable = preview.json()["runnable"]
    assert runnable["isRunnable"] is False
    issue = next(i for i in runnable["issues"] if i["field"] == "compute.cpuCoreRequest")
    assert issue["rule"] == "max"
    assert "2.0000e+308 by the defaultFrom rule" in issue["message"] and "1.797e308" in issue["message"]
    assert "cpuCoreRequest" not in preview.json()["combinedSpec"]["compute"]
