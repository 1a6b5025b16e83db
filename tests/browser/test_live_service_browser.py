"""The browser reaches the service that :func:`live_service` starts, as the service UI's browser tests will.

A test that only reads gets its module's service; one marked ``own_service`` gets its own (its own SQLite
file seeded with the example org, its own port), so tests that change the org run side by side under xdist.
"""

from __future__ import annotations

import json

from browser_helpers import EXAMPLE, LiveService
from playwright.sync_api import Page

from template_engine import load_org


def test_the_browser_reads_the_seeded_org_from_the_live_service(
    page: Page, live_service: LiveService
) -> None:
    org = load_org(EXAMPLE)
    page.set_extra_http_headers(live_service.auth("viewer"))
    response = page.goto(f"{live_service.url}/api/v1/org-unit/projects")
    assert response is not None and response.status == 200
    listed = json.loads(page.locator("body").inner_text())["projects"]
    assert sorted(p["name"] for p in listed) == sorted(org.projects())
