"""The budget of one request (issue 17, item 5): what the issue's expensive requests cost now, as CPU time
and as ratios to a plain read measured in the same rounds, and what memory repeated previews and long query
strings leave behind.

One process: the service app (the example org seeded into a fresh SQLite file, then 20 system templates of
1,000 ``{{ project.name ~ i }}`` values each, as in the issue) driven by a ``TestClient`` in this process, so
``time.process_time()`` around a request counts the server's work (and the client's, the same for all):

  get           baseline: a viewer's ``GET .../distributed/{id}?projectId=`` (the first system template)
  patch         a project editor's ``PATCH /api/v1/defaults/projects/{id}?validateOnly=true`` (issue: 5.8 s)
  policy        ``PUT /api/v2/policy/distributed?validateOnly=true`` for the project (issue: 8.1 CPU-s)
  list          a write (not timed), then a viewer's first page of the list (issue: 5.1 CPU-s)
  list-all      the same list, every page followed through ``nextOffset`` (the work paged, all of it)
  three         three project editors' validateOnly PATCHes of 6,600 labels at once (issue: 19 CPU-s)

``--bytes N`` (issue 30) measures bytes instead: a project editor stores N templates (the issue's 100) of a
900 KB ``spec.image``, or where the bounds refuse it the worst they allow (7 environment variables of
131,072 characters), until the scope's quota refuses more; then, in rotating rounds, a viewer's small list
(the baseline), ``/health``, the issue's ``filterBy=name=@big-&limit=500`` (its first page, and every page
through ``nextOffset``) and a validateOnly PATCH of the project's defaults over them: the answer's bytes,
CPU seconds, the ratio to the small list and this process's peak resident memory above its resident memory
before the request (``VmHWM``, reset before each).

Rounds (``--runs``, default 5) run each scenario once, in an order that rotates from round to round; the
figures are the median and minimum of each scenario's CPU seconds and of its ratio to that round's ``get``.
Then, once: 60 viewer previews of 4,900 tolerations (issue: +3.1 MiB each, 942 -> 1,128 MiB) and 1,500 viewer
reads with a 60 KB query string (issue: +89 MB past the 64 MiB bound), as resident memory (``/proc``) before
and after, with the caches' own byte counts.  The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import tempfile
import threading
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.append(str(REPO))  # after PYTHONPATH: PYTHONPATH=/tmp/base measures another checkout

from template_engine.service import cache  # noqa: E402
from template_engine.service.app import create_app  # noqa: E402
from template_engine.service.settings import Settings  # noqa: E402

with warnings.catch_warnings():
    warnings.filterwarnings("ignore", message=".*httpx2.*")
    from fastapi.testclient import TestClient

T = "/api/v1/workload-templates/distributed"
AUTH = """\
tokens:
  - {subject: alice, token: bench-admin, role: system-admin}
  - {subject: carol, token: bench-editor, role: project-editor, project: vision}
  - {subject: dave, token: bench-viewer, role: viewer}
"""
ISSUE = {"patch": 5.8, "policy": 8.1, "list": 5.1, "three": 19.0}


def _rss() -> int:
    """Resident memory of this process, in bytes."""
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return pages * 4096


def _doc_cache() -> list[int] | None:
    """The document cache's entries and bytes (``None`` on a checkout whose cache does not count them)."""
    found = cache.CACHE
    return [len(found), found.size] if hasattr(found, "size") else None


def _client(app: Any, token: str) -> TestClient:
    client = TestClient(app)
    client.headers["Authorization"] = f"Bearer {token}"
    client.__enter__()
    return client


def _cpu(run: Callable[[], Any]) -> float:
    start = time.process_time()
    run()
    return time.process_time() - start


class Bench:
    def __init__(self, folder: Path, templates: int, values: int) -> None:
        (folder / "auth.yaml").write_text(AUTH)
        settings = Settings(
            database_url=f"sqlite:///{folder / 'bench.db'}",
            auth_file=folder / "auth.yaml",
            seed=REPO / "templates",
        )
        self.app = create_app(settings)
        self.admin = _client(self.app, "bench-admin")
        self.editor = _client(self.app, "bench-editor")
        self.viewer = _client(self.app, "bench-viewer")
        projects = self.admin.get("/api/v1/org-unit/projects").json()["projects"]
        self.project = next(p["id"] for p in projects if p["name"] == "vision")
        entries = self.admin.get(T, params={"limit": 500}).json()["entries"]
        self.template = next(e["meta"]["id"] for e in entries if e["meta"]["scopeType"] == "system")
        for n in range(templates):
            labels = [{"name": f"l{i}", "value": f"{{{{ project.name ~ {i} }}}}"} for i in range(values)]
            body = {"meta": {"name": f"heavy-{n}", "scopeType": "system"}, "spec": {"labels": labels}}
            assert self.admin.post(T, json=body).status_code == 202
        self.writes = 0
        self.statuses: dict[str, set[int]] = {}

    def _seen(self, name: str, status: int) -> None:
        self.statuses.setdefault(name, set()).add(status)

    def get(self) -> None:
        answer = self.viewer.get(f"{T}/{self.template}", params={"projectId": self.project})
        self._seen("get", answer.status_code)

    def patch(self) -> None:
        patch = {"spec": {"annotations": [{"name": "a", "value": "b"}]}}
        url = f"/api/v1/defaults/projects/{self.project}?validateOnly=true"
        self._seen("patch", self.editor.patch(url, json=patch).status_code)

    def policy(self) -> None:
        body = {
            "meta": {"name": "budget", "scope": "project", "projectId": int(self.project)},
            "policy": {"rules": {}},
        }
        self._seen(
            "policy", self.editor.put("/api/v2/policy/distributed?validateOnly=true", json=body).status_code
        )

    def write(self) -> None:
        self.writes += 1
        patch = {"spec": {"annotations": [{"name": "w", "value": str(self.writes)}]}}
        assert self.admin.patch("/api/v1/defaults/system", json=patch).status_code == 200

    def list_page(self) -> None:
        self._seen("list", self.viewer.get(T, params={"limit": 50}).status_code)

    def list_all(self) -> None:
        offset: int | None = 0
        pages = 0
        while offset is not None:
            page = self.viewer.get(T, params={"offset": offset, "limit": 50})
            self._seen("list-all", page.status_code)
            offset = page.json()["pagination"].get("nextOffset")
            pages += 1
        self.pages = pages

    def three(self) -> None:
        labels = [{"name": f"x{i}", "value": "v"} for i in range(6_600)]
        url = f"/api/v1/defaults/projects/{self.project}?validateOnly=true"
        threads = [
            threading.Thread(
                target=lambda: self._seen(
                    "three", self.editor.patch(url, json={"spec": {"labels": labels}}).status_code
                )
            )
            for _ in range(3)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()


def _rounds(bench: Bench, runs: int) -> dict[str, Any]:
    scenarios: dict[str, Callable[[], Any]] = {
        "get": bench.get,
        "patch": bench.patch,
        "policy": bench.policy,
        "list": bench.list_page,
        "list-all": bench.list_all,
        "three": bench.three,
    }
    names = list(scenarios)
    times: dict[str, list[float]] = {name: [] for name in names}
    ratios: dict[str, list[float]] = {name: [] for name in names if name != "get"}
    for round_ in range(runs):
        order = names[round_ % len(names) :] + names[: round_ % len(names)]
        spent: dict[str, float] = {}
        for name in order:
            bench.write()  # every scenario runs after a write: nothing is answered from a cache
            gc.collect()
            spent[name] = _cpu(scenarios[name])
        for name in names:
            times[name].append(spent[name])
            if name != "get":
                ratios[name].append(spent[name] / spent["get"])
    out: dict[str, Any] = {}
    for name in names:
        out[name] = {
            "cpu_s_median": round(statistics.median(times[name]), 4),
            "cpu_s_min": round(min(times[name]), 4),
            "statuses": sorted(bench.statuses.get(name, ())),
        }
        if name in ratios:
            out[name]["ratio_to_get_median"] = round(statistics.median(ratios[name]), 1)
            out[name]["ratio_to_get_min"] = round(min(ratios[name]), 1)
        if name in ISSUE:
            out[name]["issue_cpu_s"] = ISSUE[name]
    out["list-all"]["pages"] = bench.pages
    return out


def _memory(bench: Bench, previews: int, queries: int) -> dict[str, Any]:
    tolerations = [{"name": f"t{i}", "key": f"k{i}", "operator": "Exists"} for i in range(4_900)]
    body = {"meta": {"name": "big", "scopeType": "system"}, "spec": {"tolerations": tolerations}}
    for _ in range(5):  # warm: the first previews fill what every request uses
        assert bench.viewer.post(f"{T}/preview", json=body).status_code == 200
    gc.collect()
    before, docs_before = _rss(), _doc_cache()
    for _ in range(previews):
        assert bench.viewer.post(f"{T}/preview", json=body).status_code == 200
    gc.collect()
    after, docs_after = _rss(), _doc_cache()
    out: dict[str, Any] = {
        "previews": previews,
        "preview_rss_mib_before": round(before / 2**20, 1),
        "preview_rss_mib_after": round(after / 2**20, 1),
        "preview_rss_mib_per_request": round((after - before) / previews / 2**20, 3),
        "doc_cache_entries_bytes_before": docs_before,
        "doc_cache_entries_bytes_after": docs_after,
        "issue_preview_mib_per_request": 3.1,
    }
    answers = bench.app.state.answers
    before = _rss()
    for n in range(queries):
        query = f"x{n}=" + "q" * 60_000
        assert bench.viewer.get(f"{T}/{bench.template}?{query}").status_code == 200
    gc.collect()
    after = _rss()
    out |= {
        "queries": queries,
        "query_rss_mib_growth": round((after - before) / 2**20, 1),
        "answers_bytes": answers.size,  # as the cache counts them (keys included only where it does)
        "answers_entries": len(answers),
        "answers_bound_bytes": bench.app.state.settings.cache_bytes,
        "issue_query_mb_growth": 89,
    }
    return out


# -- issue 30: bytes ---------------------------------------------------------------------------------------


def _peak_reset() -> None:
    """Reset this process's peak resident memory (``VmHWM``) to its current one (Linux ``clear_refs``)."""
    Path("/proc/self/clear_refs").write_text("5")


def _peak() -> int:
    """This process's peak resident memory since the last :func:`_peak_reset`, in bytes."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return 0  # pragma: no cover - every Linux kernel reports it


#: The longest value of an environment variable the bounds allow (Linux's MAX_ARG_STRLEN; on a checkout
#: without bounds the issue's single 900 KB string is stored instead).
ARG_TEXT = 131_072


class BytesBench:
    """Issue 30's attack: a project editor stores templates of the largest strings a body takes, then one
    viewer lists them and the editor previews a change of the project's defaults over them."""

    def __init__(self, folder: Path, count: int) -> None:
        (folder / "auth.yaml").write_text(AUTH)
        settings = Settings(
            database_url=f"sqlite:///{folder / 'bytes.db'}",
            auth_file=folder / "auth.yaml",
            seed=REPO / "templates",
        )
        self.app = create_app(settings)
        self.editor = _client(self.app, "bench-editor")
        self.viewer = _client(self.app, "bench-viewer")
        projects = self.editor.get("/api/v1/org-unit/projects").json()["projects"]
        self.project = next(p["id"] for p in projects if p["name"] == "vision")
        self.stored = 0
        self.shape = ""
        self.refused: dict[int, int] = {}
        for n in range(count):
            meta = {"name": f"big-{n}", "scopeType": "project", "scopeId": str(self.project)}
            issue = {"meta": meta, "spec": {"image": chr(97 + n % 26) * 900_000}}
            answer = self.editor.post(T, json=issue)
            shape = "one 900 KB spec.image (the issue's)"
            if answer.status_code == 400:  # the bounds refuse it: the worst they allow, under the 1 MiB body
                env = [{"name": f"V{i}", "value": chr(97 + (n + i) % 26) * ARG_TEXT} for i in range(7)]
                answer = self.editor.post(T, json={"meta": meta, "spec": {"environmentVariables": env}})
                shape = f"7 environment variables of {ARG_TEXT:,} characters (917 KB)"
            if answer.status_code == 202:
                self.stored += 1
                self.shape = shape
            else:
                self.refused[answer.status_code] = self.refused.get(answer.status_code, 0) + 1
        self.writes = self.smalls = 0

    def small(self) -> int:
        """The baseline: a viewer's small list (five of the example org's system templates), never from the
        answers' cache (a new ``limit`` each time: the attack is not cached either)."""
        self.smalls += 1
        params = {"filterBy": "scopeType==system", "limit": 5 + self.smalls}
        return len(self.viewer.get(T, params=params).content)

    def health(self) -> int:
        return len(self.viewer.get("/health").content)

    def attack(self) -> int:
        """The issue's read: one viewer, ``filterBy=name=@big-&limit=500``, its first page."""
        return len(self.viewer.get(T, params={"filterBy": "name=@big-", "limit": 500}).content)

    def attack_all(self) -> int:
        """The same list, every page followed through ``nextOffset`` (the work paged, all of it)."""
        offset: int | None = 0
        total = pages = 0
        while offset is not None:
            page = self.viewer.get(T, params={"filterBy": "name=@big-", "limit": 500, "offset": offset})
            total += len(page.content)
            offset = page.json()["pagination"].get("nextOffset")
            pages += 1
        self.pages = pages
        return total

    def patch(self) -> int:
        """A validateOnly PATCH of the project's defaults over every stored template (a new variable)."""
        self.writes += 1
        patch = {"spec": {"environmentVariables": [{"name": "W", "value": str(self.writes) * 20}]}}
        url = f"/api/v1/defaults/projects/{self.project}?validateOnly=true"
        return len(self.editor.patch(url, json=patch).content)


def _bytes_rounds(bench: BytesBench, runs: int) -> dict[str, Any]:
    scenarios: dict[str, Callable[[], int]] = {
        "small-list": bench.small,
        "health": bench.health,
        "attack": bench.attack,
        "attack-all-pages": bench.attack_all,
        "validate-only": bench.patch,
    }
    names = list(scenarios)
    cpu: dict[str, list[float]] = {name: [] for name in names}
    peaks: dict[str, list[int]] = {name: [] for name in names}
    sizes: dict[str, int] = {}
    for round_ in range(runs):
        order = names[round_ % len(names) :] + names[: round_ % len(names)]
        for name in order:
            gc.collect()
            _peak_reset()
            before = _rss()
            start = time.process_time()
            sizes[name] = scenarios[name]()
            cpu[name].append(time.process_time() - start)
            peaks[name].append(_peak() - before)
    out: dict[str, Any] = {}
    base = statistics.median(cpu["small-list"])
    for name in names:
        out[name] = {
            "answer_bytes": sizes[name],
            "cpu_s_median": round(statistics.median(cpu[name]), 4),
            "cpu_s_min": round(min(cpu[name]), 4),
            "ratio_to_small_list_median": round(statistics.median(cpu[name]) / base, 1),
            "peak_rss_growth_mib_max": round(max(peaks[name]) / 2**20, 1),
        }
    out["attack-all-pages"]["pages"] = bench.pages
    return out


def bytes_main(runs: int, count: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        bench = BytesBench(Path(folder), count)
        gc.collect()
        rss = _rss()
        rounds = _bytes_rounds(bench, runs)
        for client in (bench.editor, bench.viewer):
            client.__exit__(None, None, None)
    head = {
        "stored": bench.stored,
        "refused": bench.refused,
        "shape": bench.shape,
        "rss_mib": round(rss / 2**20),
    }
    print(f"templates stored: {bench.stored} of {count} ({bench.shape}); refused: {bench.refused}")
    print(f"server resident memory after the writes: {head['rss_mib']} MiB")
    print(f"{'scenario':18} {'answer bytes':>14} {'cpu s med':>10} {'x small':>8} {'peak +MiB':>10}")
    for name, row in rounds.items():
        print(
            f"{name:18} {row['answer_bytes']:>14,} {row['cpu_s_median']:>10} "
            f"{row['ratio_to_small_list_median']:>8} {row['peak_rss_growth_mib_max']:>10}"
        )
    print(json.dumps({"bytes": rounds, "writes": head, "runs": runs}, sort_keys=True))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--templates", type=int, default=20)
    parser.add_argument("--values", type=int, default=1_000)
    parser.add_argument("--previews", type=int, default=60)
    parser.add_argument("--queries", type=int, default=1_500)
    parser.add_argument("--quick", action="store_true", help="a smoke run: 2 rounds, 10 previews, 100 reads")
    parser.add_argument(
        "--bytes",
        type=int,
        metavar="N",
        help="issue 30 instead: a project editor stores N templates of the largest strings allowed (100 in "
        "the issue), then a viewer's list of them and a validateOnly over them, against a small list",
    )
    args = parser.parse_args(argv)
    if args.bytes:
        bytes_main(2 if args.quick else args.runs, args.bytes)
        return
    if args.quick:
        args.runs, args.previews, args.queries = 2, 10, 100
    with tempfile.TemporaryDirectory() as folder:
        bench = Bench(Path(folder), args.templates, args.values)
        rounds = _rounds(bench, args.runs)
        memory = _memory(bench, args.previews, args.queries)
        for client in (bench.admin, bench.editor, bench.viewer):
            client.__exit__(None, None, None)
    print(
        f"{'scenario':10} {'cpu s med':>10} {'cpu s min':>10} {'x get med':>10} {'issue cpu s':>12}  statuses"
    )
    for name, row in rounds.items():
        print(
            f"{name:10} {row['cpu_s_median']:>10} {row['cpu_s_min']:>10} "
            f"{row.get('ratio_to_get_median', 1.0):>10} {row.get('issue_cpu_s', ''):>12}  {row['statuses']}"
        )
    for key, value in memory.items():
        print(f"{key:36} {value}")
    print(json.dumps({"rounds": rounds, "memory": memory, "runs": args.runs}, sort_keys=True))


if __name__ == "__main__":
    main()
