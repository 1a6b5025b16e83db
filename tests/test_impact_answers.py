"""Warm ``impact`` and ``diff`` recall the outcomes an earlier run composed (``diffing/answers.py``, kept in
the fact cache, ``loader/facts.py``): the same answers, fewer compositions.

Counted here (work, never time): which pairs are composed on which side; that an answer kept for other
inputs (any dependency: defaults, policy, asset, template, ``cluster.yaml``, ``org.yaml``) is never
recalled; that a damaged, foreign or wrong answer changes nothing but the work; and, over generated orgs and
changes (hypothesis), that the answers are those of no cache at all.
"""

from __future__ import annotations

import sqlite3
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_incremental import (
    EXAMPLE_CHANGES,
    FINGERPRINT,
    add_label,
    edit,
    example_files,
    generated_files,
)

from template_engine import diff as diff_module
from template_engine.cli.diff_commands import _diff_sides, _load_side
from template_engine.diff import OrgDiff
from template_engine.diffing import answers as answers_module
from template_engine.diffing.answers import Summary, from_json
from template_engine.diffing.pairs import Outcome, Pair, dependencies, pairs
from template_engine.loader import tree
from template_engine.loader.facts import FILE_NAME, KEY_NAME, FactCache
from template_engine.loader.sources import MappingSource
from template_engine.org import Org

Files = dict[str, bytes]


@pytest.fixture(autouse=True)
def fresh_memo(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tree._Reuse, "last", {})


class Log:
    """The compositions made (by side) and the outcomes recalled (by side) during one comparison."""

    def __init__(self) -> None:
        self.composed: dict[str, list[str]] = {"old": [], "new": []}
        self.recalled: dict[str, list[str]] = {"old": [], "new": []}
        self.sides: dict[int, str] = {}
        self.orgs: tuple[Org, ...] = ()  # kept alive, so that no other org gets their ids


@pytest.fixture
def log(monkeypatch: pytest.MonkeyPatch) -> Iterator[Log]:
    found = Log()
    compose = diff_module.compose_pair
    recall = answers_module.Answers.recall

    def counting(org: Org, pair: Pair, *args: Any) -> Outcome:
        found.composed.setdefault(found.sides.get(id(org), "?"), []).append(pair.id)
        return compose(org, pair, *args)

    def recalling(self: answers_module.Answers, pair: Pair, deps: tuple[str, ...]) -> Summary | None:
        summary = recall(self, pair, deps)
        if summary is not None:
            found.recalled.setdefault(found.sides.get(id(self.org), "?"), []).append(pair.id)
        return summary

    monkeypatch.setattr(diff_module, "compose_pair", counting)
    monkeypatch.setattr(answers_module.Answers, "recall", recalling)
    yield found


def compare(
    old: Files, new: Files, cache: Path | None, file: str | None = None, log: Log | None = None
) -> tuple[dict[str, Any], OrgDiff]:
    """What ``impact`` (with ``file``) or ``diff`` answers, as the command does it (a fresh process's
    loads, the answers of each side), with the cache at ``cache`` or none."""
    tree._Reuse.last = {}
    facts = FactCache(cache, fingerprint=FINGERPRINT) if cache is not None else None
    before = _load_side(MappingSource(old), None, facts)
    after = _load_side(MappingSource(new), None, facts)
    if log is not None:
        log.composed = {"old": [], "new": []}
        log.recalled = {"old": [], "new": []}
        log.sides = {id(before[0]): "old", id(after[0]): "new"}
        log.orgs = (before[0], after[0])
    result = _diff_sides(before, after, {}, facts, file)
    if facts is not None:
        facts.close()
    shown = {
        "summary": result.summary(),
        "pairs": [d.to_dict() for d in result.pairs],
        "invalidFiles": [{"file": f, "errors": [p.to_dict() for p in ps]} for f, ps in result.broken],
        "usedBy": list(result.users),
    }
    return shown, result


def every_pair_composed(files: Files) -> Files:
    """A change of ``cluster.yaml`` that every pair depends on (so that every pair is composed on both
    sides, and its outcome kept)."""
    return edit(files, "cluster.yaml", "vision: vision", "vision: vision-other")


# -- the work ---------------------------------------------------------------------------------------------


def test_a_warm_impact_composes_only_the_pairs_whose_inputs_changed(tmp_path: Path, log: Log) -> None:
    files = generated_files()
    rel = "departments/d00/defaults.yaml"
    first = add_label(files, rel)
    cold, cold_result = compare(files, first, tmp_path, rel, log)
    users = cold["usedBy"]
    assert len(users) == 6 and sorted(log.composed["old"]) == sorted(users) == sorted(log.composed["new"])
    assert cold_result.recalled == 0
    # The same change again: every pair recalled on both sides; those that differ are composed on the new
    # side only (the changes say which layer now sets each value), their old side is the one kept.
    again, result = compare(files, first, tmp_path, rel, log)
    assert again == cold
    differ = [d.id for d in result.pairs]
    assert differ and log.composed["old"] == [] and sorted(differ) == sorted(log.composed["new"])
    assert sorted(log.recalled["old"]) == sorted(users) == sorted(log.recalled["new"])
    assert result.composed == len(differ) and result.recalled == 2 * (len(users) - len(differ)) + len(differ)
    # The file edited again (a comment): its pairs are composed on the new side only, and none differs.
    comment = {**files, rel: b"# reviewed\n" + files[rel]}  # the lines move: the pairs are compared
    reference = compare(files, comment, None, rel)[0]
    edited, result = compare(files, comment, tmp_path, rel, log)
    assert edited == reference and not edited["pairs"]
    assert log.composed["old"] == [] and sorted(log.recalled["old"]) == sorted(users)
    assert sorted(log.composed["new"]) == sorted(users) and log.recalled["new"] == []
    assert result.composed == len(users) and result.recalled == len(users)
    # And edited to change values: the old side of the pairs that then differ is the one kept, not composed.
    valued = add_label(comment, rel)
    reference = compare(files, valued, None, rel)[0]
    changed, result = compare(files, valued, tmp_path, rel, log)
    assert changed == reference and result.pairs
    assert log.composed["old"] == []
    assert sorted(log.composed["new"]) == sorted(users)


def test_a_kept_old_side_is_composed_when_a_change_needs_who_used_to_set_a_value(
    tmp_path: Path, log: Log
) -> None:
    """A value that simply stopped being set says which layer used to set it, which only the old
    composition knows: then the kept old side is not enough, and the old side is composed."""
    files = generated_files()
    rel = "departments/d00/defaults.yaml"
    labelled = add_label(files, rel)  # a label that only the department sets
    compare(labelled, edit(labelled, rel, "value: here", "value: there"), tmp_path, rel)  # old side kept
    reference = compare(labelled, files, None, rel)[0]
    shown, result = compare(labelled, files, tmp_path, rel, log)  # the label removed, excluded by no one
    assert shown == reference
    removed = [c for d in shown["pairs"] for c in d["changes"] if c["change"] == "removed"]
    assert removed and all(c["wasSetBy"]["file"] == rel for c in removed)
    assert sorted(log.composed["old"]) == sorted(d.id for d in result.pairs) == sorted(log.composed["new"])


def test_a_kept_old_side_that_is_not_the_recalled_summary_s_is_not_believed(tmp_path: Path, log: Log) -> None:
    """A kept outcome is believed only when its digest is the recalled summary's: one rewritten (a value
    changed, the HMAC made again) is ignored, and the old side is composed."""
    files = generated_files()
    rel = "departments/d00/defaults.yaml"
    first = add_label(files, rel)
    cold, _ = compare(files, first, tmp_path, rel)

    def tamper(key: bytes, body: bytes) -> bytes:
        text = zlib.decompress(body).decode()
        if '"output"' not in text:
            return body
        assert "svc.d00.acme.internal" in text  # a value the department sets, on both sides
        return zlib.compress(text.replace("svc.d00.acme.internal", "svc.tampered").encode(), 1)

    assert _rewrite(tmp_path, tamper, keep_mac=True)
    again, result = compare(files, first, tmp_path, rel, log)
    assert again == cold
    assert sorted(log.composed["old"]) == sorted(d.id for d in result.pairs)


def test_without_the_cache_nothing_is_recalled(tmp_path: Path, log: Log) -> None:
    files = generated_files()
    rel = "departments/d00/defaults.yaml"
    new = add_label(files, rel)
    compare(files, new, tmp_path, rel)
    _, result = compare(files, new, None, rel, log)
    assert result.recalled == 0 and len(log.composed["old"]) == 6 == len(log.composed["new"])


# -- never stale ------------------------------------------------------------------------------------------

ORG_YAML = ("org.yaml", lambda f: edit(f, "org.yaml", "  - speech\n", "  - speech\n  - audio\n"))
STALE: dict[str, tuple[str, Callable[[Files], Files]]] = {
    kind: (file, change)
    for kind, (change, file) in EXAMPLE_CHANGES.items()
    if kind in {"system defaults", "department defaults", "project defaults", "template", "asset", "policy"}
    and file is not None
}
STALE["cluster settings"] = ("cluster.yaml", lambda f: edit(f, "cluster.yaml", "nlp: nlp", "nlp: nlp-b"))
STALE["org.yaml"] = ORG_YAML


@pytest.mark.parametrize("kind", sorted(STALE))
def test_an_answer_kept_for_another_version_of_a_dependency_is_never_recalled(
    tmp_path: Path, log: Log, kind: str
) -> None:
    base = example_files()
    compare(base, every_pair_composed(base), tmp_path)  # every pair's outcome kept, both sides
    file, change = STALE[kind]
    old = change(base)
    new = every_pair_composed(old)
    reference = compare(old, new, None)[0]
    shown, _ = compare(old, new, tmp_path, None, log)
    assert shown == reference
    org = tree.load_org(MappingSource(old))
    stale = {p.id for p in pairs(org) if file in dependencies(org, p) or file in ("cluster.yaml", "org.yaml")}
    assert stale, kind
    assert not stale & set(log.recalled["old"])  # the old side's inputs changed: none recalled
    assert not stale & set(log.recalled["new"])
    if len(stale) < len(pairs(org)):  # not a system file: the pairs that do not depend on it are recalled
        assert set(log.recalled["old"]) == {p.id for p in pairs(org)} - stale


# -- damaged, foreign and wrong answers -------------------------------------------------------------------


def _rewrite(cache: Path, body: Callable[[bytes, bytes], bytes], keep_mac: bool) -> int:
    """Rewrite every answer's body; with ``keep_mac``, give it the HMAC this cache's key makes (a row that
    only this code could have written, and that is still wrong)."""
    import hmac as hmac_module

    secret = (cache / KEY_NAME).read_bytes()
    db = sqlite3.connect(cache / FILE_NAME)
    rows = db.execute("SELECT key, body FROM answers").fetchall()
    for key, old in rows:
        new = body(key, old)
        mac = hmac_module.digest(secret, b"answer\0" + key + b"\0" + new, "sha256")
        if keep_mac:
            db.execute("UPDATE answers SET body = ?, mac = ? WHERE key = ?", (new, mac, key))
        else:
            db.execute("UPDATE answers SET body = ? WHERE key = ?", (new, key))
    db.commit()
    db.close()
    return len(rows)


def _forged(key: bytes, old: bytes) -> bytes:
    """A summary that reads back, and is wrong: the pair composed to something else (each to its own, so
    that no two agree: docs/decisions.md, "the kept answers' trust model", says what a wrong answer that
    agrees with the other side would do)."""
    summary = from_json(zlib.decompress(old).decode())
    if summary is None:  # a kept outcome (``answers.Kept``): believed only with its own summary's digest
        assert b'"output"' in zlib.decompress(old)
        return old
    return zlib.compress(Summary(True, summary.problems, key.hex()).to_json().encode())


DAMAGE: dict[str, tuple[Callable[[bytes, bytes], bytes], bool]] = {
    "a body edited outside this code (the HMAC no longer matches)": (lambda k, b: b[:-1] + b"x", False),
    "a body that does not decompress, with a valid HMAC": (lambda k, b: b"not zlib", True),
    "a body that is not a summary, with a valid HMAC": (lambda k, b: zlib.compress(b'{"a": 1}'), True),
    "a summary that is wrong, with a valid HMAC": (_forged, True),
}


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_a_damaged_or_wrong_answer_changes_nothing_but_the_work(
    tmp_path: Path, log: Log, damage: str
) -> None:
    files = generated_files()
    rel = "projects/d00-p01/defaults.yaml"
    new = add_label(files, rel)
    reference, _ = compare(files, new, None, rel)
    compare(files, new, tmp_path, rel)
    body, keep_mac = DAMAGE[damage]
    assert _rewrite(tmp_path, body, keep_mac) > 0
    shown, _ = compare(files, new, tmp_path, rel, log)
    assert shown == reference
    assert sorted(log.composed["old"]) == sorted(shown["usedBy"])  # recomputed, not answered
    # What was ignored or wrong is written again: the next run recalls it.
    again, _ = compare(files, new, tmp_path, rel, log)
    assert again == reference and sorted(log.recalled["old"]) == sorted(shown["usedBy"])


def test_answers_of_another_code_version_are_not_found(tmp_path: Path, log: Log) -> None:
    files = generated_files()
    rel = "departments/d01/defaults.yaml"
    new = add_label(files, rel)
    compare(files, new, tmp_path, rel)
    facts = FactCache(tmp_path, fingerprint=b"another version")
    tree._Reuse.last = {}
    before = _load_side(MappingSource(files), None, facts)
    after = _load_side(MappingSource(new), None, facts)
    result = _diff_sides(before, after, {}, facts, rel)
    assert result.recalled == 0 and facts.answer_hits == 0 and facts.answer_reads > 0
    facts.close()


def test_a_summary_tells_apart_what_a_comparison_tells_apart() -> None:
    assert Summary(True, (), "a" * 64).same_as(Summary(True, (), "a" * 64))
    assert not Summary(True, (), "a" * 64).same_as(Summary(True, (), "b" * 64))
    assert not Summary(False, ("x",), "").same_as(Summary(False, ("y",), ""))
    assert Summary(False, ("x",), "").same_as(Summary(False, ("x",), ""))
    assert not Summary(True, (), "a" * 64).same_as(Summary(False, (), ""))
    text = Summary(True, ("p",), "c" * 64).to_json()
    assert from_json(text) == Summary(True, ("p",), "c" * 64)
    assert from_json('{"composes": true, "problems": [], "digest": "short"}') is None
    assert answers_module._plain({"a": [1, 1.0, True, None, "x"]})
    for odd in ({"a": (1, 2)}, {1: "x"}, {"a": float("nan")}, {"a": {1.5}}):
        assert not answers_module._plain(odd), odd


def test_the_answers_are_bounded(tmp_path: Path) -> None:
    files = generated_files()
    facts = FactCache(tmp_path, fingerprint=FINGERPRINT)
    facts.answer_limit = 5
    tree._Reuse.last = {}
    before = _load_side(MappingSource(files), None, facts)
    after = _load_side(MappingSource(add_label(files, "system/defaults.yaml")), None, facts)
    result = _diff_sides(before, after, {}, facts)
    facts.close()
    assert result.composed > 10
    db = sqlite3.connect(tmp_path / FILE_NAME)
    assert db.execute("SELECT COUNT(*) FROM answers").fetchone()[0] == 5
    db.close()


# -- the same answers, over generated orgs and changes -----------------------------------------------------

FILES = generated_files()
CHANGEABLE = sorted(rel for rel in FILES if "  labels:\n" in FILES[rel].decode())


def _changed(files: Files, rel: str, how: int) -> Files:
    if how == 0:
        return add_label(files, rel)
    if how == 1:
        return {**files, rel: b"# a comment\n" + files[rel]}
    if how == 2:
        return {**files, rel: b"spec: [unclosed\n"}
    return {k: v for k, v in files.items() if k != rel}


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    first=st.tuples(st.sampled_from(CHANGEABLE), st.integers(0, 3)),
    second=st.tuples(st.sampled_from(CHANGEABLE), st.integers(0, 3)),
    impact=st.booleans(),
)
def test_the_answers_are_the_same_with_and_without_kept_outcomes(
    tmp_path_factory: pytest.TempPathFactory,
    first: tuple[str, int],
    second: tuple[str, int],
    impact: bool,
) -> None:
    """Three comparisons in a row with one cache (each later one finds what the earlier ones kept): one
    change, another, then the second on top of the first; each answers as with no cache."""
    cache = tmp_path_factory.mktemp("answers")
    once = _changed(FILES, *first)
    runs = [(FILES, once, first[0]), (FILES, _changed(FILES, *second), second[0])]
    if second[0] in once and (second[1] != 0 or b"  labels:\n" in once[second[0]]):
        runs.append((once, _changed(once, *second), second[0]))
    for old, new, rel in runs:
        file = rel if impact else None
        assert compare(old, new, cache, file)[0] == compare(old, new, None, file)[0]
