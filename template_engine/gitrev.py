"""Another version of a templates folder: a folder as it is, or the folder as a git revision has it.

The only module that runs git.  A revision is read with one ``git ls-tree`` and one ``git cat-file --batch``
(exact blobs: no ``export-ignore`` or ``export-subst`` rewriting as ``git archive`` would do) into a
:class:`GitRevisionSource` held in memory; nothing is written to disk.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from template_engine.errors import Problem, TemplateEngineError
from template_engine.loader.sources import FolderSource, MappingSource, Source

_REVISION = "a commit, branch or tag such as HEAD~1 or origin/main"


class GitError(TemplateEngineError):
    """git is missing, the folder is not in a repository, or the revision is unknown."""


def _error(message: str, expected: str | None = None) -> GitError:
    return GitError([Problem(message, (), None, expected)])


def _git(cwd: Path, *args: str, stdin: bytes | None = None) -> bytes:
    try:
        done = subprocess.run(["git", *args], cwd=cwd, input=stdin, capture_output=True, check=False)
    except FileNotFoundError:
        raise _error("git is not installed (needed to read another revision)") from None
    if done.returncode != 0:
        detail = done.stderr.decode(errors="replace").strip().splitlines()
        raise _error(f"git {args[0]} failed: {detail[-1] if detail else f'exit status {done.returncode}'}")
    return done.stdout


@dataclass(frozen=True, slots=True)
class Version:
    """The other side of a comparison: a templates folder, or the folder as a git revision has it."""

    source: Source
    #: ``--against`` as given.
    label: str
    #: The commit, when ``source`` is a revision.
    revision: str | None = None

    @property
    def exists(self) -> bool:
        """Whether there is a templates folder (a revision may not have one)."""
        return self.source.kind("") == "folder"


class GitRevisionSource(MappingSource):
    """A templates folder as a commit has it: its files, read once from their blobs.

    As in git, a folder exists when it holds a file.  Symbolic links (mode 120000) and submodules are not
    documents: they are left out, with the folders that hold nothing else.
    """

    def __init__(self, files: dict[str, bytes], label: str, commit: str) -> None:
        super().__init__(files, label)
        self.commit = commit


def _existing(path: Path) -> Path:
    for candidate in (path, *path.parents):
        if candidate.is_dir():
            return candidate
    return Path.cwd()


def _repository(root: Path) -> tuple[Path, str]:
    """The top of the repository holding ``root`` and ``root`` relative to it (POSIX, ``""`` at the top)."""
    where = _existing(root.resolve())
    try:
        top = Path(_git(where, "rev-parse", "--show-toplevel").decode().strip())
    except GitError as exc:
        raise _error(
            f"--against is not a folder, and {str(root)!r} is not inside a git repository "
            f"({exc.problems[0].message})",
            "--against naming another templates folder, or --root inside a git repository",
        ) from None
    try:
        rel = root.resolve().relative_to(top.resolve())
    except ValueError:
        raise _error(f"{str(root)!r} is outside the repository at {str(top)!r}") from None
    return top, rel.as_posix() if rel.parts else ""


def _commit(top: Path, revision: str) -> str:
    if revision.startswith("-"):
        raise _error(
            f"{revision!r} is not a revision", "a commit, branch or tag such as HEAD~1 or origin/main"
        )
    try:
        return _git(top, "rev-parse", "--verify", "--quiet", f"{revision}^{{commit}}").decode().strip()
    except GitError:
        raise _error(
            f"--against {revision!r} is neither a folder nor a revision of the repository at {str(top)!r}",
            f"a folder, or {_REVISION}",
        ) from None


def _blobs(top: Path, commit: str, prefix: str) -> dict[str, bytes]:
    """The blobs under ``prefix`` at ``commit``, by their path relative to ``prefix``."""
    spec = [f":(literal){prefix}"] if prefix else []
    listing = _git(top, "ls-tree", "-r", "-z", "--full-tree", commit, "--", *spec)
    wanted: list[tuple[str, str]] = []
    for entry in listing.split(b"\0"):
        if not entry:
            continue
        meta, _, raw_name = entry.partition(b"\t")
        mode, kind, sha = meta.decode().split()
        if kind != "blob" or mode == "120000":  # submodules and symbolic links are not documents
            continue
        path = PurePosixPath(raw_name.decode("utf-8", errors="surrogateescape"))
        rel = path.relative_to(prefix) if prefix else path
        if ".." in rel.parts or not rel.parts:
            continue
        wanted.append((sha, rel.as_posix()))
    if not wanted:
        return {}
    batch = _git(top, "cat-file", "--batch", stdin="".join(f"{sha}\n" for sha, _ in wanted).encode())
    files: dict[str, bytes] = {}
    pos = 0
    for sha, name in wanted:
        header_end = batch.index(b"\n", pos)
        got, _, size = batch[pos:header_end].decode().split()
        if got != sha:
            raise _error(f"git cat-file returned {got} where {sha} was expected")
        start = header_end + 1
        files[name] = batch[start : start + int(size)]
        pos = start + int(size) + 1
    return files


def read_revision(root: Path, revision: str) -> GitRevisionSource:
    """The folder ``root`` as ``revision`` of the git repository that holds it has it (perhaps not at all)."""
    top, prefix = _repository(root)
    commit = _commit(top, revision)
    return GitRevisionSource(_blobs(top, commit, prefix), str(root), commit)


def open_version(root: Path, against: str) -> Version:
    """``against``: the folder itself when it is a directory, else ``root`` at that git revision."""
    if Path(against).is_dir():
        return Version(FolderSource(Path(against)), against)
    source = read_revision(root, against)
    return Version(source, against, source.commit)
