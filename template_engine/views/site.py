"""``template-engine report``: the explain view of every pair of an org as a static site.

:func:`build_site` is pure (an org, and optionally its diff against another version, in; the files of the
site, by relative path, out); :func:`write_site` writes them into a new hidden folder next to the target and
puts it in place only when every file is written, so a failed run leaves the previous report as it was.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path as FsPath
from urllib.parse import quote

from template_engine.compose import MergeCache
from template_engine.diff import OrgDiff, PairDiff
from template_engine.diffing.pairs import Outcome, Pair, compose_pair, pair_segment, pairs
from template_engine.errors import InputError, Problem
from template_engine.org import Org
from template_engine.staging import exists, put_in_place, sibling
from template_engine.views.html import render_index, render_kinds, render_page
from template_engine.views.kinds import kinds_page
from template_engine.views.model import IndexRow, IndexView, PageView, explain_page, failed_page, index_row

__all__ = ["MARKER", "Site", "build_site", "page_file", "write_site"]

#: The file that marks a folder as a report (a later report may replace it; another folder is refused).
MARKER = ".template-engine-report"


@dataclass(frozen=True, slots=True)
class Site:
    """The files of a report (relative POSIX path -> HTML) and its index, for a summary."""

    files: Mapping[str, str]
    index: IndexView


def page_file(pair_id: str, folder: str = "pairs") -> str:
    """``pairs/projects/vision/train.html``: a pair id is made of percent-encoded names, safe as a path."""
    return f"{folder}/{pair_id}.html"


def _href(rel: str) -> str:
    """A link to a file of the site (its ``%`` escapes are escaped again, so the link finds the file)."""
    return quote(rel, safe="/")


def _back(rel: str) -> str:
    return "../" * rel.count("/") + "index.html"


def _page(outcome: Outcome, pair: Pair, diff: PairDiff | None, against: str | None) -> PageView:
    if outcome.composition is None:
        return failed_page(
            pair.template, pair.view, outcome.problems, pair_id=pair.id, diff=diff, against=against
        )
    return explain_page(outcome.composition, pair_id=pair.id, diff=diff, against=against)


def build_site(
    org: Org,
    root: str,
    variables: Mapping[str, str] | None = None,
    diff: OrgDiff | None = None,
    against: str | None = None,
) -> Site:
    """Every pair's page and the index; with ``diff`` (``org`` against ``against``), the changes of each."""
    diffs = {d.id: d for d in diff.pairs} if diff is not None else {}
    cache: MergeCache = {}
    files: dict[str, str] = {}
    rows: list[IndexRow] = []
    for pair in pairs(org):
        found = diffs.get(pair.id)
        outcome = found.new if found is not None and found.new is not None else None
        if outcome is None:
            outcome = compose_pair(org, pair, variables, cache)
        page = _page(outcome, pair, found, against)
        rel = page_file(pair.id)
        files[rel] = render_page(page, _back(rel))
        rows.append(index_row(page, _href(rel)))
    gone: list[IndexRow] = []
    for found in diffs.values():
        if found.status != "disappeared" or not isinstance(found.old, Outcome):  # (never kept)
            continue
        page = _page(found.old, found.pair, found, against)
        rel = page_file(found.id, "gone")
        files[rel] = render_page(page, _back(rel))
        gone.append(index_row(page, _href(rel)))
    kinds: list[tuple[str, str, int]] = []
    for project in sorted(org.projects()):
        kinds_view = kinds_page(org, org.view_of(project))
        rel = page_file(pair_segment(project), "kinds")
        files[rel] = render_kinds(kinds_view, _back(rel))
        kinds.append((project, _href(rel), len(kinds_view.rows)))
    invalid = tuple(problem.one_line() for file in sorted(org.broken) for problem in org.broken[file])
    index = IndexView(root, tuple(rows), invalid, against, tuple(gone), tuple(kinds))
    files["index.html"] = render_index(index)
    return Site(files, index)


def _refuse(message: str, expected: str) -> InputError:
    return InputError([Problem(message, (), None, expected)])


def write_site(files: Mapping[str, str], out: FsPath) -> None:
    """Write ``files`` as the folder ``out``: aside first, then in place of ``out`` by renames.

    ``out`` must be new, empty, or a report written before (it holds :data:`MARKER`); anything else is an
    :class:`InputError`, as is a failure to write (then ``out`` is left as it was).
    """
    if exists(out):
        if not out.is_dir():
            raise _refuse(
                f"--out {str(out)!r} is not a folder", "a new or empty folder, or an earlier report"
            )
        if any(out.iterdir()) and not (out / MARKER).is_file():
            raise _refuse(
                f"--out {str(out)!r} is not empty and is not a report (it has no {MARKER})",
                "a new or empty folder, or an earlier report (which is replaced whole)",
            )
    staged: FsPath | None = None
    try:
        staged = sibling(out, "report")
        for rel, text in sorted(files.items()):
            path = staged / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        (staged / MARKER).write_text(
            "Written by `template-engine report`; the next report replaces this whole folder.\n",
            encoding="utf-8",
        )
        put_in_place(staged, out, "report")
    except OSError as exc:
        if staged is not None:
            shutil.rmtree(staged, ignore_errors=True)
        reason = exc.strerror or str(exc)
        raise _refuse(
            f"cannot write the report to {str(out)!r}: {reason}", "a folder that can be written"
        ) from None
