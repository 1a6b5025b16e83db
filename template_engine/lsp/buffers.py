"""The org as the editor sees it: the templates folder on disk, with the editor's unsaved buffers over it.

:class:`Buffers` is a :class:`~template_engine.loader.sources.Source` (the loader's one seam): a file the
editor holds open is read from its buffer, every other file from disk.  What was read from disk is kept
until the editor says the file changed (saved, or changed by another program: ``didChangeWatchedFiles``;
so are the folders' listings and what each path is),
and each content's git blob id is known (:meth:`Buffers.identity`), so that a reload after an edit reads and
hashes nothing but the edited buffer and the loader reuses every other file's document (``tree._Reuse``).
"""

from __future__ import annotations

import itertools
from pathlib import Path

from template_engine.loader.sources import Entry, FolderSource, Kind, Unreadable, blob_id

__all__ = ["Buffers"]

#: Every listing state of every :class:`Buffers` gets its own number (:attr:`Buffers.listing`).
_LISTINGS = itertools.count(1)


class Buffers:
    """The folder at ``root`` with the buffers the editor holds open over it (paths relative to ``root``)."""

    def __init__(self, root: Path) -> None:
        self.disk = FolderSource(root)
        self._open: dict[str, bytes] = {}
        self._read: dict[str, bytes | Unreadable] = {}
        self._ids: dict[str, str] = {}
        self._entries: dict[str, list[Entry] | Unreadable] = {}
        self._kinds: dict[str, Kind | None] = {}
        #: The state of the listing: a new number whenever ``kind`` or ``entries`` may answer differently (a
        #: buffer of a new path, one closed, a file changed on disk), so the loader keeps the layout it walked
        #: while it is the same (``tree._Reuse.layout``).
        self.listing = next(_LISTINGS)

    # -- what the editor says ------------------------------------------------------------------------------

    def set_buffer(self, path: str, text: str) -> None:
        """The editor holds ``path`` open with ``text`` (unsaved or not)."""
        data = text.encode("utf-8")
        if path not in self._open:
            self.listing = next(_LISTINGS)
        if self._open.get(path) != data:
            self._open[path] = data
            self._ids.pop(path, None)

    def close_buffer(self, path: str) -> None:
        """The editor closed ``path``: its content is the file's on disk again."""
        if self._open.pop(path, None) is not None:
            self._ids.pop(path, None)
            self.listing = next(_LISTINGS)

    def changed_on_disk(self, path: str) -> None:
        """The file ``path`` was saved, created or deleted: read it (and its folder) again when asked."""
        self._read.pop(path, None)
        if path not in self._open:
            self._ids.pop(path, None)
        self._entries.clear()  # a file created or deleted changes its folder's listing
        self._kinds.clear()
        self.listing = next(_LISTINGS)

    def buffered(self, path: str) -> bool:
        return path in self._open

    def text(self, path: str) -> str | None:
        """The content of ``path`` as the loader reads it (``None`` when it cannot be read as UTF-8)."""
        data = self.read(path)
        if isinstance(data, Unreadable):
            return None
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            return None

    # -- the Source protocol -------------------------------------------------------------------------------

    @property
    def label(self) -> str:
        return self.disk.label

    def _disk_kind(self, path: str) -> Kind | None:
        if path not in self._kinds:
            self._kinds[path] = self.disk.kind(path)
        return self._kinds[path]

    def kind(self, path: str) -> Kind | None:
        if path in self._open:
            return "file"
        if any(name.startswith(f"{path}/") or path == "" for name in self._open):
            found = self._disk_kind(path)
            return "folder" if found is None else found
        return self._disk_kind(path)

    def entries(self, path: str) -> list[Entry] | Unreadable:
        listed = self._entries.get(path)
        if listed is None:
            listed = self._entries[path] = self.disk.entries(path)
        extra = [name for name in self._open if name.rpartition("/")[0] == path]
        if not extra:
            return listed
        if isinstance(listed, Unreadable):
            listed = []
        known = {entry.name for entry in listed}
        added = [Entry(name.rpartition("/")[2], "file") for name in extra]
        return [*listed, *(entry for entry in added if entry.name not in known)]

    def read(self, path: str) -> bytes | Unreadable:
        found = self._open.get(path)
        if found is not None:
            return found
        data = self._read.get(path)
        if data is None:
            data = self._read[path] = self.disk.read(path)
        return data

    def identity(self, path: str) -> str | None:
        known = self._ids.get(path)
        if known is None:
            data = self.read(path)
            if isinstance(data, Unreadable):
                return None
            known = self._ids[path] = blob_id(data)
        return known
