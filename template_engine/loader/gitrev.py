"""Another version of a templates folder: a folder as it is, or the folder as a git revision has it.

The only module that runs git.  A revision is listed with one ``git ls-tree`` (every file's path and blob
id) into a :class:`GitRevisionSource`; a file's bytes are read with ``git cat-file --batch`` when the loader
first asks for them, with the next files of the listing in the same request (exact blobs: no
``export-ignore`` or ``export-subst`` rewriting as ``git archive`` would do).  Nothing is written to disk.
The loader knows a file it has seen by its blob id, so a revision's unchanged files need not be read at all
(``impact``, ``diff`` with the fact cache).
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

from template_engine.errors import Problem, TemplateEngineError
from template_engine.loader.layout import YAML_SUFFIXES
from template_engine.loader.sources import Entry, FolderSource, Kind, Listing, Source, Unreadable

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


#: How many blobs a ``git cat-file --batch`` of a revision reads at first: the one asked for and the next
#: files of the listing the loader may read that are not read yet (YAML, not hidden).  While the loader's
#: requests go on through the listing, each reads twice
#: as many as the one before; when one goes back, it reads this many again.  So a command that reads every
#: file (a first ``diff``) asks git about ten times, and one that reads a department's files (``impact``
#: with the fact cache) reads little more than those.
READ_AHEAD = 64
#: The most blobs one request reads.
READ_AHEAD_MAX = 16_384


class GitRevisionSource:
    """A templates folder as a commit has it: the listing of its files (path and blob id), their bytes
    read from git when first asked for, with the next ones of the listing (:data:`READ_AHEAD`), and kept.

    As in git, a folder exists when it holds a file.  Symbolic links (mode 120000) and submodules are not
    documents: they are left out, with the folders that hold nothing else.  A blob git cannot give (a damaged
    repository, a partial clone whose remote is gone) is not a file with problems: reading it raises
    :class:`GitError`, since no answer about this revision can be right without it.
    """

    def __init__(self, files: dict[str, str], label: str, commit: str, top: Path) -> None:
        self._label = label
        self.commit = commit
        self._top = top
        self._files = files
        self._listing = Listing(files)
        self._order = list(files)
        self._position = {path: index for index, path in enumerate(self._order)}
        self._bytes: dict[str, bytes] = {}
        self._missing: dict[str, str] = {}  # path -> why git could not give it
        self._window = READ_AHEAD
        self._start = 0  # where in the listing the last request started
        #: How many blobs were read from git, and in how many requests (for tests: what was read).
        self.blobs_read = 0
        self.requests = 0

    @property
    def label(self) -> str:
        return self._label

    def kind(self, path: str) -> Kind | None:
        return self._listing.kind(path)

    def entries(self, path: str) -> list[Entry] | Unreadable:
        return self._listing.entries(path)

    def identity(self, path: str) -> str | None:
        """The blob id, when it is the id :func:`~template_engine.loader.sources.blob_id` gives (SHA-1): in a
        SHA-256 repository the files are read and hashed like a folder's."""
        found = self._files.get(path)
        return found if found is not None and len(found) == 40 else None

    def read(self, path: str) -> bytes | Unreadable:
        if path not in self._files:
            return self._listing.not_a_file(path)
        if path not in self._bytes and path not in self._missing:
            self._fetch(path)
        if path in self._missing:
            raise _error(
                f"git cannot give {path} as {self.commit[:12]} has it: {self._missing[path]}",
                "a repository that holds every object of the revision (a damaged repository, or a partial "
                "clone whose remote cannot be reached, cannot be compared with)",
            )
        return self._bytes[path]

    def _ahead(self, path: str) -> list[str]:
        """``path`` and the files after it in the listing to read with it: twice as many as last time when
        ``path`` comes after where the last request started, else :data:`READ_AHEAD`."""
        start = self._position[path]
        onward = self.requests > 0 and start > self._start  # on through the listing, not back
        self._window = min(self._window * 2, READ_AHEAD_MAX) if onward else READ_AHEAD
        self._start = start
        wanted = [path]
        for other in self._order[self._position[path] + 1 :]:
            if len(wanted) >= self._window:
                break
            if (
                other not in self._bytes
                and other not in self._missing
                and other.endswith(YAML_SUFFIXES)
                and not other.rpartition("/")[2].startswith(".")  # hidden: never read
            ):
                wanted.append(other)
        return wanted

    def _fetch(self, path: str) -> None:
        self._read_blobs(self._ahead(path))

    def _read_blobs(self, wanted: list[str]) -> None:
        """Read ``wanted`` in one request; when git fails on it (a blob it cannot fetch fails the whole
        ``cat-file``), each half again, so that only the files whose blobs git cannot give are missing."""
        self.requests += 1
        try:
            found = _cat_blobs(self._top, [self._files[name] for name in wanted])
        except GitError as exc:
            if len(wanted) == 1:
                self._missing[wanted[0]] = exc.problems[0].message
                return
            half = len(wanted) // 2
            self._read_blobs(wanted[:half])
            self._read_blobs(wanted[half:])
            return
        self.blobs_read += len(wanted)
        for name, data in zip(wanted, found, strict=True):
            if data is None:
                self._missing[name] = f"the repository has no blob {self._files[name]}"
            else:
                self._bytes[name] = data


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


def _listing(top: Path, commit: str, prefix: str) -> dict[str, str]:
    """The files under ``prefix`` at ``commit``: their path relative to ``prefix`` -> blob id, in the
    listing's order (by path)."""
    spec = [f":(literal){prefix}"] if prefix else []
    listing = _git(top, "ls-tree", "-r", "-z", "--full-tree", commit, "--", *spec)
    files: dict[str, str] = {}
    for entry in listing.split(b"\0"):
        if not entry:
            continue
        meta, _, raw_name = entry.partition(b"\t")
        mode, kind, sha = meta.decode().split()
        if kind != "blob" or mode == "120000":  # submodules and symbolic links are not documents
            continue
        path = raw_name.decode("utf-8", errors="surrogateescape")
        rel = path[len(prefix) + 1 :] if prefix else path  # ls-tree lists only what is under prefix/
        if any(part in ("", ".", "..") for part in rel.split("/")):  # no checkout makes such a file
            continue
        files[rel] = sha  # not its size: ``ls-tree -l`` would make a partial clone fetch every blob
    return files


def _cat_blobs(top: Path, shas: list[str]) -> list[bytes | None]:
    """The bytes of the blobs ``shas`` (one ``git cat-file --batch``); ``None`` for a blob git lacks."""
    batch = _git(top, "cat-file", "--batch", stdin="".join(f"{sha}\n" for sha in shas).encode())
    try:
        return _split_batch(batch, shas)
    except (ValueError, IndexError):
        raise _error("git cat-file gave an answer that cannot be read") from None


def _split_batch(batch: bytes, shas: list[str]) -> list[bytes | None]:
    found: list[bytes | None] = []
    pos = 0
    for sha in shas:
        header_end = batch.index(b"\n", pos)
        header = batch[pos:header_end].decode().split()
        if header[0] != sha:
            raise _error(f"git cat-file returned {header[0]} where {sha} was expected")
        if len(header) != 3:  # "<sha> missing"
            found.append(None)
            pos = header_end + 1
            continue
        start = header_end + 1
        size = int(header[2])
        found.append(batch[start : start + size])
        pos = start + size + 1
    return found


def read_revision(root: Path, revision: str) -> GitRevisionSource:
    """The folder ``root`` as ``revision`` of the git repository that holds it has it (perhaps not at all)."""
    top, prefix = _repository(root)
    commit = _commit(top, revision)
    files = _listing(top, commit, prefix)
    try:
        return GitRevisionSource(files, str(root), commit, top)
    except ValueError as exc:  # a crafted tree: a name that is both a file and a folder
        raise _error(f"the tree of {commit[:12]} is not one a checkout could make: {exc}") from None


def open_version(root: Path, against: str) -> Version:
    """``against``: the folder itself when it is a directory, else ``root`` at that git revision."""
    if Path(against).is_dir():
        return Version(FolderSource(Path(against)), against)
    source = read_revision(root, against)
    return Version(source, against, source.commit)
