"""The loader's source seam: a folder, files in memory, a git revision read from its blobs, and one file
changed over another source all load the same org the same way."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from template_engine import InputError, compose, load_org
from template_engine.loader import gitrev, tree
from template_engine.loader.gitrev import GitRevisionSource, open_version, read_revision
from template_engine.loader.sources import (
    Entry,
    FolderSource,
    MappingSource,
    OverlaySource,
    Source,
    Unreadable,
    blob_id,
)
from template_engine.loader.tree import read_source

ORG_YAML = "departments:\n- name: research\n  projects:\n  - vision\n"
DEFAULTS = "spec:\n  workingDir: /from-defaults\n"
JOB = "meta:\n  name: job\nspec:\n  image: python:3.11\n  distributedFramework: PyTorch\n  numWorkers: 2\n"
#: A small org: system defaults and one project template.
SMALL = {
    "org.yaml": ORG_YAML,
    "system/defaults.yaml": DEFAULTS,
    "projects/vision/templates/job.yaml": JOB,
}


def names(source: Source, path: str) -> list[tuple[str, str]]:
    listed = source.entries(path)
    assert not isinstance(listed, Unreadable), listed
    return sorted((entry.name, entry.kind) for entry in listed)


def as_mapping(root: Path) -> dict[str, bytes]:
    """Every file under ``root``, by its POSIX path."""
    return {
        path.relative_to(root).as_posix(): path.read_bytes() for path in root.rglob("*") if path.is_file()
    }


def write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    return root


# -- a folder ------------------------------------------------------------------------------------------------


def test_a_folder_lists_kinds_and_follows_links(tmp_path: Path) -> None:
    root = write(tmp_path / "org", {"a.yaml": "x: 1\n", "sub/b.yaml": "y: 2\n"})
    (root / "link.yaml").symlink_to(root / "a.yaml")
    (root / "linked").symlink_to(root / "sub")
    (root / "gone.yaml").symlink_to(root / "nowhere.yaml")
    (root / "loop").symlink_to(root / "loop")
    os.mkfifo(root / "pipe")
    source = FolderSource(root)

    assert source.label == str(root)
    assert names(source, "") == [
        ("a.yaml", "file"),
        ("gone.yaml", "broken link"),
        ("link.yaml", "file"),
        ("linked", "folder"),
        ("loop", "broken link"),
        ("pipe", "special"),
        ("sub", "folder"),
    ]
    assert names(source, "linked") == [("b.yaml", "file")]
    kinds = {path: source.kind(path) for path in ("", "a.yaml", "link.yaml", "gone.yaml", "pipe", "no.yaml")}
    assert kinds == {
        "": "folder",
        "a.yaml": "file",
        "link.yaml": "file",
        "gone.yaml": "broken link",
        "pipe": "special",
        "no.yaml": None,
    }
    assert source.read("link.yaml") == b"x: 1\n"


def test_a_link_leading_outside_the_folder_is_listed_but_never_read(tmp_path: Path) -> None:
    """A link to a file or folder outside the root, or a path through one, is :class:`Unreadable` saying
    where it leads (nothing outside is read); a link whose target is inside the root is followed."""
    outside = write(tmp_path / "outside", {"secret.yaml": "token: s3cret\n", "sub/c.yaml": "z: 3\n"})
    root = write(tmp_path / "org", {"a.yaml": "x: 1\n", "sub/b.yaml": "y: 2\n"})
    (root / "out.yaml").symlink_to(outside / "secret.yaml")
    (root / "out").symlink_to(outside / "sub")
    (root / "up.yaml").symlink_to(Path("..") / "outside" / "secret.yaml")  # relative: the same
    (root / "sub" / "in.yaml").symlink_to(Path("..") / "a.yaml")  # inside: followed
    (root / "sub" / "back").symlink_to(root / "sub")  # inside too (a loop on the way is the walk's matter)
    source = FolderSource(root)

    assert ("out", "folder") in names(source, "") and ("out.yaml", "file") in names(source, "")
    where = (outside / "secret.yaml").resolve()
    refused = Unreadable(
        f"a symbolic link leads outside the templates folder, to {where}",
        "a file or folder inside the templates folder (a symbolic link is followed only to a path inside it)",
    )
    assert source.read("out.yaml") == source.read("up.yaml") == refused
    assert source.entries("out") == Unreadable(
        f"a symbolic link leads outside the templates folder, to {(outside / 'sub').resolve()}",
        refused.expected,
    )
    assert isinstance(source.read("out/c.yaml"), Unreadable)  # a path through the link
    assert source.read("sub/in.yaml") == b"x: 1\n" and source.read("sub/back/b.yaml") == b"y: 2\n"
    assert names(source, "sub/back") == [("b.yaml", "file"), ("back", "folder"), ("in.yaml", "file")]


def test_a_root_that_is_a_link_is_read_where_it_leads(tmp_path: Path) -> None:
    real = write(tmp_path / "real", SMALL)
    (tmp_path / "alias").symlink_to(real)
    source = FolderSource(tmp_path / "alias")
    assert source.read("org.yaml") == ORG_YAML.encode()
    assert load_org(source) == load_org(real)


def test_a_folder_gives_errors_as_values(tmp_path: Path) -> None:
    source = FolderSource(write(tmp_path, {"a.yaml": "x: 1\n"}))
    assert source.read("missing.yaml") == Unreadable("No such file or directory")
    assert source.read("") == Unreadable("Is a directory")
    assert source.entries("a.yaml") == Unreadable("Not a directory")
    assert FolderSource(tmp_path / "nowhere").kind("") is None


def test_a_path_is_read_as_a_folder(tmp_path: Path) -> None:
    root = write(tmp_path, SMALL)
    assert load_org(root) == load_org(FolderSource(root)) == load_org(str(root))
    assert read_source(root, "org.yaml") == read_source(FolderSource(root), "org.yaml")


# -- files in memory -----------------------------------------------------------------------------------------


def test_a_whole_org_loads_and_composes_in_memory() -> None:
    org = load_org(MappingSource(SMALL))
    assert org.broken == {} and org.warnings == ()
    view = org.view_of("vision", None)
    composition = compose(org, org.find_template("job", view), view, {})
    assert composition.combined_spec["workingDir"] == "/from-defaults"
    assert composition.combined_spec["image"] == "python:3.11"


def test_the_example_org_in_memory_is_the_example_org(example_root: Path) -> None:
    assert load_org(MappingSource(as_mapping(example_root))) == load_org(example_root)


def test_problems_in_memory_name_the_file_as_on_disk(tmp_path: Path) -> None:
    files: dict[str, str | bytes] = {
        **SMALL,
        "system/defaults.yaml": b"spec:\n  workingDir: caf\xe9\n",
        "projects/vision/default.yaml": DEFAULTS,
        ".DS_Store": "x",
    }
    in_memory = load_org(MappingSource(files))
    on_disk = tmp_path / "org"
    for rel, content in files.items():
        (on_disk / rel).parent.mkdir(parents=True, exist_ok=True)
        (on_disk / rel).write_bytes(content if isinstance(content, bytes) else content.encode())
    assert in_memory.broken == load_org(on_disk).broken
    assert in_memory.warnings == load_org(on_disk).warnings
    assert sorted(in_memory.broken) == ["projects/vision/default.yaml", "system/defaults.yaml"]
    assert in_memory.broken["system/defaults.yaml"][0].message == "file is not UTF-8 text (byte 0xe9)"


def test_an_empty_mapping_has_no_folder() -> None:
    source = MappingSource({}, label="nothing")
    assert source.kind("") is None
    with pytest.raises(InputError, match="templates folder 'nothing' does not exist"):
        load_org(source)
    with pytest.raises(InputError, match=r"no org\.yaml in the templates folder"):
        load_org(MappingSource({"system/defaults.yaml": DEFAULTS}))


def test_a_mapping_lists_folders_and_refuses_bad_paths() -> None:
    source = MappingSource({"a/b/c.yaml": "x: 1\n", "a/d.yaml": b"\xff"})
    assert names(source, "") == [("a", "folder")]
    assert names(source, "a") == [("b", "folder"), ("d.yaml", "file")]
    assert (source.kind("a/b"), source.kind("a/b/c.yaml"), source.kind("a/x")) == ("folder", "file", None)
    assert source.read("a/d.yaml") == b"\xff"
    assert source.read("a") == Unreadable("Is a directory")
    assert source.entries("a/d.yaml") == Unreadable("Not a directory")
    assert source.entries("x") == Unreadable("No such file or directory")
    for bad in ("", "/abs.yaml", "a/../b.yaml", "a//b.yaml", "./a.yaml"):
        with pytest.raises(ValueError, match="not a relative POSIX path"):
            MappingSource({bad: ""})
    with pytest.raises(ValueError, match="'a' is both a file and a folder"):
        MappingSource({"a": "", "a/b": ""})


# -- a git revision ------------------------------------------------------------------------------------------


class Repo:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.env = {
            **os.environ,
            "GIT_AUTHOR_NAME": "test",
            "GIT_AUTHOR_EMAIL": "test@example.invalid",
            "GIT_COMMITTER_NAME": "test",
            "GIT_COMMITTER_EMAIL": "test@example.invalid",
            "GIT_CONFIG_NOSYSTEM": "1",
            "HOME": str(path),
        }
        path.mkdir(parents=True, exist_ok=True)
        self.git("init", "-q", "-b", "main")

    def git(self, *args: str) -> str:
        done = subprocess.run(["git", *args], cwd=self.path, env=self.env, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        return done.stdout

    def commit(self, message: str) -> str:
        self.git("add", "-A")
        self.git("commit", "-q", "-m", message)
        return self.git("rev-parse", "HEAD").strip()


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    return Repo(tmp_path / "repo")


def test_a_revision_is_read_from_its_blobs(repo: Repo) -> None:
    root = write(repo.path / "org" / "templates", SMALL)
    (root / "projects" / "vision" / "defaults.yaml").symlink_to("../../system/defaults.yaml")
    (root / "projects" / "nlp").mkdir(parents=True)
    (root / "projects" / "nlp" / "defaults.yaml").symlink_to("nowhere.yaml")
    commit = repo.commit("an org with links")
    (root / "system" / "defaults.yaml").write_text("spec:\n  workingDir: /edited\n", encoding="utf-8")

    source = read_revision(root, "HEAD")
    assert isinstance(source, GitRevisionSource)
    assert (source.commit, source.label) == (commit, str(root))
    assert source.kind("") == "folder"
    assert names(source, "") == [("org.yaml", "file"), ("projects", "folder"), ("system", "folder")]
    # Symbolic links are not documents (and a folder holding nothing else is not there), as git checks out
    # nothing but blobs of files.
    assert names(source, "projects") == [("vision", "folder")]
    assert names(source, "projects/vision") == [("templates", "folder")]
    assert names(source, "projects/vision/templates") == [("job.yaml", "file")]
    assert source.read("system/defaults.yaml") == DEFAULTS.encode()  # the commit's, not the working tree's
    assert source.read("projects/vision/defaults.yaml") == Unreadable("No such file or directory")

    org = load_org(source)
    assert org.broken == {}
    assert org.defaults.keys() == load_org(MappingSource(SMALL)).defaults.keys()


def _git_calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    calls: list[str] = []
    run = subprocess.run

    def counted(args: list[str], **kwargs: object) -> subprocess.CompletedProcess[bytes]:
        calls.append(" ".join(args[1:3]))
        return run(args, **kwargs)  # type: ignore[call-overload, no-any-return]

    monkeypatch.setattr(subprocess, "run", counted)
    return calls


def test_git_runs_once_per_step_and_reads_no_blob_before_it_is_asked_for(
    repo: Repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(repo.path / "templates", SMALL)
    repo.commit("org")
    calls = _git_calls(monkeypatch)
    source = read_revision(repo.path / "templates", "HEAD")
    assert calls == ["rev-parse --show-toplevel", "rev-parse --verify", "ls-tree -r"]
    assert source.blobs_read == 0
    load_org(source)  # three files, read with one request
    assert calls[3:] == ["cat-file --batch"] and source.blobs_read == 3


def test_a_revision_knows_each_file_by_its_blob_id_without_reading_it(repo: Repo) -> None:
    root = write(repo.path / "templates", SMALL)
    repo.commit("org")
    source = read_revision(root, "HEAD")
    for rel, text in SMALL.items():
        assert (
            source.identity(rel)
            == blob_id(text.encode())
            == repo.git("rev-parse", f"HEAD:templates/{rel}").strip()
        )
    assert source.identity("system") is None and source.identity("nothing.yaml") is None
    assert source.blobs_read == 0
    # The other sources know no id without the bytes: the loader hashes them.
    assert (
        FolderSource(root).identity("org.yaml") is None and MappingSource(SMALL).identity("org.yaml") is None
    )
    assert blob_id(b"") == "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"  # git's empty blob


def test_a_revision_reads_blobs_in_batches_of_the_listing(
    repo: Repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A read fetches the file and the next ones of the listing not yet read (READ_AHEAD, twice as many as
    the last request while the requests go on through the listing) and keeps them: reading every file asks
    git a few times, reading again asks nothing."""
    files = {**SMALL, **{f"system/templates/t{n:03}.yaml": f"meta:\n  name: t{n:03}\n" for n in range(20)}}
    root = write(repo.path / "templates", files)
    repo.commit("org")
    monkeypatch.setattr(gitrev, "READ_AHEAD", 2)
    source = read_revision(root, "HEAD")
    calls = _git_calls(monkeypatch)
    assert source.read("system/templates/t005.yaml") == files["system/templates/t005.yaml"].encode()
    assert (source.blobs_read, source.requests) == (2, 1)  # t005 and t006
    assert source.read("system/templates/t006.yaml") == files["system/templates/t006.yaml"].encode()
    assert source.requests == 1  # read ahead
    assert source.read("system/templates/t007.yaml") == files["system/templates/t007.yaml"].encode()
    assert (source.blobs_read, source.requests) == (6, 2)  # t007 to t010
    for _ in range(2):
        for rel in sorted(files):
            assert source.read(rel) == files[rel].encode(), rel
    # Each blob read once.  Going back to org.yaml starts again at 2 (org.yaml, job.yaml), then onward:
    # 4 (system/defaults.yaml, t000 to t002), 8 (t003, t004, t011 to t016), the rest (t017 to t019).
    assert source.blobs_read == len(files)
    assert calls == ["cat-file --batch"] * source.requests and source.requests == 6


def test_a_revision_never_reads_ahead_a_file_the_loader_would_not_read(repo: Repo) -> None:
    files = {**SMALL, "README.md": "# the org\n", "projects/vision/NOTES.md": "x" * 100_000}
    root = write(repo.path / "templates", files)
    repo.commit("org with documentation")
    source = read_revision(root, "HEAD")
    org = load_org(source)
    assert org.broken == {}
    assert source.blobs_read == len(SMALL)  # the YAML files only


def test_a_blob_git_cannot_give_is_an_error_of_the_revision_not_a_file_with_problems(repo: Repo) -> None:
    root = write(repo.path / "templates", SMALL)
    repo.commit("org")
    lost = repo.git("rev-parse", "HEAD:templates/system/defaults.yaml").strip()
    (repo.path / ".git" / "objects" / lost[:2] / lost[2:]).unlink()  # a damaged repository
    source = read_revision(root, "HEAD")
    assert source.read("org.yaml") == ORG_YAML.encode()  # the batch that held the lost blob
    with pytest.raises(
        gitrev.GitError, match=re.escape("git cannot give system/defaults.yaml as ")
    ) as raised:
        source.read("system/defaults.yaml")
    assert f"the repository has no blob {lost}" in raised.value.problems[0].message
    assert source.read("projects/vision/templates/job.yaml") == JOB.encode()  # the others stay readable
    tree._Reuse.last = {}  # an earlier load of the same bytes would answer for the lost blob
    with pytest.raises(gitrev.GitError, match=re.escape("system/defaults.yaml")):
        load_org(read_revision(root, "HEAD"))


def test_a_blob_that_cannot_be_read_ahead_fails_nothing_that_does_not_need_it(
    repo: Repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A failing request (a partial clone without its remote: git exits with an error) is split in halves
    until the blob git cannot give is alone, so only a file that is needed makes the command fail, and the
    files read with it are read once."""
    root = write(repo.path / "templates", SMALL)
    repo.commit("org")
    lost = repo.git("rev-parse", "HEAD:templates/system/defaults.yaml").strip()
    source = read_revision(root, "HEAD")
    real = gitrev._cat_blobs
    asked: list[int] = []

    def failing(top: Path, shas: list[str]) -> list[bytes | None]:
        asked.append(len(shas))
        if lost in shas:
            raise gitrev.GitError([gitrev.Problem(f"git cat-file failed: fatal: could not fetch {lost}")])
        return real(top, shas)

    monkeypatch.setattr(gitrev, "_cat_blobs", failing)
    assert source.read("org.yaml") == ORG_YAML.encode()
    assert asked == [3, 1, 2, 1, 1]  # org.yaml, job.yaml, system/defaults.yaml; halves; halves
    assert source.read("projects/vision/templates/job.yaml") == JOB.encode()
    assert len(asked) == 5 and source.blobs_read == 2  # read with org.yaml, kept
    with pytest.raises(gitrev.GitError, match=f"could not fetch {lost}"):
        source.read("system/defaults.yaml")
    assert len(asked) == 5  # already known to be missing: git is not asked again


def _git_in(repo: Repo, *args: str, given: str) -> str:
    """``git ARGS`` in ``repo`` with ``given`` on its standard input: its output, stripped."""
    done = subprocess.run(
        ["git", *args], cwd=repo.path, env=repo.env, input=given, capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def _blob(repo: Repo, text: str) -> str:
    return _git_in(repo, "hash-object", "-w", "--stdin", given=text)


def _tree(repo: Repo, entries: list[str]) -> str:
    """A tree of ``entries`` (``git mktree`` lines), made by hand as no checkout would."""
    return _git_in(repo, "mktree", given="\n".join(entries) + "\n")


def _crafted_commit(repo: Repo, templates: list[str]) -> str:
    """A commit whose ``templates`` tree has the entries ``templates``: what a hostile repository may hold."""
    top = _tree(repo, [f"040000 tree {_tree(repo, templates)}\ttemplates"])
    return repo.git("commit-tree", top, "-m", "crafted").strip()


def test_a_crafted_tree_with_a_dot_entry_is_read_without_it(repo: Repo) -> None:
    org, job = _blob(repo, ORG_YAML), _blob(repo, JOB)
    inner = _tree(repo, [f"100644 blob {job}\tx.yaml"])
    commit = _crafted_commit(repo, [f"100644 blob {org}\torg.yaml", f"040000 tree {inner}\t."])
    (repo.path / "templates").mkdir()
    source = read_revision(repo.path / "templates", commit)
    assert names(source, "") == [("org.yaml", "file")]  # "./x.yaml" is no file a checkout would make


def test_a_crafted_tree_with_a_file_that_is_also_a_folder_is_an_error(repo: Repo) -> None:
    org, job = _blob(repo, ORG_YAML), _blob(repo, JOB)
    inner = _tree(repo, [f"100644 blob {job}\tjob.yaml"])
    commit = _crafted_commit(
        repo, [f"100644 blob {org}\torg.yaml", f"100644 blob {job}\tsystem", f"040000 tree {inner}\tsystem"]
    )
    (repo.path / "templates").mkdir()
    with pytest.raises(gitrev.GitError, match="is not one a checkout could make"):
        read_revision(repo.path / "templates", commit)


def test_a_sha256_repository_is_read_and_hashed_like_a_folder(tmp_path: Path) -> None:
    """Its blob ids are not the SHA-1 ids the loader knows bytes by, so none is offered (``identity`` is
    ``None``) and the files are read: the same org, and the same documents reused for a folder's files."""
    repo = Repo(tmp_path / "sha256")
    shutil.rmtree(repo.path / ".git")
    repo.git("init", "-q", "--object-format=sha256", "-b", "main")
    root = write(repo.path / "templates", SMALL)
    repo.commit("org")
    source = read_revision(root, "HEAD")
    assert len(repo.git("rev-parse", "HEAD").strip()) == 64
    assert all(source.identity(rel) is None for rel in SMALL)
    assert load_org(source) == load_org(MappingSource(SMALL))


def test_the_example_org_at_a_revision_is_the_example_org(repo: Repo, example_root: Path) -> None:
    write(repo.path / "templates", {rel: data.decode() for rel, data in as_mapping(example_root).items()})
    repo.commit("the example org")
    version = open_version(repo.path / "templates", "HEAD")
    assert version.exists and version.revision is not None
    assert load_org(version.source) == load_org(example_root)


def test_a_revision_without_the_folder(repo: Repo) -> None:
    write(repo.path, {"README.md": "no org yet\n"})
    repo.commit("nothing")
    root = write(repo.path / "templates", SMALL)
    version = open_version(root, "HEAD")
    assert not version.exists
    assert version.source.kind("") is None


def test_another_folder_is_a_folder_source(tmp_path: Path) -> None:
    other = write(tmp_path / "other", SMALL)
    version = open_version(tmp_path / "templates", str(other))
    assert version.source == FolderSource(other)
    assert version.exists and version.revision is None


# -- one file changed ----------------------------------------------------------------------------------------


def test_an_overlay_replaces_one_file() -> None:
    base = MappingSource(SMALL)
    changed = MappingSource({**SMALL, "system/defaults.yaml": "spec:\n  workingDir: /new\n", "org.yaml": "x"})
    overlay = OverlaySource(base, "system/defaults.yaml", changed)
    assert overlay.read("system/defaults.yaml") == b"spec:\n  workingDir: /new\n"
    assert overlay.read("org.yaml") == ORG_YAML.encode()  # only the one file is taken
    assert names(overlay, "system") == [("defaults.yaml", "file")]
    assert overlay.label == base.label
    org = load_org(overlay)
    assert org.defaults[next(iter(org.defaults))].source.data["spec"] == {"workingDir": "/new"}


def test_an_overlay_adds_a_file_and_its_folders() -> None:
    rel = "projects/vision/templates/deep/new.yaml"
    overlay = OverlaySource(MappingSource(SMALL), rel, MappingSource({rel: "x: 1\n"}))
    assert names(overlay, "projects/vision/templates") == [("deep", "folder"), ("job.yaml", "file")]
    assert names(overlay, "projects/vision/templates/deep") == [("new.yaml", "file")]
    assert (overlay.kind("projects/vision/templates/deep"), overlay.kind(rel)) == ("folder", "file")

    # Over a revision that has no folder at all, the added file makes it.
    alone = OverlaySource(MappingSource({}), "org.yaml", MappingSource({"org.yaml": ORG_YAML}))
    assert alone.kind("") == "folder"
    assert names(alone, "") == [("org.yaml", "file")]
    assert load_org(alone).departments == {"research": ("vision",)}


def test_an_overlay_removes_a_file_but_not_its_folder(tmp_path: Path) -> None:
    rel = "projects/vision/templates/job.yaml"
    overlay = OverlaySource(MappingSource(SMALL), rel, MappingSource({"org.yaml": ORG_YAML}))
    assert overlay.kind(rel) is None
    assert overlay.kind("projects/vision/templates") == "folder"
    assert names(overlay, "projects/vision/templates") == []
    assert overlay.read(rel) == Unreadable("No such file or directory")
    assert load_org(overlay).templates == {}

    # A broken link in the working tree is no file either: the file is removed.
    work = write(tmp_path / "work", {"org.yaml": ORG_YAML})
    (work / "projects" / "vision" / "templates").mkdir(parents=True)
    (work / rel).symlink_to(work / "nowhere.yaml")
    assert OverlaySource(MappingSource(SMALL), rel, FolderSource(work)).kind(rel) is None


def test_an_overlay_loads_like_the_edited_folder(tmp_path: Path, example_root: Path) -> None:
    rel = "departments/research/defaults.yaml"
    work = write(tmp_path / "work", {rel: "spec:\n  workingDir: /overlaid\n"})
    edited = as_mapping(example_root)
    edited[rel] = (work / rel).read_bytes()
    overlay = OverlaySource(FolderSource(example_root), rel, FolderSource(work))
    assert load_org(overlay) == load_org(MappingSource(edited))


def test_an_unlistable_folder_stays_unlistable_under_an_overlay() -> None:
    class Locked(MappingSource):
        def entries(self, path: str) -> list[Entry] | Unreadable:
            return Unreadable("Permission denied") if path == "system" else super().entries(path)

    overlay = OverlaySource(Locked(SMALL), "system/x.yaml", MappingSource({"system/x.yaml": ""}))
    assert overlay.entries("system") == Unreadable("Permission denied")
    (problem,) = load_org(overlay).broken["system"]
    assert problem.message == "cannot list the folder system/: Permission denied"
