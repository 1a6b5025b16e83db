"""A request's cost is bounded before its work runs, and no cache grows without bound (issue 17, item 5).

Everything here counts bytes (the caches' own accounting, ``tracemalloc``) and work (compositions made,
expression units), never time.
"""

from __future__ import annotations

import gc
import tracemalloc
from typing import Any

from conftest import VIEWER, MakeApp, open_client

from template_engine.service.cache import CACHE, Answer, Answers, DocCache, key_size

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
    policy = {"meta": {"scope": "project", "projectId": project}, "policy": {"rules": {}}}
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
