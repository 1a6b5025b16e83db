"""Bytes priced like values (issue 30, item 1): what a viewer reads is bounded in bytes before it is written,
and what a scope stores is bounded by its quota.

Everything here counts bytes (answers' lengths) and work, never time.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from conftest import VIEWER, open_client

from template_engine.loader import values
from template_engine.service import impact, quota
from template_engine.service.budget import REQUEST_BYTES
from template_engine.service.storage.repository import Repository

T = "/api/v1/workload-templates/distributed"
#: The longest text an environment variable's value may hold (Linux's MAX_ARG_STRLEN).
LONG = values.TEXT_BOUNDS[("environmentVariables", "*", "value")][0]


def _big_spec(tag: str, count: int = 7) -> dict[str, Any]:
    """A spec of ``count`` environment variables at the longest value allowed: about 900 KB at 7, under the
    body's 1 MiB (the issue's 900 KB string, now as long as the bounds let it be)."""
    env = [{"name": f"V{i}", "value": (tag + str(i)) * (LONG // (len(tag) + 1))} for i in range(count)]
    return {"environmentVariables": env}


def test_the_issues_900_kb_strings_are_refused_at_the_api(client: Any) -> None:
    for spec, field, bound in (
        ({"image": "x" * 900_000}, "spec.image", 520),
        (
            {"environmentVariables": [{"name": "V", "value": "v" * 900_000}]},
            "spec.environmentVariables[0].value",
            LONG,
        ),
    ):
        body = {"meta": {"name": "big", "scopeType": "system"}, "spec": spec}
        refused = client.post(T, json=body)
        assert refused.status_code == 400, refused.text[:500]
        problems = refused.json()["problems"]
        assert [(p["field"], p["message"]) for p in problems] == [
            (field, "the text is 900,000 characters long")
        ]
        assert problems[0]["expected"].startswith(f"at most {bound:,} characters")


def test_a_list_page_holds_what_fits_its_bytes_and_pages_the_rest(client: Any) -> None:
    """The issue: one viewer's ``filterBy=name=@big-&limit=500`` answered 450 MB.  Now a page holds the
    entries whose bytes fit :data:`REQUEST_BYTES` (one at least), ``nextOffset`` the rest, and every entry
    is listed once over the pages."""
    for n in range(6):
        body = {"meta": {"name": f"big-{n}", "scopeType": "system"}, "spec": _big_spec(f"b{n}")}
        made = client.post(T, json=body)
        assert made.status_code == 202, made.text[:500]
    seen: list[str] = []
    pages = 0
    with open_client(client.app, VIEWER) as viewer:
        offset: int | None = 0
        while offset is not None:
            answer = viewer.get(T, params={"filterBy": "name=@big-", "limit": 500, "offset": offset})
            assert answer.status_code == 200, answer.text[:500]
            page = answer.json()
            entries = page["entries"]
            # What fits the budget, or the one entry a page always holds (about 2.7 MB here).
            assert len(entries) == 1 or len(answer.content) <= REQUEST_BYTES, (
                len(answer.content),
                len(entries),
            )
            pages += 1
            seen += [e["meta"]["name"] for e in entries]
            offset = page["pagination"].get("nextOffset")
    assert sorted(seen) == [f"big-{n}" for n in range(6)] and pages >= 3


def test_a_validate_only_answer_shows_the_changes_that_fit_its_bytes(client: Any) -> None:
    """The issue: a validateOnly PATCH of a project's defaults over 60 templates of 900 KB strings answered
    58 MB.  Now the changes are shown while their values fit :data:`REQUEST_BYTES`; the rest are counted in
    ``changesOmitted``."""
    for n in range(10):
        assert (
            client.post(
                T, json={"meta": {"name": f"small-{n}", "scopeType": "system"}, "spec": {}}
            ).status_code
            == 202
        )
    patch = {"spec": {"environmentVariables": [{"name": "D", "value": "d" * LONG}]}}
    answer = client.patch("/api/v1/defaults/system?validateOnly=true", json=patch)
    assert answer.status_code == 200, answer.text[:500]
    affected = answer.json()["affectedTemplates"]
    omitted = sum(t["changesOmitted"] for t in affected)
    big = [c for t in affected for c in t["changes"] if "d" * LONG in json.dumps(c)]
    assert omitted > 0 and 0 < len(big) <= REQUEST_BYTES // LONG  # the budget cut the list of changes
    # The changes that fit, the defaults written (its value, as the answer shows it) and each template's ids.
    assert len(answer.content) <= REQUEST_BYTES + 2 * LONG + 300 * len(affected), len(answer.content)


def test_an_asset_list_past_its_bytes_is_a_413_naming_the_numbers(client: Any) -> None:
    """Run:ai's asset lists have no paging: a list whose bytes pass :data:`REQUEST_BYTES` is refused before
    it is written, with the numbers; a narrower list (by name) is answered."""
    for n in range(6):
        body = {"meta": {"name": f"big-{n}", "scope": "tenant"}, "spec": _big_spec(f"e{n}")}
        made = client.post("/api/v1/asset/environment", json=body)
        assert made.status_code == 202, made.text[:500]
    with open_client(client.app, VIEWER) as viewer:
        refused = viewer.get("/api/v1/asset/environment")
        assert refused.status_code == 413, len(refused.content)
        message = refused.json()["message"]
        assert "environment assets listed would hold up to" in message
        assert f"at most {REQUEST_BYTES:,} per answer" in message
        one = viewer.get("/api/v1/asset/environment", params={"name": "big-1"})
        assert one.status_code == 200 and [e["meta"]["name"] for e in one.json()["entries"]] == ["big-1"]


# -- the storage quota of a scope ---------------------------------------------------------------------------


def test_a_scope_stores_at_most_its_quota_of_templates_assets_and_bytes(
    client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The issue: storage had no quota.  Now each scope holds at most ``quota.MAX_TEMPLATES`` templates,
    ``MAX_ASSETS`` assets and ``MAX_SCOPE_BYTES`` of their JSON; a write past any is a 413 naming the
    numbers, and nothing is stored.  (The bounds are lowered here to the example org's size.)"""
    templates = client.get(T, params={"filterBy": "scopeType==system", "limit": 500}).json()["entries"]
    monkeypatch.setattr(quota, "MAX_TEMPLATES", len(templates) + 1)
    assert (
        client.post(T, json={"meta": {"name": "one-more", "scopeType": "system"}, "spec": {}}).status_code
        == 202
    )
    refused = client.post(T, json={"meta": {"name": "two-more", "scopeType": "system"}, "spec": {}})
    assert refused.status_code == 413, refused.text
    count = len(templates) + 2
    assert f"the org's own scope would hold {count:,} templates" in refused.json()["message"]
    assert f"at most {count - 1:,} templates per scope" in refused.json()["message"]
    assert client.get(T, params={"filterBy": "name==two-more"}).json()["entries"] == []
    # Assets count alike.
    monkeypatch.setattr(quota, "MAX_ASSETS", 0)
    asset = {"meta": {"name": "nope", "scope": "tenant"}, "spec": {"image": "x:1"}}
    refused = client.post("/api/v1/asset/environment", json=asset)
    tenant_assets = len(_stored_documents(client, "system")) - len(templates) - 1  # every kind of asset
    assert (
        refused.status_code == 413 and f"would hold {tenant_assets + 1} assets" in refused.json()["message"]
    )
    monkeypatch.setattr(quota, "MAX_ASSETS", 1_000)
    monkeypatch.setattr(quota, "MAX_TEMPLATES", 1_000)
    # Bytes: the scope's stored JSON with the new document; a replaced document is counted once.
    used = sum(quota.stored_size(d) for d in _stored_documents(client, "system"))
    monkeypatch.setattr(quota, "MAX_SCOPE_BYTES", used + 30_000)
    spec = {"environmentVariables": [{"name": "V", "value": "v" * 20_000}]}
    made = client.post(T, json={"meta": {"name": "bytes-1", "scopeType": "system"}, "spec": spec})
    assert made.status_code == 202, made.text
    refused = client.post(T, json={"meta": {"name": "bytes-2", "scopeType": "system"}, "spec": spec})
    assert refused.status_code == 413 and "bytes per scope" in refused.json()["message"], refused.text
    replaced = client.put(
        f"{T}/{made.json()['meta']['id']}",
        json={"meta": {"name": "bytes-1"}, "spec": spec},
        headers={"If-Match": made.headers["ETag"]},
    )
    assert replaced.status_code in (200, 202), replaced.text


def _stored_documents(client: Any, scope: str) -> list[Any]:
    """The documents the org's own scope stores (templates and assets), as the repository holds them."""
    store = client.app.state.store
    with store.engine.connect() as connection:
        repo = Repository(connection)
        return [r.document for r in repo.templates([scope])] + [
            r.document for r in repo.assets() if r.scope_type == "tenant"
        ]


@pytest.mark.postgres
def test_the_quota_measures_a_scope_alike_on_both_databases(
    make_app: Any, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``scope_usage`` asks the database for the characters of the stored JSON: SQLite and PostgreSQL
    answer alike (the documents' JSON text), so the quota holds the same on both."""
    with open_client(make_app(database_url, seed=False)) as admin:
        spec = {"environmentVariables": [{"name": "V", "value": "v" * 20_000}]}
        body = {"meta": {"name": "one", "scopeType": "system"}, "spec": spec}
        assert admin.post(T, json=body).status_code == 202
        with admin.app.state.store.engine.connect() as connection:
            templates, assets, size = Repository(connection).scope_usage("system", None)
        assert (templates, assets) == (1, 0) and 20_000 < size < 20_400
        monkeypatch.setattr(quota, "MAX_SCOPE_BYTES", size + size // 2)
        refused = admin.post(T, json={"meta": {"name": "two", "scopeType": "system"}, "spec": spec})
        assert refused.status_code == 413, refused.text[:300]
        assert "the org's own scope would store" in refused.text and "bytes per scope" in refused.text


def test_a_validate_only_over_more_stored_bytes_than_its_budget_reads_nothing(
    client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The issue's validateOnly over 60 templates of 900 KB read every one of them (twice) before its
    compositions were priced.  Now the stored sizes price the reading first (a unit per 128 characters):
    past the budget it is a 413 naming the numbers, and no template document is read."""
    for n in range(3):
        body = {"meta": {"name": f"big-{n}", "scopeType": "system"}, "spec": _big_spec(f"r{n}")}
        assert client.post(T, json=body).status_code == 202
    with client.app.state.store.engine.connect() as connection:
        chars = Repository(connection).stored_chars()
    assert chars > 3 * 900_000
    monkeypatch.setattr(impact, "REQUEST_BUDGET", 2 * (chars >> 7) - 1)  # the three templates pass it
    read: list[int] = []
    monkeypatch.setattr(Repository, "templates", lambda self, *a, **k: read.append(1) or [])
    patch = {"spec": {"annotations": [{"name": "a", "value": "b"}]}}
    refused = client.patch("/api/v1/defaults/system?validateOnly=true", json=patch)
    assert refused.status_code == 413, refused.text[:500]
    assert f"reading the {chars:,} characters of stored documents" in refused.json()["message"]
    assert read == []
