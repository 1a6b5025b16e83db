"""Fixtures of the browser tests: headless Chromium through Playwright, pages that fail a test on any console
error, the static report of the example org, and the service on a loopback port.

Chromium is Debian's (``/usr/bin/chromium``, or ``TEMPLATE_ENGINE_CHROMIUM``); Playwright only drives it (no
browser download).  A missing Chromium FAILS the tests, naming the package to install: a browser test that
skips is a browser test that never runs.

Parallel-safe under pytest-xdist: each worker starts its own browser and writes its reports and databases
into its own temporary folders; nothing is written into the repository.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from browser_helpers import (
    CHROMIUM_ARGS,
    EXAMPLE,
    VIEWPORT,
    BrowserLog,
    LiveService,
    MakeReport,
    Report,
    build_report,
    chromium_executable,
)
from playwright.sync_api import Browser, Page, Playwright, sync_playwright


@pytest.fixture(scope="session")
def playwright() -> Iterator[Playwright]:
    with sync_playwright() as driver:
        yield driver


@pytest.fixture(scope="session")
def browser(playwright: Playwright) -> Iterator[Browser]:
    """One headless Chromium per test session (per xdist worker)."""
    executable = chromium_executable()
    try:
        launched = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS, headless=True)
    except Exception as exc:  # a broken install: say which browser and why, not a Playwright stack
        pytest.fail(f"Chromium at {executable!r} does not start: {exc}", pytrace=False)
    yield launched
    launched.close()


@pytest.fixture
def browser_log() -> BrowserLog:
    """The errors of :func:`page` so far; a test may assert on it between steps for a precise message."""
    return BrowserLog()


@pytest.fixture
def page(browser: Browser, browser_log: BrowserLog) -> Iterator[Page]:
    """A page of a new browser context at laptop size (1366x768); the test fails if anything in
    :class:`BrowserLog` happened while it was open."""
    context = browser.new_context(viewport=VIEWPORT)
    context.set_default_timeout(15_000)
    opened = context.new_page()
    opened.on("console", browser_log.console)
    opened.on("pageerror", browser_log.page_error)
    opened.on("requestfailed", browser_log.request_failed)
    opened.on("response", browser_log.response)
    try:
        yield opened
    finally:
        context.close()
    if browser_log.errors:
        pytest.fail("the browser reported errors:\n" + "\n".join(browser_log.errors), pytrace=False)


# -- reports ------------------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def example_report(tmp_path_factory: pytest.TempPathFactory) -> Report:
    """``template-engine report`` of the example org (``templates/``), once per session (per worker)."""
    return build_report(EXAMPLE, tmp_path_factory.mktemp("example-report") / "site")


@pytest.fixture
def make_report(tmp_path: Path) -> MakeReport:
    """``make_report(root, *extra, cwd=None)``: a report of another folder, in this test's folder."""
    counter = iter(range(1_000))

    def make(root: Path, *extra: str, cwd: Path | None = None) -> Report:
        return build_report(root, tmp_path / f"site-{next(counter)}", *extra, cwd=cwd)

    return make


# -- the service --------------------------------------------------------------------------------------------


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "own_service: the test changes the service's org, so :func:`live_service` starts one for it alone",
    )


@pytest.fixture(scope="module")
def shared_service() -> Iterator[LiveService]:
    """The service seeded with the example org that the tests of one module which only read share (xdist's
    ``--dist loadscope`` keeps a module on one worker, so it is started once per module, not per test)."""
    with LiveService(EXAMPLE) as service:
        yield service


@pytest.fixture
def live_service(request: pytest.FixtureRequest) -> Iterator[LiveService]:
    """The service seeded with the example org on its own SQLite file, served on a free loopback port;
    ``live_service.url``, ``live_service.auth(role)``.

    A test that only reads gets the module's :func:`shared_service` (seeding takes about a second); a test
    marked ``own_service``, one that stores something, gets a service for itself alone, so what it changes
    is never seen by another test, whatever the order."""
    if request.node.get_closest_marker("own_service") is None:
        yield request.getfixturevalue("shared_service")
        return
    with LiveService(EXAMPLE) as service:
        yield service
