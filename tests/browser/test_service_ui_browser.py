"""The service's pages under ``/ui`` in a real browser, against a live service seeded with the example org.

The tests that only read share one service per module (its own SQLite file, its own port; xdist's ``--dist
loadscope`` keeps a module on one worker); a test that stores a change is marked ``own_service`` and gets a
service of its own, so no test sees another's changes, in any order. A test signs in by typing a development
token the first time a role signs in on a service, with the session cookie that gave after that
(``test_signing_in_...`` always types). Each test compares what the page shows with what the service's API
answers for the same token, or with what the engine's CLI (``check``, ``impact``) says of the same org:
expectations never come from the page under test. A page that loads with a console error, a blocked load or a
script error fails the test (the ``page`` fixture); a test that provokes a refusal on purpose takes exactly
those errors out of the log and asserts them.
"""

from __future__ import annotations

import http.server
import re
import shutil
import threading
from collections.abc import Iterator
from html import escape
from pathlib import Path
from typing import Any

import httpx
import pytest
from browser_helpers import EXAMPLE, BrowserLog, LiveService, cli_json
from playwright.sync_api import Locator, Page, expect

from template_engine import View, compose, load_org
from template_engine.kinds import TEMPLATE_KINDS
from template_engine.service.asset_shapes import BY_KIND
from template_engine.service.auth import DEV_TOKENS

SCRIPT = "</script><script>window.__pwned=1</script>"
ATTRIBUTE = '"><img src=x onerror="window.__pwned=1">'

#: A development token -> the principal it signs in as (the service's own table).
PRINCIPALS = {token: principal for _, token, principal in DEV_TOKENS}


# -- the API: the expectations ------------------------------------------------------------------------------


@pytest.fixture
def api(live_service: LiveService) -> Iterator[httpx.Client]:
    """The live service's API as the system admin."""
    with client(live_service, "admin") as opened:
        yield opened


def client(service: LiveService, role: str) -> httpx.Client:
    return httpx.Client(base_url=service.url, headers=service.auth(role), timeout=120)


def ok(response: httpx.Response, *status: int) -> Any:
    assert response.status_code in (status or (200,)), (response.request.url, response.text)
    return response.json() if response.content else None


def version(response: httpx.Response) -> int:
    ok(response)
    return int(response.headers["etag"].strip('"'))


def department_id(api: httpx.Client, name: str) -> str:
    found = [d["id"] for d in ok(api.get("/api/v1/org-unit/departments"))["departments"] if d["name"] == name]
    assert len(found) == 1, name
    return str(found[0])


def project_id(api: httpx.Client, name: str) -> str:
    found = [p["id"] for p in ok(api.get("/api/v1/org-unit/projects"))["projects"] if p["name"] == name]
    assert len(found) == 1, name
    return str(found[0])


def templates(api: httpx.Client, **params: Any) -> list[dict[str, Any]]:
    """The templates of every kind (issue 32)."""
    entries: list[dict[str, Any]] = ok(
        api.get("/api/v1/workload-templates", params={"limit": 500, **params})
    )["entries"]
    return entries


def template_url(meta: dict[str, Any]) -> str:
    """A template's own route, of its kind."""
    segments = {kind.workload_type: kind.template_segment for kind in TEMPLATE_KINDS}
    return f"/api/v1/workload-templates/{segments[meta['workloadType']]}/{meta['id']}"


def template_named(
    api: httpx.Client, name: str, scope_type: str, scope_id: str | None = None
) -> dict[str, Any]:
    found = [
        t
        for t in templates(api)
        if t["meta"]["name"] == name
        and t["meta"]["scopeType"] == scope_type
        and (scope_id is None or str(t["meta"]["scopeId"]) == scope_id)
    ]
    assert len(found) == 1, (name, scope_type, scope_id)
    return found[0]


def scope_words(api: httpx.Client, meta: dict[str, Any]) -> str:
    """A template's own scope as the engine's ``check`` and ``impact`` name it (``department research``)."""
    kind = meta["scopeType"]
    if kind == "system":
        return "system"
    units = ok(api.get(f"/api/v1/org-unit/{kind}s"))[f"{kind}s"]
    name: str = next(u["name"] for u in units if str(u["id"]) == str(meta["scopeId"]))
    return f"{kind} {name}"


def defaults_url(key: str) -> str:
    """The API address of a scope's defaults, from the UI's scope key (``department:1``)."""
    if key == "system":
        return "/api/v1/defaults/system"
    kind, _, ident = key.partition(":")
    return f"/api/v1/defaults/{kind}s/{ident}"


def may_write(api: httpx.Client, key: str) -> bool:
    """Whether the API accepts a write of the scope's defaults with this client's token: the same document
    put back, ``validateOnly`` (nothing is stored)."""
    current = api.get(defaults_url(key))
    if current.status_code == 403:
        return False
    ok(current)
    answer = api.put(
        defaults_url(key),
        params={"validateOnly": "true"},
        json=current.json(),
        headers={"If-Match": current.headers["etag"]},
    )
    assert answer.status_code in (200, 403), answer.text
    return answer.status_code == 200


def document_label(api: httpx.Client, file: str) -> str:
    """How a page names a stored document that ``explain`` names by its ``db:`` address: the document and
    its current version, read from the API (docs/views.md, In the service)."""
    kind, _, key = file.removeprefix("db:").partition("/")
    if kind == "defaults":
        if key == "system":
            words = "the system"
        else:
            unit, _, ident = key.partition(":")
            units = ok(api.get(f"/api/v1/org-unit/{unit}s"))[f"{unit}s"]
            words = f"{unit} " + next(u["name"] for u in units if str(u["id"]) == ident)
        return f"defaults of {words}, version {version(api.get(defaults_url(key)))}"
    if kind == "assets":
        for asset_kind in ("environment", "compute", "datasource"):
            for asset in ok(api.get(f"/api/v1/asset/{asset_kind}"))["entries"]:
                if asset["meta"]["id"] == key:  # a data source is read at its kind's path (nfs, pvc...)
                    url = f"/api/v1/asset/{BY_KIND[asset['meta']['kind']].path}/{key}"
                    return f"{asset_kind} asset {asset['meta']['name']}, version {version(api.get(url))}"
        raise AssertionError(f"no asset {key}")
    assert kind == "templates", file
    read = api.get(f"/api/v1/workload-templates/distributed/{key}")
    return f"template {ok(read)['meta']['name']}, version {version(read)}"


def explain(api: httpx.Client, template_id: str, project: str) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = ok(
        api.get(
            f"/api/v1/workload-templates/distributed/{template_id}/explain", params={"projectId": project}
        )
    )["entries"]
    return entries


def legend_label(layer: str) -> str:
    """The legend's label for a layer as ``explain`` names it (the table of docs/views.md)."""
    if layer.startswith("defaultFrom rule of "):
        return "defaultFrom"
    if layer.startswith("datasource asset "):
        return "imposed" if " (imposed by the " in layer else "data source"
    return layer.split()[0]


# -- the page -----------------------------------------------------------------------------------------------


def sign_in(page: Page, service: LiveService, role: str) -> None:
    """Sign in as the role; the org tree follows.  The first time on a service, by typing the role's
    development token into the sign-in form; after that, by giving the browser the session cookie that
    sign-in set (the session is the token in a cookie, no state in the service: signing out elsewhere
    does not end it), and opening the page sign-in leads to.  ``test_signing_in_...`` types its tokens."""
    stored = service.sessions.get(role)
    if stored is None:
        page.goto(f"{service.url}/ui/sign-in")
        page.locator("#token").press_sequentially(service.tokens[role])
        follow(page, page.locator("#sign-in"))
    else:
        page.context.add_cookies(stored)
        page.goto(f"{service.url}/ui/")
    expect(page.locator("#org-tree")).to_be_visible()
    expected = PRINCIPALS[service.tokens[role]]
    expect(page.locator("#signed-in-as")).to_have_attribute("data-role", expected.role)
    if stored is None:
        session = [c for c in page.context.cookies() if c["name"] == "te_session"]
        assert len(session) == 1, session
        service.sessions[role] = session


def follow(page: Page, target: Locator) -> None:
    """Click a link or a submit button and wait until the page it leads to has loaded, its stylesheet and
    script included (a next ``page.goto`` would abort them: a failed request)."""
    target.click()
    page.wait_for_load_state("load")


def take_refusals(log: BrowserLog, status: int, path: str) -> None:
    """Take out of the log what a refused request (``status`` for ``path``) leaves there, the answer and
    Chromium's console line about it; there must be such an entry, and the others stay (and fail the test)."""
    expected = [
        e
        for e in log.errors
        if path in e and (e.startswith(f"response {status}:") or f"status of {status}" in e)
    ]
    assert expected, (status, path, log.errors)
    log.errors[:] = [e for e in log.errors if e not in expected]


def editor_text(page: Page) -> str:
    """The text in the document editor (CodeMirror's own value)."""
    text: str = page.evaluate("document.getElementById('document-editor').CodeMirror.getValue()")
    return text


def type_document(page: Page, text: str) -> None:
    """Replace the editor's text as a person pasting does: focus it, select all, insert."""
    page.locator("#document-editor .CodeMirror-code").click()
    page.keyboard.press("Control+A")
    page.keyboard.insert_text(text)


def css_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def node(page: Page, replica: str, field: str) -> Locator:
    found = page.locator(f'section[aria-labelledby="{replica}-h"] li.node[data-field={css_string(field)}]')
    assert found.count() == 1, f"{replica} {field}: {found.count()} nodes"
    return found


def mark(page: Page, replica: str, field: str) -> Locator:
    """The focusable value (or item) mark of a node: the element that carries its colour and hover text."""
    return node(page, replica, field).locator(":scope > .entry > .val, :scope > details > summary > .val")


def style(locator: Locator, prop: str) -> str:
    value: str = locator.evaluate(f"el => getComputedStyle(el).{prop}")
    return value


def panel(page: Page, value: Locator) -> Locator:
    described = value.get_attribute("aria-describedby")
    assert described, "a value without aria-describedby"
    return page.locator(f"#{described}")


def struck(value: Locator) -> bool:
    found: bool = value.evaluate(
        """el => [el, ...el.querySelectorAll('*')].some(
               e => getComputedStyle(e).textDecorationLine.includes('line-through'))"""
    )
    return found


# -- signing in ---------------------------------------------------------------------------------------------


def test_signing_in_by_typing_a_token_and_a_wrong_token_is_refused(
    page: Page, browser_log: BrowserLog, live_service: LiveService
) -> None:
    page.goto(f"{live_service.url}/ui/")
    assert page.url.startswith(f"{live_service.url}/ui/sign-in")  # no session: the sign-in page
    expect(page.locator("#sign-in-error")).to_have_count(0)
    page.locator("#token").press_sequentially("dev-nobody")
    follow(page, page.locator("#sign-in"))
    expect(page.locator("#sign-in-error")).to_be_visible()
    take_refusals(browser_log, 401, "/ui/sign-in")
    assert page.locator("#org-tree").count() == 0 and page.locator("#signed-in-as").count() == 0
    assert not [c for c in page.context.cookies() if c["name"] == "te_session"]
    # The right token, typed into the form the refusal shows again.
    page.locator("#token").press_sequentially(live_service.tokens["research"])
    follow(page, page.locator("#sign-in"))
    expect(page.locator("#org-tree")).to_be_visible()
    principal = PRINCIPALS[live_service.tokens["research"]]
    who = page.locator("#signed-in-as")
    expect(who).to_have_attribute("data-role", principal.role)
    expect(who).to_contain_text(principal.subject)
    session = [c for c in page.context.cookies() if c["name"] == "te_session"]
    assert len(session) == 1 and session[0]["httpOnly"] and session[0]["sameSite"] == "Strict"
    follow(page, page.locator("#sign-out"))
    expect(page.locator("#sign-in-form")).to_be_visible()
    page.goto(f"{live_service.url}/ui/")
    assert page.url.startswith(f"{live_service.url}/ui/sign-in")


# -- every page ---------------------------------------------------------------------------------------------


def test_every_main_page_loads_with_its_style_and_script_and_no_browser_error(
    page: Page, browser_log: BrowserLog, live_service: LiveService
) -> None:
    sign_in(page, live_service, "admin")
    scope_links = page.locator("#org-tree a[data-link]")
    hrefs: list[str] = scope_links.evaluate_all("els => els.map(e => e.getAttribute('href') || '')")
    # Every scope has its templates and policy links; the admin may edit every scope.
    assert len(hrefs) == 4 * page.locator("#org-tree li[data-scope]").count() >= 4 * 7
    explain_hrefs: list[str] = []
    for href in hrefs:
        response = page.goto(f"{live_service.url}{href}")
        assert response is not None and response.status == 200, href
        assert page.locator("h1").is_visible(), href
        rules = page.evaluate("[...document.styleSheets].reduce((n, s) => n + s.cssRules.length, 0)")
        assert rules > 50, href  # the stylesheet of /ui/static/ is applied
        scripts = page.evaluate("performance.getEntriesByType('resource').map(e => new URL(e.name).pathname)")
        assert "/ui/static/ui.js" in scripts, href
        expect(page.locator("#site-nav")).to_be_visible()
        links = page.locator("table#templates tr[data-template] a")
        explain_hrefs += links.evaluate_all("els => els.map(e => e.getAttribute('href') || '')")
        assert browser_log.errors == [], href
    assert len(explain_hrefs) >= len(cli_json("check", "--root", str(EXAMPLE))["results"])
    for href in explain_hrefs:
        response = page.goto(f"{live_service.url}{href}")
        assert response is not None and response.status == 200, href
        expect(page.locator("#legend-h")).to_be_visible()
        assert page.locator('section[aria-labelledby="worker-h"] li.node').count() > 10, href
        assert browser_log.errors == [], href


# -- the org tree -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("role", ["admin", "research", "vision", "viewer"])
def test_the_org_tree_shows_what_the_api_lists_for_the_same_token(
    page: Page, live_service: LiveService, role: str
) -> None:
    with client(live_service, role) as api:
        departments = ok(api.get("/api/v1/org-unit/departments"))["departments"]
        projects = ok(api.get("/api/v1/org-unit/projects"))["projects"]
        keys = ["system"] + [f"department:{d['id']}" for d in departments]
        keys += [f"project:{p['id']}" for p in projects]
        writable = {key: may_write(api, key) for key in keys}
    sign_in(page, live_service, role)
    tree = page.locator("#org-tree")
    shown = {
        (item.get_attribute("data-scope"), item.get_attribute("data-scope-type"))
        for item in tree.locator("li[data-scope]").all()
    }
    expected = {("system", "system")} | {(f"department:{d['id']}", "department") for d in departments}
    expected |= {(f"project:{p['id']}", "project") for p in projects}
    assert shown == expected
    for department in departments:
        item = tree.locator(f'li[data-scope="department:{department["id"]}"]')
        expect(item.locator(":scope > .scope-name")).to_have_text(f"department {department['name']}")
    for project in projects:
        item = tree.locator(f'li[data-scope="project:{project["id"]}"]')
        expect(item.locator(":scope > .scope-name")).to_have_text(f"project {project['name']}")
        parent = item.locator("xpath=ancestor::li[@data-scope][1]")
        expect(parent).to_have_attribute("data-scope", f"department:{project['parentId']}")
    # Edit links exactly where the API accepts a write with this token.
    assert any(writable.values()) == (role != "viewer")
    for key, may in writable.items():
        item = tree.locator(f'li[data-scope="{key}"]').locator(":scope > .meta a[data-link]")
        links = {a.get_attribute("data-link") for a in item.all()}
        expected_links = {"templates", "policy"} | ({"edit-defaults", "edit-policy"} if may else set())
        assert links == expected_links, (role, key)


# -- a scope's templates ------------------------------------------------------------------------------------


def test_a_projects_templates_table_matches_the_api_and_check(
    page: Page, live_service: LiveService, api: httpx.Client
) -> None:
    nlp = project_id(api, "nlp")
    pairs = {
        r["template"]: r
        for r in cli_json("check", "--root", str(EXAMPLE))["results"]
        if r["project"] == "nlp"
    }
    compliance = {t["meta"]["id"]: t["complianceIssues"] for t in templates(api, complyToProject=nlp)}
    by_id = {t["meta"]["id"]: t["meta"] for t in templates(api)}
    sign_in(page, live_service, "admin")
    follow(page, page.locator(f'li[data-scope="project:{nlp}"] > .meta a[data-link="templates"]'))
    rows = page.locator("table#templates tbody tr[data-template]")
    assert sorted(rows.evaluate_all("rows => rows.map(r => r.dataset.template)")) == sorted(pairs)
    runnable = {True: 0, False: 0}
    for row in rows.all():
        template_id = row.get_attribute("data-template-id") or ""
        read = ok(api.get(template_url(by_id[template_id]), params={"projectId": nlp}))
        name = read["meta"]["name"]
        assert row.get_attribute("data-template") == name
        # The template the row links to is the one check composes for nlp (a nearer scope's shadows).
        assert scope_words(api, by_id[template_id]) == pairs[name]["scope"], name
        is_runnable = read["runnable"]["isRunnable"]
        assert is_runnable == pairs[name]["isRunnable"], name
        assert row.get_attribute("data-runnable") == ("true" if is_runnable else "false"), name
        expect(row.locator("td.status")).to_have_text(pairs[name]["status"])
        issues = [i for i in compliance[template_id] if i.get("rule")]
        assert row.get_attribute("data-compliance-issues") == str(len(issues)), name
        runnable[is_runnable] += 1
    assert runnable[True] and runnable[False]  # nlp has both (mpi-horovod is not compliant there)


@pytest.mark.parametrize("department", [None, "research"], ids=["system", "department"])
def test_a_scopes_templates_table_matches_the_engine(
    page: Page, live_service: LiveService, api: httpx.Client, department: str | None
) -> None:
    """Seen from the system or a department, the table lists what the engine sees from there: each
    template visible (a nearer scope's shadows a farther one's), composed from there."""
    org = load_org(EXAMPLE)
    view = View(department=department)
    expected = {}
    for name, template in org.visible(view).items():
        runnable = compose(org, template, view).runnable
        compliance = sum(issue.rule is not None for issue in runnable.issues)
        expected[name] = ("true" if runnable.is_runnable else "false", str(template.scope), str(compliance))
    assert len(expected) >= 2
    key = "system" if department is None else f"department:{department_id(api, department)}"
    sign_in(page, live_service, "admin")
    follow(page, page.locator(f'li[data-scope="{key}"] > .meta a[data-link="templates"]'))
    rows = page.locator("table#templates tbody tr[data-template]")
    shown = {
        row.get_attribute("data-template"): (
            row.get_attribute("data-runnable"),
            row.locator("td").nth(1).inner_text(),
            row.get_attribute("data-compliance-issues"),
        )
        for row in rows.all()
    }
    assert shown == expected


# -- the explain view ---------------------------------------------------------------------------------------


def bump(api: httpx.Client, url: str, times: int) -> None:
    """Store a scope's defaults again unchanged, so its version is not the seed's 1."""
    for _ in range(times):
        current = api.get(url)
        ok(api.put(url, json=current.json(), headers={"If-Match": current.headers["etag"]}))


@pytest.mark.own_service  # it stores a change: a service of its own
def test_a_values_colour_and_hover_text_name_the_layer_and_the_stored_document_and_version(
    page: Page, live_service: LiveService, api: httpx.Client
) -> None:
    vision = project_id(api, "vision")
    research = department_id(api, "research")
    bump(api, f"/api/v1/defaults/departments/{research}", 2)  # research's defaults: version 3
    template = template_named(api, "vit-finetune", "project", vision)
    template_id = template["meta"]["id"]
    ok(
        api.patch(
            f"/api/v1/workload-templates/distributed/{template_id}",
            json={"spec": {"numWorkers": template["spec"]["numWorkers"]}},
            headers={"If-Match": '"1"'},
        )
    )  # the template: version 2
    entries = [e for e in explain(api, template_id, vision) if e["replica"] == "worker"]
    one_per_label: dict[str, dict[str, Any]] = {}
    for entry in entries:
        if entry["action"] == "set" and isinstance(entry["value"], str | int | bool):
            one_per_label.setdefault(legend_label(entry["layer"]), entry)
    assert len(one_per_label) >= 7, sorted(one_per_label)
    labels = {
        e["file"]: document_label(api, e["file"])
        for e in one_per_label.values()
        if e["file"].startswith("db:")
    }
    assert "defaults of department research, version 3" in labels.values()
    assert "template vit-finetune, version 2" in labels.values()
    sign_in(page, live_service, "vision")
    page.goto(f"{live_service.url}/ui/scope/project:{vision}")
    follow(page, page.locator(f'tr[data-template-id="{template_id}"] a'))
    expect(page.locator("#legend-h")).to_be_visible()
    legend = {
        label: page.locator(".legend .badge").filter(has_text=re.compile(f"^{re.escape(label)}$"))
        for label in one_per_label
    }
    colours = {
        label: (style(b, "backgroundColor"), style(b, "borderTopColor")) for label, b in legend.items()
    }
    assert len(set(colours.values())) == len(colours), "two kinds of layer share a colour"
    for label, entry in one_per_label.items():
        field = entry["field"]
        value = mark(page, "worker", field)
        # The node's data-layer is the kind of the legend entry with that label.
        kind = node(page, "worker", field).get_attribute("data-layer")
        assert f"k-{kind}" in (legend[label].locator("xpath=..").get_attribute("class") or "").split(), field
        assert (style(value, "backgroundColor"), style(value, "borderLeftColor")) == colours[label], field
        badge = node(page, "worker", field).locator(":scope > .entry > .badge")
        expect(badge).to_have_text(label)
        where = f"{entry['layer']}, {labels[entry['file']]}" if entry["file"] in labels else entry["layer"]
        title = value.get_attribute("title") or ""
        assert title.startswith(f"{field}: ") and where in title, (field, title)
        assert "db:" not in title, title  # the page names documents, never database addresses
        shown = panel(page, value)
        expect(shown).to_be_hidden()
        value.hover()
        expect(shown).to_be_visible()
        expect(shown).to_contain_text(where)
        page.mouse.move(0, 0)
        expect(shown).to_be_hidden()
        value.focus()
        expect(shown).to_be_visible()
        value.evaluate("el => el.blur()")


def test_an_excluded_item_is_struck_through_and_names_the_document_that_excluded_it(
    page: Page, live_service: LiveService, api: httpx.Client
) -> None:
    vision = project_id(api, "vision")
    template_id = template_named(api, "vit-finetune", "project", vision)["meta"]["id"]
    entries = [e for e in explain(api, template_id, vision) if e["replica"] == "worker"]
    given = {e["field"] for e in entries if e["action"] == "added"}
    excluded = [e for e in entries if e["action"] == "excluded"]
    only_excluded = [e for e in excluded if e["field"] not in given]
    assert only_excluded and len(only_excluded) < len(excluded)  # both kinds are in the example org
    sign_in(page, live_service, "viewer")
    page.goto(f"{live_service.url}/ui/template/{template_id}?view=project:{vision}")
    for entry in only_excluded:
        value = mark(page, "worker", entry["field"])
        assert struck(value), entry["field"]
        badges = node(page, "worker", entry["field"]).locator(".badge").all_inner_texts()
        assert f"excluded by {legend_label(entry['layer'])}" in badges, (entry["field"], badges)
        title = value.get_attribute("title") or ""
        assert f"excluded by {entry['layer']}, {document_label(api, entry['file'])}" in title, title
    for entry in excluded:
        if entry["field"] in given:  # excluded below and given again above: not struck through
            value = mark(page, "worker", entry["field"])
            assert not struck(value), entry["field"]
            assert document_label(api, entry["file"]) in (value.get_attribute("title") or "")


def test_a_compliance_issue_is_marked_at_its_field_with_its_rule(
    page: Page, live_service: LiveService, api: httpx.Client
) -> None:
    nlp = project_id(api, "nlp")
    template_id = template_named(api, "mpi-horovod", "system")["meta"]["id"]
    read = ok(api.get(f"/api/v1/workload-templates/distributed/{template_id}", params={"projectId": nlp}))
    issues = [i for i in read["runnable"]["issues"] if i.get("rule")]
    listed = next(t for t in templates(api, complyToProject=nlp) if t["meta"]["id"] == template_id)
    # The example org: mpi-horovod changes the research policy's locked data source, seen from nlp.
    assert issues and [(i["field"], i["rule"]) for i in issues] == [
        (i["field"], i["rule"]) for i in listed["complianceIssues"]
    ]
    assert any("research policy" in i["message"] for i in issues)
    sign_in(page, live_service, "research")
    page.goto(f"{live_service.url}/ui/scope/project:{nlp}")
    row = page.locator(f'tr[data-template-id="{template_id}"]')
    expect(row).to_have_attribute("data-compliance-issues", str(len(issues)))
    follow(page, row.locator("a"))
    for issue in issues:
        where = node(page, issue["replica"], issue["field"])
        expect(where.locator(f'span.flag.issue[data-issue="{issue["rule"]}"]')).to_have_count(1)
        expect(where.locator("span.flag.issue").first).to_contain_text(issue["rule"])
        value = mark(page, issue["replica"], issue["field"])
        assert issue["message"] in (value.get_attribute("title") or ""), issue
        assert style(value, "outlineStyle") != "none", issue
    # Only the fields with an issue are marked.
    marked = page.locator(
        "li.node:has(> .entry > span.flag.issue), li.node:has(> details > summary > span.flag.issue)"
    )
    assert sorted(
        (
            m.evaluate("el => el.closest('section').getAttribute('aria-labelledby')"),
            m.get_attribute("data-field"),
        )
        for m in marked.all()
    ) == sorted((f"{i['replica']}-h", i["field"]) for i in read["runnable"]["issues"])


# -- a pending change: preview and save ---------------------------------------------------------------------


def impact_of(tmp_path: Path, rel: str, old: str, new: str) -> list[dict[str, Any]]:
    """``template-engine impact`` of one textual change to a copy of the example org."""
    before, after = tmp_path / "before", tmp_path / "after"
    shutil.copytree(EXAMPLE, before)
    shutil.copytree(EXAMPLE, after)
    changed = after / rel
    text = changed.read_text(encoding="utf-8")
    assert text.count(old) == 1, (rel, old)
    changed.write_text(text.replace(old, new), encoding="utf-8")
    pairs: list[dict[str, Any]] = cli_json(
        "impact", str(changed), "--root", str(after), "--against", str(before), "--no-cache"
    )["pairs"]
    return pairs


@pytest.mark.own_service  # it stores a change: a service of its own
def test_the_preview_lists_exactly_what_impact_lists_stores_nothing_and_save_stores(
    page: Page, live_service: LiveService, api: httpx.Client, tmp_path: Path
) -> None:
    old, new = "value: research\n", "value: research-ml\n"  # research's tier label
    expected = impact_of(tmp_path, "departments/research/defaults.yaml", old, new)
    assert (
        0
        < len(expected)
        < len(
            [r for r in cli_json("check", "--root", str(EXAMPLE))["results"] if r["department"] == "research"]
        )
    )  # some research pairs, not all: vision excludes the tier label
    research = department_id(api, "research")
    url = f"/api/v1/defaults/departments/{research}"
    stored = api.get(url)
    before_version, before_document = version(stored), stored.json()
    sign_in(page, live_service, "research")
    follow(page, page.locator(f'li[data-scope="department:{research}"] > .meta a[data-link="edit-defaults"]'))
    expect(page.locator("#change-form")).to_be_visible()
    expect(page.locator("#version")).to_have_value(str(before_version))
    text = editor_text(page)
    assert text.count(old) == 1 and text == page.locator("#document-text").input_value()
    type_document(page, text.replace(old, new))
    follow(page, page.locator("#preview"))
    expect(page.locator("#results-h")).to_be_visible()
    items = page.locator("ol#preview-results > li")
    expect(page.locator("ol#preview-results")).to_have_attribute("data-count", str(len(expected)))
    assert [i.get_attribute("data-pair") for i in items.all()] == [p["pair"] for p in expected]
    by_id = {t["meta"]["id"]: t["meta"] for t in templates(api)}
    for item, pair in zip(items.all(), expected, strict=True):
        meta = by_id[item.get_attribute("data-template-id") or ""]
        assert (meta["name"], scope_words(api, meta)) == (pair["template"], pair["scope"]), pair["pair"]
        assert item.get_attribute("data-before") == pair["old"]["status"]
        assert item.get_attribute("data-after") == pair["new"]["status"]
        rows = item.locator("table.changes tbody tr")
        assert [(r.get_attribute("data-field"), r.get_attribute("data-change")) for r in rows.all()] == [
            (c["field"], c["change"]) for c in pair["changes"]
        ], pair["pair"]
    # Nothing is stored by a preview; the form still holds the text and the version it was read at.
    stored = api.get(url)
    assert (version(stored), stored.json()) == (before_version, before_document)
    expect(page.locator("#version")).to_have_value(str(before_version))
    assert editor_text(page) == text.replace(old, new)
    follow(page, page.locator("#save"))
    expect(page.locator("#saved")).to_be_visible()
    stored = api.get(url)
    assert version(stored) == before_version + 1
    tier = [label for label in stored.json()["spec"]["labels"] if label["name"] == "tier"]
    assert tier == [{"name": "tier", "value": "research-ml"}]
    expect(page.locator("#version")).to_have_value(str(before_version + 1))
    expect(page.locator("#saved")).to_contain_text(f"version {before_version + 1}")


# -- hostile values -----------------------------------------------------------------------------------------


@pytest.mark.own_service  # it stores a change: a service of its own
def test_a_hostile_value_renders_as_text_and_runs_nothing(
    page: Page, live_service: LiveService, api: httpx.Client
) -> None:
    vision = project_id(api, "vision")
    created = ok(
        api.post(
            "/api/v1/workload-templates/distributed",
            json={
                "meta": {"name": "hostile", "description": SCRIPT, "scopeType": "project", "scopeId": vision},
                "spec": {
                    "distributedFramework": "PyTorch",
                    "numWorkers": 2,
                    "environmentVariables": [{"name": "PAYLOAD", "value": ATTRIBUTE}],
                    "labels": [{"name": "note", "value": SCRIPT}],
                    "args": ATTRIBUTE + SCRIPT,
                },
            },
        ),
        202,
    )
    template_id = created["meta"]["id"]
    assert created["meta"]["description"] == SCRIPT
    explained = {e["field"]: e for e in explain(api, template_id, vision) if e["replica"] == "worker"}
    assert explained["environmentVariables[name=PAYLOAD].value"]["value"] == ATTRIBUTE
    sign_in(page, live_service, "vision")

    def harmless() -> None:
        assert page.evaluate("typeof window.__pwned") == "undefined", page.url
        assert page.locator("img, iframe, object, embed").count() == 0, page.url
        scripts = page.locator("script").evaluate_all("s => s.map(e => new URL(e.src, location).pathname)")
        assert scripts == ["/ui/static/ui.js"], page.url

    page.goto(f"{live_service.url}/ui/scope/project:{vision}")
    harmless()
    row = page.locator(f'tr[data-template-id="{template_id}"]')
    expect(row.locator("td .meta")).to_have_text(SCRIPT)
    expect(row.locator("a")).to_have_text("hostile")
    follow(page, row.locator("a"))
    expect(page.locator("#legend-h")).to_be_visible()
    harmless()
    assert SCRIPT in page.locator("header").inner_text()
    for field, payload in (
        ("environmentVariables[name=PAYLOAD].value", ATTRIBUTE),
        ("labels[name=note].value", SCRIPT),
        ("args", ATTRIBUTE + SCRIPT),
    ):
        value = mark(page, "worker", field)
        assert payload in value.inner_text().replace('\\"', '"'), field
        value.hover()
        harmless()
    assert escape(SCRIPT) in page.content()


# -- cross-site requests ------------------------------------------------------------------------------------


class _Attacker(http.server.ThreadingHTTPServer):
    page_html = b""


class _AttackerPage(http.server.BaseHTTPRequestHandler):
    server: _Attacker

    def do_GET(self) -> None:  # http.server's name
        body = self.server.page_html if self.path == "/" else b""
        self.send_response(200 if body else 204)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def attacker() -> Iterator[_Attacker]:
    """Another site: a second local HTTP server on its own free port, serving ``page_html`` at ``/``."""
    server = _Attacker(("127.0.0.1", 0), _AttackerPage)
    # Polled every 20 ms, not http.server's 0.5 s: shutdown() waits for the next poll.
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()
    thread.join(timeout=10)


@pytest.mark.parametrize("with_csrf", [False, True], ids=["no-csrf-token", "stolen-csrf-token"])
def test_a_cross_site_form_post_is_refused_and_stores_nothing(
    page: Page,
    browser_log: BrowserLog,
    live_service: LiveService,
    api: httpx.Client,
    attacker: _Attacker,
    with_csrf: bool,
) -> None:
    research = department_id(api, "research")
    url = f"/api/v1/defaults/departments/{research}"
    stored = api.get(url)
    before = (version(stored), stored.json())
    sign_in(page, live_service, "admin")
    edit = f"/ui/scope/department:{research}/edit/defaults"
    page.goto(f"{live_service.url}{edit}")
    csrf = page.locator('#change-form input[name="csrf"]').get_attribute("value") or ""
    assert csrf
    fields = {"action": "save", "version": str(before[0]), "text": "spec:\n  priorityClass: high\n"}
    if with_csrf:  # even the right token: the request comes from another site
        fields["csrf"] = csrf
    inputs = "".join(
        f'<input type="hidden" name="{escape(k)}" value="{escape(v)}">' for k, v in fields.items()
    )
    attacker.page_html = (
        f'<!doctype html><form id="f" method="post" action="{live_service.url}{edit}">{inputs}</form>'
        '<script>document.getElementById("f").submit();</script>'
    ).encode()
    host, port = attacker.server_address[:2]
    assert port != int(live_service.url.rsplit(":", 1)[1])
    page.goto(f"http://{host!s}:{port}/")
    page.wait_for_url(f"{live_service.url}{edit}")
    main = page.locator("main[data-status]")
    expect(main).to_have_attribute("data-status", "403")
    expect(page.locator("h1")).to_contain_text("another site")
    # The session cookie went with the request (same site, another origin): it was refused all the same.
    expect(page.locator("#signed-in-as")).to_have_attribute("data-role", "system-admin")
    take_refusals(browser_log, 403, edit)
    stored = api.get(url)
    assert (version(stored), stored.json()) == before


# -- a viewer -----------------------------------------------------------------------------------------------


def test_a_viewer_sees_no_edit_or_save_and_a_forbidden_page_shows_its_status(
    page: Page, browser_log: BrowserLog, live_service: LiveService, api: httpx.Client
) -> None:
    research = department_id(api, "research")
    vision = project_id(api, "vision")
    with client(live_service, "viewer") as viewer:
        assert not may_write(viewer, f"department:{research}")
        assert not may_write(viewer, f"project:{vision}")
    sign_in(page, live_service, "viewer")
    expect(page.locator('#org-tree a[data-link^="edit-"]')).to_have_count(0)
    for path in (f"/ui/scope/department:{research}", f"/ui/scope/project:{vision}/policy"):
        page.goto(f"{live_service.url}{path}")
        expect(page.locator("h1")).to_be_visible()
        expect(
            page.locator("#edit-defaults-link, #edit-policy-link, #save, #preview, #change-form")
        ).to_have_count(0)
    for document in ("defaults", "policy"):
        path = f"/ui/scope/department:{research}/edit/{document}"
        response = page.goto(f"{live_service.url}{path}")
        assert response is not None and response.status == 403
        expect(page.locator("main[data-status]")).to_have_attribute("data-status", "403")
        expect(page.locator("h1")).to_contain_text("403")
        expect(page.locator("#save, #preview, #change-form, #document-text")).to_have_count(0)
        take_refusals(browser_log, 403, path)
    # A project editor is refused its department's form the same way, and given its own project's.
    follow(page, page.locator("#sign-out"))
    expect(page.locator("#sign-in-form")).to_be_visible()
    sign_in(page, live_service, "vision")
    path = f"/ui/scope/department:{research}/edit/defaults"
    response = page.goto(f"{live_service.url}{path}")
    assert response is not None and response.status == 403
    take_refusals(browser_log, 403, path)
    page.goto(f"{live_service.url}/ui/scope/project:{vision}/edit/defaults")
    expect(page.locator("#save")).to_be_visible()
    expect(page.locator("#preview")).to_be_visible()


# -- the document editor ------------------------------------------------------------------------------------


def test_the_document_editor_numbers_and_highlights_lines_and_marks_a_problem_at_its_line(
    page: Page, browser_log: BrowserLog, live_service: LiveService, api: httpx.Client
) -> None:
    research = department_id(api, "research")
    stored = api.get(f"/api/v1/defaults/departments/{research}")
    sign_in(page, live_service, "research")
    follow(page, page.locator(f'li[data-scope="department:{research}"] > .meta a[data-link="edit-defaults"]'))
    # CodeMirror over the textarea, from the service's own origin (the page fixture fails on a CSP refusal).
    editor = page.locator("#document-editor")
    expect(editor).to_be_visible()
    expect(page.locator("#document-text")).to_be_hidden()
    scripts = page.evaluate("performance.getEntriesByType('resource').map(e => new URL(e.name).pathname)")
    assert "/ui/static/codemirror.js" in scripts and "/ui/static/codemirror.css" in scripts
    text = editor_text(page)
    lines = text.split("\n")
    assert len(lines) > 20 and lines[0] == "spec:"
    numbers = editor.locator(".CodeMirror-linenumber").all_inner_texts()
    assert [n for n in numbers if n.strip()][: len(lines)] == [str(i) for i in range(1, len(lines) + 1)]
    # YAML highlighting: keys and the list dashes are tokens of their own, styled apart from plain text.
    keys = [key.strip() for key in editor.locator(".cm-atom").all_inner_texts()]
    assert "spec" in keys and "labels" in keys
    key_colour = style(editor.locator(".cm-atom").first, "color")
    assert key_colour != style(editor.locator(".CodeMirror-code"), "color")
    # A typo typed after the preemptibility line (the editor keeps the indentation), then Ctrl+Enter.
    at = next(i for i, line in enumerate(lines) if line.startswith("  preemptibility:"))
    editor.locator(".CodeMirror-line").nth(at).click()
    page.keyboard.press("End")
    page.keyboard.press("Enter")
    page.keyboard.type("numWorker: 3")
    typed = editor_text(page).split("\n")
    assert typed[at + 1] == "  numWorker: 3"
    with page.expect_navigation():
        page.keyboard.press("Control+Enter")
    page.wait_for_load_state("load")
    take_refusals(browser_log, 400, f"/ui/scope/department:{research}/edit/defaults")
    problem = page.locator("#problem-list li")
    expect(problem).to_have_count(1)
    expect(problem).to_have_attribute("data-line", str(at + 2))
    expect(problem).to_contain_text(f"line {at + 2}: spec.numWorker: unknown field")
    assert editor_text(page) == "\n".join(typed)  # the form posted what the editor held
    # The marker sits in the gutter of that line, with the problem as its hover text, and the line is tinted.
    marker = editor.locator(".te-problem-marker")
    expect(marker).to_have_count(1)
    expect(marker).to_have_attribute("data-line", str(at + 2))
    assert "spec.numWorker: unknown field" in (marker.get_attribute("title") or "")
    row = editor.locator(".CodeMirror-code > div").filter(has=page.locator(".te-problem-marker"))
    expect(row).to_have_count(1)
    expect(row.locator(".CodeMirror-linenumber")).to_have_text(str(at + 2))
    expect(row.locator(".te-problem-line")).to_have_count(1)
    expect(row.locator(".CodeMirror-line")).to_have_text("  numWorker: 3")
    # The problem's link puts the cursor on its line.
    page.locator("#problem-list a.line-ref").click()
    assert page.evaluate("document.getElementById('document-editor').CodeMirror.getCursor().line") == at + 1
    assert page.evaluate("document.getElementById('document-editor').CodeMirror.hasFocus()")
    assert api.get(f"/api/v1/defaults/departments/{research}").json() == stored.json()  # nothing stored


def test_the_document_editor_indents_with_spaces_and_lets_the_keyboard_leave(
    page: Page, live_service: LiveService, api: httpx.Client
) -> None:
    research = department_id(api, "research")
    sign_in(page, live_service, "research")
    page.goto(f"{live_service.url}/ui/scope/department:{research}/edit/policy")
    editor = page.locator("#document-editor")
    editor.locator(".CodeMirror-line").first.click()
    page.keyboard.press("Home")
    page.keyboard.press("Tab")
    assert editor_text(page).split("\n")[0].startswith("  ")  # YAML: spaces, never a tab
    assert "\t" not in editor_text(page)
    page.keyboard.press("Escape")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.id") == "preview"  # Esc, Tab: on to the next control
    editor.locator(".CodeMirror-line").first.click()
    page.keyboard.press("Escape")
    page.keyboard.press("Shift+Tab")
    assert page.evaluate("document.activeElement.textContent") == "Edit defaults"  # the link before it


def test_without_script_the_form_is_the_plain_textarea_and_still_previews(
    page: Page, live_service: LiveService, api: httpx.Client
) -> None:
    research = department_id(api, "research")
    sign_in(page, live_service, "research")
    browser = page.context.browser
    assert browser is not None
    context = browser.new_context(java_script_enabled=False, viewport=page.viewport_size)
    try:
        context.add_cookies(page.context.cookies())
        plain = context.new_page()
        plain.goto(f"{live_service.url}/ui/scope/department:{research}/edit/defaults")
        expect(plain.locator("#document-text")).to_be_visible()
        expect(plain.locator(".CodeMirror")).to_have_count(0)
        text = plain.locator("#document-text").input_value()
        plain.locator("#document-text").fill(text.replace("value: WARN", "value: INFO"))
        plain.locator("#preview").click()
        plain.wait_for_load_state("load")
        expect(plain.locator("#results-h")).to_contain_text("Preview against version")
        expect(plain.locator("ol#preview-results > li").first).to_be_visible()
    finally:
        context.close()
