"""Take the screenshots of the static report and of the service's pages that docs/views.md shows, at a
laptop's 1366x768.

    .venv/bin/python docs/images/make_screenshots.py            # writes docs/images/report-*.png and ui-*.png
    .venv/bin/python docs/images/make_screenshots.py --out DIR  # somewhere else (the browser tests do)

It writes the report of the example org (``templates/``) with ``template-engine report``, and a second one
``--against`` the previous commit of a throwaway git repository where the research department's defaults
changed; and it starts the service (``serve --dev``, in this process, on a free loopback port and a throwaway
SQLite file seeded with ``templates/``) and signs in with a development token.  It opens those pages in
headless Chromium through Playwright: Debian's ``chromium`` (or ``TEMPLATE_ENGINE_CHROMIUM``); Playwright's
own browser download is not used.  Run it again after a change to the views' or the UI's templates or style
so the pictures stay true.
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from playwright.sync_api import Page, sync_playwright

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "templates"
HERE = Path(__file__).resolve().parent
EXE = shutil.which("template-engine", path=str(Path(sys.executable).parent)) or "template-engine"
VIEWPORT = {"width": 1366, "height": 768}


def report(root: Path, out: Path, *extra: str, cwd: Path | None = None) -> Path:
    subprocess.run([EXE, "report", "--root", str(root), "--out", str(out), *extra], cwd=cwd, check=True)
    return out if out.is_absolute() else (cwd or Path.cwd()) / out


def changed_repository(folder: Path) -> Path:
    """A git repository holding the example org, then a commit changing two research defaults."""
    repo = folder / "repo"
    shutil.copytree(EXAMPLE, repo / "templates")
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "docs",
        "GIT_AUTHOR_EMAIL": "docs@example.invalid",
        "GIT_COMMITTER_NAME": "docs",
        "GIT_COMMITTER_EMAIL": "docs@example.invalid",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
    }

    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)

    git("init", "-q")
    git("add", "-A")
    git("commit", "-q", "-m", "the example org")
    defaults = repo / "templates/departments/research/defaults.yaml"
    text = defaults.read_text(encoding="utf-8")
    defaults.write_text(text.replace("cc-2100", "cc-9999").replace("value: WARN", "value: INFO"), "utf-8")
    git("commit", "-q", "-am", "research: new cost centre, NCCL_DEBUG=INFO")
    return repo


def show_value(field: str) -> Callable[[Page], None]:
    """Scroll a worker value near the top and hover it, so its provenance panel is in the picture."""

    def act(page: Page) -> None:
        value = page.locator(f'section[aria-labelledby="worker-h"] li[data-field="{field}"] .val').first
        value.evaluate("el => window.scrollTo(0, el.getBoundingClientRect().top + window.scrollY - 200)")
        value.hover()

    return act


def follow_first_issue(page: Page) -> None:
    """Follow the first issue's link to its field, and hover the marked field so its panel shows the issue."""
    page.locator(".issues a").first.click()
    marked = page.locator(".has-issue .val").first
    marked.evaluate("el => window.scrollTo(0, el.getBoundingClientRect().top + window.scrollY - 240)")
    marked.hover()


@contextmanager
def service(folder: Path) -> Iterator[str]:
    """The service seeded with the example org on a free loopback port (its URL), until the block ends."""
    import uvicorn

    from template_engine.service.app import create_app
    from template_engine.service.settings import Settings

    app = create_app(Settings(database_url=f"sqlite:///{folder / 'ui.db'}", dev_tokens=True, seed=EXAMPLE))
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on", access_log=False))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 60
        while not server.started:
            if time.monotonic() > deadline or not thread.is_alive():
                raise RuntimeError("the service did not start")
            time.sleep(0.05)
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        sock.close()


def api_json(page: Page, url: str) -> Any:
    """A GET of the service's API as the development system admin."""
    response = page.request.get(url, headers={"Authorization": "Bearer dev-admin"})
    assert response.ok, (url, response.status)
    return response.json()


def ui_shots(page: Page, base: str, out: Path) -> None:
    """The service's pages: the org tree, a project's templates, an explain page with a value's provenance,
    a compliance issue, a department's effective policy, the preview of a pending change, and the editor
    with a refused document's problem marked at its line."""
    ids = {
        p["name"]: f"project:{p['id']}"
        for p in api_json(page, f"{base}/api/v1/org-unit/projects")["projects"]
    }
    ids |= {
        d["name"]: f"department:{d['id']}"
        for d in api_json(page, f"{base}/api/v1/org-unit/departments")["departments"]
    }
    by_name = {
        (t["meta"]["name"], t["meta"]["scopeType"]): t["meta"]["id"]
        for t in api_json(page, f"{base}/api/v1/workload-templates/distributed?limit=500")["entries"]
    }
    page.goto(f"{base}/ui/sign-in")
    page.locator("#token").fill("dev-admin")
    page.locator("#sign-in").click()
    page.locator("#org-tree").wait_for()

    def shoot(name: str, path: str | None, act: Callable[[Page], None] | None = None) -> None:
        if path is not None:
            page.goto(f"{base}{path}")
        if act is not None:
            act(page)
        page.screenshot(path=str(out / name))
        print(f"wrote {out / name}")

    def edit(page: Page, old: str, new: str) -> None:
        """Replace the document editor's text as a person pasting does (CodeMirror over the textarea)."""
        text = page.evaluate("document.getElementById('document-editor').CodeMirror.getValue()")
        page.locator("#document-editor .CodeMirror-code").click()
        page.keyboard.press("Control+A")
        page.keyboard.insert_text(text.replace(old, new))

    def preview(page: Page) -> None:
        edit(page, "value: research\n", "value: research-ml\n")
        page.locator("#preview").click()
        page.locator("#results-h").wait_for()
        buttons = page.locator("#change-form .buttons")  # the buttons, then the results below them
        buttons.evaluate("el => window.scrollTo(0, el.getBoundingClientRect().top + window.scrollY - 16)")

    def refused(page: Page) -> None:
        """A typo in research's defaults, previewed: the problem listed and marked at its line."""
        edit(page, "  preemptibility: preemptible\n", "  preemptibility: preemptible\n  numWorker: 3\n")
        page.locator("#preview").click()
        page.locator(".te-problem-marker").wait_for()
        page.locator("#problem-list a.line-ref").click()
        page.locator("#problems").evaluate(
            "el => window.scrollTo(0, el.getBoundingClientRect().top + window.scrollY - 16)"
        )

    shoot("ui-tree.png", "/ui/")
    shoot("ui-scope.png", f"/ui/scope/{ids['nlp']}")
    vit = by_name[("vit-finetune", "project")]
    shoot(
        "ui-explain.png",
        f"/ui/template/{vit}?view={ids['vision']}",
        show_value("labels[name=cost-center].value"),
    )
    horovod = by_name[("mpi-horovod", "system")]
    shoot("ui-compliance.png", f"/ui/template/{horovod}?view={ids['nlp']}", follow_first_issue)
    shoot("ui-policy.png", f"/ui/scope/{ids['research']}/policy")
    shoot("ui-preview.png", f"/ui/scope/{ids['research']}/edit/defaults", preview)
    shoot("ui-editor.png", f"/ui/scope/{ids['research']}/edit/defaults", refused)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=HERE, help="where to write the PNG files")
    parser.add_argument(
        "--chromium", default=os.environ.get("TEMPLATE_ENGINE_CHROMIUM") or "/usr/bin/chromium"
    )
    args = parser.parse_args()
    chromium = shutil.which(args.chromium)
    if chromium is None:
        sys.exit(f"no Chromium at {args.chromium!r}: apt-get install chromium, or pass --chromium PATH")
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="te-screenshots-") as scratch:
        folder = Path(scratch)
        site = report(Path("templates"), folder / "site", cwd=REPO)
        repo = changed_repository(folder)
        against = report(Path("templates"), Path("site"), "--against", "HEAD~1", cwd=repo)
        shots: list[tuple[str, Path, Callable[[Page], None] | None]] = [
            ("report-index.png", site / "index.html", None),
            (
                "report-explain.png",
                site / "pairs/projects/vision/vit-finetune.html",
                show_value("labels[name=cost-center].value"),
            ),
            ("report-compliance.png", site / "pairs/projects/nlp/mpi-horovod.html", follow_first_issue),
            ("report-diff.png", against / "pairs/projects/vision/vit-finetune.html", None),
        ]
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path=chromium, args=["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"]
            )
            page = browser.new_page(viewport=VIEWPORT)  # type: ignore[arg-type]
            for name, file, act in shots:
                page.goto(file.as_uri())
                if act is not None:
                    act(page)
                page.screenshot(path=str(args.out / name))
                print(f"wrote {args.out / name}")
            with service(folder) as base:
                ui_shots(browser.new_page(viewport=VIEWPORT), base, args.out)  # type: ignore[arg-type]
            browser.close()


if __name__ == "__main__":
    main()
