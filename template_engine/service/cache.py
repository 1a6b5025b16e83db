"""Documents validated once: a small thread-safe LRU keyed by row identity and version."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any


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
