"""A request's cost is bounded before its work runs, and no cache grows without bound (issue 17, item 5).

Everything here counts bytes (the caches' own accounting, ``tracemalloc``) and work (compositions made,
expression units), never time.
"""

from __future__ import annotations

import gc
import re
import tracemalloc
from typing import Any

import pytest
from conftest import VIEWER, VISION, MakeApp, open_client

from template_engine import diff
from template_engine.diffing.pairs import compose_pair
from template_engine.service import budget as budget_module
from template_engine.service import impact
from template_engine.service.budget import REQUEST_BUDGET
from template_engine.service.cache import CACHE, STATS, Answer, Answers, DocCache, key_size

T = "/api/v1/workload-templates/distributed"


def _tolerations(count: int) -> dict[str, Any]:
    tolerations = [{"name": f"t{i}", "key": f"k{i}", "operator": "Exists"} for i in range(count)]
    return {"meta": {"name": "big", "scopeType": "system"}, "spec": {"tolerations": tolerations}}


# -- previews and validateOnly never enter the long-lived caches --------------------------------------------


def test_thousands_of_viewer_previews_of_large_documents_keep_nothing(app: Any) -> None:
    """The issue: +3.1 MiB per preview of 4,900 tolerations, never released (the preview's document was
    cached under the current time).  Now the document cache does not move over 1,000 previews, and the last
    200 leave the memory held as it was."""
    with open_client(app, VIEWER) as viewer:
        large = _tolerations(4_900)  # 14,703 values: under the body's limit
        for _ in range(5):
            assert viewer.post(f"{T}/preview", json=large).status_code == 200
        entries, held = len(CACHE), CACHE.size
        body = _tolerations(100)
        for _ in range(800):
            assert viewer.post(f"{T}/preview", json=body).status_code == 200
        assert (len(CACHE), CACHE.size) == (entries, held)
        gc.collect()
        tracemalloc.start()
        try:
            start = tracemalloc.get_traced_memory()[0]
            for _ in range(200):
                assert viewer.post(f"{T}/preview", json=body).status_code == 200
            gc.collect()
            grown = tracemalloc.get_traced_memory()[0] - start
        finally:
            tracemalloc.stop()
        assert (len(CACHE), CACHE.size) == (entries, held)
        # One preview's document held 100 x 3 values (about 70 KB as models): 200 of them kept would be
        # 14 MB; what remains is a few log and connection-pool buffers.
        assert grown < 1024 * 1024, grown


def test_a_validate_only_write_keeps_nothing_in_the_document_cache(client: Any, ids: Any) -> None:
    project = ids.projects["vision"]
    client.get(f"{T}/{ids.template('pytorch-elastic')}", params={"projectId": project})
    entries, held = len(CACHE), CACHE.size
    policy = {
        "meta": {"name": "vision", "scope": "project", "projectId": int(project)},
        "policy": {"rules": {}},
    }
    for value in range(20):
        patch = {"spec": {"labels": [{"name": "l", "value": f"v{value}"}]}}
        answer = client.patch(f"/api/v1/defaults/projects/{project}?validateOnly=true", json=patch)
        assert answer.status_code == 200, answer.text
        answer = client.put("/api/v2/policy/distributed?validateOnly=true", json=policy)
        assert answer.status_code == 200, answer.text
    assert (len(CACHE), CACHE.size) == (entries, held)


# -- every cache is bounded in bytes, its keys included ------------------------------------------------------


def test_the_answers_bound_counts_the_keys(make_app: MakeApp, sqlite_url: str) -> None:
    """The issue: 1,500 viewer reads with a 60 KB query string grew the server by 89 MB past the 64 MiB
    bound, which counted the bodies only.  With a 2 MiB bound, the keys' bytes keep it under 2 MiB."""
    bound = 2 * 1024 * 1024
    app = make_app(sqlite_url, cache_bytes=bound)
    with open_client(app, VIEWER) as viewer:
        template = viewer.get(T).json()["entries"][0]["meta"]["id"]
        for n in range(200):
            query = f"x{n}=" + "q" * 60_000
            answer = viewer.get(f"{T}/{template}?{query}")
            assert answer.status_code == 200 and answer.headers["x-template-engine-cache"] == "miss"
            assert app.state.answers.size <= bound
        kept = len(app.state.answers)
    assert 0 < kept <= bound // 60_000  # 34: each answer is charged its 60 KB key


def test_a_key_is_charged_its_bytes() -> None:
    answers = Answers(max_entries=100, max_bytes=1_000_000)
    answers.put((("e", 1), "/t", b"q" * 100_000, b"caller"), Answer((), b"{}"))
    assert answers.size >= 100_000
    assert key_size((("e", 1), "/t", b"q" * 100_000)) > 100_000


def test_the_document_cache_is_bounded_in_bytes() -> None:
    cache = DocCache(max_entries=1000, max_bytes=100_000)
    for n in range(100):
        assert cache.get(("doc", n), lambda n=n: n, lambda: 5_000) == n
        assert cache.size <= 100_000
    assert 10 <= len(cache) <= 100_000 // 5_000
    assert cache.get(("doc", "huge"), lambda: "built", lambda: 30_000) == "built"  # over a quarter
    assert ("doc", "huge") not in [k for k in cache._items]


# -- a request's work is priced before it runs ---------------------------------------------------------------


def _expression_templates(client: Any, count: int, values: int = 1_000) -> None:
    """The issue's ``count`` templates of ``values`` ``{{ project.name ~ i }}`` values, at the system scope
    (every project sees them)."""
    for n in range(count):
        labels = [{"name": f"l{i}", "value": f"{{{{ project.name ~ {i} }}}}"} for i in range(values)]
        body = {"meta": {"name": f"heavy-{n}", "scopeType": "system"}, "spec": {"labels": labels}}
        assert client.post(T, json=body).status_code == 202


@pytest.fixture
def made(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The compositions a diff makes (``validateOnly``), by pair id: work counted, not timed."""
    found: list[str] = []

    def counting(org: Any, pair: Any, *args: Any, **kwargs: Any) -> Any:
        found.append(pair.id)
        return compose_pair(org, pair, *args, **kwargs)

    monkeypatch.setattr(diff, "compose_pair", counting)
    return found


def _refused_numbers(answer: Any) -> tuple[int, int]:
    assert answer.status_code == 413, answer.text
    message = answer.json()["message"]
    price, budget = re.findall(r"([\d,]+) (?:units of work|per request)", message)
    return int(price.replace(",", "")), int(budget.replace(",", ""))


def test_a_validate_only_write_over_the_budget_is_refused_before_composing(
    client: Any, ids: Any, made: list[str]
) -> None:
    """The issue: 20 templates of 1,000 expressions made a project editor's validateOnly PATCH cost 5.8 CPU-s
    and a policy PUT 8.1, every time.  Now both are priced first and refused with the numbers, having
    composed nothing; the stored documents are as they were."""
    _expression_templates(client, 20)
    project = ids.projects["vision"]
    before = client.get(f"/api/v1/defaults/projects/{project}").json()
    with open_client(client.app, VISION) as editor:
        patch = {"spec": {"annotations": [{"name": "a", "value": "b"}]}}
        answer = editor.patch(f"/api/v1/defaults/projects/{project}?validateOnly=true", json=patch)
        price, budget = _refused_numbers(answer)
        assert budget == REQUEST_BUDGET < price
        assert "this change affects 2" in answer.json()["message"]  # 20 and the example's own
        assert made == []
        policy = {
            "meta": {"name": "vision", "scope": "project", "projectId": int(project)},
            "policy": {"rules": {}},
        }
        answer = editor.put("/api/v2/policy/distributed?validateOnly=true", json=policy)
        assert _refused_numbers(answer)[0] > REQUEST_BUDGET and made == []
    assert client.get(f"/api/v1/defaults/projects/{project}").json() == before
    # Without validateOnly the write is stored, as before: it composes nothing.
    assert client.patch(f"/api/v1/defaults/projects/{project}", json=patch).status_code == 200


def test_a_validate_only_write_within_the_budget_composes_what_it_priced(
    client: Any, ids: Any, made: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _expression_templates(client, 3)
    project = ids.projects["vision"]
    priced: list[int] = []

    def admit(before: Any, after: Any, budget: int = REQUEST_BUDGET) -> Any:
        inner = budget_module.admit_diff(before, after, budget)

        def check(work: Any) -> None:
            priced.append(len(work))
            inner(work)

        return check

    monkeypatch.setattr(impact, "admit_diff", admit)
    patch = {"spec": {"annotations": [{"name": "a", "value": "b"}]}}
    answer = client.patch(f"/api/v1/defaults/projects/{project}?validateOnly=true", json=patch)
    assert answer.status_code == 200, answer.text
    assert len(answer.json()["affectedTemplates"]) * 2 == len(made) == priced[0] > 6


def test_a_list_pages_its_work_and_a_list_that_composes_everything_is_priced(client: Any) -> None:
    """The issue: a viewer's list after any write cost 5.1 CPU-s (20 such templates composed for one page).
    Now a page holds the entries whose compositions fit the budget, ``nextOffset`` the rest; every entry is
    listed once over the pages; no request composes more than the budget."""
    _expression_templates(client, 20)
    client.patch("/api/v1/defaults/system", json={"spec": {"annotations": [{"name": "w", "value": "1"}]}})
    distributed = {"filterBy": "workloadType==Distributed"}  # T lists the distributed kind (issue 32)
    total = client.get("/api/v1/workload-templates/count", params=distributed).json()["count"]
    seen: list[str] = []
    requests = 0
    with open_client(client.app, VIEWER) as viewer:
        offset: int | None = 0
        while offset is not None:
            made = STATS.compositions
            page = viewer.get(T, params={"offset": offset, "limit": 50}).json()
            requests += 1
            composed = STATS.compositions - made
            heavy = sum(e["meta"]["name"].startswith("heavy-") for e in page["entries"])
            # one heavy template is about 54,000 units: at most 500,000 // 54,000 of them per page
            assert composed == len(page["entries"]) and heavy <= REQUEST_BUDGET // 54_000
            seen += [e["meta"]["id"] for e in page["entries"]]
            offset = page["pagination"].get("nextOffset")
        assert len(seen) == len(set(seen)) == total and requests >= 2
        made = STATS.compositions
        for params in ({"sortBy": "runnable"}, {"filterBy": "runnable==true"}):
            refused = viewer.get(T, params=params)
            price, budget = _refused_numbers(refused)
            assert f"composing the {total} templates" in refused.json()["message"] and price > budget
        counted = viewer.get("/api/v1/workload-templates/count", params={"filterBy": "runnable==true"})
        assert counted.status_code == 413
        assert STATS.compositions == made
