"""The browser UI over every workload kind (issue 32): the scope page names each template's kind (Run:ai's
``workloadType``), a template's page shows the sections of its kind's roles only, and the scope's template
form creates, previews and replaces templates of each kind the service stores, with the API's own checks.

The form's preview and save are the API's template routes of the kind (``/api/v1/workload-templates/
{segment}``): the kinds tested through the service are those it serves a create route for
(:data:`SERVED`), the pages' own work over every kind on an org loaded from files.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
import yaml
from conftest import ADMIN, VISION, bearer, ui_sign_in
from fastapi import FastAPI
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient

from template_engine.compose import compose
from template_engine.kinds import DISTRIBUTED, KIND_BY_NAME, TEMPLATE_KINDS, WorkloadKind
from template_engine.loader.sources import MappingSource
from template_engine.loader.tree import load_org
from template_engine.org import Org, Scope, View
from template_engine.service.context import Placement
from template_engine.service.impact import StoredOrg
from template_engine.service.policy_store import OrgUnits
from template_engine.service.routes.templates import router as templates_router
from template_engine.service.storage.repository import Audit, DepartmentRow, ProjectRow, TemplateRow
from template_engine.service.ui import pages
from template_engine.service.ui.routes import TEMPLATES_API, environment, policy_links
from template_engine.views.model import explain_page

BASE = "http://localhost"
ORG = "departments:\n- name: research\n  projects: [vision]\n"
#: A runnable spec of each kind: the fields each must have (``WorkloadKind.mandatory``) and no more.
SPECS: dict[str, dict[str, Any]] = {
    "distributed": {"image": "python:3.11", "distributedFramework": "PyTorch", "numWorkers": 2},
    "training": {"image": "python:3.11", "completions": 1},
    "workspace": {"image": "jupyter/base-notebook"},
    "inference": {"image": "vllm/vllm-openai", "servingPort": {"container": 8000}},
}
#: The kinds the service creates templates of: those whose create route it serves.
SERVED = [
    kind
    for kind in TEMPLATE_KINDS
    if any(
        isinstance(route, APIRoute)
        and route.path == f"{TEMPLATES_API}/{kind.template_segment}"
        and "POST" in route.methods
        for route in templates_router.routes
    )
]


def _file(kind: WorkloadKind, name: str, spec: dict[str, Any]) -> str:
    """A template file of ``kind`` (``kind:`` said unless distributed)."""
    document: dict[str, Any] = {"meta": {"name": name}, "spec": spec}
    if kind is not DISTRIBUTED:
        document = {"kind": kind.name, **document}
    return yaml.safe_dump(document, sort_keys=False)


def _folder_org() -> Org:
    """Project vision with a runnable template of every kind, and a training without an image."""
    files = {"org.yaml": ORG}
    for kind in TEMPLATE_KINDS:
        files[f"projects/vision/templates/{kind.name}-t.yaml"] = _file(
            kind, f"{kind.name}-t", SPECS[kind.name]
        )
    training = KIND_BY_NAME["training"]
    files["projects/vision/templates/no-image.yaml"] = _file(training, "no-image", {"completions": 2})
    org = load_org(MappingSource(files))
    assert not org.broken, org.broken
    return org


def _audit() -> Audit:
    stamp = datetime(2026, 1, 1, tzinfo=UTC)
    return Audit(1, "admin", stamp, "admin", stamp)


def _stored(org: Org) -> tuple[StoredOrg, Placement]:
    """The folder's org as the service's pages read a stored one, and the placement of project vision."""
    rows = {}
    for scope, templates in org.templates.items():
        for number, (name, template) in enumerate(sorted(templates.items())):
            rows[(scope, name)] = TemplateRow(
                f"00000000-0000-0000-0000-{number:012d}",
                name,
                "project",
                "project:1",
                None,
                1,
                dict(template.source.data),
                _audit(),
            )
    department = DepartmentRow(1, "research", None, _audit())
    place = Placement("project", department, ProjectRow(1, "vision", None, 1, _audit()))
    return StoredOrg(org, rows, OrgUnits({}, {}, {}), {}), place


# -- the pages over every kind (an org of files) -------------------------------------------------------------


def test_the_scope_page_names_each_templates_kind_and_its_runnable_state() -> None:
    stored, place = _stored(_folder_org())
    rows = {row.name: row for row in pages.scope_templates(stored, place)}
    for kind in TEMPLATE_KINDS:
        row = rows[f"{kind.name}-t"]
        assert row.workload_type == kind.workload_type, row
        assert row.runnable and row.status == "runnable", row
    assert rows["no-image"].workload_type == "Training"
    assert not rows["no-image"].runnable and "image" in (rows["no-image"].first_issue or "")

    html_page = (
        environment()
        .get_template("scope.html.j2")
        .render(
            ui="/ui",
            layout="layout.html.j2",
            me=None,
            csrf=None,
            key=place.key,
            scope=pages.scope_label(place),
            scope_type=place.type,
            rows=list(rows.values()),
            left=0,
            writable=False,
            own_scope=str(place.scope()),
            creates=True,
            kinds=policy_links(),
        )
    )
    assert '<th scope="col">Kind</th>' in html_page
    assert '<td class="kind">Workspace</td>' in html_page
    for kind in TEMPLATE_KINDS:
        found = re.search(rf'<tr [^>]*data-template="{kind.name}-t"[^>]*>', html_page)
        assert found is not None
        assert f'data-workload-type="{kind.workload_type}"' in found[0]
        assert 'data-runnable="true"' in found[0]
    no_image = re.search(r'<tr [^>]*data-template="no-image"[^>]*>', html_page)
    assert no_image is not None and 'data-runnable="false"' in no_image[0]
    assert 'data-workload-type="Training"' in no_image[0]


def _explain_html(org: Org, name: str) -> str:
    template = org.templates[Scope("project", "vision")][name]
    view = View("research", "vision")
    page = pages.kind_page(explain_page(compose(org, template, view)), template.kind)
    return (
        environment()
        .get_template("explain.html.j2")
        .render(
            ui="/ui", layout="layout.html.j2", me=None, csrf=None, page=page, index_href="", index_label=""
        )
    )


@pytest.mark.parametrize("kind", TEMPLATE_KINDS, ids=[kind.name for kind in TEMPLATE_KINDS])
def test_a_templates_page_has_the_sections_of_its_kinds_roles_only(kind: WorkloadKind) -> None:
    shown = _explain_html(_folder_org(), f"{kind.name}-t")
    assert 'id="worker-h"' in shown and "combinedSpec" in shown
    # A distributed training has a master section; a kind of one role (a workspace...) has none.
    assert ('id="master-h"' in shown) is kind.is_distributed
    assert ("combinedMasterSpec" in shown) is kind.is_distributed


# -- the service: the template form -------------------------------------------------------------------------


@pytest.fixture
def browser(app: FastAPI) -> Iterator[tuple[TestClient, str]]:
    """A system admin's browser, signed in through the UI's form, and its CSRF token."""
    with TestClient(app, base_url=BASE) as client:
        yield client, ui_sign_in(client)


@pytest.fixture
def api(app: FastAPI) -> Iterator[TestClient]:
    with TestClient(app) as client:
        client.headers.update(bearer(ADMIN))
        yield client


def _project(api: TestClient, name: str) -> str:
    projects = api.get("/api/v1/org-unit/projects").json()["projects"]
    return f"project:{next(p['id'] for p in projects if p['name'] == name)}"


def _field(text: str, name: str) -> str:
    found = re.search(rf'name="{name}" value="([^"]*)"', text)
    assert found is not None, f"no {name} field"
    return html.unescape(found[1])


def _textarea(text: str) -> str:
    found = re.search(r"<textarea[^>]*>(.*?)</textarea>", text, re.S)
    assert found is not None
    return html.unescape(found[1])


def _problems(text: str) -> list[str]:
    """The problem lines of a refused form, each without its ``line N:`` link."""
    listed = re.search(r'<ul id="problem-list">(.*?)</ul>', text, re.S)
    assert listed is not None, text
    items = re.findall(r"<li[^>]*>(.*?)</li>", listed[1], re.S)
    return [html.unescape(re.sub(r"^<a [^>]*>line \d+</a>: ", "", item)) for item in items]


def _text(name: str, spec: dict[str, Any], description: str | None = None) -> str:
    meta: dict[str, Any] = {"name": name}
    if description is not None:
        meta["description"] = description
    return yaml.safe_dump({"meta": meta, "spec": spec}, sort_keys=False)


def test_the_forms_kinds_are_those_the_api_creates(app: FastAPI, browser: tuple[TestClient, str]) -> None:
    client, _ = browser
    with TestClient(app) as api:
        api.headers.update(bearer(ADMIN))
        vision = _project(api, "vision")
        paths = api.get("/openapi.json").json()["paths"]
    created = [
        kind.name
        for kind in TEMPLATE_KINDS
        if "post" in paths.get(f"{TEMPLATES_API}/{kind.template_segment}", {})
    ]
    page = client.get(f"/ui/scope/{vision}/edit/template")
    assert page.status_code == 200, page.text
    assert re.findall(r'<option value="([^"]+)"', page.text) == created == [kind.name for kind in SERVED]
    assert "distributed" in created
    scope_page = client.get(f"/ui/scope/{vision}")
    assert 'id="new-template-link"' in scope_page.text


@pytest.mark.parametrize("kind", SERVED, ids=[kind.name for kind in SERVED])
def test_a_template_made_with_the_form_is_listed_with_its_kind_and_composed_on_its_page(
    kind: WorkloadKind, api: TestClient, browser: tuple[TestClient, str]
) -> None:
    client, csrf = browser
    vision = _project(api, "vision")
    url = f"/ui/scope/{vision}/edit/template"
    name = f"ui-{kind.name}"
    form = {"csrf": csrf, "version": "0", "kind": kind.name, "text": _text(name, SPECS[kind.name])}

    preview = client.post(url, data={**form, "action": "preview"}, follow_redirects=False)
    assert preview.status_code == 200, preview.text
    section = re.search(r'<section [^>]*id="template-preview"[^>]*>', preview.text)
    assert section is not None, preview.text
    assert 'data-runnable="true"' in section[0] and f'data-workload-type="{kind.workload_type}"' in section[0]
    assert ('data-section="combinedMasterSpec"' in preview.text) is kind.is_distributed
    assert (
        api.get(
            f"{TEMPLATES_API}/name-availability",
            params={"templateName": name, "scopeType": "project", "scopeId": vision.split(":")[1]},
        ).status_code
        == 204
    )  # the preview stored nothing

    saved = client.post(url, data={**form, "action": "save"}, follow_redirects=False)
    assert saved.status_code == 303, saved.text
    location = saved.headers["location"]
    found = re.fullmatch(rf"/ui/scope/{vision}/edit/template:([0-9a-f-]{{36}})\?saved=(\d+)", location)
    assert found is not None, location
    ident = found[1]
    edit = client.get(location)
    assert 'id="saved"' in edit.text
    assert f'data-kind="{kind.name}"' in edit.text
    assert yaml.safe_load(_textarea(edit.text))["spec"] == SPECS[kind.name]

    # The API stored it of its kind, in project vision.
    stored = api.get(f"{TEMPLATES_API}/{ident}").json()
    assert stored["meta"]["name"] == name and stored["meta"]["projectId"] == int(vision.split(":")[1])

    listed = client.get(f"/ui/scope/{vision}")
    row = re.search(rf'<tr [^>]*data-template="{name}"[^>]*>', listed.text)
    assert row is not None, listed.text
    assert f'data-workload-type="{kind.workload_type}"' in row[0] and 'data-runnable="true"' in row[0]
    edit_link = f'<a href="/ui/scope/{vision}/edit/template:{ident}" data-link="edit-template"'
    assert edit_link in listed.text  # one of its own scope's: editable there

    shown = client.get(f"/ui/template/{ident}?view={vision}")
    assert shown.status_code == 200, shown.text
    assert "Status: runnable" in shown.text
    assert ('id="master-h"' in shown.text) is kind.is_distributed


def _lacking(kind: WorkloadKind) -> str:
    """A field another kind's template has and ``kind``'s has not (an inference's ``backoffLimit``)."""
    others = set().union(*(other.fields() for other in TEMPLATE_KINDS)) - kind.fields()
    return "backoffLimit" if "backoffLimit" in others else sorted(others)[0]


@pytest.mark.parametrize("kind", SERVED, ids=[kind.name for kind in SERVED])
def test_a_field_the_kind_lacks_is_refused_as_the_api_refuses_it_on_the_line_that_writes_it(
    kind: WorkloadKind, api: TestClient, browser: tuple[TestClient, str]
) -> None:
    client, csrf = browser
    vision = _project(api, "vision")
    field = _lacking(kind)
    spec = {**SPECS[kind.name], field: 3}
    text = _text("lacks", spec)
    page = client.post(
        f"/ui/scope/{vision}/edit/template",
        data={"csrf": csrf, "version": "0", "kind": kind.name, "text": text, "action": "save"},
        follow_redirects=False,
    )
    assert page.status_code == 400, page.text
    body = {"meta": {"name": "lacks", "scopeType": "project", "scopeId": vision.split(":")[1]}, "spec": spec}
    answer = api.post(f"{TEMPLATES_API}/{kind.template_segment}", json=body)
    assert answer.status_code == 400, answer.text
    expected = [
        f"{p['field']}: {p['message']}" + (f" (expected {p['expected']})" if p.get("expected") else "")
        for p in answer.json()["problems"]
    ]
    assert _problems(page.text) == expected
    assert any(line.startswith(f"spec.{field}: ") for line in expected)
    line = (
        text.splitlines().index(next(x for x in text.splitlines() if x.strip().startswith(f"{field}:"))) + 1
    )
    assert f'data-line="{line}"' in page.text  # marked where the text writes it

    # The loader refuses the same field of the same document as a file of the kind.
    files = {"org.yaml": ORG, "projects/vision/templates/lacks.yaml": _file(kind, "lacks", spec)}
    refused = load_org(MappingSource(files)).broken["projects/vision/templates/lacks.yaml"]
    assert [p.path for p in refused] == [("spec", field)]
    words = f"spec.{field}: {refused[0].message} (expected {refused[0].expected})"
    assert words in _problems(
        page.text
    )  # an inference's backoffLimit: "field 'backoffLimit' is not allowed here"
    assert (
        api.get(
            f"{TEMPLATES_API}/name-availability",
            params={"templateName": "lacks", "scopeType": "project", "scopeId": vision.split(":")[1]},
        ).status_code
        == 204
    )  # nothing stored


def test_a_kind_the_service_has_no_templates_of_is_refused_in_the_loaders_words(
    api: TestClient, browser: tuple[TestClient, str]
) -> None:
    client, csrf = browser
    vision = _project(api, "vision")
    url = f"/ui/scope/{vision}/edit/template"
    form = {"csrf": csrf, "version": "0", "text": _text("x", {"image": "x"}), "action": "preview"}
    for name, words in (
        ("distributed-inference", "Run:ai has no templates of kind 'distributed-inference', only policies"),
        ("trainin", "unknown kind 'trainin' (did you mean 'training'?)"),
    ):
        page = client.post(url, data={**form, "kind": name}, follow_redirects=False)
        assert page.status_code == 400 and words in html.unescape(page.text), page.text
        assert client.get(url, params={"kind": name}).status_code == 400


def test_a_stored_template_is_edited_at_its_version_and_only_in_its_own_scope(
    api: TestClient, browser: tuple[TestClient, str]
) -> None:
    client, csrf = browser
    vision = _project(api, "vision")
    entries = api.get(f"{TEMPLATES_API}", params={"limit": 500}).json()["entries"]
    system = next(e for e in entries if e["meta"]["scopeType"] in ("tenant", "system"))
    ident = system["meta"]["id"]
    # Listed for editing on the system's page, not on project vision's (where it is seen, not owned).
    edit_link = f'<a href="/ui/scope/system/edit/template:{ident}" data-link="edit-template"'
    assert edit_link in client.get("/ui/scope/system").text
    assert "/edit/template:" + ident not in client.get(f"/ui/scope/{vision}").text
    assert client.get(f"/ui/scope/{vision}/edit/template:{ident}").status_code == 404
    url = f"/ui/scope/system/edit/template:{ident}"
    page = client.get(url)
    assert page.status_code == 200, page.text
    version = int(_field(page.text, "version"))
    document = yaml.safe_load(_textarea(page.text))
    assert document["meta"]["name"] == system["meta"]["name"]
    document["meta"]["description"] = "edited in the UI"
    text = yaml.safe_dump(document, sort_keys=False)
    form = {"csrf": csrf, "version": str(version), "text": text}
    saved = client.post(url, data={**form, "action": "save"}, follow_redirects=False)
    assert saved.status_code == 303, saved.text
    assert saved.headers["location"] == f"{url}?saved={version + 1}"
    assert api.get(f"{TEMPLATES_API}/{ident}").json()["meta"]["description"] == "edited in the UI"
    # The same form again is a version behind: nothing is stored.
    stale = client.post(url, data={**form, "action": "save"}, follow_redirects=False)
    assert stale.status_code == 412 and 'id="stale"' in stale.text
    assert api.get(f"{TEMPLATES_API}/{ident}").headers["etag"] == f'"{version + 1}"'


def test_a_project_editor_may_not_open_the_template_form_of_the_system(app: FastAPI) -> None:
    with TestClient(app, base_url=BASE) as client:
        csrf = ui_sign_in(client, VISION)
        system = client.get("/ui/scope/system")
        assert system.status_code == 200 and 'data-template="' in system.text
        assert 'id="new-template-link"' not in system.text and 'id="edit-templates"' not in system.text
        assert client.get("/ui/scope/system/edit/template").status_code == 403
        form = {"csrf": csrf, "version": "0", "kind": "distributed", "text": _text("x", SPECS["distributed"])}
        refused = client.post("/ui/scope/system/edit/template", data={**form, "action": "save"})
        assert refused.status_code == 403


def test_a_name_taken_in_the_scope_and_a_form_without_its_csrf_token_store_nothing(
    api: TestClient, browser: tuple[TestClient, str]
) -> None:
    client, csrf = browser
    entries = api.get(f"{TEMPLATES_API}", params={"limit": 500}).json()["entries"]
    taken = next(e["meta"]["name"] for e in entries if e["meta"]["scopeType"] in ("tenant", "system"))
    before = api.get(f"{TEMPLATES_API}/count").json()
    url = "/ui/scope/system/edit/template"
    form = {
        "version": "0",
        "kind": "distributed",
        "text": _text(taken, SPECS["distributed"]),
        "action": "save",
    }
    page = client.post(url, data={**form, "csrf": csrf}, follow_redirects=False)
    assert page.status_code == 400, page.text
    assert f"meta.name: a template named {taken!r} already exists in this scope" in _problems(page.text)
    assert 'data-line="2"' in page.text  # meta.name is written on the text's second line
    fresh = {**form, "text": _text("fresh-name", SPECS["distributed"])}
    refused = client.post(url, data={**fresh, "csrf": "0" * 64}, follow_redirects=False)
    assert refused.status_code == 403 and "CSRF" in refused.text
    assert api.get(f"{TEMPLATES_API}/count").json() == before
