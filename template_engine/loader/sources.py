"""Where an org's files come from: the loader's one I/O seam.

The loader never touches the file system itself: it asks a :class:`Source` what a folder holds, what kind an
entry is and what a file's bytes are.  Paths are POSIX and relative to the templates folder (``""`` is the
folder itself).  What cannot be listed or read is a value, :class:`Unreadable`, that the loader turns into a
problem of that entry; nothing here raises on bad input.

* :class:`FolderSource`: a folder on disk, symbolic links followed while they lead to a path inside it (a
  dangling one is a ``"broken link"``; one leading outside is listed, and reading it is :class:`Unreadable`);
* :class:`MappingSource`: files held in memory (tests, and any caller that has the bytes already);
* :class:`OverlaySource`: another source with one file replaced, added or removed (``impact FILE``);
* :class:`template_engine.loader.gitrev.GitRevisionSource`: the folder as a git revision has it, its blobs
  read when asked for (:mod:`template_engine.loader.gitrev` is the only module that runs git).

A file's content is known by its git blob id (:func:`blob_id`): a revision knows it without reading the file
(:meth:`Source.identity`), other sources by hashing the bytes.  The loader keys what it learnt about a file
by that id, so the same file in the working tree and in a revision is one fact (docs/decisions.md).
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Literal, Protocol, TypeAlias

#: What an entry is.  Links are followed: a link to a file is a ``"file"``; a link whose target does not
#: exist (or loops) is a ``"broken link"``; a device, socket or pipe is ``"special"``.
Kind = Literal["file", "folder", "broken link", "special"]


@dataclass(frozen=True, slots=True)
class Entry:
    """One entry of a folder: its name and its kind."""

    name: str
    kind: Kind


@dataclass(frozen=True, slots=True)
class Unreadable:
    """A folder that cannot be listed or a file that cannot be read; ``reason`` in the system's words, and
    what would have been read (``expected``) when the reason is the engine's own."""

    reason: str
    expected: str | None = None

    @classmethod
    def of(cls, error: OSError) -> Unreadable:
        return cls(error.strerror or str(error))

    @classmethod
    def code(cls, number: int) -> Unreadable:
        """The reason the system gives for the error ``number`` (``errno.ENOENT``...)."""
        return cls(os.strerror(number))


class Source(Protocol):
    """The files of one templates folder."""

    @property
    def label(self) -> str:
        """How messages name the folder itself (a path as the user gave it)."""
        ...

    def kind(self, path: str) -> Kind | None:
        """What is at ``path`` (``""``: the folder itself); ``None`` when nothing is."""
        ...

    def entries(self, path: str) -> list[Entry] | Unreadable:
        """The entries of the folder ``path``, in no particular order."""
        ...

    def read(self, path: str) -> bytes | Unreadable:
        """The bytes of the file ``path``."""
        ...

    def identity(self, path: str) -> str | None:
        """The git blob id of the file ``path`` when it is known without reading the file (a revision's
        listing has it), else ``None`` (then :func:`blob_id` of its bytes is the same).  The loader treats a
        source without this method as one that knows no id."""
        ...


def blob_id(data: bytes) -> str:
    """The id git gives a file with these bytes (``git hash-object``): SHA-1 of ``blob SIZE``, NUL, them."""
    digest = hashlib.sha1(b"blob %d\0" % len(data), usedforsecurity=False)
    digest.update(data)
    return digest.hexdigest()


#: A source, or the path of a folder (read as a :class:`FolderSource`).
SourceOrPath: TypeAlias = "Source | str | os.PathLike[str]"


def as_source(where: SourceOrPath) -> Source:
    """``where`` itself, or the folder at that path."""
    if isinstance(where, str | os.PathLike):
        return FolderSource(Path(where))
    return where


def _split(path: str) -> tuple[str, str]:
    """``("a/b", "c")`` for ``"a/b/c"``, ``("", "c")`` for ``"c"``."""
    folder, _, name = path.rpartition("/")
    return folder, name


def _child_on_the_way(folder: str, path: str) -> str | None:
    """The entry of ``folder`` on the way to ``path`` (``"b"`` for ``"a"`` and ``"a/b/c"``), if it is one."""
    if folder == "":
        return path.split("/", 1)[0]
    if path.startswith(f"{folder}/"):
        return path[len(folder) + 1 :].split("/", 1)[0]
    return None


# -- a folder on disk ----------------------------------------------------------------------------------------


#: What a folder source reads in place of a file or folder whose real path is outside the templates folder.
OUTSIDE_EXPECTED = (
    "a file or folder inside the templates folder (a symbolic link is followed only to a path inside it)"
)


@dataclass(frozen=True, slots=True)
class FolderSource:
    """The folder at ``root``, read when asked (nothing is read when the source is made).

    A symbolic link is followed when its target is inside the folder (the folder's own real path: a root that
    is itself a link is where it leads): a file or folder anywhere else is listed by its target's kind, but
    reading or listing it, or anything under it, is :class:`Unreadable`, saying where it leads
    (docs/decisions.md).  So ``validate`` and ``db import`` read nothing outside ``--root``.
    """

    root: Path
    #: The real path of each path asked about (``""``: the root), kept while this source is used.
    _real: dict[str, str] = field(default_factory=dict, compare=False, repr=False)

    @property
    def label(self) -> str:
        return str(self.root)

    def _at(self, path: str) -> Path:
        return self.root / path if path else self.root

    def _real_path(self, path: str) -> str:
        """The real path of ``path``: kept once known (a listing of its folder knows it for an entry that is
        no link), else its folder's and one ``lstat`` to see whether it is a link itself (then resolved)."""
        real = self._real.get(path)
        if real is not None:
            return real
        if not path:
            real = os.path.realpath(self.root)
        else:
            folder, name = _split(path)
            at = self._at(path)
            real = os.path.realpath(at) if os.path.islink(at) else os.path.join(self._real_path(folder), name)
        self._real[path] = real
        return real

    def _outside(self, path: str) -> Unreadable | None:
        """Why ``path`` is not read when its real path is outside the root (it is, or a folder on the way is,
        a link leading there), else ``None``."""
        try:
            root, real = self._real_path(""), self._real_path(path)
        except (OSError, ValueError):
            return None  # the read that follows says why it cannot be read
        if real == root or real.startswith(root.rstrip(os.sep) + os.sep):
            return None
        return Unreadable(f"a symbolic link leads outside the templates folder, to {real}", OUTSIDE_EXPECTED)

    def kind(self, path: str) -> Kind | None:
        target = self._at(path)
        try:
            mode = os.stat(target).st_mode
        except (OSError, ValueError):
            try:
                return "broken link" if stat.S_ISLNK(os.lstat(target).st_mode) else None
            except (OSError, ValueError):
                return None
        return "folder" if stat.S_ISDIR(mode) else "file" if stat.S_ISREG(mode) else "special"

    def entries(self, path: str) -> list[Entry] | Unreadable:
        outside = self._outside(path)
        if outside is not None:
            return outside
        try:
            with os.scandir(self._at(path)) as found:
                raw = list(found)
        except OSError as exc:
            return Unreadable.of(exc)
        real = self._real.get(path)  # known when _outside() found it
        out = []
        for item in raw:
            if real is not None and not item.is_symlink():  # scandir knows: a child's real path, no call
                self._real.setdefault(
                    f"{path}/{item.name}" if path else item.name, os.path.join(real, item.name)
                )
            kind: Kind
            try:
                kind = "folder" if item.is_dir() else "file" if item.is_file() else "special"
            except OSError:  # a symbolic link that loops
                kind = "special"
            if kind == "special" and item.is_symlink():
                kind = "broken link"
            out.append(Entry(item.name, kind))
        return out

    def read(self, path: str) -> bytes | Unreadable:
        outside = self._outside(path)
        if outside is not None:
            return outside
        try:
            return self._at(path).read_bytes()
        except OSError as exc:
            return Unreadable.of(exc)

    def identity(self, path: str) -> str | None:
        return None


# -- files in memory -----------------------------------------------------------------------------------------


class Listing:
    """Files known by their paths alone, and the folders that hold them, as git has them: a folder exists
    when it holds a file (there are no empty folders); with no files, not even the templates folder exists.

    A bad path (a ``""``, ``.`` or ``..`` part, or a file that is also a folder) is a :class:`ValueError`.
    The sources whose files are listed before they are read (:class:`MappingSource`,
    :class:`template_engine.loader.gitrev.GitRevisionSource`) answer ``kind`` and ``entries`` with it.
    """

    def __init__(self, paths: Iterable[str]) -> None:
        self.files: set[str] = set()
        self.folders: dict[str, dict[str, Kind]] = {}
        for path in paths:
            parts = path.split("/")
            if any(part in ("", ".", "..") for part in parts):
                raise ValueError(f"not a relative POSIX path to a file: {path!r}")
            for depth, name in enumerate(parts):
                kind: Kind = "file" if depth == len(parts) - 1 else "folder"
                listed = self.folders.setdefault("/".join(parts[:depth]), {})
                if listed.setdefault(name, kind) != kind:
                    raise ValueError(f"{'/'.join(parts[: depth + 1])!r} is both a file and a folder")
            self.files.add(path)

    def kind(self, path: str) -> Kind | None:
        if path in self.files:
            return "file"
        return "folder" if path in self.folders else None

    def entries(self, path: str) -> list[Entry] | Unreadable:
        listed = self.folders.get(path)
        if listed is None:
            return Unreadable.code(errno.ENOTDIR if path in self.files else errno.ENOENT)
        return [Entry(name, kind) for name, kind in listed.items()]

    def not_a_file(self, path: str) -> Unreadable:
        """Why ``path``, which is no file of the listing, cannot be read."""
        return Unreadable.code(errno.EISDIR if path in self.folders else errno.ENOENT)


class MappingSource:
    """Files held in memory: POSIX path -> content (text is stored as UTF-8).

    Folders are as a :class:`Listing` has them.  Paths are checked when the source is made: a bad path is a
    mistake of the caller, a :class:`ValueError`.
    """

    def __init__(self, files: Mapping[str, bytes | str], label: str = "<memory>") -> None:
        self._label = label
        self._listing = Listing(files)
        self._files: dict[str, bytes] = {
            path: content.encode("utf-8") if isinstance(content, str) else bytes(content)
            for path, content in files.items()
        }

    @property
    def label(self) -> str:
        return self._label

    def kind(self, path: str) -> Kind | None:
        return self._listing.kind(path)

    def entries(self, path: str) -> list[Entry] | Unreadable:
        return self._listing.entries(path)

    def read(self, path: str) -> bytes | Unreadable:
        found = self._files.get(path)
        return self._listing.not_a_file(path) if found is None else found

    def identity(self, path: str) -> str | None:
        return None


# -- one file changed ----------------------------------------------------------------------------------------


class OverlaySource:
    """``base`` where the file ``path`` is the one ``changed`` has there: replaced or added when ``changed``
    has a file at ``path``, absent when it has not (nothing, a folder, a broken link).

    Every other path is ``base``'s.  The folders on the way to an added file exist; a folder whose file is
    removed stays, empty or not.  ``changed`` is asked about ``path`` only.
    """

    def __init__(self, base: Source, path: str, changed: Source) -> None:
        self.base = base
        self.path = path
        self.changed = changed

    @property
    def label(self) -> str:
        return self.base.label

    @cached_property
    def _present(self) -> bool:
        return self.changed.kind(self.path) == "file"

    def kind(self, path: str) -> Kind | None:
        if path == self.path:
            return "file" if self._present else None
        if self._present and _child_on_the_way(path, self.path) is not None:
            return "folder"
        return self.base.kind(path)

    def entries(self, path: str) -> list[Entry] | Unreadable:
        listed = self.base.entries(path)
        child = _child_on_the_way(path, self.path)
        holds_it = _split(self.path)[0] == path
        if child is None or not (self._present or holds_it):
            return listed  # elsewhere, or on the way to a removed file: as the base has it
        if isinstance(listed, Unreadable):
            if not (self._present and self.base.kind(path) is None):
                return listed
            listed = []  # a folder that only the added file makes
        out = [entry for entry in listed if entry.name != child]
        if self._present:
            out.append(Entry(child, "file" if holds_it else "folder"))
        return out

    def read(self, path: str) -> bytes | Unreadable:
        if path == self.path:
            return self.changed.read(path) if self._present else Unreadable.code(errno.ENOENT)
        return self.base.read(path)

    def identity(self, path: str) -> str | None:
        if path == self.path:
            return self.changed.identity(path) if self._present else None
        return self.base.identity(path)
