"""``template-engine lsp``: the time from a change notification to published diagnostics, and hover latency,
on the orgs ``bench_check.py`` generates (``gen_org``), against a cold ``check`` of the same org.

For each size of ``--sizes`` (pairs; default 400 and 1,600) and shape of ``--shapes`` (default ``deep``):

1. ``gen_org`` writes the org into a temporary folder.
2. A cold ``python -m template_engine check --root ORG -o json`` (as a user runs it, ``--jobs 0``), and the
   same with ``--jobs 1``, each a fresh process, ``--runs`` times interleaved with the rest.
3. The server, a fresh ``python -m template_engine lsp`` process driven over stdio by pygls' own client:
   ``initialize``, then one project's defaults opened; the time to its first diagnostics is the cold load.
   Then ``--edits`` edits of that buffer (an environment variable's value changed, as typing does): each
   the time from sending ``didChange`` to receiving the server's ``$/templateEngine/analysed``, which it
   sends right after publishing the diagnostics of that change (the pairs it composed are checked: only
   that project's).  Then ``--hovers`` hovers on a value of that buffer, each the round trip of the
   request.

The figures are the median and the maximum of the edits and hovers, the median of the cold checks, and the
ratio of the median edit to the median cold check.  Targets (issue 34): diagnostics within 100 ms of an edit
of a project default, hover within 50 ms.  Run ``python benchmarks/bench_lsp.py`` (``--quick``: 100 pairs,
few repetitions).  The last line printed is one JSON object with every figure.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import gen_org  # sibling scripts, not a package: found through the sys.path line above
from lsprotocol import types
from procs import run_process
from pygls.lsp.client import LanguageClient

REPO = Path(__file__).resolve().parents[1]
ANALYSED = "$/templateEngine/analysed"
TARGET_EDIT_MS = 100.0
TARGET_HOVER_MS = 50.0


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    return env


def cold_check(root: Path, jobs: int) -> float:
    cmd = [
        sys.executable,
        "-m",
        "template_engine",
        "check",
        "--root",
        str(root),
        "-o",
        "json",
        "-j",
        str(jobs),
    ]
    found = run_process(cmd, env=_env(), expect=0)
    return float(found["seconds"])


async def _session(root: Path, edits: int, hovers: int) -> dict[str, Any]:
    client = LanguageClient("bench-lsp", "1")
    analysed: asyncio.Queue[tuple[float, Any]] = asyncio.Queue()

    @client.feature(ANALYSED)
    def _analysed(params: Any) -> None:
        analysed.put_nowait((time.perf_counter(), params))

    @client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def _published(params: types.PublishDiagnosticsParams) -> None:
        pass

    started = time.perf_counter()
    await client.start_io(sys.executable, "-m", "template_engine", "lsp", "--root", str(root), env=_env())
    await client.initialize_async(types.InitializeParams(capabilities=types.ClientCapabilities()))
    client.initialized(types.InitializedParams())
    project = sorted((root / "projects").iterdir())[0]
    path = project / "defaults.yaml"
    uri = path.as_uri()
    text = path.read_text("utf-8")
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(types.TextDocumentItem(uri, "yaml", 1, text))
    )
    opened_at, first = await asyncio.wait_for(analysed.get(), 600)
    cold = opened_at - started
    lines = text.splitlines()
    value_line = next(n for n, line in enumerate(lines) if line.strip().startswith("value:"))
    edit_ms: list[float] = []
    composed: list[int] = []
    for number in range(edits):
        changed = list(lines)
        changed[value_line] = lines[value_line] + f"-edit{number}"
        sent = time.perf_counter()
        client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                types.VersionedTextDocumentIdentifier(version=number + 2, uri=uri),
                [types.TextDocumentContentChangeWholeDocument("\n".join(changed) + "\n")],
            )
        )
        got, result = await asyncio.wait_for(analysed.get(), 600)
        edit_ms.append((got - sent) * 1000)
        composed.append(len(result.composed))
    hover_ms: list[float] = []
    hover_text = ""
    for _ in range(hovers):
        sent = time.perf_counter()
        hover = await client.text_document_hover_async(
            types.HoverParams(types.TextDocumentIdentifier(uri), types.Position(value_line, 6))
        )
        hover_ms.append((time.perf_counter() - sent) * 1000)
        assert hover is not None and isinstance(hover.contents, types.MarkupContent)
        hover_text = hover.contents.value
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()
    return {
        "pairs": first.pairs,
        "cold_load_seconds": cold,
        "edit_ms": edit_ms,
        "pairs_composed_per_edit": sorted(set(composed)),
        "hover_ms": hover_ms,
        "hover_lines": len(hover_text.splitlines()),
        "project": project.name,
    }


def _figures(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "max": max(values)}


def measure(pairs: int, shape: str, runs: int, edits: int, hovers: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder) / "templates"
        gen_org.write_org(gen_org.generate(gen_org.shape_for(pairs, kind=shape)), root)
        checks: list[float] = []
        checks_one: list[float] = []
        sessions = []
        for _ in range(runs):  # interleaved: each round runs every process once
            checks.append(cold_check(root, 0))
            sessions.append(asyncio.run(_session(root, edits, hovers)))
            checks_one.append(cold_check(root, 1))
    edit_ms = [ms for s in sessions for ms in s["edit_ms"]]
    hover_ms = [ms for s in sessions for ms in s["hover_ms"]]
    check = statistics.median(checks)
    return {
        "pairs": sessions[0]["pairs"],
        "shape": shape,
        "cold_check_seconds": _figures(checks),
        "cold_check_one_process_seconds": _figures(checks_one),
        "lsp_cold_load_seconds": _figures([s["cold_load_seconds"] for s in sessions]),
        "edit_to_diagnostics_ms": _figures(edit_ms),
        "pairs_composed_per_edit": sessions[0]["pairs_composed_per_edit"],
        "hover_ms": _figures(hover_ms),
        "edit_vs_cold_check": statistics.median(edit_ms) / 1000 / check,
        "edit_target_met": statistics.median(edit_ms) <= TARGET_EDIT_MS,
        "hover_target_met": statistics.median(hover_ms) <= TARGET_HOVER_MS,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[400, 1600])
    parser.add_argument("--shapes", nargs="+", default=["deep"], choices=["deep", "wide"])
    parser.add_argument("--runs", type=int, default=3, help="server sessions and cold checks per size")
    parser.add_argument("--edits", type=int, default=20, help="edits per session")
    parser.add_argument("--hovers", type=int, default=20, help="hovers per session")
    parser.add_argument("--quick", action="store_true", help="100 pairs, 1 run, 5 edits and hovers")
    args = parser.parse_args(argv)
    if args.quick:
        args.sizes, args.runs, args.edits, args.hovers = [100], 1, 5, 5
    results = []
    for size in args.sizes:
        for shape in args.shapes:
            found = measure(size, shape, args.runs, args.edits, args.hovers)
            results.append(found)
            print(
                f"{found['pairs']:>5} pairs ({shape}): edit -> diagnostics "
                f"{found['edit_to_diagnostics_ms']['median']:.1f} ms median "
                f"(max {found['edit_to_diagnostics_ms']['max']:.1f}), "
                f"{found['pairs_composed_per_edit']} pairs composed; hover "
                f"{found['hover_ms']['median']:.1f} ms median (max {found['hover_ms']['max']:.1f}); "
                f"cold check {found['cold_check_seconds']['median']:.2f} s "
                f"(-j 1: {found['cold_check_one_process_seconds']['median']:.2f} s), "
                f"edit / cold check {found['edit_vs_cold_check']:.3f}; "
                f"server's cold load {found['lsp_cold_load_seconds']['median']:.2f} s",
                flush=True,
            )
    machine = {"python": platform.python_version(), "cpus": os.cpu_count(), "machine": platform.machine()}
    print(json.dumps({"machine": machine, "results": results}))


if __name__ == "__main__":
    main()
