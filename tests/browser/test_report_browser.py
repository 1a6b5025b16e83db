"""The static report (``template-engine report``) in a real browser: what a reader sees and can reach.

Every expectation comes from the engine through its other commands (``check``, ``explain``, ``diff``), never
from the page under test: the index must agree with ``check``, a value's colour, label and hover text with
``explain``, a pair's changes with ``diff``.  Colours are compared as the browser computes them, against
the legend's colour of the layer ``explain`` names.
"""

from __future__ import annotations

import json
import re
import shutil
import struct
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
import yaml
from browser_helpers import (
    EXAMPLE,
    REPO,
    VIEWPORT,
    BrowserLog,
    MakeReport,
    Report,
    cli_json,
    git,
    pair_id_of,
)
from playwright.sync_api import Locator, Page

# -- reading the engine and the page ------------------------------------------------------------------------


def legend_label(layer: str) -> str:
    """The legend's label for a layer as ``explain`` names it (the table of docs/views.md)."""
    if layer.startswith("defaultFrom rule of "):
        return "defaultFrom"
    if layer.startswith("datasource asset "):
        return "imposed" if " (imposed by the " in layer else "data source"
    return layer.split()[0]  # system, department, project, environment, compute, template


def explain_entries(project: str, template: str, root: Path = EXAMPLE) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = cli_json(
        "explain", "--root", str(root), "-p", project, "-t", template, ok=(0,)
    )["entries"]
    return entries


def by_field(entries: Iterable[dict[str, Any]], replica: str = "worker") -> dict[str, dict[str, Any]]:
    """Each field's entry; an item excluded below and given again keeps the entry that gives it."""
    out: dict[str, dict[str, Any]] = {}
    for entry in entries:
        if entry["replica"] == replica and not (entry["action"] == "excluded" and entry["field"] in out):
            out[entry["field"]] = entry
    return out


def css_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def tree(page: Page, replica: str) -> Locator:
    """``combinedSpec`` (worker) or ``combinedMasterSpec`` (master)."""
    return page.locator(f'section[aria-labelledby="{replica}-h"]')


def node(page: Page, replica: str, field: str) -> Locator:
    found = tree(page, replica).locator(f"li[data-field={css_string(field)}]")
    assert found.count() == 1, f"{replica} {field}: {found.count()} nodes"
    return found


def mark(page: Page, replica: str, field: str) -> Locator:
    """The focusable value (or item) mark of a node: the element that carries its colour and hover text."""
    return node(page, replica, field).locator(":scope > .entry > .val, :scope > details > summary > .val")


def style(locator: Locator, prop: str) -> str:
    value: str = locator.evaluate(f"el => getComputedStyle(el).{prop}")
    return value


def legend_badge(page: Page, label: str) -> Locator:
    found = page.locator(".legend .badge").filter(has_text=re.compile(f"^{re.escape(label)}$"))
    assert found.count() == 1, f"the legend has {found.count()} entries labelled {label!r}"
    return found


def provenance_of(page: Page, value: Locator) -> Locator:
    """The provenance panel a value names as its accessible description."""
    described = value.get_attribute("aria-describedby")
    assert described, "a value without aria-describedby"
    return page.locator(f"#{described}")


def place(entry: dict[str, Any]) -> str:
    return f"{entry['file']}:{entry['line']}"


# -- the index ----------------------------------------------------------------------------------------------


def test_every_page_of_the_report_loads_with_its_styles_and_no_browser_error(
    page: Page, browser_log: BrowserLog, example_report: Report
) -> None:
    pages = example_report.pages()
    results = cli_json("check", "--root", str(EXAMPLE))["results"]
    projects = {r["project"] for r in results if r["project"]}
    assert len(pages) == len(results) + 1 + len(
        projects
    )  # a page per pair, the index, a kinds page per project
    for rel in pages:
        page.goto(example_report.url(rel))
        assert page.locator("h1").is_visible(), rel
        # The inline stylesheet is applied (a CSP that blocked it would leave no rules).
        rules = page.evaluate("[...document.styleSheets].reduce((n, s) => n + s.cssRules.length, 0)")
        assert rules > 50, rel
        assert browser_log.errors == [], rel


def test_the_error_log_sees_what_the_pages_policy_blocks(
    page: Page, browser_log: BrowserLog, example_report: Report
) -> None:
    """The log the other tests rely on catches a blocked load and a script error; the report's
    Content-Security-Policy blocks what a value could smuggle in (a script, an image from elsewhere)."""
    page.goto(example_report.url())
    assert browser_log.errors == []
    page.evaluate(
        """() => { const img = document.createElement('img'); img.src = 'https://example.invalid/x.png';
                   document.body.append(img); }"""
    )
    page.evaluate("() => { setTimeout(() => { throw new Error('thrown by the test'); }); }")

    def seen() -> tuple[bool, bool]:
        blocked = any("Content Security Policy" in e and "example.invalid" in e for e in browser_log.errors)
        return blocked, any("thrown by the test" in e for e in browser_log.errors)

    for _ in range(500):  # the load is refused and the error thrown asynchronously: wait for both
        if all(seen()):
            break
        page.wait_for_timeout(10)  # lets Playwright deliver the page's events; at most 5 s in all
    assert seen() == (True, True), browser_log
    browser_log.errors.clear()  # expected here: the page fixture must not fail this test


def test_the_index_shows_every_pair_with_the_state_check_gives(page: Page, example_report: Report) -> None:
    check = cli_json("check", "--root", str(EXAMPLE))
    expected = {pair_id_of(r): r for r in check["results"]}
    page.goto(example_report.url())
    headers = page.locator("thead th").all_inner_texts()
    status_col, compliance_col = headers.index("Status"), headers.index("Compliance")
    rows = page.locator("tbody tr[data-pair]")
    seen = {}
    colours: dict[bool, set[str]] = {True: set(), False: set()}
    for i in range(rows.count()):
        row = rows.nth(i)
        pair = row.get_attribute("data-pair") or ""
        cells = row.locator("td").all_inner_texts()
        seen[pair] = (cells[status_col], cells[compliance_col])
        if pair in expected:
            colours[expected[pair]["isRunnable"]].add(style(row.locator("td").nth(status_col), "color"))
    assert sorted(seen) == sorted(expected)
    for pair, result in expected.items():
        status, compliance = seen[pair]
        assert status == result["status"], pair
        policy_issues = sum(issue.get("rule") is not None for issue in result["issues"])
        if policy_issues:
            assert re.match(rf"{policy_issues}\b", compliance), (pair, compliance)
        else:
            assert compliance == "compliant", pair
    # Painted by the runnable state: one colour for runnable pairs, another for the rest.
    assert len(colours[True]) == 1 and len(colours[False]) == 1 and colours[True] != colours[False], colours
    summary = page.locator("header .meta").first.inner_text()
    assert re.search(rf"\b{check['total']} pair\(s\): {check['runnable']} runnable\b", summary), summary


def test_a_link_of_the_index_opens_the_pairs_explain_page(page: Page, example_report: Report) -> None:
    check = cli_json("check", "--root", str(EXAMPLE))
    result = next(r for r in check["results"] if not r["isRunnable"])
    page.goto(example_report.url())
    page.locator(f"tr[data-pair={css_string(pair_id_of(result))}] a").click()
    assert page.locator("h1").inner_text().startswith(result["template"])
    assert result["status"] in page.locator("header .status").inner_text()
    page.get_by_role("link", name="All pairs").click()
    assert page.url == example_report.url()


# -- values: colour, label and hover text -------------------------------------------------------------------


def test_a_values_colour_label_and_hover_text_are_those_of_the_layer_explain_names(
    page: Page, example_report: Report
) -> None:
    entries = [e for e in explain_entries("vision", "vit-finetune") if e["replica"] == "worker"]
    one_per_label: dict[str, dict[str, Any]] = {}
    for entry in entries:
        if entry["action"] == "set" and isinstance(entry["value"], str | int | bool):
            one_per_label.setdefault(legend_label(entry["layer"]), entry)
    assert len(one_per_label) >= 7, sorted(one_per_label)  # the example org uses most kinds of layer
    page.goto(example_report.pair_url("projects/vision/vit-finetune"))
    legend_colours = {
        label: (
            style(legend_badge(page, label), "backgroundColor"),
            style(legend_badge(page, label), "borderTopColor"),
        )
        for label in one_per_label
    }
    assert len(set(legend_colours.values())) == len(legend_colours), "two kinds of layer share a colour"
    for label, entry in one_per_label.items():
        field = entry["field"]
        value = mark(page, "worker", field)
        background, edge = legend_colours[label]
        assert style(value, "backgroundColor") == background, (field, label)
        assert style(value, "borderLeftColor") == edge, (field, label)
        # The colour is not the only signal: the label of the layer is written beside the value.
        badge = node(page, "worker", field).locator(":scope > .entry > .badge")
        assert badge.inner_text() == label, field
        title = value.get_attribute("title") or ""
        assert field in title and entry["layer"] in title and place(entry) in title, (field, title)
        panel = provenance_of(page, value)
        assert not panel.is_visible(), field
        value.hover()
        assert panel.is_visible(), field
        assert f"{entry['layer']}, {place(entry)}" in panel.inner_text(), field
        page.mouse.move(0, 0)


def test_tab_reaches_the_values_and_focus_shows_where_each_came_from(
    page: Page, example_report: Report
) -> None:
    entries = explain_entries("vision", "vit-finetune")
    expected = {"worker": by_field(entries, "worker"), "master": by_field(entries, "master")}
    page.goto(example_report.pair_url("projects/vision/vit-finetune"))
    reached: list[str] = []
    previous = None
    for _ in range(60):
        page.keyboard.press("Tab")
        focused = page.evaluate(
            """() => { const el = document.activeElement;
                return { value: el.classList.contains('val'), described: el.getAttribute('aria-describedby'),
                         field: el.closest('li[data-field]')?.dataset.field,
                         replica: el.closest('section.replica')?.getAttribute('aria-labelledby') }; }"""
        )
        if not focused["value"]:
            continue
        replica = focused["replica"].removesuffix("-h")
        entry = expected[replica][focused["field"]]
        panel = page.locator(f"#{focused['described']}")
        assert panel.is_visible(), focused
        assert f"{entry['layer']}, {place(entry)}" in panel.inner_text(), focused
        if previous is not None:
            assert not previous.is_visible(), "the panel of the value left is still shown"
        previous = panel
        reached.append(focused["field"])
        if len(reached) == 8:
            break
    assert len(reached) == 8, f"Tab reached only {reached}"
    assert len(set(reached)) == len(reached)


def test_enter_on_a_focused_mapping_folds_it(page: Page, example_report: Report) -> None:
    page.goto(example_report.pair_url("projects/vision/vit-finetune"))
    compute = node(page, "worker", "compute")
    summary = compute.locator(":scope > details > summary")
    child = node(page, "worker", "compute.cpuCoreLimit")
    assert child.is_visible()
    summary.focus()
    page.keyboard.press("Enter")
    assert not child.is_visible()
    page.keyboard.press("Enter")
    assert child.is_visible()


def test_an_excluded_item_is_struck_through_and_names_the_layer_that_excluded_it(
    page: Page, example_report: Report
) -> None:
    entries = explain_entries("vision", "vit-finetune")
    given = {e["field"] for e in entries if e["replica"] == "worker" and e["action"] == "added"}
    excluded = [e for e in entries if e["replica"] == "worker" and e["action"] == "excluded"]
    only_excluded = [e for e in excluded if e["field"] not in given]
    assert only_excluded and len(only_excluded) < len(excluded)  # both kinds are in the example org
    page.goto(example_report.pair_url("projects/vision/vit-finetune"))
    for entry in only_excluded:
        value = mark(page, "worker", entry["field"])
        struck = value.evaluate(
            """el => [el, ...el.querySelectorAll('*')].some(
                   e => getComputedStyle(e).textDecorationLine.includes('line-through'))"""
        )
        assert struck, entry["field"]
        badges = node(page, "worker", entry["field"]).locator(".badge").all_inner_texts()
        assert f"excluded by {legend_label(entry['layer'])}" in badges, (entry["field"], badges)
        title = value.get_attribute("title") or ""
        assert f"excluded by {entry['layer']}, {place(entry)}" in title, title
    # An item excluded below and given again above is not struck through, and says both.
    for entry in excluded:
        if entry["field"] in given:
            value = mark(page, "worker", entry["field"])
            assert "line-through" not in style(value, "textDecorationLine")
            assert value.locator("s").count() == 0
            assert place(entry) in (value.get_attribute("title") or "")


# -- compliance issues --------------------------------------------------------------------------------------


def test_every_compliance_issue_is_marked_at_its_field_with_its_rule_and_source(
    page: Page, example_report: Report
) -> None:
    check = cli_json("check", "--root", str(EXAMPLE))
    noncompliant = {
        pair_id_of(r): [i for i in r["issues"] if i.get("rule") is not None]
        for r in check["results"]
        if any(i.get("rule") is not None for i in r["issues"])
    }
    # The example org has non-compliant pairs: mpi-horovod in nlp and vision (a locked imposed data source).
    assert {"projects/nlp/mpi-horovod", "projects/vision/mpi-horovod"} <= set(noncompliant)
    for pair, issues in noncompliant.items():
        page.goto(example_report.pair_url(pair))
        listed = page.locator(".issues li")
        for issue in issues:
            where = f"{pair} {issue['replica']} {issue['field']}"
            value = mark(page, issue["replica"], issue["field"])
            flags = node(page, issue["replica"], issue["field"]).locator(".flag.issue").all_inner_texts()
            assert any(issue["rule"] in flag for flag in flags), (where, flags)
            assert style(value, "outlineStyle") != "none", where  # the mark is outlined
            assert issue["message"] in (value.get_attribute("title") or ""), where
            # Listed above the trees with its rule and the policy file and line, linked to the field.
            texts = listed.all_inner_texts()
            at = [
                i
                for i, text in enumerate(texts)
                if text.startswith(f"{issue['replica']} ")
                and issue["message"] in text
                and issue["source"] in text
            ]
            assert len(at) == 1, (where, texts)
            assert f"rule {issue['rule']}" in texts[at[0]], (where, texts[at[0]])
            listed.nth(at[0]).locator("a").click()
            target = page.evaluate("location.hash.slice(1)")
            assert node(page, issue["replica"], issue["field"]).get_attribute("id") == target, where
            assert value.is_visible() and _in_viewport(page, value), where


def _in_viewport(page: Page, locator: Locator) -> bool:
    box = locator.bounding_box()
    return box is not None and box["y"] + box["height"] > 0 and box["y"] < VIEWPORT["height"]


# -- hostile values -----------------------------------------------------------------------------------------

SCRIPT = "</script><script>window.__pwned=1</script>"
ATTRIBUTE = '"><img src=x onerror="window.__pwned=1">'


def test_a_hostile_value_renders_as_text_and_runs_nothing(
    page: Page, make_report: MakeReport, tmp_path: Path
) -> None:
    root = tmp_path / "templates"
    shutil.copytree(EXAMPLE, root)
    hostile = {
        "meta": {"name": "hostile", "description": SCRIPT},
        "spec": {
            "distributedFramework": "PyTorch",
            "numWorkers": 2,
            "environmentVariables": [{"name": "PAYLOAD", "value": ATTRIBUTE}],
            "labels": [{"name": "note", "value": SCRIPT}],
            "args": ATTRIBUTE + SCRIPT,
        },
    }
    (root / "projects/vision/templates/hostile.yaml").write_text(yaml.safe_dump(hostile), encoding="utf-8")
    # A lower layer's value that the template overrides: it is shown in the hover text ("overrode ...").
    defaults = root / "projects/vision/defaults.yaml"
    document = yaml.safe_load(defaults.read_text(encoding="utf-8"))
    document["spec"].setdefault("environmentVariables", []).append({"name": "PAYLOAD", "value": SCRIPT})
    defaults.write_text(yaml.safe_dump(document), encoding="utf-8")
    entries = by_field(explain_entries("vision", "hostile", root))
    assert {"environmentVariables[name=PAYLOAD].value", "labels[name=note].value", "args"} <= set(entries)
    report = make_report(root)
    for url in (report.url(), report.pair_url("projects/vision/hostile")):
        page.goto(url)
        assert page.evaluate("typeof window.__pwned") == "undefined", url
        assert page.locator("script, img, iframe, object, embed").count() == 0, url
    assert page.locator("header .meta").first.inner_text() == SCRIPT
    for field, payload in (
        ("environmentVariables[name=PAYLOAD].value", ATTRIBUTE),
        ("labels[name=note].value", SCRIPT),
        ("args", ATTRIBUTE + SCRIPT),
    ):
        value = mark(page, "worker", field)
        assert payload in value.inner_text().replace('\\"', '"'), field
        value.hover()
        assert page.evaluate("typeof window.__pwned") == "undefined"
    overriding = mark(page, "worker", "environmentVariables[name=PAYLOAD].value")
    assert f'overrode "{SCRIPT}"' in (overriding.get_attribute("title") or "").replace('\\"', '"')
    assert SCRIPT in provenance_of(page, overriding).inner_text().replace('\\"', '"')


# -- --against a git revision -------------------------------------------------------------------------------


@pytest.fixture
def changed_repo(tmp_path: Path) -> Path:
    """A git repository with the example org committed, then a commit that changes research's defaults."""
    repo = tmp_path / "repo"
    shutil.copytree(EXAMPLE, repo / "templates")
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "the example org")
    defaults = repo / "templates/departments/research/defaults.yaml"
    text = defaults.read_text(encoding="utf-8")
    assert "cc-2100" in text and "value: WARN" in text
    defaults.write_text(
        text.replace("cc-2100", "cc-9999").replace("value: WARN", "value: INFO"), encoding="utf-8"
    )
    git(repo, "commit", "-q", "-am", "research: new cost centre, NCCL_DEBUG=INFO")
    return repo


def test_a_report_against_a_revision_shows_the_diff_of_each_changed_pair(
    page: Page, make_report: MakeReport, changed_repo: Path
) -> None:
    diff = cli_json("diff", "--root", "templates", "--against", "HEAD~1", cwd=changed_repo)
    changed = {p["pair"]: p for p in diff["pairs"]}
    assert changed and all(p["status"] == "changed" for p in changed.values())
    report = make_report(Path("templates"), "--against", "HEAD~1", cwd=changed_repo)
    page.goto(report.url())
    headers = page.locator("thead th").all_inner_texts()
    column = headers.index("Against HEAD~1")
    rows = page.locator("tbody tr[data-pair]")
    marks = {
        rows.nth(i).get_attribute("data-pair") or "": rows.nth(i).locator("td").nth(column).inner_text()
        for i in range(rows.count())
    }
    assert {pair for pair, text in marks.items() if text == "changed"} == set(changed)
    assert {text for pair, text in marks.items() if pair not in changed} == {"unchanged"}
    for pair, found in changed.items():
        page.goto(report.pair_url(pair))
        table = page.locator("section.diff table")
        lines = [
            table.locator("tbody tr").nth(i).locator("td").all_inner_texts()
            for i in range(len(found["changes"]))
        ]
        assert table.locator("tbody tr").count() == len(found["changes"]), pair
        for change, cells in zip(found["changes"], lines, strict=True):
            assert cells[0] == change["field"] and cells[1] == change["change"], (pair, cells)
            assert str(change["old"]) in cells[2] and str(change["new"]) in cells[3], (pair, cells)
            assert change["setBy"]["file"] in cells[4], (pair, cells)
            # The changed value is flagged in its tree.
            section, _, field = change["field"].partition(".")
            replica = {"combinedSpec": "worker", "combinedMasterSpec": "master"}[section]
            flags = node(page, replica, field).locator(".flag.changed")
            assert flags.count() == 1 and flags.is_visible(), (pair, field)
    unchanged = next(pair for pair in marks if pair not in changed)
    page.goto(report.pair_url(unchanged))
    assert page.locator("section.diff").count() == 0


# -- the screenshots of docs/images -------------------------------------------------------------------------


#: The images of docs/images another script makes, and that script.
OTHER_SCREENSHOTS = {"lsp-nvim.png": "scripts/lsp_screenshot.py"}


def test_the_screenshot_script_writes_each_main_view_at_laptop_size(tmp_path: Path) -> None:
    script = REPO / "docs/images/make_screenshots.py"
    done = subprocess.run(
        [sys.executable, str(script), "--out", str(tmp_path)], capture_output=True, text=True, timeout=240
    )
    assert done.returncode == 0, done.stderr
    written = sorted(p.name for p in tmp_path.glob("*.png"))
    pages = {p.name for p in (REPO / "docs/images").glob("*.png")}
    # The editor's screenshot is a terminal's, not a browser's: scripts/lsp_screenshot.py makes it.
    assert (REPO / OTHER_SCREENSHOTS["lsp-nvim.png"]).is_file()
    assert written == sorted(pages - OTHER_SCREENSHOTS.keys())
    assert len(written) >= 4
    for name in written:
        header = (tmp_path / name).read_bytes()[:24]
        assert header[:8] == b"\x89PNG\r\n\x1a\n", name
        assert struct.unpack(">II", header[16:24]) == (VIEWPORT["width"], VIEWPORT["height"]), name


# -- the manifests tab --------------------------------------------------------------------------------------


def test_the_manifests_tab_opens_without_script_and_labels_each_value(
    page: Page, browser_log: BrowserLog, example_report: Report
) -> None:
    entry = by_field(explain_entries("vision", "vit-finetune"))["image"]
    page.goto(example_report.pair_url("projects/vision/vit-finetune"))
    spec, manifests = page.locator("#panel-spec"), page.locator("#panel-manifests")
    assert spec.is_visible() and not manifests.is_visible()
    page.locator("label[for=tab-manifests]").click()
    assert manifests.is_visible() and not spec.is_visible()
    assert page.locator("#tab-manifests").is_checked()
    worker = "PyTorchJob.spec.pytorchReplicaSpecs.Worker.template.spec"
    image = manifests.locator(f"li[data-object-path={css_string(worker + '.containers[0].image')}]")
    value = image.locator(":scope > .entry > .val")
    assert value.inner_text() == json_text(entry["value"])
    assert image.locator(":scope > .entry > .badge").inner_text() == legend_label(entry["layer"])
    # The value's colour is its layer's, as in the effective spec's tree and the legend.
    assert style(value, "backgroundColor") == style(
        manifests.locator(".sources .badge").filter(has_text=re.compile("^environment$")), "backgroundColor"
    )
    # Focusing a value shows what set it: the spec field, the layer and its file and line.
    value.focus()
    panel = provenance_of(page, value)
    assert panel.is_visible()
    assert panel.inner_text() == f"from combinedSpec.image, set by {entry['layer']}, {place(entry)}"
    namespace = manifests.locator('li[data-object-path="PyTorchJob.metadata.namespace"] > .entry > .val')
    namespace.focus()
    assert provenance_of(page, namespace).inner_text() == "cluster setting namespacePattern"
    # The keyboard moves between the tabs (they are radio buttons), and the page does not scroll sideways.
    page.locator("#tab-manifests").focus()
    page.keyboard.press("ArrowLeft")
    assert page.locator("#tab-spec").is_checked() and spec.is_visible() and not manifests.is_visible()
    page.keyboard.press("ArrowRight")
    assert manifests.is_visible()
    assert page.evaluate("document.documentElement.scrollWidth <= document.documentElement.clientWidth")
    assert browser_log.errors == []


def json_text(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)
