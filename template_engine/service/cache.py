"""The caches of one service process.

* :data:`CACHE`: validated documents by row identity and version (a row's version moves with every change).
* :class:`Answers`: whole ``200`` answers of the template reads, keyed by the org revision and the request
  (:mod:`.answers` keeps and serves them).
* :class:`Compositions`: one template's composition and response body as seen from one scope, keyed by the
  org revision (a list and the reads of single templates share them).

Everything keyed by a revision is exact: every write transaction moves the revision in the database it
commits to (:func:`.storage.database.transaction`), so an entry is only found by a request that read the
revision it was made at, and a write in any process makes every older entry unreachable.  :data:`STATS`
counts the work done, so tests can tell a hit from a recomposition without timing anything.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from template_engine.service.storage.database import Revision


class DocCache:
    """Validated documents by ``(kind, key, version, updated_at, ...)``; a small thread-safe LRU."""

    def __init__(self, size: int = 2048) -> None:
        self._items: OrderedDict[tuple[Any, ...], Any] = OrderedDict()
        self._size = size
        self._lock = threading.Lock()

    def get(self, key: tuple[Any, ...], build: Callable[[], Any]) -> Any:
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key]
        value = build()
        with self._lock:
            self._items[key] = value
            if len(self._items) > self._size:
                self._items.popitem(last=False)
        return value


#: The one cache of the process: stored documents as the engine reads them.
CACHE = DocCache()


@dataclass
class Stats:
    """What this process did: compositions made, answers served from the cache and answers composed."""

    compositions: int = 0
    hits: int = 0
    misses: int = 0

    def __post_init__(self) -> None:
        self._lock = threading.Lock()

    def add(self, name: str, count: int = 1) -> None:
        with self._lock:
            setattr(self, name, getattr(self, name) + count)


#: The counters of this process (tests read them; the benchmark reads the answers' header instead).
STATS = Stats()


class _ByRevision:
    """An LRU whose keys start with a revision; entries of an older revision are dropped as soon as a newer
    one is seen (they can never be found again), and an entry is refused when a newer revision was seen."""

    def __init__(self, max_entries: int, max_bytes: int) -> None:
        self._items: OrderedDict[tuple[Any, ...], tuple[Any, int]] = OrderedDict()
        self._max_entries = max_entries
        self._max_bytes = max_bytes
        self._bytes = 0
        self._revision: Revision | None = None
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._items)

    @property
    def size(self) -> int:
        """The bytes held (as the entries were measured when stored)."""
        return self._bytes

    def _see(self, revision: Revision) -> bool:
        """Whether ``revision`` is current (newer ones clear the cache); call with the lock held."""
        current = self._revision
        if current == revision:
            return True
        if current is not None and current[0] == revision[0] and revision[1] < current[1]:
            return False  # an answer composed at an older revision: nobody will ask for it again
        self._items.clear()
        self._bytes = 0
        self._revision = revision
        return True

    def find(self, key: tuple[Any, ...]) -> Any | None:
        with self._lock:
            found = self._items.get(key)
            if found is None:
                return None
            self._items.move_to_end(key)
            return found[0]

    def keep(self, key: tuple[Any, ...], value: Any, size: int) -> None:
        if size > self._max_bytes // 4:
            return  # one answer may not push out most of the others
        with self._lock:
            if not self._see(key[0]):
                return
            old = self._items.pop(key, None)
            if old is not None:
                self._bytes -= old[1]
            self._items[key] = (value, size)
            self._bytes += size
            while len(self._items) > self._max_entries or self._bytes > self._max_bytes:
                _, (_, dropped) = self._items.popitem(last=False)
                self._bytes -= dropped


@dataclass(frozen=True, slots=True)
class Answer:
    """A stored ``200``: its headers (``Content-Length`` and ``ETag`` included) and its body."""

    headers: tuple[tuple[bytes, bytes], ...]
    body: bytes


class Answers:
    """Whole answers by ``(revision, path, query, caller)``, bounded by entries and by bytes."""

    def __init__(self, max_entries: int = 4096, max_bytes: int = 64 * 1024 * 1024) -> None:
        self._lru = _ByRevision(max_entries, max_bytes)

    def __len__(self) -> int:
        return len(self._lru)

    @property
    def size(self) -> int:
        return self._lru.size

    def get(self, key: tuple[Any, ...]) -> Answer | None:
        found: Answer | None = self._lru.find(key)
        return found

    def put(self, key: tuple[Any, ...], answer: Answer) -> None:
        self._lru.keep(key, answer, len(answer.body) + sum(len(k) + len(v) for k, v in answer.headers))


class Compositions:
    """One template's ``(outcome, body)`` by ``(revision, template id, version, own scope, view)``.

    Concurrent requests that need the same entry compose it once: the first builds it, the others wait for
    it (after a write, every client's next list needs the same hundred compositions at once).
    """

    def __init__(self, max_entries: int = 4096) -> None:
        self._lru = _ByRevision(max_entries, 2**62)
        self._pending: dict[tuple[Any, ...], threading.Event] = {}
        self._lock = threading.Lock()

    def get(self, key: tuple[Any, ...], build: Callable[[], Any]) -> Any:
        found = self._lru.find(key)
        if found is not None:
            return found
        with self._lock:
            pending = self._pending.get(key)
            if pending is None:
                self._pending[key] = threading.Event()
        if pending is not None:
            pending.wait()
            found = self._lru.find(key)
            return found if found is not None else build()  # the first one failed, or was not kept
        try:
            value = build()
            self._lru.keep(key, value, 1)
            return value
        finally:
            with self._lock:
                self._pending.pop(key).set()


@dataclass(frozen=True, slots=True)
class Reading:
    """The org revision a request read before its work began, and the compositions of its application."""

    revision: Revision
    compositions: Compositions


#: Set by :mod:`.answers` for the reads it may answer from the cache; ``None`` otherwise, and then nothing is
#: cached by revision.  Each application has its own compositions: two databases (a copy of a file, say) may
#: hold the same revision.
CURRENT_READING: ContextVar[Reading | None] = ContextVar("template_engine_reading", default=None)
