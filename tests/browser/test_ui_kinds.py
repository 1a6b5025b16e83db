"""The UI over every workload kind in Chromium: a template made with a scope's template form (its kind chosen,
typed in the document editor, refused at the line of a field its kind lacks, previewed, saved), listed with
its kind and shown with the sections of its kind's roles; no browser error on the way.

The kind is the first the service creates templates of (its OpenAPI document has their ``POST``) other than
a distributed training when there is one (a kind of one role), else a distributed training.
"""

from __future__ import annotations

import httpx
import pytest
import yaml
from browser_helpers import BrowserLog, LiveService
from playwright.sync_api import Page, expect
from test_service_ui_browser import (
    api,
    editor_text,
    follow,
    ok,
    project_id,
    sign_in,
    take_refusals,
    type_document,
)

from template_engine.kinds import TEMPLATE_KINDS, WorkloadKind

__all__ = ["api"]  # the fixture, from the UI's browser tests

SPECS = {
    "distributed": {"image": "python:3.11", "distributedFramework": "PyTorch", "numWorkers": 2},
    "training": {"image": "python:3.11", "completions": 1},
    "workspace": {"image": "jupyter/base-notebook"},
    "inference": {"image": "vllm/vllm-openai", "servingPort": {"container": 8000}},
}


def _lacking(kind: WorkloadKind) -> str:
    """A field another kind's template has and ``kind``'s has not (an inference's ``backoffLimit``)."""
    others = set().union(*(other.fields() for other in TEMPLATE_KINDS)) - kind.fields()
    return "backoffLimit" if "backoffLimit" in others else sorted(others)[0]


@pytest.mark.own_service  # it stores a template: a service of its own
def test_a_template_of_a_kind_is_made_in_the_form_listed_with_its_kind_and_shown_with_its_roles(
    page: Page, browser_log: BrowserLog, live_service: LiveService, api: httpx.Client
) -> None:
    paths = ok(api.get("/openapi.json"))["paths"]
    served = [
        k
        for k in TEMPLATE_KINDS
        if "post" in paths.get(f"/api/v1/workload-templates/{k.template_segment}", {})
    ]
    kind = next((k for k in served if not k.is_distributed), served[0])
    vision = project_id(api, "vision")
    sign_in(page, live_service, "admin")
    follow(page, page.locator(f'li[data-scope="project:{vision}"] > .meta a[data-link="templates"]'))
    follow(page, page.locator("#new-template-link"))
    options = page.locator("#kind option").evaluate_all("els => els.map(e => e.value)")
    assert options == [k.name for k in served]
    page.locator("#kind").select_option(kind.name)
    expect(page.locator("#document-editor")).to_be_visible()  # the document editor, as on the other forms

    # A field the kind lacks, typed on the third line, then Ctrl+Enter: refused at that line, nothing stored.
    field = _lacking(kind)
    lines = ["meta:", "  name: ui-kind", f"  description: a {kind.noun} made in the UI", "spec:"]
    lines += [f"  {line}" for line in yaml.safe_dump(SPECS[kind.name], sort_keys=False).splitlines()]
    text = "\n".join([*lines, f"  {field}: 3"])
    type_document(page, text)
    with page.expect_navigation():
        page.keyboard.press("Control+Enter")
    page.wait_for_load_state("load")
    take_refusals(browser_log, 400, f"/ui/scope/project:{vision}/edit/template")
    problem = page.locator("#problem-list li")
    expect(problem).to_have_count(1)
    expect(problem).to_have_attribute("data-line", str(len(lines) + 1))
    expect(problem).to_contain_text(f"spec.{field}: ")
    expect(page.locator("#document-editor .te-problem-marker")).to_have_count(1)
    assert editor_text(page) == text  # the form posted what the editor held
    assert page.locator("#kind").input_value() == kind.name  # the kind chosen stays chosen

    # Without the field: the preview composes it (runnable, the sections of its kind), stores nothing.
    type_document(page, "\n".join(lines))
    follow(page, page.locator("#preview"))
    preview = page.locator("#template-preview")
    expect(preview).to_have_attribute("data-runnable", "true")
    expect(preview).to_have_attribute("data-workload-type", kind.workload_type)
    expect(page.locator('pre[data-section="combinedMasterSpec"]')).to_have_count(
        1 if kind.is_distributed else 0
    )
    follow(page, page.locator("#save"))
    expect(page.locator("#saved")).to_be_visible()
    expect(page.locator("#template-kind")).to_have_attribute("data-kind", kind.name)

    # Listed with its kind; its page has the sections of its kind's roles.
    follow(page, page.locator("nav a", has_text="Templates").first)
    row = page.locator('table#templates tr[data-template="ui-kind"]')
    expect(row).to_have_attribute("data-workload-type", kind.workload_type)
    expect(row.locator("td.kind")).to_have_text(kind.workload_type)
    expect(row).to_have_attribute("data-runnable", "true")
    follow(page, row.locator("a").first)
    expect(page.locator("#legend-h")).to_be_visible()
    expect(page.locator('section[aria-labelledby="worker-h"]')).to_have_count(1)
    expect(page.locator('section[aria-labelledby="master-h"]')).to_have_count(1 if kind.is_distributed else 0)
