"""What the loader learnt about files it read before: a content-addressed cache kept between processes.

One row says: *this loader* (defaults, template or asset), reading *exactly this text* at *this place*
(the file's path in the templates folder and its scope or asset kind), with *exactly this code* (the bytes
of every module of ``template_engine`` the loader may use, and the Python, pydantic and PyYAML versions),
makes a valid document, which names *these assets* (a template's).  The key is a BLAKE2b digest of all of
that, so a row is never stale: change a byte of the file or of that code and the key is another one.  Only
valid files are recorded; a file with problems is read each time (its problems are the answer).

With it, :func:`~template_engine.loader.tree.load_org` puts a stand-in
(:mod:`template_engine.loader.deferred`) in the org for a file it knows, and parses only the files a command
then asks for: ``diff`` and ``impact`` compose only the pairs whose inputs changed.

The store is one SQLite database (``facts.sqlite3`` in the folder the command line chooses; see
docs/performance.md), written in one transaction per command, in WAL mode with a busy timeout, so processes
may read and write it at the same time.  It holds at most :data:`LIMIT` rows (the oldest are dropped first).
Any failure of the store (unwritable folder, locked too long, corrupt file) turns it off for the process:
the answers never depend on it, only the time does.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import sys
from pathlib import Path
from typing import Any

#: The most rows kept (a row is about 100 bytes: ~20 MB at most).
LIMIT = 200_000
#: How long a writer waits for another one, in seconds.
BUSY_TIMEOUT = 10.0
#: The file name in the cache folder; the version is part of it, so an older layout is never read.
FILE_NAME = "facts-v1.sqlite3"

Refs = tuple[tuple[str, str], ...]


#: What the loader never imports, directly or not (the edges, by the import rule, and the explain view): left
#: out of the code fingerprint, so that changing them keeps the cache (tests/test_incremental.py checks it).
UNRELATED = frozenset({"cli", "service", "snapshots", "views", "pytest_plugin.py", "__main__.py"})


def fingerprinted() -> list[Path]:
    """The modules whose code decides what the loader makes of a file: the package but :data:`UNRELATED`."""
    package = Path(__file__).resolve().parent.parent
    found = package.rglob("*.py")
    return sorted(path for path in found if path.relative_to(package).parts[0] not in UNRELATED)


def code_fingerprint() -> bytes:
    """A digest of the code the loader's answers depend on: the :func:`fingerprinted` modules, and the
    versions of Python, pydantic and PyYAML."""
    import pydantic
    import yaml

    package = Path(__file__).resolve().parent.parent
    digest = hashlib.blake2b(digest_size=32)
    digest.update(f"{sys.version}\0{pydantic.VERSION}\0{yaml.__version__}\0".encode())
    for path in fingerprinted():
        digest.update(path.relative_to(package).as_posix().encode() + b"\0")
        digest.update(path.read_bytes())
        digest.update(b"\0")
    return digest.digest()


class FactCache:
    """The store at ``folder/FILE_NAME``; opened on first use, written by :meth:`flush`.

    ``reads`` and ``hits`` count the look-ups and the rows found (for tests and benchmarks).
    """

    def __init__(self, folder: Path, limit: int = LIMIT, fingerprint: bytes | None = None) -> None:
        self.path = folder / FILE_NAME
        self.limit = limit
        self._salt = fingerprint if fingerprint is not None else code_fingerprint()
        self._db: sqlite3.Connection | None = None
        self._off = False
        self._pending: dict[bytes, str] = {}
        self.reads = 0
        self.hits = 0

    def key(self, loader: str, rel: str, arg: Any, text: str) -> bytes:
        """The key of what ``loader`` makes of ``text`` at ``rel`` (``arg``: a scope or an asset kind)."""
        digest = hashlib.blake2b(self._salt, digest_size=32)
        digest.update(f"{loader}\0{rel}\0{arg!r}\0".encode("utf-8", "surrogatepass"))
        digest.update(text.encode("utf-8", "surrogatepass"))
        return digest.digest()

    def _connect(self) -> sqlite3.Connection | None:
        if self._db is None and not self._off:
            try:
                self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
                db = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT, isolation_level=None)
                db.execute("PRAGMA journal_mode=WAL")
                db.execute(
                    "CREATE TABLE IF NOT EXISTS facts "
                    "(id INTEGER PRIMARY KEY, key BLOB NOT NULL UNIQUE, refs TEXT NOT NULL)"
                )
                self._db = db
            except (sqlite3.Error, OSError):
                self._off = True
        return self._db

    def valid(self, key: bytes) -> Refs | None:
        """The assets named by the valid document ``key`` stands for, or ``None`` when it is not known."""
        db = self._connect()
        if db is None:
            return None
        self.reads += 1
        try:
            row = db.execute("SELECT refs FROM facts WHERE key = ?", (key,)).fetchone()
        except sqlite3.Error:
            self._off = True
            return None
        if row is None:
            return None
        try:
            refs = tuple((str(kind), str(name)) for kind, name in json.loads(row[0]))
        except (ValueError, TypeError):  # a row this code did not write: not known
            return None
        self.hits += 1
        return refs

    def remember(self, key: bytes, refs: Refs) -> None:
        """Record that ``key`` stands for a valid document naming ``refs`` (written by :meth:`flush`)."""
        self._pending[key] = json.dumps([list(ref) for ref in refs])

    def flush(self) -> int:
        """Write what was learnt in one transaction, dropping the oldest rows beyond the limit; the number of
        rows written (0 when the store is off)."""
        pending, self._pending = self._pending, {}
        db = self._connect() if pending else None
        if db is None:
            return 0
        try:
            db.execute("BEGIN IMMEDIATE")
            try:
                db.executemany("INSERT OR IGNORE INTO facts (key, refs) VALUES (?, ?)", pending.items())
                db.execute("DELETE FROM facts WHERE id <= (SELECT MAX(id) FROM facts) - ?", (self.limit,))
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
        except sqlite3.Error:
            self._off = True
            return 0
        return len(pending)

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None
