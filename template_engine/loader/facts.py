"""What the loader learnt about files it read before: a content-addressed cache kept between processes.

One row says: *this loader* (defaults, template or asset), reading *exactly these bytes* (known by their
BLAKE2b digest when they were read, or for a file of a git revision by its blob id, which the revision's
listing has, so that an unchanged file of a revision is looked up without being read) at *this place*
(the file's path in the templates folder and its scope or asset kind), with *exactly this code* (the bytes
of every module of ``template_engine`` the loader may use, and the Python, pydantic and PyYAML versions),
makes a valid document, which names *these assets* (a template's).  The key is a BLAKE2b digest of all of
that, so a row is never stale: change a byte of the file or of that code and the key is another one.  Only
valid files are recorded; a file with problems is read each time (its problems are the answer).

With it, :func:`~template_engine.loader.tree.load_org` puts a stand-in
(:mod:`template_engine.loader.deferred`) in the org for a file it knows, and parses only the files a command
then asks for: ``diff`` and ``impact`` compose only the pairs whose inputs changed.

The store is one SQLite database (:data:`FILE_NAME` in the folder the command line chooses; see
docs/performance.md), written in one transaction per command, in WAL mode with a busy timeout, so processes
may read and write it at the same time.  It holds at most :data:`LIMIT` rows (the oldest are dropped first).
Any failure of the store (unwritable folder, locked too long, corrupt file) turns it off for the process.

What a row says is believed only when it is this user's own and this code wrote it (docs/decisions.md, "the
fact cache's trust model"): the folder is made 0700 and the files 0600, and a folder or file that another
user owns, or that group or others may write, is not used (one line on stderr says why; as ssh and git's
``safe.directory`` do); and each row carries an HMAC of its key and content under a random key kept in a
0600 file beside the database, so a row written by anything but :meth:`FactCache.flush` (an edit with the
``sqlite3`` shell, a database copied from elsewhere, a damaged page) is ignored and the file is read.  A row
that still turns out wrong (a stand-in whose file has problems raises
:class:`~template_engine.loader.deferred.StaleFacts`) makes ``diff`` and ``impact`` answer again with
:meth:`FactCache.recheck`, which believes no row and drops the wrong ones.

The same store keeps the answers of ``diff`` and ``impact`` (:meth:`FactCache.answer`, table ``answers``):
what a pair composed to, keyed by every input of the composition (``diffing/answers.py`` spells them out; the
key adds this code's fingerprint), with an HMAC under the same key; at most :data:`ANSWER_LIMIT` rows.  An
answer only ever proves that a pair did not change, so a wrong one that the other side contradicts is
recomputed (docs/decisions.md, "the kept answers' trust model").
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import secrets
import sqlite3
import stat
import sys
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

#: The most rows kept (a row is about 100 bytes: ~20 MB at most).
LIMIT = 200_000
#: How long a writer waits for another one, in seconds.
BUSY_TIMEOUT = 10.0
#: The file name in the cache folder; the version is part of it, so an older layout is never read.
FILE_NAME = "facts-v3.sqlite3"
#: The file beside it that holds the key of the rows' HMACs (random, made once per cache folder).
KEY_NAME = "facts-v3.key"
#: The size of that key, in bytes.
KEY_SIZE = 32
#: The most answers kept (:meth:`FactCache.answer`; a row is a pair's summary, about 200 bytes: ~20 MB).
ANSWER_LIMIT = 100_000

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


class Refused(Exception):
    """The cache folder or one of its files may hold what someone else wrote: the cache is not used."""


def _warn(message: str) -> None:
    print(f"warning: {message}", file=sys.stderr)


def check_private(path: Path) -> None:
    """Raise :class:`Refused` unless ``path`` (the cache folder or one of its files) is owned by this user and
    writable by no one else (POSIX only: elsewhere there is nothing to check)."""
    getuid = getattr(os, "getuid", None)
    if getuid is None:  # pragma: no cover - Windows
        return
    info = path.stat()
    folder = path if stat.S_ISDIR(info.st_mode) else path.parent
    if info.st_uid != getuid():
        raise Refused(
            f"fact cache not used: {path} belongs to another user (uid {info.st_uid}, you are {getuid()}); "
            f"remove {folder} or set TEMPLATE_ENGINE_CACHE_DIR to a folder of yours"
        )
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        writers = ((stat.S_IWGRP, "its group"), (stat.S_IWOTH, "others"))
        who = " and ".join(name for bit, name in writers if info.st_mode & bit)
        mode = "700" if stat.S_ISDIR(info.st_mode) else "600"
        raise Refused(
            f"fact cache not used: {path} is writable by {who} (mode {stat.S_IMODE(info.st_mode):o}); "
            f"run 'chmod {mode} {path}' or remove {folder}"
        )


class FactCache:
    """The store at ``folder/FILE_NAME``; opened on first use, written by :meth:`flush`.

    ``reads`` and ``hits`` count the look-ups and the rows believed, ``ignored`` the rows found but not
    believed (no valid HMAC, or :meth:`recheck`); ``refused`` is why the folder was not used, if it was not
    (also passed to ``warn``, once: by default a line on stderr).
    """

    def __init__(
        self,
        folder: Path,
        limit: int = LIMIT,
        fingerprint: bytes | None = None,
        warn: Callable[[str], None] = _warn,
    ) -> None:
        self.path = folder / FILE_NAME
        self.key_path = folder / KEY_NAME
        self.limit = limit
        self._salt = fingerprint if fingerprint is not None else code_fingerprint()
        self._warn = warn
        self._db: sqlite3.Connection | None = None
        self._secret = b""
        self._off = False
        self._believe = True
        self._pending: dict[bytes, str] = {}
        self._doubted: set[bytes] = set()  # keys of rows not believed: dropped unless rewritten
        self._answers: dict[bytes, bytes] = {}
        self._doubted_answers: set[bytes] = set()
        self.answer_limit = ANSWER_LIMIT
        self.refused: str | None = None
        self.reads = 0
        self.hits = 0
        self.ignored = 0
        #: The answers looked up, believed, and found but not believed (as ``reads``, ``hits``, ``ignored``).
        self.answer_reads = 0
        self.answer_hits = 0
        self.answers_ignored = 0

    def key(self, loader: str, rel: str, arg: Any, content: str) -> bytes:
        """The key of what ``loader`` makes of the file at ``rel`` (``arg``: a scope or an asset kind) whose
        bytes are ``content``: ``blake2b:`` and their digest when they were read, ``git:`` and the blob id for
        a revision's file (:func:`~template_engine.loader.tree.content_digest`)."""
        digest = hashlib.blake2b(self._salt, digest_size=32)
        digest.update(f"{loader}\0{rel}\0{arg!r}\0{content}".encode("utf-8", "surrogatepass"))
        return digest.digest()

    def recheck(self) -> None:
        """Believe no row from now on: every file is read, what is valid is written again, and the rows of
        the files found to have problems are dropped (after a row turned out wrong)."""
        self._believe = False

    def _mac(self, key: bytes, refs: str) -> bytes:
        return hmac.digest(self._secret, key + b"\0" + refs.encode("utf-8", "surrogatepass"), "sha256")

    def _connect(self) -> sqlite3.Connection | None:
        if self._db is None and not self._off:
            try:
                self._db = self._open()
            except Refused as exc:
                self._off = True
                self.refused = str(exc)
                self._warn(self.refused)
            except (sqlite3.Error, OSError, ValueError):
                self._off = True
        return self._db

    def _open(self) -> sqlite3.Connection:
        folder = self.path.parent
        try:
            folder.mkdir(mode=0o700, parents=True)
            os.chmod(folder, 0o700)  # exactly, whatever the umask
        except FileExistsError:
            pass
        check_private(folder)
        self._secret = self._read_secret()
        _create_private(self.path)
        for path in (self.path, Path(f"{self.path}-wal"), Path(f"{self.path}-shm")):
            if path.exists():
                check_private(path)
        db = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT, isolation_level=None)
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute(
                "CREATE TABLE IF NOT EXISTS facts "
                "(id INTEGER PRIMARY KEY, key BLOB NOT NULL UNIQUE, refs TEXT NOT NULL, mac BLOB NOT NULL)"
            )
            db.execute(
                "CREATE TABLE IF NOT EXISTS answers "
                "(id INTEGER PRIMARY KEY, key BLOB NOT NULL UNIQUE, body BLOB NOT NULL, mac BLOB NOT NULL)"
            )
            db.execute("SELECT key, refs, mac FROM facts LIMIT 0")  # another layout: off
            db.execute("SELECT key, body, mac FROM answers LIMIT 0")
        except BaseException:
            db.close()
            raise
        return db

    def _read_secret(self) -> bytes:
        """The HMAC key: read from :data:`KEY_NAME`, made first (0600, atomically: never half written) when
        there is none."""
        path = self.key_path
        if not path.exists():
            made = path.with_name(f".{KEY_NAME}.{os.getpid()}.{secrets.token_hex(8)}")
            descriptor = os.open(made, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            try:
                with os.fdopen(descriptor, "wb") as out:
                    out.write(secrets.token_bytes(KEY_SIZE))
                with contextlib.suppress(FileExistsError):  # another process made one first: it is used
                    os.link(made, path)
            finally:
                made.unlink()
        check_private(path)
        secret = path.read_bytes()
        if len(secret) != KEY_SIZE:
            raise Refused(
                f"fact cache not used: {path} is not a key this program wrote; remove {path.parent}"
            )
        return secret

    def valid(self, key: bytes) -> Refs | None:
        """The assets named by the valid document ``key`` stands for, or ``None`` when it is not known (or
        its row was not written by this code with this cache's key)."""
        db = self._connect()
        if db is None:
            return None
        self.reads += 1
        try:
            row = db.execute("SELECT refs, mac FROM facts WHERE key = ?", (key,)).fetchone()
        except sqlite3.Error:
            self._off = True
            return None
        if row is None:
            return None
        text, mac = row
        if not (
            self._believe
            and isinstance(text, str)
            and isinstance(mac, bytes)
            and hmac.compare_digest(mac, self._mac(key, text))
        ):
            self.ignored += 1
            self._doubted.add(key)
            return None
        try:
            refs = tuple((str(kind), str(name)) for kind, name in json.loads(text))
        except (ValueError, TypeError):  # cannot be: the HMAC says this code wrote it
            self.ignored += 1
            self._doubted.add(key)
            return None
        self.hits += 1
        return refs

    def answer_key(self, what: str) -> bytes:
        """The key of an answer (``diffing.answers``): a digest of ``what`` (every input of the answer,
        spelt out by the caller) under this code's fingerprint, apart from every key of :meth:`key`."""
        digest = hashlib.blake2b(self._salt, digest_size=32, person=b"answer")
        digest.update(what.encode("utf-8", "surrogatepass"))
        return digest.digest()

    def _answer_mac(self, key: bytes, body: bytes) -> bytes:
        return hmac.digest(self._secret, b"answer\0" + key + b"\0" + body, "sha256")

    def answer(self, key: bytes) -> str | None:
        """The text :meth:`remember_answer` kept under ``key``, or ``None`` when there is none that this code
        wrote with this cache's key (a row with a wrong HMAC, or one that does not decompress, is ignored,
        counted in ``answers_ignored``, and dropped at :meth:`flush`)."""
        db = self._connect()
        if db is None:
            return None
        self.answer_reads += 1
        try:
            row = db.execute("SELECT body, mac FROM answers WHERE key = ?", (key,)).fetchone()
        except sqlite3.Error:
            self._off = True
            return None
        if row is None:
            return None
        body, mac = row
        text: str | None = None
        if (
            self._believe
            and isinstance(body, bytes)
            and isinstance(mac, bytes)
            and hmac.compare_digest(mac, self._answer_mac(key, body))
        ):
            with contextlib.suppress(zlib.error, UnicodeDecodeError):
                text = zlib.decompress(body).decode("utf-8", "surrogatepass")
        if text is None:
            self.answers_ignored += 1
            self._doubted_answers.add(key)
            return None
        self.answer_hits += 1
        return text

    def remember_answer(self, key: bytes, text: str) -> None:
        """Keep ``text`` under ``key`` (written by :meth:`flush`, compressed, with its HMAC)."""
        self._answers[key] = zlib.compress(text.encode("utf-8", "surrogatepass"), 1)

    def remember(self, key: bytes, refs: Refs) -> None:
        """Record that ``key`` stands for a valid document naming ``refs`` (written by :meth:`flush`)."""
        self._pending[key] = json.dumps([list(ref) for ref in refs])

    def flush(self) -> int:
        """Write what was learnt in one transaction (and drop the rows not believed that were not written
        again), and the answers kept, dropping the oldest rows of each table beyond its limit; the number of
        facts written (0 when the store is off)."""
        pending, self._pending = self._pending, {}
        doubted = [(key,) for key in self._doubted if key not in pending]
        self._doubted = set()
        answers, self._answers = self._answers, {}
        doubted_answers = [(key,) for key in self._doubted_answers if key not in answers]
        self._doubted_answers = set()
        work = pending or doubted or answers or doubted_answers
        db = self._connect() if work else None
        if db is None:
            return 0
        rows = [(key, refs, self._mac(key, refs)) for key, refs in pending.items()]
        answer_rows = [(key, body, self._answer_mac(key, body)) for key, body in answers.items()]
        try:
            db.execute("BEGIN IMMEDIATE")
            try:
                db.executemany("DELETE FROM facts WHERE key = ?", doubted)
                db.executemany("INSERT OR REPLACE INTO facts (key, refs, mac) VALUES (?, ?, ?)", rows)
                db.execute("DELETE FROM facts WHERE id <= (SELECT MAX(id) FROM facts) - ?", (self.limit,))
                db.executemany("DELETE FROM answers WHERE key = ?", doubted_answers)
                db.executemany(
                    "INSERT OR REPLACE INTO answers (key, body, mac) VALUES (?, ?, ?)", answer_rows
                )
                db.execute(
                    "DELETE FROM answers WHERE id <= (SELECT MAX(id) FROM answers) - ?", (self.answer_limit,)
                )
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


def _create_private(path: Path) -> None:
    """Make the file ``path`` with mode 0600 if there is none (SQLite gives its -wal and -shm files the same
    mode)."""
    try:
        descriptor = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return
    try:
        os.fchmod(descriptor, 0o600)  # exactly, whatever the umask
    finally:
        os.close(descriptor)
