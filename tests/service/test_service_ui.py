"""The browser UI under ``/ui``: sessions, the API's role rules on every page, escaping of hostile values,
CSRF, and the pending-change preview against the engine of ``template-engine impact``.

Every test signs in through the sign-in form, as a browser does (the session cookie travels only to
``http://localhost``, the development exception to ``Secure``).  The preview is compared with
:func:`~template_engine.diff.diff_orgs` on the example folder the service was seeded from, with the changed
document written in place of the folder's file (what ``template-engine impact FILE`` compares).
"""

from __future__ import annotations

import html
import re
import shutil
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
import yaml
from conftest import ADMIN, APPLIED, RESEARCH, TEMPLATES, VIEWER, VISION, bearer
from fastapi import FastAPI
from fastapi.testclient import TestClient
from markupsafe import escape

from template_engine import load_org
from template_engine.diff import diff_orgs
from template_engine.service.app import create_app
from template_engine.service.settings import Settings

BASE = "http://localhost"
HOSTILE = (
    "</script><script>alert(1)</script>",
    '"><img src=x onerror=alert(1)>',
    "javascript:alert(1)",
    "</textarea><script>alert(2)</script>",
)
RAW = ("<script>alert(1)</script>", "<img src=x", "</script><script>", "</textarea><script>")


class Browser:
    """A client with a cookie jar, signed in (or not) through the sign-in form."""

    def __init__(self, client: TestClient) -> None:
        self.client = client

    def sign_in(self, token: str) -> Any:
        page = self.client.get("/ui/sign-in")
        nonce = _field(page.text, "nonce")
        return self.client.post(
            "/ui/sign-in", data={"nonce": nonce, "token": token, "next": "/ui/"}, follow_redirects=False
        )

    def get(self, url: str, **kwargs: Any) -> Any:
        return self.client.get(url, **kwargs)

    def form(self, url: str) -> dict[str, str]:
        """The change form of ``url``: its CSRF token, version and text."""
        page = self.client.get(url)
        assert page.status_code == 200, page.text
        return {
            "csrf": _field(page.text, "csrf"),
            "version": _field(page.text, "version"),
            "text": html.unescape(re.search(r"<textarea[^>]*>(.*?)</textarea>", page.text, re.S)[1]),  # type: ignore[index]
        }

    def post(self, url: str, data: dict[str, str], **headers: str) -> Any:
        return self.client.post(url, data=data, headers=headers, follow_redirects=False)


def _field(text: str, name: str) -> str:
    found = re.search(rf'name="{name}" value="([^"]*)"', text)
    assert found is not None, f"no {name} field"
    return html.unescape(found[1])


@pytest.fixture
def browser_for(app: FastAPI) -> Iterator[Any]:
    opened: list[TestClient] = []

    def make(token: str | None = ADMIN, base_url: str = BASE) -> Browser:
        client = TestClient(app, base_url=base_url)
        client.__enter__()
        opened.append(client)
        browser = Browser(client)
        if token is not None:
            assert browser.sign_in(token).status_code == 303
        return browser

    yield make
    for client in opened:
        client.__exit__(None, None, None)


@pytest.fixture
def api(app: FastAPI) -> Iterator[TestClient]:
    with TestClient(app) as client:
        client.headers.update(bearer(ADMIN))
        yield client


class Org:
    """Ids of the example org, read over the API."""

    def __init__(self, api: TestClient) -> None:
        self.departments = {
            d["name"]: d["id"] for d in api.get("/api/v1/org-unit/departments").json()["departments"]
        }
        self.projects = {p["name"]: p["id"] for p in api.get("/api/v1/org-unit/projects").json()["projects"]}
        entries = api.get("/api/v1/workload-templates/distributed", params={"limit": 500}).json()["entries"]
        self.templates = {(e["meta"]["scopeType"], e["meta"]["name"]): e["meta"]["id"] for e in entries}
        #: The templates of every kind (issue 32): a change of shared defaults affects each kind's.
        every = api.get("/api/v1/workload-templates", params={"limit": 500}).json()["entries"]
        self.every_kind = {e["meta"]["id"] for e in every}

    def key(self, kind: str, name: str | None = None) -> str:
        if kind == "system":
            return "system"
        ident = self.departments[name] if kind == "department" else self.projects[name]
        return f"{kind}:{ident}"


@pytest.fixture
def org(api: TestClient) -> Org:
    return Org(api)


def _defaults_url(key: str) -> str:
    kind, _, ident = key.partition(":")
    return "/api/v1/defaults/system" if kind == "system" else f"/api/v1/defaults/{kind}s/{ident}"


def _pages(org: Org) -> list[str]:
    vision, research = org.key("project", "vision"), org.key("department", "research")
    template = org.templates[("system", "mpi-horovod")]
    return [
        "/ui/",
        f"/ui/scope/{vision}",
        f"/ui/scope/{research}",
        "/ui/scope/system",
        f"/ui/template/{template}?view={vision}",
        f"/ui/scope/{vision}/policy",
        f"/ui/scope/{vision}/edit/defaults",
        f"/ui/scope/{research}/edit/policy",
    ]


# -- sessions ------------------------------------------------------------------------------------------------


def test_every_page_sends_a_visitor_without_a_session_to_sign_in(browser_for: Any, org: Org) -> None:
    browser = browser_for(None)
    for url in _pages(org):
        response = browser.get(url, follow_redirects=False)
        assert response.status_code == 303, url
        location = response.headers["location"]
        assert location.startswith("/ui/sign-in?next=/ui/"), (url, location)
    # After signing in, the sign-in form takes the browser back to where it was going.
    page = browser.get(f"/ui/sign-in?next=/ui/scope/{org.key('project', 'vision')}")
    assert _field(page.text, "next") == f"/ui/scope/{org.key('project', 'vision')}"
    for elsewhere in (
        "https://evil.example/",
        "//evil.example/ui/",
        "/api/v1/defaults/system",
        "javascript:x",
    ):
        assert _field(browser.get("/ui/sign-in", params={"next": elsewhere}).text, "next") == "/ui/"


def test_the_session_cookie_is_http_only_strict_and_scoped_to_the_ui(browser_for: Any) -> None:
    browser = browser_for(None)
    response = browser.sign_in(VISION)
    assert response.status_code == 303
    cookies = response.headers.get_list("set-cookie")
    session = next(c for c in cookies if c.startswith("te_session=") and "Max-Age=0" not in c)
    attributes = {part.strip().split("=")[0].lower() for part in session.split(";")[1:]}
    assert {"httponly", "path", "samesite"} <= attributes and "secure" not in attributes  # localhost: dev
    assert "Path=/ui" in session and "SameSite=strict" in session
    assert VISION not in session  # the token is encoded, never in the clear
    signed_in = browser.get("/ui/")
    assert signed_in.status_code == 200 and 'data-role="project-editor"' in signed_in.text


def test_the_session_cookie_is_secure_anywhere_but_on_the_loopback(browser_for: Any) -> None:
    browser = browser_for(None, base_url="https://templates.example")
    response = browser.sign_in(ADMIN)
    assert response.status_code == 303
    session = next(c for c in response.headers.get_list("set-cookie") if c.startswith("te_session="))
    assert "Secure" in session and "HttpOnly" in session


def test_an_unknown_token_gets_no_session(browser_for: Any) -> None:
    browser = browser_for(None)
    response = browser.sign_in("not-a-token")
    assert response.status_code == 401 and 'id="sign-in-error"' in response.text
    assert not any(c.startswith("te_session=") for c in response.headers.get_list("set-cookie"))
    assert browser.get("/ui/", follow_redirects=False).status_code == 303


def test_an_application_token_signs_in_and_its_expiry_ends_the_session(sqlite_url: str) -> None:
    from template_engine.service.app import create_app
    from template_engine.service.auth import DEV_APPLICATION
    from template_engine.service.settings import Settings

    client_id, secret, _ = DEV_APPLICATION
    app = create_app(Settings(database_url=sqlite_url, dev_tokens=True))
    with TestClient(app, base_url=BASE) as client:
        login = client.post(
            "/api/v1/token", json={"grantType": "client_credentials", "AppId": client_id, "AppSecret": secret}
        )
        assert login.status_code == 200, login.json()
        token = login.json()["accessToken"]
        browser = Browser(client)
        assert browser.sign_in(token).status_code == 303
        page = browser.get("/ui/")
        assert page.status_code == 200 and f"Signed in as {client_id}" in page.text
        forged = token[:-2] + ("AA" if not token.endswith("AA") else "BB")
        assert Browser(TestClient(app, base_url=BASE)).sign_in(forged).status_code == 401


def test_sign_in_from_another_site_or_without_the_form_token_is_refused(browser_for: Any) -> None:
    browser = browser_for(None)
    nonce = _field(browser.get("/ui/sign-in").text, "nonce")
    forged = browser.post(
        "/ui/sign-in", {"nonce": nonce, "token": ADMIN, "next": "/ui/"}, Origin="https://evil.example"
    )
    assert forged.status_code == 403
    no_nonce = browser.post("/ui/sign-in", {"token": ADMIN, "next": "/ui/"})
    assert no_nonce.status_code == 403
    for response in (forged, no_nonce):
        assert not any(c.startswith("te_session=") for c in response.headers.get_list("set-cookie"))
    assert browser.get("/ui/", follow_redirects=False).status_code == 303


def test_sign_out_needs_the_csrf_token_and_ends_the_session(browser_for: Any) -> None:
    browser = browser_for(ADMIN)
    csrf = _field(browser.get("/ui/").text, "csrf")
    assert browser.post("/ui/sign-out", {}).status_code == 403
    assert browser.get("/ui/").status_code == 200  # still signed in
    out = browser.post("/ui/sign-out", {"csrf": csrf})
    assert out.status_code == 303 and out.headers["location"] == "/ui/sign-in"
    assert browser.get("/ui/", follow_redirects=False).status_code == 303


def test_every_answer_carries_a_strict_content_security_policy(browser_for: Any, org: Org) -> None:
    browser = browser_for(ADMIN)
    static = [
        "/ui/static/style.css",
        "/ui/static/ui.js",
        "/ui/static/codemirror.js",
        "/ui/static/codemirror.css",
    ]
    for url in [*_pages(org), "/ui/sign-in", *static]:
        response = browser.get(url)
        assert response.status_code == 200, url
        csp = response.headers["content-security-policy"]
        assert "script-src 'self'" in csp and "frame-ancestors 'none'" in csp and "unsafe-inline" not in csp
        assert response.headers["x-content-type-options"] == "nosniff"
        assert response.headers["referrer-policy"] == "same-origin"
        if url.startswith("/ui/static"):
            continue
        assert "<script>" not in response.text and " on" + "load=" not in response.text
        editor = ['<script src="/ui/static/codemirror.js" defer>'] if "/edit/" in url else []
        scripts = [*editor, '<script src="/ui/static/ui.js" defer>']  # the editor's only where it edits
        assert re.findall(r"<script[^>]*>", response.text) == scripts
        assert "<style" not in response.text and "style=" not in response.text
    assert browser.get("/ui/static/other.js").status_code == 404


# -- the API's role rules ------------------------------------------------------------------------------------


@pytest.mark.parametrize("token", [ADMIN, RESEARCH, APPLIED, VISION, VIEWER])
def test_each_page_is_open_exactly_when_the_api_would_answer(
    token: str, browser_for: Any, app: FastAPI, org: Org
) -> None:
    """Reading a scope's pages follows GET of its defaults; its edit forms follow a validateOnly write."""
    browser = browser_for(token)
    scopes = ["system"] + [org.key("department", n) for n in org.departments]
    scopes += [org.key("project", n) for n in org.projects]
    with TestClient(app) as client:
        client.headers.update(bearer(token))
        for key in scopes:
            url = _defaults_url(key)
            reads = client.get(url).status_code
            writes = client.put(url, json={}, params={"validateOnly": True}).status_code
            assert reads in (200, 403) and writes in (200, 403), key
            for page in (f"/ui/scope/{key}", f"/ui/scope/{key}/policy"):
                assert browser.get(page).status_code == reads, (token, page)
            for document in ("defaults", "policy"):
                assert browser.get(f"/ui/scope/{key}/edit/{document}").status_code == writes, (token, key)
    tree = browser.get("/ui/").text
    shown = set(re.findall(r'data-scope="([^"]+)"', tree))
    assert shown == {k for k in scopes if browser.get(f"/ui/scope/{k}").status_code == 200}


def test_a_project_editor_cannot_see_another_projects_templates(browser_for: Any, org: Org) -> None:
    browser = browser_for(VISION)
    nlp = org.key("project", "nlp")
    own = org.templates[("project", "vit-finetune")]
    other = next(
        i for (scope, name), i in org.templates.items() if scope == "project" and name != "vit-finetune"
    )
    assert browser.get(f"/ui/template/{own}?view={org.key('project', 'vision')}").status_code == 200
    assert browser.get(f"/ui/template/{other}").status_code == 403
    assert browser.get(f"/ui/scope/{nlp}").status_code == 403
    assert (
        browser.get(f"/ui/template/{org.templates[('system', 'mpi-horovod')]}?view={nlp}").status_code == 403
    )


def test_a_viewer_cannot_preview_or_save(browser_for: Any, api: TestClient, org: Org) -> None:
    admin = browser_for(ADMIN)
    key = org.key("department", "research")
    form = admin.form(f"/ui/scope/{key}/edit/defaults")
    viewer = browser_for(VIEWER)
    csrf = _field(viewer.get("/ui/").text, "csrf")
    before = api.get(_defaults_url(key)).headers["etag"]
    for action in ("preview", "save"):
        response = viewer.post(f"/ui/scope/{key}/edit/defaults", {**form, "csrf": csrf, "action": action})
        assert response.status_code == 403
    assert api.get(_defaults_url(key)).headers["etag"] == before


# -- hostile values ------------------------------------------------------------------------------------------


def _assert_escaped(text: str, where: str) -> None:
    for raw in RAW:
        assert raw not in text, f"{where}: {raw!r} unescaped"
    hrefs = re.findall(r'(?:href|src|action)="([^"]*)"', text)
    assert all(not h.lower().lstrip().startswith(("javascript:", "data:")) for h in hrefs), where
    assert all(h.startswith(("/ui/", "#")) for h in hrefs), (where, hrefs)


def test_hostile_values_are_text_in_every_page(browser_for: Any, api: TestClient, org: Org) -> None:
    vision = org.key("project", "vision")
    research = org.key("department", "research")
    worst = " ".join(HOSTILE)
    created = api.post(
        "/api/v1/workload-templates/distributed",
        json={
            "meta": {
                "name": "hostile",
                "scopeType": "project",
                "scopeId": str(org.projects["vision"]),
                "description": worst,
            },
            "spec": {
                "image": "python:3.11",
                "distributedFramework": "PyTorch",
                "environmentVariables": [{"name": f"V{i}", "value": v} for i, v in enumerate(HOSTILE)],
                "labels": [{"name": "note", "value": HOSTILE[1]}],
                "nodePools": [HOSTILE[0]],
            },
        },
    )
    assert created.status_code == 202, created.json()
    template = created.json()["meta"]["id"]
    department = api.put(
        f"/api/v1/org-unit/departments/{org.departments['research']}",
        json={"name": "research", "description": worst[:250]},
    )
    assert department.status_code == 200, department.json()
    browser = browser_for(ADMIN)
    pages = {
        "tree": browser.get("/ui/"),
        "scope": browser.get(f"/ui/scope/{vision}"),
        "explain": browser.get(f"/ui/template/{template}?view={vision}"),
        "policy": browser.get(f"/ui/scope/{vision}/policy"),
    }
    for name, response in pages.items():
        assert response.status_code == 200, name
        _assert_escaped(response.text, name)
    assert str(escape(HOSTILE[0])) in pages["explain"].text
    assert str(escape(HOSTILE[1])) in pages["scope"].text
    # A hostile value in a pending change, in the preview and in its problems.
    form = browser.form(f"/ui/scope/{research}/edit/defaults")
    changed = yaml.safe_load(form["text"])
    changed["spec"]["environmentVariables"].append({"name": "EVIL", "value": worst})
    preview = browser.post(
        f"/ui/scope/{research}/edit/defaults",
        {**form, "text": yaml.safe_dump(changed), "action": "preview"},
    )
    assert preview.status_code == 200 and 'id="preview-results"' in preview.text
    _assert_escaped(preview.text, "preview")
    broken = browser.post(
        f"/ui/scope/{research}/edit/defaults",
        {**form, "text": yaml.safe_dump({"spec": {worst: 1}}), "action": "preview"},
    )
    assert broken.status_code == 400 and 'id="problems"' in broken.text
    _assert_escaped(broken.text, "problems")
    not_yaml = browser.post(
        f"/ui/scope/{research}/edit/defaults", {**form, "text": "{" + worst, "action": "preview"}
    )
    assert not_yaml.status_code == 400
    _assert_escaped(not_yaml.text, "yaml problems")
    # Stored, then shown in the editor (a textarea) and in the merged defaults of the effective policy.
    stored = api.put(_defaults_url(research), json=changed)
    assert stored.status_code == 200, stored.json()
    for url in (f"/ui/scope/{research}/edit/defaults", f"/ui/scope/{research}/policy"):
        shown = browser.get(url)
        assert shown.status_code == 200 and str(escape(HOSTILE[3])) in shown.text, url
        _assert_escaped(shown.text, url)
    assert yaml.safe_load(browser.form(f"/ui/scope/{research}/edit/defaults")["text"]) == changed
    missing = browser.get(f"/ui/scope/{html.escape(HOSTILE[1])}")
    assert missing.status_code == 404
    _assert_escaped(missing.text, "404")


# -- CSRF ----------------------------------------------------------------------------------------------------


def test_a_change_without_the_csrf_token_or_from_another_site_stores_nothing(
    browser_for: Any, api: TestClient, org: Org
) -> None:
    key = org.key("department", "research")
    url = f"/ui/scope/{key}/edit/defaults"
    browser = browser_for(ADMIN)
    form = browser.form(url)
    before = api.get(_defaults_url(key))
    text = form["text"].replace("value: WARN", "value: INFO")
    attempts = [
        browser.post(url, {"version": form["version"], "text": text, "action": "save"}),
        browser.post(url, {**form, "csrf": "0" * 64, "text": text, "action": "save"}),
        browser.post(url, {**form, "text": text, "action": "save"}, Origin="https://evil.example"),
        browser.post(url, {**form, "text": text, "action": "save"}, Origin="null"),
        browser.post(url, {**form, "text": text, "action": "save"}, Referer="https://evil.example/x"),
    ]
    assert [a.status_code for a in attempts] == [403] * len(attempts)
    other = browser_for(RESEARCH)  # another session's token does not fit this one
    attempts.append(other.post(url, {**form, "text": text, "action": "save"}))
    assert attempts[-1].status_code == 403
    after = api.get(_defaults_url(key))
    assert after.headers["etag"] == before.headers["etag"] and after.json() == before.json()
    same_site = browser.post(url, {**form, "text": text, "action": "save"}, Origin=BASE)
    assert same_site.status_code == 303
    assert api.get(_defaults_url(key)).json()["spec"]["environmentVariables"][-1]["value"] == "INFO"


def test_a_get_never_changes_anything(browser_for: Any, api: TestClient, org: Org) -> None:
    key = org.key("department", "research")
    before = api.get(_defaults_url(key)).headers["etag"]
    browser = browser_for(ADMIN)
    response = browser.get(f"/ui/scope/{key}/edit/defaults", params={"action": "save", "text": "{}"})
    assert response.status_code == 200
    assert api.get(_defaults_url(key)).headers["etag"] == before


# -- the pending change: preview, save, stale ----------------------------------------------------------------


def _impact(tmp_path: Path, rel: str, text: str) -> dict[str, set[str]]:
    """What ``template-engine impact REL`` lists when REL becomes ``text``: pair id -> changed fields."""
    changed = tmp_path / "changed"
    shutil.copytree(TEMPLATES, changed)
    (changed / rel).write_text(text)
    result = diff_orgs(load_org(TEMPLATES), load_org(changed))
    assert not result.broken
    return {d.id: {c.field for c in d.changes} for d in result.pairs}


def _preview_pairs(text: str) -> dict[str, set[str]]:
    items = re.findall(
        r'<li data-template-id="[^"]*" data-template="[^"]*" data-pair="([^"]+)"(.*?)</li>', text, re.S
    )
    return {pair: set(re.findall(r'<tr data-field="([^"]+)"', body)) for pair, body in items}


def test_the_defaults_preview_lists_what_impact_lists_and_stores_nothing(
    tmp_path: Path, browser_for: Any, api: TestClient, org: Org
) -> None:
    key = org.key("department", "research")
    url = f"/ui/scope/{key}/edit/defaults"
    browser = browser_for(ADMIN)
    form = browser.form(url)
    document = yaml.safe_load((TEMPLATES / "departments/research/defaults.yaml").read_text())
    assert yaml.safe_load(form["text"]) == document  # the form shows the stored document
    document["spec"]["environmentVariables"][2]["value"] = "INFO"
    document["spec"]["preemptibility"] = "non-preemptible"
    document["spec"]["labels"].append({"name": "team", "value": "research"})
    text = yaml.safe_dump(document, sort_keys=False)
    before = api.get(_defaults_url(key))
    preview = browser.post(url, {**form, "text": text, "action": "preview"})
    assert preview.status_code == 200, preview.text
    expected = _impact(tmp_path, "departments/research/defaults.yaml", text)
    assert expected, "the change must affect some pair"
    assert _preview_pairs(preview.text) == expected
    ids = set(re.findall(r'data-template-id="([^"]+)"', preview.text))
    assert ids <= org.every_kind and ids
    after = api.get(_defaults_url(key))
    assert after.headers["etag"] == before.headers["etag"] and after.json() == before.json()
    # The API's validateOnly answers the same templates and changes, and stores nothing either.
    dry = api.put(_defaults_url(key), json=document, params={"validateOnly": True})
    assert dry.status_code == 200 and dry.headers["etag"] == before.headers["etag"]
    affected = dry.json()["affectedTemplates"]
    assert {a["pair"]: {c["field"] for c in a["changes"]} for a in affected} == expected
    assert {a["id"] for a in affected} == ids
    assert api.get(_defaults_url(key)).json() == before.json()


def test_the_policy_preview_lists_what_impact_lists(
    tmp_path: Path, browser_for: Any, api: TestClient, org: Org
) -> None:
    key = org.key("department", "research")
    url = f"/ui/scope/{key}/edit/policy"
    browser = browser_for(RESEARCH)
    form = browser.form(url)
    rel = "departments/research/policy.yaml"
    assert form["text"] == (TEMPLATES / rel).read_text()  # the imported text, comments and all
    rule = "    preemptibility:\n      options:\n      - value: non-preemptible\n"
    text = form["text"].replace("rules:\n  worker:\n", "rules:\n  worker:\n" + rule, 1)
    document = yaml.safe_load(text)
    assert document["rules"]["worker"]["preemptibility"]  # the rule went under rules.worker
    policy = api.get("/api/v2/policy/distributed", params={"scope": "department", "departmentId": key[11:]})
    preview = browser.post(url, {**form, "text": text, "action": "preview"})
    assert preview.status_code == 200, preview.text
    expected = _impact(tmp_path, rel, text)
    assert any("runnable" in field for fields in expected.values() for field in fields)  # compliance
    assert _preview_pairs(preview.text) == expected
    unchanged = api.get(
        "/api/v2/policy/distributed", params={"scope": "department", "departmentId": key[11:]}
    )
    assert unchanged.json() == policy.json()
    meta = {"name": "research", "scope": "department", "departmentId": key[11:]}
    given = {"rules": document["rules"], "imposedAssets": policy.json()["policy"]["imposedAssets"]}
    if "defaults" in policy.json()["policy"]:
        given["defaults"] = policy.json()["policy"]["defaults"]
    dry = api.put(
        "/api/v2/policy/distributed", json={"meta": meta, "policy": given}, params={"validateOnly": True}
    )
    assert dry.status_code == 200, dry.json()
    assert {
        a["pair"]: {c["field"] for c in a["changes"]} for a in dry.json()["affectedTemplates"]
    } == expected
    saved = browser.post(url, {**form, "text": text, "action": "save"})
    assert saved.status_code == 303
    stored = api.get("/api/v2/policy/distributed", params={"scope": "department", "departmentId": key[11:]})
    assert stored.json()["policy"]["rules"]["worker"]["preemptibility"] == {
        "options": [{"value": "non-preemptible"}]
    }


def test_a_policy_document_edited_in_the_ui_holds_attribute_defaults(
    browser_for: Any, api: TestClient, org: Org
) -> None:
    """A ``policy.yaml`` may give Run:ai's attribute defaults (``defaults.worker.<list>.attributes``, issue
    31): saved from the UI, they are the policy's ``defaults`` over HTTP, beside the scope's own items."""
    key = org.key("department", "research")
    url = f"/ui/scope/{key}/edit/policy"
    browser = browser_for(RESEARCH)
    form = browser.form(url)
    params = {"scope": "department", "departmentId": key[11:]}
    before = api.get("/api/v2/policy/distributed", params=params).json()["policy"]
    attributes = (
        "defaults:\n  worker:\n    storage:\n      hostPath:\n        attributes:\n          readOnly: true\n"
    )
    saved = browser.post(url, {**form, "text": attributes + form["text"], "action": "save"})
    assert saved.status_code == 303, saved.text
    after = api.get("/api/v2/policy/distributed", params=params).json()["policy"]
    assert after["defaults"]["worker"]["storage"]["hostPath"] == {"attributes": {"readOnly": True}}
    assert {k: v for k, v in after["defaults"]["worker"].items() if k != "storage"} == {
        k: v for k, v in before["defaults"]["worker"].items() if k != "storage"
    }  # the scope's default items are kept as they were
    assert after["rules"] == before["rules"]


def test_save_stores_and_a_stale_version_is_refused(browser_for: Any, api: TestClient, org: Org) -> None:
    key = org.key("project", "vision")
    url = f"/ui/scope/{key}/edit/defaults"
    editor = browser_for(VISION)
    form = editor.form(url)
    version = int(form["version"])
    document = yaml.safe_load(form["text"]) or {}
    document.setdefault("spec", {})["priorityClass"] = "high"
    saved = editor.post(url, {**form, "text": yaml.safe_dump(document), "action": "save"})
    assert saved.status_code == 303 and saved.headers["location"] == f"{url}?saved={version + 1}"
    stored = api.get(_defaults_url(key))
    assert stored.json() == document and stored.headers["etag"] == f'"{version + 1}"'
    confirmed = editor.get(saved.headers["location"])
    assert 'id="saved"' in confirmed.text and _field(confirmed.text, "version") == str(version + 1)
    # A link announcing a save of another version (a crafted ?saved=) confirms nothing.
    for fake in (version, version + 2, 1_000):
        assert 'id="saved"' not in editor.get(f"{url}?saved={fake}").text, fake
    # A version of digits other than ASCII is not a version.
    unicode_digit = editor.post(url, {**form, "version": "\u0661", "action": "preview"})
    assert unicode_digit.status_code == 400
    # The same form again: it was read at the old version, so saving it is refused and stores nothing.
    document["spec"]["priorityClass"] = "low"
    stale = editor.post(url, {**form, "text": yaml.safe_dump(document), "action": "save"})
    assert stale.status_code == 412 and 'id="stale"' in stale.text
    assert api.get(_defaults_url(key)).json()["spec"]["priorityClass"] == "high"
    # A preview of a stale form is refused the same way (it would not show what a save does).
    assert (
        editor.post(url, {**form, "text": yaml.safe_dump(document), "action": "preview"}).status_code == 412
    )


def test_a_policy_form_read_before_an_api_write_is_refused_instead_of_undoing_it(
    browser_for: Any, api: TestClient, org: Org
) -> None:
    """The policy form carries the version it was read at: an API write in between makes its save a 412 with
    the stale message; the defaults form likewise after a policy write changed the defaults."""
    key = org.key("department", "research")
    scope = {"scope": "department", "departmentId": key[11:]}
    editor = browser_for(RESEARCH)
    url = f"/ui/scope/{key}/edit/policy"
    form = editor.form(url)
    defaults_url = f"/ui/scope/{key}/edit/defaults"
    defaults_form = editor.form(defaults_url)
    read = api.get("/api/v2/policy/distributed", params=scope)
    rules = {"worker": {**read.json()["policy"]["rules"]["worker"], "tty": {"canEdit": False}}}
    meta = {"name": "research", "scope": "department", "departmentId": key[11:]}
    changed = api.patch(
        "/api/v2/policy/distributed",
        json={"meta": meta, "policy": {"rules": rules}},
        headers={"If-Match": read.headers["ETag"]},
    )
    assert changed.status_code == 200, changed.json()
    document = yaml.safe_load(form["text"])
    document["rules"]["worker"].pop("ports", None)
    stale = editor.post(url, {**form, "text": yaml.safe_dump(document), "action": "save"})
    assert stale.status_code == 412 and 'id="stale"' in stale.text
    assert "has changed since it was read" in html.unescape(stale.text)
    assert (
        api.get("/api/v2/policy/distributed", params=scope).json()["policy"]["rules"]
        == changed.json()["policy"]["rules"]
    )
    # The defaults are half of the policy: the policy write above left them, this one changes them.
    worker = {"labels": {"instances": [{"name": "written", "value": "by-the-api"}]}}
    now = api.get("/api/v2/policy/distributed", params=scope)
    assert (
        api.patch(
            "/api/v2/policy/distributed",
            json={"meta": meta, "policy": {"defaults": {"worker": worker}}},
            headers={"If-Match": now.headers["ETag"]},
        ).status_code
        == 200
    )
    text = yaml.safe_load(defaults_form["text"]) or {}
    text.setdefault("spec", {})["priorityClass"] = "high"
    refused = editor.post(defaults_url, {**defaults_form, "text": yaml.safe_dump(text), "action": "save"})
    assert refused.status_code == 412 and 'id="stale"' in refused.text
    assert "priorityClass" not in api.get(_defaults_url(key)).json()["spec"]


def test_an_invalid_document_is_refused_with_its_problems(
    browser_for: Any, api: TestClient, org: Org
) -> None:
    key = org.key("project", "vision")
    url = f"/ui/scope/{key}/edit/defaults"
    browser = browser_for(ADMIN)
    form = browser.form(url)
    before = api.get(_defaults_url(key)).headers["etag"]
    for text in ("spec: [1, 2]", "spec:\n  numWorkers: many\n", "- a list", "spec: {a: 1, a: 2}"):
        response = browser.post(url, {**form, "text": text, "action": "save"})
        assert response.status_code == 400 and 'id="problems"' in response.text, text
    assert api.get(_defaults_url(key)).headers["etag"] == before


def test_the_explain_view_names_the_stored_documents_and_marks_issues(browser_for: Any, org: Org) -> None:
    browser = browser_for(ADMIN)
    vision = org.key("project", "vision")
    page = browser.get(f"/ui/template/{org.templates[('system', 'mpi-horovod')]}?view={vision}")
    assert page.status_code == 200
    text = page.text
    assert "pair <code>projects/vision/mpi-horovod</code>" in text
    assert 'data-layer="system"' in text and 'data-layer="department"' in text
    assert 'data-issue="locked"' in text  # the imposed data source the template changed
    assert "defaults of department research, version 1" in text
    assert "policy of department research, version 1, line" in text
    assert "db:" not in text  # documents are named, never by their internal file names
    # A defaultFrom value names its rule, and the legend labels every layer in text.
    assert 'data-layer="policy"' in text and "defaultFrom rule of the department research policy" in text
    assert '<span class="badge">defaultFrom</span>' in text and 'id="legend-h"' in text
    assert "All templates seen from project vision (department research)" in text
    assert f'href="/ui/scope/{vision}"' in text
    outside = browser.get(
        f"/ui/template/{org.templates[('project', 'vit-finetune')]}?view={org.key('project', 'nlp')}"
    )
    assert outside.status_code == 404


def test_the_api_validate_only_answers_affected_templates_at_every_scope(api: TestClient, org: Org) -> None:
    for index, key in enumerate(("system", org.key("department", "applied"), org.key("project", "vision"))):
        url = _defaults_url(key)
        before = api.get(url)
        label = f"ui-test-{index}"
        labels = [*(before.json().get("spec") or {}).get("labels", []), {"name": label, "value": "x"}]
        change = {"spec": {"labels": labels}}
        patched = api.patch(url, json=change, params={"validateOnly": "true"})
        assert patched.status_code == 200, patched.json()
        body = patched.json()
        assert body["spec"]["labels"][-1]["name"] == label and body["affectedTemplates"], key
        for entry in body["affectedTemplates"]:
            assert entry["status"] == "changed", entry
            assert f"combinedSpec.labels[name={label}]" in {c["field"] for c in entry["changes"]}, entry
            assert entry["id"] in org.every_kind
        after = api.get(url)
        assert after.json() == before.json() and after.headers["etag"] == before.headers["etag"]
        written = api.patch(url, json=change)
        assert written.status_code == 200 and "affectedTemplates" not in written.json()


def test_a_preview_composes_after_its_transaction_released_the_write_lock(
    api: TestClient, app: FastAPI, org: Org, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The expensive part of a validateOnly write (composing every affected template before and after) runs
    once the rolled-back transaction has ended, so another writer is never kept waiting by a preview: a write
    made from inside that composition succeeds at once (with the lock still held, SQLite's BEGIN IMMEDIATE
    would wait out its busy timeout and fail)."""
    import template_engine.service.defaults_store as defaults_routes
    from template_engine.service.auth import Principal

    real = defaults_routes.affected
    writes: list[int] = []

    def affected_with_a_concurrent_write(before: Any, after: Any) -> Any:
        with app.state.store.write(Principal("probe", "system-admin")) as ctx:
            writes.append(ctx.repo.put_defaults("system", {"spec": {"numWorkers": 3}}, 1, "probe"))
        return real(before, after)

    monkeypatch.setattr(defaults_routes, "affected", affected_with_a_concurrent_write)
    url = _defaults_url(org.key("department", "research"))
    dry = api.patch(
        url, json={"spec": {"labels": [{"name": "probe", "value": "x"}]}}, params={"validateOnly": 1}
    )
    assert dry.status_code == 200, dry.json()
    assert writes == [2] and dry.json()["affectedTemplates"]
    assert api.get("/api/v1/defaults/system").json()["spec"]["numWorkers"] == 3  # the probe's write was kept


def test_every_answer_under_the_ui_carries_the_security_headers_errors_included(browser_for: Any) -> None:
    browser = browser_for(ADMIN)
    answers = {
        "unknown page": browser.get("/ui/nope"),
        "unknown method": browser.client.put("/ui/"),
        "body too large": browser.client.post(
            "/ui/sign-out", content=b"x" * (2 * 1024 * 1024), headers={"content-type": "text/plain"}
        ),
    }
    for what, answer in answers.items():
        assert answer.status_code >= 400, what
        csp = answer.headers.get("content-security-policy", "")
        assert "script-src 'self'" in csp and "frame-ancestors 'none'" in csp, (what, dict(answer.headers))
        assert answer.headers.get("x-content-type-options") == "nosniff", what


def test_a_preview_lists_at_most_a_bounded_number_of_changes_and_counts_the_rest(
    api: TestClient, browser_for: Any, org: Org
) -> None:
    from template_engine.service.impact import MAX_CHANGES_SHOWN

    vision = org.key("project", "vision")
    many = {"spec": {"labels": [{"name": f"l{i}", "value": "x"} for i in range(MAX_CHANGES_SHOWN + 500)]}}
    dry = api.put(_defaults_url(vision), json=many, params={"validateOnly": 1})  # what the form does
    assert dry.status_code == 200, dry.json()
    entries = dry.json()["affectedTemplates"]
    listed = sum(len(e["changes"]) for e in entries)
    omitted = sum(e["changesOmitted"] for e in entries)
    assert len(entries) > 1 and listed == MAX_CHANGES_SHOWN
    # Every template gets every new label: what is listed and what is counted add up to all of them.
    assert listed + omitted >= len(entries) * (MAX_CHANGES_SHOWN + 500)
    browser = browser_for(ADMIN)
    url = f"/ui/scope/{vision}/edit/defaults"
    form = browser.form(url)
    page = browser.client.post(
        url,
        data={
            "csrf": form["csrf"],
            "version": form["version"],
            "text": yaml.safe_dump(many),
            "action": "preview",
        },
        headers={"origin": BASE},
    )
    assert page.status_code == 200, page.text[:2000]
    shown = [int(n) for n in re.findall(r'data-omitted="(\d+)"', page.text)]
    assert sum(shown) == omitted and page.text.count("<tr data-field=") == MAX_CHANGES_SHOWN


def test_a_body_that_is_not_the_ui_form_is_refused_for_what_it_is(browser_for: Any, org: Org) -> None:
    browser = browser_for(ADMIN)
    url = f"/ui/scope/{org.key('project', 'vision')}/edit/defaults"
    form = browser.form(url)
    fields = {"csrf": form["csrf"], "version": form["version"], "text": form["text"], "action": "preview"}
    multipart = browser.client.post(url, files={"f": ("a", b"b")}, data=fields, headers={"origin": BASE})
    too_many = browser.client.post(url, data={**fields, **{f"x{i}": "1" for i in range(20)}})
    for answer in (multipart, too_many):
        assert answer.status_code == 403 and "not one of this UI&#39;s forms" in answer.text, answer.text[
            :500
        ]
    fine = browser.client.post(url, data=fields, headers={"origin": BASE})
    assert fine.status_code == 200 and 'id="preview-' in fine.text


def test_no_page_of_the_ui_origin_runs_a_script_from_elsewhere(api: TestClient) -> None:
    """Swagger UI and ReDoc load their scripts from a CDN; served from the UI's origin, such a script could
    request /ui pages with the signed-in user's cookie. They are off; the OpenAPI document stays."""
    for path in ("/docs", "/redoc", "/docs/oauth2-redirect"):
        assert api.get(path).status_code == 404, path
    assert api.get("/openapi.json").json()["info"]["title"] == "template-engine"


def test_the_icon_browsers_ask_for_by_themselves_is_no_content_not_a_404(api: TestClient) -> None:
    answer = api.get("/favicon.ico")
    assert answer.status_code == 204 and answer.content == b""


# -- the value limit of an API body --------------------------------------------------------------------------


def test_a_form_over_the_value_limit_is_refused_with_the_numbers_and_stores_nothing(
    browser_for: Any, api: TestClient, org: Org
) -> None:
    """The issue's 25,000 labels (714 KB): the API answers their body 413; the form did preview and save."""
    from template_engine.service import cache
    from template_engine.service.documents import MAX_VALUES

    vision = org.key("project", "vision")
    url = f"/ui/scope/{vision}/edit/defaults"
    browser = browser_for(VISION)
    form = browser.form(url)
    before = api.get(_defaults_url(vision)).json()
    labels = [{"name": f"l{i}", "value": "x"} for i in range(25_000)]
    text = "spec:\n  labels:\n" + "".join(f"  - name: l{i}\n    value: x\n" for i in range(25_000))
    assert yaml.safe_load(text) == {"spec": {"labels": labels}}
    assert len(urlencode({**form, "text": text})) < 1024 * 1024  # under the body limit (the form is 700 KB)
    assert api.put(_defaults_url(vision), json={"spec": {"labels": labels}}).status_code == 413
    compositions = cache.STATS.compositions
    for action in ("preview", "save"):
        refused = browser.post(url, {**form, "text": text, "action": action})
        assert refused.status_code == 413, action
        assert 'id="problems"' in refused.text and "nothing was stored" in refused.text
        shown = html.unescape(refused.text)
        # The form's text is refused while it is read (the loader's bound), before a body is built of it.
        assert f"the document holds more than {MAX_VALUES} values" in shown
        assert f"at most {MAX_VALUES} values" in shown
    assert cache.STATS.compositions == compositions  # refused before anything was composed
    assert api.get(_defaults_url(vision)).json() == before
    # At the limit, the same form is previewed and saved, and what it saved reads back and is put again.
    fitting = [{"name": f"l{i}", "value": "x"} for i in range((MAX_VALUES - 3) // 3)]
    text = yaml.safe_dump({"spec": {"labels": fitting}})
    assert browser.post(url, {**form, "text": text, "action": "save"}).status_code == 303
    read = api.get(_defaults_url(vision))
    assert read.json()["spec"]["labels"] == fitting
    again = api.put(_defaults_url(vision), json=read.json(), headers={"If-Match": read.headers["ETag"]})
    assert again.status_code == 200, again.text


def _counting_work(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Counts of the YAML nodes made (by any composer) and of the values built (by either builder)."""
    from yaml.nodes import MappingNode, ScalarNode, SequenceNode

    from template_engine.loader import yaml_safe

    work = {"nodes": 0, "values": 0}
    for kind in (ScalarNode, SequenceNode, MappingNode):
        made = kind.__init__

        def counted(self: Any, *args: Any, _made: Any = made, **kwargs: Any) -> None:
            work["nodes"] += 1
            _made(self, *args, **kwargs)

        monkeypatch.setattr(kind, "__init__", counted)
    for builder in (yaml_safe._Builder, yaml_safe._Lean):
        build = builder.build

        def built(self: Any, *args: Any, _build: Any = build) -> Any:
            work["values"] += 1
            return _build(self, *args)

        monkeypatch.setattr(builder, "build", built)
    return work


def test_the_form_prices_its_text_while_it_is_read_not_after(
    browser_for: Any, api: TestClient, org: Org, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 30: a 2 KB text of anchors and a 371 KB list were built to 200,000 YAML values before the
    20,000-value limit refused them.  The form reads with the files' loader and the bound of an API body
    applied while the nodes are made: no more than the bound are made or built before the 413."""
    from template_engine.service.documents import MAX_VALUES

    vision = org.key("project", "vision")
    url = f"/ui/scope/{vision}/edit/defaults"
    browser = browser_for(VISION)
    form = browser.form(url)
    before = api.get(_defaults_url(vision)).json()
    anchors = ["a0: &a0 [" + ", ".join(["x"] * 10) + "]"]
    anchors += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 6)]
    laughs = "spec:\n  labels:\n" + "".join(f"  - {{name: l{i}, value: x}}\n" for i in range(3)) + "x:\n"
    laughs += "".join(f"  {line}\n" for line in anchors)
    listed = "spec:\n  labels:\n" + "".join("  - 1\n" for _ in range(371 * 1024 // 6))
    assert len(laughs) < 2048 and len(listed) > 370 * 1024
    for text in (laughs, listed):
        with monkeypatch.context() as patch:
            work = _counting_work(patch)
            refused = browser.post(url, {**form, "text": text, "action": "preview"})
        assert refused.status_code == 413, refused.text
        shown = html.unescape(refused.text)
        assert f"more than {MAX_VALUES} values" in shown and "nothing was stored" in shown
        assert work["nodes"] <= MAX_VALUES + 10, work  # the values, and the few keys above them
        assert work["values"] <= MAX_VALUES + 1, work
    assert api.get(_defaults_url(vision)).json() == before


# -- the manifests tab --------------------------------------------------------------------------------------


def default_cluster_copy(tmp_path: Path) -> Path:
    """The example org for the KAI Scheduler's default settings: no ``cluster.yaml`` and no
    ``priorityClass`` (its classes are the org's own), so every template is runnable without the org's
    cluster settings."""
    root = tmp_path / "templates"
    shutil.copytree(TEMPLATES, root)
    (root / "cluster.yaml").unlink()
    for rel in ("system/defaults.yaml", "departments/applied/defaults.yaml"):
        path = root / rel
        lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
        path.write_text("".join(x for x in lines if "priorityClass:" not in x), encoding="utf-8")
    return root


class ObjectValues(HTMLParser):
    """The manifests panel: each object path with its value, its text label and its hover text."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.values: dict[str, dict[str, str]] = {}
        self._path: list[str] = []
        self._in: str | None = None
        self.feed(text[text.index('id="panel-manifests"') :])

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag == "li" and found.get("data-object-path"):
            self._path.append(found["data-object-path"] or "")
            self.values[self._path[-1]] = {"layer": found.get("data-layer") or ""}
        classes = (found.get("class") or "").split()
        if tag == "span" and self._path and ("val" in classes or "badge" in classes):
            self._in = "val" if "val" in classes else "badge"
            if self._in == "val":
                self.values[self._path[-1]]["title"] = found.get("title") or ""

    def handle_endtag(self, tag: str) -> None:
        if tag == "li" and self._path:
            self._path.pop()
        if tag == "span":
            self._in = None

    def handle_data(self, data: str) -> None:
        if self._in is not None and self._path:
            self.values[self._path[-1]].setdefault(self._in, data)


def test_the_explain_view_has_the_manifests_labelled_by_the_stored_documents(
    tmp_path: Path, auth_file: Path
) -> None:
    app = create_app(
        Settings(
            database_url=f"sqlite:///{tmp_path / 'db.sqlite'}",
            auth_file=auth_file,
            seed=default_cluster_copy(tmp_path),
        )
    )
    with TestClient(app, base_url=BASE) as client:
        browser = Browser(client)
        assert browser.sign_in(ADMIN).status_code == 303
        api = Org(_api(client))
        vision = api.key("project", "vision")
        page = browser.get(f"/ui/template/{api.templates[('project', 'vit-finetune')]}?view={vision}")
    assert page.status_code == 200
    text = page.text
    assert "Status: runnable" in text
    assert (
        '<label for="tab-manifests" class="tab" id="tab-manifests-label">Manifests <small>(2 object(s))'
        in text
    )
    values = ObjectValues(text).values
    worker = "PyTorchJob.spec.pytorchReplicaSpecs.Worker.template.spec"
    image = values[f"{worker}.containers[0].image"]
    assert image["val"] == '"nvcr.io/nvidia/pytorch:24.05-py3"' and image["badge"] == "environment"
    assert (
        "from combinedSpec.image, set by environment asset pytorch, environment asset pytorch, version 1"
        in (image["title"])
    )
    label = values["PyTorchJob.metadata.labels.cost-center"]
    assert label["badge"] == "department" and "defaults of department research, version 1" in label["title"]
    assert values["PyTorchJob.metadata.namespace"]["badge"] == "cluster setting"
    assert values["PyTorchJob.metadata.namespace"]["val"] == '"runai-vision"'
    assert values[f"{worker}.schedulerName"]["title"].endswith("cluster setting schedulerName")
    assert values[f"{worker}.priorityClassName"]["val"] == '"train"'  # KAI's preemptible default
    assert values["PyTorchJob.metadata.name"]["layer"] == "derived"
    assert values["PyTorchJob.spec.runPolicy.ttlSecondsAfterFinished"]["badge"] == "defaultFrom"
    assert "db:" not in text and "Not in the objects" in text
    # The legend of the tab labels the sources in text; the service leaves out the folder's file names.
    legend = text[text.index('id="sources-h"') :]
    assert '<span class="badge">cluster setting</span>' in legend and "(cluster.yaml)" not in legend


def _api(client: TestClient) -> TestClient:
    client.headers.update(bearer(ADMIN))
    return client


# -- the service's address, the tree's counts, readable rules, a concise Why, problems at their lines --------


def test_the_service_address_sends_a_browser_to_the_ui_and_answers_an_api_client_json(
    browser_for: Any,
) -> None:
    """Decided in docs/decisions.md: a page load (``Accept`` names ``text/html``) is redirected, 307; an API
    client (``application/json``, ``*/*`` as curl sends, or no ``Accept``) keeps the API's JSON 404."""
    browser = browser_for(None)
    chromium = "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,*/*;q=0.8"
    answer = browser.get("/", headers={"accept": chromium}, follow_redirects=False)
    assert answer.status_code == 307 and answer.headers["location"] == "/ui/"
    assert answer.headers["vary"] == "Accept"
    landed = browser.get("/", headers={"accept": chromium})  # followed: not signed in, so the sign-in page
    assert landed.status_code == 200 and 'id="sign-in-form"' in landed.text
    for accept in ("application/json", "*/*", None):
        headers = {"accept": accept} if accept is not None else {}
        refused = browser.get("/", headers=headers, follow_redirects=False)
        assert refused.status_code == 404, accept
        assert refused.json() == {"code": 404, "message": "No such endpoint."}
    assert browser.client.head("/", headers={"accept": chromium}, follow_redirects=False).status_code == 307


def _engine_counts(root: Path = TEMPLATES) -> dict[str, tuple[int, int, int]]:
    """(runnable, not runnable, non-compliant) of every scope of the example folder, by the engine itself:
    each template visible from the scope composed from it (one failing to compose is not runnable)."""
    from template_engine.compose import compose
    from template_engine.errors import TemplateEngineError
    from template_engine.org import View

    folder = load_org(root)
    views = {"system": View()}
    for department, projects in folder.departments.items():
        views[f"department {department}"] = View(department)
        views |= {f"project {project}": View(department, project) for project in projects}
    out = {}
    for name, view in views.items():
        runnable = not_runnable = non_compliant = 0
        for template in folder.visible(view).values():
            try:
                outcome = compose(folder, template, view)
            except TemplateEngineError:
                not_runnable += 1
                continue
            runnable += outcome.runnable.is_runnable
            not_runnable += not outcome.runnable.is_runnable
            non_compliant += any(issue.rule is not None for issue in outcome.runnable.issues)
        out[name] = (runnable, not_runnable, non_compliant)
    return out


def _tree_counts(text: str) -> dict[str, tuple[int, int, int]]:
    found = re.findall(
        r'<span class="scope-name">([^<]+)</span> <span class="counts" data-runnable="(\d+)" '
        r'data-not-runnable="(\d+)" data-non-compliant="(\d+)">',
        text,
    )
    return {name: (int(a), int(b), int(c)) for name, a, b, c in found}


def test_the_org_tree_counts_each_scopes_templates_as_the_engine_composes_them(browser_for: Any) -> None:
    page = browser_for(ADMIN).get("/ui/")
    assert page.status_code == 200
    expected = _engine_counts()
    assert _tree_counts(page.text) == expected
    assert any(not_runnable for _, not_runnable, _ in expected.values())  # the example has failures to count
    assert any(non_compliant for _, _, non_compliant in expected.values())
    assert ">1 non-compliant</span>" in page.text or ">2 non-compliant</span>" in page.text


def _counting_compositions(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the templates the UI's pages compose from now on, in order."""
    from template_engine.service.ui import pages

    composed: list[str] = []
    real = pages.compose_template

    def counted(stored: Any, template: Any, view: Any) -> Any:
        composed.append(template.name)
        return real(stored, template, view)

    monkeypatch.setattr(pages, "compose_template", counted)
    return composed


def test_the_org_tree_s_counts_are_priced_before_they_compose(
    browser_for: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Beyond the page's budget the tree composes nothing and says why; within it, it counts."""
    from template_engine.service.ui import pages

    composed = _counting_compositions(monkeypatch)
    monkeypatch.setattr(pages, "TREE_BUDGET", 1_000)  # the example org's counts cost far more
    page = browser_for(ADMIN).get("/ui/")
    assert page.status_code == 200 and composed == []
    assert "data-counts-withheld" in page.text and 'class="counts"' not in page.text
    assert "open a scope to see its templates" in page.text
    monkeypatch.setattr(pages, "TREE_BUDGET", pages.REQUEST_BUDGET)
    page = browser_for(ADMIN).get("/ui/")
    assert (
        composed and "data-counts-withheld" not in page.text and _tree_counts(page.text) == _engine_counts()
    )


def test_a_scope_page_composes_what_fits_a_page_s_budget_and_says_how_many_are_left(
    browser_for: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from template_engine.service.ui import pages

    composed = _counting_compositions(monkeypatch)
    browser = browser_for(ADMIN)
    whole = browser.get("/ui/scope/system")
    assert whole.status_code == 200 and "data-templates-left" not in whole.text
    everything = len(composed)
    assert everything >= 2  # the system's templates
    composed.clear()
    monkeypatch.setattr(pages, "TREE_BUDGET", 1)  # below one composition: only the first is composed
    bounded = browser.get("/ui/scope/system")
    assert bounded.status_code == 200 and len(composed) == 1
    assert f'data-templates-left="{everything - 1}"' in bounded.text


def test_the_org_tree_counts_follow_a_saved_change(tmp_path: Path, browser_for: Any, org: Org) -> None:
    """A research rule that templates seen from research break (``backoffLimit`` at most 0), saved
    through the policy form: the tree counts what the engine counts on the folder with that policy."""
    browser = browser_for(ADMIN)
    before = _tree_counts(browser.get("/ui/").text)
    url = f"/ui/scope/{org.key('department', 'research')}/edit/policy"
    form = browser.form(url)
    text = form["text"].replace("rules:\n  worker:\n", "rules:\n  worker:\n    backoffLimit: {max: 0}\n", 1)
    assert text != form["text"]
    assert browser.post(url, {**form, "text": text, "action": "save"}).status_code == 303
    folder = tmp_path / "templates"
    shutil.copytree(TEMPLATES, folder)
    policy = folder / "departments/research/policy.yaml"
    policy.write_text(policy.read_text().replace("  worker:\n", "  worker:\n    backoffLimit: {max: 0}\n", 1))
    after = _tree_counts(browser.get("/ui/").text)
    assert after == _engine_counts(folder)
    assert after["system"] == before["system"] and after["department applied"] == before["department applied"]
    assert after["department research"][0] < before["department research"][0]
    assert after["department research"][2] > before["department research"][2]  # a policy issue, counted


def _rule_cells(text: str) -> dict[tuple[str, str], tuple[list[str], str, str]]:
    rows = re.findall(
        r'<tr data-replica="([^"]+)" data-field="([^"]+)" data-source="[^"]+"><td>[^<]*</td><td><code>[^<]*'
        r'</code></td><td class="rule-text" title="([^"]*)"><ul class="phrases">(.*?)</ul></td><td>[^<]*</td>'
        r"<td>([^<]*)</td></tr>",
        text,
    )
    return {
        (replica, field): (re.findall(r"<li>(.*?)</li>", phrases), html.unescape(title), html.unescape(place))
        for replica, field, title, phrases, place in rows
    }


def test_the_effective_policy_shows_each_rule_in_words_with_its_source(browser_for: Any, org: Org) -> None:
    page = browser_for(ADMIN).get(f"/ui/scope/{org.key('project', 'vision')}/policy")
    assert page.status_code == 200
    rules = _rule_cells(page.text)
    assert len(rules) == page.text.count("<tr data-replica=")  # every row read
    phrases, written, place = rules[("worker", "numWorkers")]
    assert phrases == ["between 1 and 16"] and written == 'as written: {"max": 16, "min": 1}'
    assert place.startswith("policy of the system, version 1, line ")
    system = yaml.safe_load((TEMPLATES / "system/policy.yaml").read_text())
    assert system["rules"]["worker"]["numWorkers"] == {"min": 1, "max": 16}
    assert rules[("worker", "compute.cpuMemoryRequest")][0] == ["at most 1Ti"]  # as written, not its bytes
    assert rules[("worker", "security.allowPrivilegeEscalation")][0] == ["cannot be edited"]
    assert rules[("worker", "environmentVariables.instances")][0] == ["locked: PIP_INDEX_URL"]
    assert rules[("worker", "autoDeletionTimeAfterCompletionSeconds")][0] == [
        "default 60 x terminationGracePeriodSeconds"
    ]
    assert rules[("worker", "autoDeletionTimeAfterCompletionSeconds")][2].startswith(
        "policy of department research, version 1, line "
    )
    cells = re.findall(r'<td class="rule-text"[^>]*>(.*?)</td>', page.text)
    assert cells and not any("{" in cell for cell in cells)  # no rule shown as JSON


def test_the_preview_says_why_in_a_few_words_against_the_version_the_form_was_read_at(
    browser_for: Any, org: Org
) -> None:
    key = org.key("department", "research")
    url = f"/ui/scope/{key}/edit/defaults"
    browser = browser_for(ADMIN)
    form = browser.form(url)
    assert form["version"] == "1"
    text = (
        form["text"]
        .replace("value: WARN", "value: INFO")
        .replace("  - name: HTTPS_PROXY\n    exclude: true\n", "")
    )
    assert text != form["text"]
    preview = browser.post(url, {**form, "text": text, "action": "preview"})
    assert preview.status_code == 200
    assert (
        "Preview against version 1:" in preview.text
        and 'id="preview-against" data-version="1"' in preview.text
    )
    assert "version 2" not in preview.text  # nothing is saved: no version the save would make is shown
    rows = re.findall(
        r'<tr data-field="([^"]+)" data-change="([^"]+)">.*?<td class="why">([^<]*)</td></tr>', preview.text
    )
    assert rows
    why = {(field, change): html.unescape(text) for field, change, text in rows}
    for (field, _), text in why.items():
        assert field not in text and "->" not in text, text  # the field and values have columns of their own
    nccl = "combinedSpec.environmentVariables[name=NCCL_DEBUG].value"
    assert why[(nccl, "changed")] in ("set by your edit", "set by your edit; the master too")
    proxy = {text for (field, _), text in why.items() if "HTTPS_PROXY" in field}
    assert proxy and proxy <= {
        "set by defaults of the system, version 1",
        "set by defaults of the system, version 1; the master too",
    }


def _problem_items(text: str) -> list[tuple[str | None, str]]:
    items = re.findall(
        r"<li( data-line=\"(\d+)\")?>(.*?)</li>",
        re.search(r'<ul id="problem-list">(.*?)</ul>', text, re.S)[1],
    )  # type: ignore[index]
    return [(line or None, html.unescape(re.sub(r"<[^>]+>", "", body))) for _, line, body in items]


def test_a_refused_documents_problems_carry_their_line_in_the_posted_text(browser_for: Any, org: Org) -> None:
    research = org.key("department", "research")
    browser = browser_for(ADMIN)
    url = f"/ui/scope/{research}/edit/defaults"
    form = browser.form(url)
    lines = form["text"].splitlines()
    # An unknown field: its own line.
    typo = "\n".join([*lines, "numWorker: 3"]) + "\n"
    answer = browser.post(url, {**form, "text": typo, "action": "preview"})
    assert answer.status_code == 400
    assert _problem_items(answer.text) == [
        (
            str(len(lines) + 1),
            f"line {len(lines) + 1}: numWorker: unknown field 'numWorker' "
            "(expected one of: master, masterSpecSameAsWorker, spec)",
        )
    ]
    # A value of the wrong type deep in the document: the line of that field.
    at = lines.index("  preemptibility: preemptible")
    wrong = "\n".join([*lines[:at], "  preemptibility: 12", *lines[at + 1 :]]) + "\n"
    answer = browser.post(url, {**form, "text": wrong, "action": "preview"})
    assert answer.status_code == 400
    ((line, message),) = _problem_items(answer.text)
    assert line == str(at + 1) and "spec.preemptibility" in message
    # Not YAML: the line the reader stopped at.
    broken = "spec:\n  labels: [\n"
    ((line, message),) = _problem_items(browser.post(url, {**form, "text": broken, "action": "preview"}).text)
    assert line == "3" and "invalid YAML" in message
    # A policy's rule: its line in the policy document, without the API body's ``policy``.
    policy_url = f"/ui/scope/{research}/edit/policy"
    policy_form = browser.form(policy_url)
    rules = "rules:\n  worker:\n    numWorkers:\n      max: many\n"
    answer = browser.post(policy_url, {**policy_form, "text": rules, "action": "preview"})
    assert answer.status_code == 400
    items = _problem_items(answer.text)
    assert items[0] == (
        "4",
        "line 4: rules.worker.numWorkers.max: max must be a whole number, not 'many' "
        "(expected a whole number)",
    )
    assert all(line is not None for line, _ in items)  # the rule the system owns too: at its field's line
