"""The caches of one service process, each bounded in entries and in bytes (keys included).

* :data:`CACHE`: validated documents of stored rows by row identity and version (a row's version moves with
  every change).  Only documents that are stored enter it: a preview's document, or a ``validateOnly``
  write's (read inside a transaction that rolls back), is validated and dropped (:func:`uncommitted`).
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

import contextlib
import json
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from template_engine.service.storage.database import Revision

#: What one entry costs beyond its key and value (the LRU's node, the tuple, the size): an estimate.
ENTRY_OVERHEAD = 256
#: Bytes of memory a validated document (pydantic models, their lists and strings) holds per byte of its JSON
#: text, measured with ``tracemalloc`` on templates of 100 to 4,900 labels or tolerations (12 to 15.4).
MODEL_BYTES_PER_JSON_BYTE = 16


def key_size(key: tuple[Any, ...]) -> int:
    """An estimate of the bytes a cache key holds: its text and bytes (a query string, a path), nested
    tuples included, and a word for anything else."""
    size = ENTRY_OVERHEAD
    stack: list[Any] = [key]
    while stack:
        item = stack.pop()
        if isinstance(item, str | bytes):
            size += len(item) + 50
        elif isinstance(item, tuple):
            stack.extend(item)
            size += 8 * len(item) + 40
        else:
            size += 32
    return size


def json_size(data: Any) -> int:
    """The length of ``data``'s JSON text (anything JSON cannot write counted by its ``str``)."""
    return len(json.dumps(data, default=str, separators=(",", ":"), ensure_ascii=False))


#: Whether the current request reads documents that are not stored (a ``validateOnly`` write, inside the
#: transaction it rolls back): then :class:`DocCache` keeps nothing.
_UNCOMMITTED: ContextVar[bool] = ContextVar("template_engine_uncommitted", default=False)


@contextlib.contextmanager
def uncommitted(when: bool = True) -> Iterator[None]:
    """Within (``when``): documents read are not kept by :data:`CACHE` (they may never be stored)."""
    token = _UNCOMMITTED.set(when or _UNCOMMITTED.get())
    try:
        yield
    finally:
        _UNCOMMITTED.reset(token)


class DocCache:
    """Validated documents by ``(kind, key, version, updated_at, ...)``: a thread-safe LRU bounded by entries
    and by bytes, keys included (a document's bytes estimated from its JSON text, ``size``)."""

    def __init__(self, max_entries: int = 2048, max_bytes: int = 128 * 1024 * 1024) -> None:
        self._items: OrderedDict[tuple[Any, ...], tuple[Any, int]] = OrderedDict()
        self._max_entries = max_entries
        self._max_bytes = max_bytes
        self._bytes = 0
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._items)

    @property
    def size(self) -> int:
        """The bytes held, as estimated when each entry was kept."""
        return self._bytes

    def get(self, key: tuple[Any, ...], build: Callable[[], Any], size: Callable[[], int]) -> Any:
        """The entry of ``key``, built (and kept, unless :func:`uncommitted` or too large) when missing;
        ``size()`` estimates the bytes of the value."""
        with self._lock:
            found = self._items.get(key)
            if found is not None:
                self._items.move_to_end(key)
                return found[0]
        value = build()
        if _UNCOMMITTED.get():
            return value
        cost = key_size(key) + size()
        if cost > self._max_bytes // 4:
            return value  # one document may not push out most of the others
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self._bytes -= old[1]
            self._items[key] = (value, cost)
            self._bytes += cost
            while len(self._items) > self._max_entries or self._bytes > self._max_bytes:
                _, (_, dropped) = self._items.popitem(last=False)
                self._bytes -= dropped
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
        self._listeners: list[Callable[[str, int], None]] = []

    def listen(self, listener: Callable[[str, int], None]) -> None:
        """Call ``listener(name, count)`` on every :meth:`add` (the metrics count hits and misses so)."""
        self._listeners.append(listener)

    def add(self, name: str, count: int = 1) -> None:
        with self._lock:
            setattr(self, name, getattr(self, name) + count)
        for listener in self._listeners:
            listener(name, count)


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
        """Keep ``value``, of ``size`` bytes (its key's are added here)."""
        size += key_size(key)
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
    """Whole answers by ``(revision, path, query, caller)``, bounded by entries and by bytes (the key's
    path and query string included: a query string may be 64 KB)."""

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
    """One template's ``(outcome, body)`` by ``(revision, template id, version, own scope, view)``, bounded
    by entries and by bytes (an entry estimated from its body's JSON text, :data:`MODEL_BYTES_PER_JSON_BYTE`
    times over: the composition's own values and provenance are of that order).

    Concurrent requests that need the same entry compose it once: the first builds it, the others wait for
    it (after a write, every client's next list needs the same hundred compositions at once).
    """

    def __init__(self, max_entries: int = 4096, max_bytes: int = 128 * 1024 * 1024) -> None:
        self._lru = _ByRevision(max_entries, max_bytes)
        self._pending: dict[tuple[Any, ...], threading.Event] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._lru)

    @property
    def size(self) -> int:
        return self._lru.size

    def get(self, key: tuple[Any, ...], build: Callable[[], Any], size: Callable[[Any], int]) -> Any:
        """The entry of ``key``, built once when missing; ``size(value)`` estimates its bytes."""
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
            self._lru.keep(key, value, size(value))
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
