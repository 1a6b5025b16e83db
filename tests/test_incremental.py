"""``diff`` and ``impact`` with the fact cache: the same answers as reading every file, with less reading.

The cache (``loader/facts.py``) remembers, between processes, which files are valid; ``load_org`` then puts a
stand-in (``loader/deferred.py``) in the org for each known file and parses it only when a composition asks
for it.  Here: the same answers with no cache, an empty one (cold) and a filled one (warm), on the example
org and on a generated org, for a change in every kind of file; how many files are parsed (work, not time);
the cache's key, bounds, failures and concurrent writers; the code fingerprint's scope.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sqlite3
import stat
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from template_engine.cli import main
from template_engine.cli.diff_commands import cache_folder
from template_engine.diff import diff_orgs
from template_engine.loader import gitrev, tree
from template_engine.loader.deferred import DeferredTemplate, StaleFacts
from template_engine.loader.facts import FILE_NAME, KEY_NAME, KEY_SIZE, UNRELATED, FactCache, fingerprinted
from template_engine.loader.sources import FolderSource, MappingSource, OverlaySource
from template_engine.loader.tree import content_digest, load_org
from template_engine.org import SYSTEM, Scope

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "templates"
FINGERPRINT = b"tests"  # a fixed code fingerprint: these tests do not depend on the package's bytes


def _gen_org() -> Any:
    spec = importlib.util.spec_from_file_location("gen_org", ROOT / "benchmarks" / "gen_org.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("gen_org", module)
    spec.loader.exec_module(module)
    return module


def example_files() -> dict[str, bytes]:
    return {
        path.relative_to(EXAMPLE).as_posix(): path.read_bytes()
        for path in sorted(EXAMPLE.rglob("*"))
        if path.is_file()
    }


def generated_files() -> dict[str, bytes]:
    """2 departments x 3 projects x 2 templates, written by the benchmarks' generator."""
    gen = _gen_org()
    org = gen.generate(gen.Shape(departments=2, projects=3, templates=2))
    return {rel: yaml.safe_dump(doc, sort_keys=False).encode() for rel, doc, _ in gen.engine_files(org)}


def edit(files: dict[str, bytes], rel: str, old: str, new: str) -> dict[str, bytes]:
    text = files[rel].decode()
    assert old in text, (rel, old)
    return {**files, rel: text.replace(old, new, 1).encode()}


def add_label(files: dict[str, bytes], rel: str) -> dict[str, bytes]:
    """A generated file with one more label, which no other layer sets or excludes."""
    text = files[rel].decode()
    start = text.index("  labels:\n") + len("  labels:\n")
    item = "  - name: added-by-the-test\n    value: here\n"
    return {**files, rel: (text[:start] + item + text[start:]).encode()}


@pytest.fixture(autouse=True)
def fresh_memo(monkeypatch: pytest.MonkeyPatch) -> None:
    """No documents reused from a load of another test."""
    monkeypatch.setattr(tree._Reuse, "last", {})


@pytest.fixture
def parsed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The files parsed, in order (every document is parsed through ``_parse_source``)."""
    seen: list[str] = []
    real = tree._parse_source

    def counting(text: str, rel: str) -> Any:
        seen.append(rel)
        return real(text, rel)

    monkeypatch.setattr(tree, "_parse_source", counting)
    return seen


def answer(
    old: dict[str, bytes], new: dict[str, bytes], facts: FactCache | None, file: str | None = None
) -> dict[str, Any]:
    """What ``diff`` (or ``impact``, with ``file``) reports, as its JSON output has it."""
    tree._Reuse.last = {}
    before = load_org(MappingSource(old), facts)
    after = load_org(MappingSource(new), facts)
    result = diff_orgs(before, after, file=file)
    return {
        "summary": result.summary(),
        "pairs": [d.to_dict() for d in result.pairs],
        "invalidFiles": [{"file": f, "errors": [p.to_dict() for p in ps]} for f, ps in result.broken],
        "usedBy": list(result.users),
    }


def three_ways(
    tmp_path: Path, old: dict[str, bytes], new: dict[str, bytes], file: str | None = None
) -> dict[str, Any]:
    """The answer without a cache, which must be the answer with an empty cache and with a filled one."""
    reference = answer(old, new, None, file)
    cold = FactCache(tmp_path / "cache", fingerprint=FINGERPRINT)
    assert answer(old, new, cold, file) == reference
    assert cold.hits == 0
    warm = FactCache(tmp_path / "cache", fingerprint=FINGERPRINT)
    assert answer(old, new, warm, file) == reference
    assert warm.hits > 0
    return reference


# -- the same answers ---------------------------------------------------------------------------------------

ExampleChange = Callable[[dict[str, bytes]], dict[str, bytes]]

BROKEN = b"meta:\n  name: broken\nspec: [unclosed\n"

EXAMPLE_CHANGES: dict[str, tuple[ExampleChange, str | None]] = {
    "system defaults": (
        lambda f: edit(f, "system/defaults.yaml", "value: ", "value: x-"),
        "system/defaults.yaml",
    ),
    "department defaults": (
        lambda f: edit(f, "departments/research/defaults.yaml", "cc-2100", "cc-2199"),
        "departments/research/defaults.yaml",
    ),
    "project defaults": (
        lambda f: edit(f, "projects/vision/defaults.yaml", "a100-80gb", "h100-80gb"),
        "projects/vision/defaults.yaml",
    ),
    "template": (
        lambda f: edit(f, "projects/vision/templates/vit-finetune.yaml", "numWorkers: 2", "numWorkers: 3"),
        "projects/vision/templates/vit-finetune.yaml",
    ),
    "asset": (
        lambda f: edit(f, "assets/environments/pytorch.yaml", "24.05-py3", "24.06-py3"),
        "assets/environments/pytorch.yaml",
    ),
    "policy": (
        lambda f: edit(f, "system/policy.yaml", "max: 16", "max: 2"),
        "system/policy.yaml",
    ),
    "an invalid file appears": (
        lambda f: {**f, "projects/vision/templates/broken.yaml": BROKEN},
        "projects/vision/templates/broken.yaml",
    ),
    "a valid file becomes invalid": (
        lambda f: {**f, "projects/vision/defaults.yaml": b"spec: [unclosed\n"},
        "projects/vision/defaults.yaml",
    ),
    "a template disappears": (
        lambda f: {k: v for k, v in f.items() if k != "projects/vision/templates/vit-finetune.yaml"},
        "projects/vision/templates/vit-finetune.yaml",
    ),
    "a comment changes only": (
        lambda f: edit(f, "departments/research/defaults.yaml", "# ", "#  "),
        "departments/research/defaults.yaml",
    ),
    "cluster settings": (
        lambda f: edit(f, "cluster.yaml", "vision: vision", "vision: vision-gpu"),
        "cluster.yaml",
    ),
    "cluster settings disappear": (
        lambda f: {k: v for k, v in f.items() if k != "cluster.yaml"},
        "cluster.yaml",
    ),
}


@pytest.mark.parametrize("name", sorted(EXAMPLE_CHANGES))
def test_the_example_org_gives_the_same_answers_with_the_cache(tmp_path: Path, name: str) -> None:
    change, file = EXAMPLE_CHANGES[name]
    old = example_files()
    new = change(old)
    result = three_ways(tmp_path, old, new)  # diff
    three_ways(tmp_path / "impact", old, new, file)  # impact
    if name != "a comment changes only":
        assert result["summary"]["changed"] + result["summary"]["invalidFiles"] + len(result["pairs"]) > 0


def test_an_invalid_file_that_disappears_gives_the_same_answers(tmp_path: Path) -> None:
    fixed = example_files()
    broken = {**fixed, "projects/vision/templates/broken.yaml": BROKEN}
    result = three_ways(tmp_path, broken, fixed)
    assert result["invalidFiles"] == []
    assert three_ways(tmp_path / "back", fixed, broken)["summary"]["invalidFiles"] == 1


GENERATED_CHANGES: dict[str, str] = {
    "system defaults": "system/defaults.yaml",
    "department defaults": "departments/d00/defaults.yaml",
    "project defaults": "projects/d00-p01/defaults.yaml",
    "template": "projects/d00-p01/templates/t01.yaml",
}


@pytest.fixture(scope="module")
def generated() -> dict[str, bytes]:
    return generated_files()


def test_the_generated_org_is_what_the_cases_expect(generated: dict[str, bytes]) -> None:
    assert set(GENERATED_CHANGES.values()) <= set(generated)


@pytest.mark.parametrize("name", sorted(GENERATED_CHANGES))
def test_a_generated_org_gives_the_same_answers_with_the_cache(
    tmp_path: Path, generated: dict[str, bytes], name: str
) -> None:
    rel = GENERATED_CHANGES[name]
    new = add_label(generated, rel)
    result = three_ways(tmp_path, generated, new)
    assert result["summary"]["changed"] > 0
    assert three_ways(tmp_path / "impact", generated, new, rel)["usedBy"]


# -- the work: files parsed ---------------------------------------------------------------------------------


def test_a_warm_diff_parses_only_the_files_of_the_pairs_it_composes(
    tmp_path: Path, generated: dict[str, bytes], parsed: list[str]
) -> None:
    rel = GENERATED_CHANGES["department defaults"]
    new = add_label(generated, rel)
    answer(generated, new, FactCache(tmp_path, fingerprint=FINGERPRINT))
    assert sorted(parsed) == sorted([*generated, "org.yaml", rel])  # cold: all, org.yaml and the change twice
    parsed.clear()
    tree._Reuse.last = {}
    facts = FactCache(tmp_path, fingerprint=FINGERPRINT)
    before = load_org(MappingSource(generated), facts)
    after = load_org(MappingSource(new), facts)
    assert parsed == ["org.yaml", "org.yaml"]  # nothing else until a composition asks
    result = diff_orgs(before, after)
    # d00's pairs are composed on both sides: its defaults (both versions), its projects' defaults and
    # templates, and the system defaults; nothing of d01.
    d00 = [p for p in generated if p.startswith("projects/d00-")]
    expected = ["org.yaml", "system/defaults.yaml", rel, *d00]
    assert sorted(set(parsed)) == sorted(expected)
    assert parsed.count(rel) == 2 and len(parsed) == len(expected) + 2  # and org.yaml: once per load
    assert result.total == 12 and result.composed == 12


def test_a_warm_impact_reads_no_file_that_no_affected_pair_needs(
    tmp_path: Path, generated: dict[str, bytes], parsed: list[str]
) -> None:
    rel = "projects/d01-p01/templates/t00.yaml"
    new = add_label(generated, rel)
    answer(generated, new, FactCache(tmp_path, fingerprint=FINGERPRINT), rel)
    parsed.clear()
    warm = answer(generated, new, FactCache(tmp_path, fingerprint=FINGERPRINT), rel)
    assert warm["usedBy"] == ["projects/d01-p01/t00"]
    assert sorted(set(parsed)) == sorted(
        [
            "org.yaml",
            "system/defaults.yaml",
            "departments/d01/defaults.yaml",
            "projects/d01-p01/defaults.yaml",
            rel,
        ]
    )


def test_a_warm_impact_against_a_revision_reads_from_git_only_the_files_it_parses(
    tmp_path: Path, generated: dict[str, bytes], parsed: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A revision's files are known by their blob ids (``git ls-tree``), so with a filled cache ``impact``
    reads no blob but those of the files it parses: the pairs' the changed file affects."""
    root = tmp_path / "repo" / "templates"
    for rel, data in generated.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid"}
    env |= {"GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid", "GIT_CONFIG_NOSYSTEM": "1"}
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "org"]):
        subprocess.run(["git", *args], cwd=root.parent, env=env, check=True, capture_output=True)
    rel = "projects/d01-p01/templates/t00.yaml"
    (root / rel).write_bytes(add_label(generated, rel)[rel])
    monkeypatch.setattr(gitrev, "READ_AHEAD", 1)  # every blob read is one the loader asked for
    monkeypatch.setattr(gitrev, "READ_AHEAD_MAX", 1)

    def impact(facts: FactCache) -> tuple[dict[str, Any], int]:
        tree._Reuse.last = {}
        base = gitrev.read_revision(root, "HEAD")
        before = load_org(base, facts)
        after = load_org(OverlaySource(base, rel, FolderSource(root)), facts)
        result = diff_orgs(before, after, file=rel)
        return {"pairs": [d.to_dict() for d in result.pairs], "usedBy": list(result.users)}, base.blobs_read

    cold, cold_reads = impact(FactCache(tmp_path / "cache", fingerprint=FINGERPRINT))
    assert cold_reads == len(generated)  # every file once for both loads
    monkeypatch.setattr(gitrev, "READ_AHEAD", 2)
    monkeypatch.setattr(gitrev, "READ_AHEAD_MAX", 16)
    ahead, ahead_reads = impact(FactCache(tmp_path / "other-cache", fingerprint=FINGERPRINT))
    assert ahead == cold and ahead_reads == cold_reads  # what is read ahead is never read twice
    monkeypatch.setattr(gitrev, "READ_AHEAD", 1)
    monkeypatch.setattr(gitrev, "READ_AHEAD_MAX", 1)
    parsed.clear()
    warm, warm_reads = impact(FactCache(tmp_path / "cache", fingerprint=FINGERPRINT))
    assert warm == cold and warm["usedBy"] == ["projects/d01-p01/t00"]
    needed = [
        "org.yaml",
        "system/defaults.yaml",
        "departments/d01/defaults.yaml",
        "projects/d01-p01/defaults.yaml",
    ]
    assert sorted(set(parsed)) == sorted([*needed, rel])
    assert warm_reads == len(needed) + 1  # and the old t00.yaml: the new one is the working tree's


def test_stand_ins_are_read_once_and_equal_what_they_stand_for(tmp_path: Path, parsed: list[str]) -> None:
    files = example_files()
    load_org(MappingSource(files), FactCache(tmp_path, fingerprint=FINGERPRINT))
    tree._Reuse.last = {}
    full = load_org(MappingSource(files))
    tree._Reuse.last = {}
    parsed.clear()
    lazy = load_org(MappingSource(files), FactCache(tmp_path, fingerprint=FINGERPRINT))
    template = lazy.templates[Scope("project", "vision")]["vit-finetune"]
    assert isinstance(template, DeferredTemplate) and not template.loaded
    assert template.file == "projects/vision/templates/vit-finetune.yaml"
    assert template.asset_refs() == full.templates[Scope("project", "vision")]["vit-finetune"].asset_refs()
    # org.yaml and cluster.yaml are read by every load (a broken one stops the command), policies are not
    # cached: the org's checks of them need the whole org.
    assert set(parsed) == {"org.yaml", "cluster.yaml"} | {f for f in files if f.endswith("policy.yaml")}
    before = len(parsed)
    assert template.doc.meta.name == "vit-finetune" and template.loaded
    assert template.source.data["spec"]["numWorkers"] == 2
    assert len(parsed) == before + 1  # read once, for both
    assert template == full.templates[Scope("project", "vision")]["vit-finetune"]
    assert full.templates[Scope("project", "vision")]["vit-finetune"] == template
    assert lazy.broken == full.broken and lazy.broken_refs == full.broken_refs


def test_facts_that_lie_are_detected_not_believed(tmp_path: Path) -> None:
    """Only another version of the code could hold such a row (the fingerprint keeps it apart), but a
    stand-in whose file turns out invalid raises instead of composing something else."""
    files = {**example_files(), "projects/vision/templates/vit-finetune.yaml": BROKEN}
    facts = FactCache(tmp_path, fingerprint=FINGERPRINT)
    rel = "projects/vision/templates/vit-finetune.yaml"
    facts.remember(facts.key("_template_from", rel, Scope("project", "vision"), content_digest(BROKEN)), ())
    facts.flush()
    org = load_org(MappingSource(files), FactCache(tmp_path, fingerprint=FINGERPRINT))
    with pytest.raises(StaleFacts, match="vit-finetune"):
        _ = org.templates[Scope("project", "vision")]["vit-finetune"].doc


# -- the cache: keys, bounds, failures, writers -------------------------------------------------------------


def test_a_key_changes_with_every_input(tmp_path: Path) -> None:
    facts = FactCache(tmp_path, fingerprint=FINGERPRINT)
    blob = content_digest(b"meta: {}\n")
    key = facts.key("_template_from", "system/templates/a.yaml", SYSTEM, blob)
    others = {
        facts.key("_defaults_from", "system/templates/a.yaml", SYSTEM, blob),
        facts.key("_template_from", "system/templates/b.yaml", SYSTEM, blob),
        facts.key("_template_from", "system/templates/a.yaml", Scope("department", "d"), blob),
        facts.key("_template_from", "system/templates/a.yaml", SYSTEM, content_digest(b"meta: {} \n")),
        facts.key("_template_from", "system/templates/a.yaml", SYSTEM, "git:" + "0" * 40),
        FactCache(tmp_path, fingerprint=b"other code").key(
            "_template_from", "system/templates/a.yaml", SYSTEM, blob
        ),
    }
    assert key not in others and len(others) == 6


def test_another_version_of_the_code_finds_nothing(tmp_path: Path) -> None:
    files = example_files()
    load_org(MappingSource(files), FactCache(tmp_path, fingerprint=b"one"))
    other = FactCache(tmp_path, fingerprint=b"two")
    tree._Reuse.last = {}
    load_org(MappingSource(files), other)
    assert other.reads > 0 and other.hits == 0


def test_the_cache_is_bounded(tmp_path: Path) -> None:
    for batch in range(3):
        facts = FactCache(tmp_path, limit=10, fingerprint=FINGERPRINT)
        for index in range(8):
            facts.remember(f"{batch}-{index}".encode(), (("environment", "e"),))
        assert facts.flush() == 8
    facts = FactCache(tmp_path, limit=10, fingerprint=FINGERPRINT)
    assert facts.valid(b"2-7") == (("environment", "e"),)
    assert facts.valid(b"0-0") is None
    with sqlite3.connect(tmp_path / FILE_NAME) as db:
        assert db.execute("SELECT COUNT(*) FROM facts").fetchone() == (10,)


@pytest.mark.parametrize("damage", ["garbage", "folder", "foreign row"])
def test_a_broken_store_changes_nothing_but_the_time(tmp_path: Path, damage: str) -> None:
    store = tmp_path / "cache"
    store.mkdir()
    if damage == "garbage":
        (store / FILE_NAME).write_bytes(b"this is not a database" * 100)
    elif damage == "folder":
        (store / FILE_NAME).mkdir()
    else:
        facts = FactCache(store, fingerprint=FINGERPRINT)
        facts.flush()
        with sqlite3.connect(store / FILE_NAME) as db:
            db.execute(
                "CREATE TABLE IF NOT EXISTS facts (id INTEGER PRIMARY KEY, key BLOB UNIQUE, refs TEXT)"
            )
            rel = "assets/environments/pytorch.yaml"
            text = (EXAMPLE / rel).read_text()
            db.execute(
                "INSERT INTO facts (key, refs) VALUES (?, ?)",
                (facts.key("_asset_from", rel, "environment", text), "not json"),
            )
    old = example_files()
    new = EXAMPLE_CHANGES["asset"][0](old)
    reference = answer(old, new, None)
    assert answer(old, new, FactCache(store, fingerprint=FINGERPRINT)) == reference


WRITER = """
import sys
from pathlib import Path
from template_engine.loader.facts import FactCache
facts = FactCache(Path(sys.argv[1]), fingerprint=b"tests")
base = int(sys.argv[2])
for index in range(base, base + 300):
    facts.remember(index.to_bytes(4, "big"), (("compute", str(index)),))
print(facts.flush())
"""


def test_processes_write_the_cache_at_the_same_time(tmp_path: Path) -> None:
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(tmp_path), str(n * 1000)], stdout=subprocess.PIPE, text=True
        )
        for n in range(4)
    ]
    written = [int(w.communicate(timeout=120)[0]) for w in writers]
    assert written == [300] * 4
    facts = FactCache(tmp_path, fingerprint=FINGERPRINT)
    for n in range(4):
        for index in (n * 1000, n * 1000 + 299):
            assert facts.valid(index.to_bytes(4, "big")) == (("compute", str(index)),)


# -- the command line ---------------------------------------------------------------------------------------


def test_the_cache_folder_is_chosen_by_the_environment(tmp_path: Path) -> None:
    assert cache_folder({"TEMPLATE_ENGINE_CACHE_DIR": "/x/y"}) == Path("/x/y")
    assert cache_folder({"XDG_CACHE_HOME": "/c"}) == Path("/c/template-engine")
    assert cache_folder({}) == Path.home() / ".cache" / "template-engine"


def _diff_twice(tmp_path: Path, *flags: str) -> Iterator[str]:
    old = tmp_path / "old"
    new = tmp_path / "new"
    for root, files in ((old, example_files()), (new, EXAMPLE_CHANGES["asset"][0](example_files()))):
        for rel, data in files.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_bytes(data)
    env = {"TEMPLATE_ENGINE_CACHE_DIR": str(tmp_path / "cache")}
    for _ in range(2):
        done = CliRunner().invoke(
            main, ["diff", "--root", str(new), "--against", str(old), "-o", "json", *flags], env=env
        )
        assert done.exit_code == 1, done.output
        yield done.output


def test_diff_answers_the_same_with_and_without_the_cache(tmp_path: Path) -> None:
    with_cache = list(_diff_twice(tmp_path / "a"))
    without = list(_diff_twice(tmp_path / "b", "--no-cache"))
    assert (
        with_cache[0] == with_cache[1] == without[0].replace("/b/", "/a/") == without[1].replace("/b/", "/a/")
    )
    assert json.loads(with_cache[0])["summary"]["changed"] > 0
    assert (tmp_path / "a" / "cache" / FILE_NAME).is_file()
    assert not (tmp_path / "b" / "cache").exists()


# -- the code fingerprint -----------------------------------------------------------------------------------

LOADER_IMPORTS = """
import sys
from template_engine.loader.facts import FactCache
from template_engine.loader.tree import load_org
load_org(sys.argv[1])
print("\\n".join(sorted(m for m in sys.modules if m.startswith("template_engine"))))
"""


def test_the_fingerprint_covers_every_module_the_loader_imports() -> None:
    """Modules left out of the fingerprint (edges and views) are never imported by the loader: changing them
    cannot change what it makes of a file (the example org has policies, so their modules load too)."""
    done = subprocess.run(
        [sys.executable, "-c", LOADER_IMPORTS, str(EXAMPLE)], capture_output=True, text=True, check=True
    )
    modules = done.stdout.split()
    assert "template_engine.loader.policies" in modules and "template_engine.policy.document" in modules
    left_out = {name.removesuffix(".py") for name in UNRELATED}
    assert [m for m in modules if m.split(".")[1:2] and m.split(".")[1] in left_out] == []
    package = ROOT / "template_engine"
    covered = {p.relative_to(package).with_suffix("").as_posix().replace("/", ".") for p in fingerprinted()}
    for module in modules:
        name = module.removeprefix("template_engine").lstrip(".")
        namespace = (package / name.replace(".", "/")).is_dir()  # a folder without __init__.py
        assert name == "" or name in covered or f"{name}.__init__" in covered or namespace, module


# -- memory: the validated spec trees are checked, then dropped ---------------------------------------------


def test_loaded_documents_keep_the_spec_as_written_only(tmp_path: Path) -> None:
    org = load_org(EXAMPLE)
    template = org.templates[Scope("project", "vision")]["vit-finetune"]
    assert template.doc.spec is None and template.doc.meta.name == "vit-finetune"
    assert template.doc.assets is not None and template.doc.assets.environment == "pytorch"
    assert template.source.data["spec"]["numWorkers"] == 2
    defaults = org.defaults[SYSTEM]
    assert defaults.doc.spec is None and "spec" in defaults.source.data
    bad = {
        **example_files(),
        "projects/vision/templates/vit-finetune.yaml": (
            (EXAMPLE / "projects/vision/templates/vit-finetune.yaml")
            .read_text()
            .replace("numWorkers: 2", "numWorkers: two")
            .encode()
        ),
    }
    broken = load_org(MappingSource(bad)).broken
    assert list(broken) == ["projects/vision/templates/vit-finetune.yaml"]  # the spec is still validated


# -- trust: rows only this user's own code wrote, and answers that never depend on them ----------------------

posix_only = pytest.mark.skipif(not hasattr(os, "getuid"), reason="file owners and modes are POSIX")
ASSET = "assets/environments/pytorch.yaml"


def _write_orgs(tmp_path: Path) -> tuple[Path, Path]:
    """The example org (``old``) and the same with the pytorch environment changed (``new``)."""
    old = tmp_path / "old"
    new = tmp_path / "new"
    for root, files in ((old, example_files()), (new, EXAMPLE_CHANGES["asset"][0](example_files()))):
        for rel, data in files.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_bytes(data)
    return old, new


def _run(cache: Path, *args: str) -> tuple[int, str, str]:
    """The command's exit status, stdout and stderr, as in a process of its own."""
    tree._Reuse.last = {}  # no documents from the previous command
    done = CliRunner().invoke(main, [*args, "-o", "json"], env={"TEMPLATE_ENGINE_CACHE_DIR": str(cache)})
    assert done.exception is None or isinstance(done.exception, SystemExit), done.exception
    assert "Traceback" not in done.output
    return done.exit_code, done.stdout, done.stderr


def test_rows_edited_outside_this_code_are_not_believed(tmp_path: Path) -> None:
    """Finding A: rows made to say that no template names an asset (``sqlite3 ... "update facts set
    refs='[]'"``) would have made ``impact`` of a changed asset report no pair; their HMAC no longer matches,
    so the files are read and the answer is the one without the cache."""
    old, new = _write_orgs(tmp_path)
    cache = tmp_path / "cache"
    impact = ("impact", str(new / ASSET), "--root", str(new), "--against", str(old))
    _run(cache, *impact)  # fills the cache
    with sqlite3.connect(cache / FILE_NAME) as db:
        assert db.execute("UPDATE facts SET refs = '[]'").rowcount > 0
    (new / ASSET).write_text((new / ASSET).read_text().replace("24.05-py3", "24.07-py3"))
    reference = _run(cache, *impact, "--no-cache")
    assert reference[0] == 1 and len(json.loads(reference[1])["usedBy"]) == 7
    assert _run(cache, *impact) == reference
    diff = ("diff", "--root", str(new), "--against", str(old))
    assert _run(cache, *diff) == _run(cache, *diff, "--no-cache")


def test_rows_under_another_key_are_ignored_then_replaced(tmp_path: Path) -> None:
    files = example_files()
    load_org(MappingSource(files), FactCache(tmp_path, fingerprint=FINGERPRINT))
    secret = tmp_path / KEY_NAME
    secret.write_bytes(b"k" * KEY_SIZE)  # as if the database came from another cache
    tree._Reuse.last = {}
    other = FactCache(tmp_path, fingerprint=FINGERPRINT)
    load_org(MappingSource(files), other)
    assert other.hits == 0 and other.ignored > 0
    tree._Reuse.last = {}
    again = FactCache(tmp_path, fingerprint=FINGERPRINT)
    load_org(MappingSource(files), again)
    assert again.hits == other.ignored and again.ignored == 0  # rewritten under the key in use


def _plant_a_lie(cache: Path, new: Path) -> str:
    """A row, written through the cache itself (so with a valid HMAC), saying that a broken template of
    ``new`` is valid: what only a bug could write."""
    rel = "projects/vision/templates/vit-finetune.yaml"
    (new / rel).write_bytes(BROKEN)
    facts = FactCache(cache)
    facts.remember(facts.key("_template_from", rel, Scope("project", "vision"), content_digest(BROKEN)), ())
    assert facts.flush() == 1
    return rel


def test_a_row_that_turns_out_wrong_gives_the_answer_without_the_cache(tmp_path: Path) -> None:
    """Finding B: such a row made ``diff`` and ``impact`` die with a StaleFacts traceback and exit status 1;
    now they answer again believing no row, and drop it."""
    old, new = _write_orgs(tmp_path)
    cache = tmp_path / "cache"
    rel = _plant_a_lie(cache, new)
    diff = ("diff", "--root", str(new), "--against", str(old))
    status, out, err = _run(cache, *diff)
    reference = _run(cache, *diff, "--no-cache")
    assert (status, out) == reference[:2] and reference[2] == ""
    assert json.loads(out)["invalidFiles"][0]["file"] == rel
    assert (
        err
        == f"warning: {rel}: the fact cache said valid, but it is not; answered again reading every file\n"
    )
    assert _run(cache, *diff) == reference  # the row was dropped: no warning any more
    _plant_a_lie(cache, new)
    impact = ("impact", str(new / rel), "--root", str(new), "--against", str(old))
    status, out, err = _run(cache, *impact)
    assert (status, out) == _run(cache, *impact, "--no-cache")[:2] and "said valid" in err


@pytest.mark.parametrize("command", ["diff", "impact"])
def test_an_internal_error_exits_2_with_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    import template_engine.diff

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise KeyError("something unexpected")

    monkeypatch.setattr(template_engine.diff, "diff_orgs", broken)
    old, new = _write_orgs(tmp_path)
    where = ("--root", str(new), "--against", str(old))
    status, out, err = _run(
        tmp_path / "cache", command, *([str(new / ASSET)] if command == "impact" else []), *where
    )
    assert (status, out) == (2, "")
    assert err == (
        f"error: internal error of template-engine {command}: KeyError: 'something unexpected' "
        "(a bug: please report it; --no-cache may avoid it)\n"
    )


@posix_only
@pytest.mark.parametrize("unsafe", ["group-writable folder", "world-writable file", "another owner"])
def test_a_cache_others_could_write_is_not_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, unsafe: str
) -> None:
    old, new = _write_orgs(tmp_path)
    cache = tmp_path / "cache"
    diff = ("diff", "--root", str(new), "--against", str(old))
    _run(cache, *diff)  # fills it
    if unsafe == "group-writable folder":
        cache.chmod(0o770)
        expected = (
            f"warning: fact cache not used: {cache} is writable by its group (mode 770); run 'chmod 700"
        )
    elif unsafe == "world-writable file":
        (cache / FILE_NAME).chmod(0o666)
        expected = f"warning: fact cache not used: {cache / FILE_NAME} is writable by its group and others"
    else:
        monkeypatch.setattr(os, "getuid", lambda: os.stat(cache).st_uid + 1)
        expected = f"warning: fact cache not used: {cache} belongs to another user"
    with sqlite3.connect(cache / FILE_NAME) as db:  # rows that would change the answer, were they read
        db.execute("UPDATE facts SET refs = '[]'")
    status, out, err = _run(cache, *diff)
    assert (status, out) == _run(tmp_path / "none", *diff, "--no-cache")[:2]
    assert err.startswith(expected) and err.count("\n") == 1, err
    facts = FactCache(cache, fingerprint=FINGERPRINT, warn=lambda message: None)
    assert facts.valid(b"any") is None and facts.refused is not None and facts.refused in err


@posix_only
def test_the_cache_is_made_private_whatever_the_umask(tmp_path: Path) -> None:
    old, new = _write_orgs(tmp_path)
    cache = tmp_path / "deep" / "cache"
    before = os.umask(0)
    try:
        status, _, err = _run(cache, "diff", "--root", str(new), "--against", str(old))
    finally:
        os.umask(before)
    assert (status, err) == (1, "")
    assert stat.S_IMODE(cache.stat().st_mode) == 0o700
    made = sorted(path.name for path in cache.iterdir())
    assert {FILE_NAME, KEY_NAME} <= set(made) and all(name.startswith("facts-v3.") for name in made), made
    for path in cache.iterdir():
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
    assert len((cache / KEY_NAME).read_bytes()) == KEY_SIZE
