"""Template reads answered from the cache, exactly: :class:`AnswerCache`, an ASGI middleware.

A ``GET`` under ``/api/v1/workload-templates`` (a template, a list, a count, an explanation) from a caller
whose token is valid reads the org revision first (one statement, :class:`~.storage.database.Revisions`, on
the :class:`RevisionFeed`'s thread) and looks for ``(revision, path, query string, the caller's Authorization
header)``:

* found: the stored ``200`` is sent as it was, headers (``ETag``, ``Content-Length``) and body, with no
  composition, no database read beyond the revision, no response validation;
* not found: the request goes on to its route with the revision in :data:`~.cache.CURRENT_READING` (so the
  compositions it makes are shared by revision too), and a ``200`` answer is stored on its way out.

Why this is exact: every write transaction moves the revision before it commits, whatever process made it,
and the revision is read before anything the answer is made of, so an answer stored at revision ``r`` was
made from the database as of ``r`` or later; any write makes every older entry unreachable (the next read,
anywhere, recomposes).  The caller is part of the key (as the SHA-256 of the header), so an answer is only
ever given back to the same token, and whether that token may see it was decided by the route at that
revision: a ``403``, ``404`` or any other error is never stored, so every refusal is decided afresh.  The
token is still checked on every hit (an application's token expires), and a request the route would refuse
for its ``Authorization`` header alone (none, several, not Bearer, unknown) goes straight to the route.  When
the
revision cannot be read, the request goes to the route uncached (it answers 503 if the database is down).

Each answer carries ``X-Template-Engine-Cache: hit`` or ``miss``.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import threading
from collections.abc import Callable
from typing import Any

from sqlalchemy.exc import SQLAlchemyError
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from template_engine.service.auth import Authenticator
from template_engine.service.cache import CURRENT_READING, STATS, Answer, Answers, Compositions, Reading
from template_engine.service.storage.database import Revision

#: The reads answered from the cache: every ``GET`` of the templates' routes (the UI and the other
#: resources are not).
PREFIX = "/api/v1/workload-templates"
HEADER = b"x-template-engine-cache"
_HIT = (HEADER, b"hit")
_MISS = (HEADER, b"miss")


def _caller(scope: Scope, authenticator: Authenticator) -> bytes | None:
    """The SHA-256 of the request's one ``Authorization: Bearer`` header when its token is valid now."""
    found = [value for name, value in scope["headers"] if name == b"authorization"]
    if len(found) != 1:
        return None
    scheme, _, token = found[0].decode("latin-1").partition(" ")
    if scheme.lower() != "bearer" or not token or authenticator.authenticate(token) is None:
        return None
    return hashlib.sha256(found[0]).digest()


class RevisionUnavailable(Exception):
    """The org revision could not be read: the request is answered by its route, uncached."""


def _settle(future: asyncio.Future[Revision], result: Revision | None, error: BaseException | None) -> None:
    if future.done():
        return
    if error is not None:
        future.set_exception(error)
    else:
        assert result is not None
        future.set_result(result)


class RevisionFeed:
    """Reads the revision on a thread of its own, once for all the requests waiting when a read starts.

    A request never blocks the event loop on the database, and under load one query serves every request
    that arrived while the previous one ran.  Exact all the same: a request only takes the result of a query
    that started after it asked (the waiting list is taken when the query starts; later ones wait for the
    next).
    """

    def __init__(self, read: Callable[[], Revision]) -> None:
        self._read = read
        self._waiting: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[Revision]]] = []
        self._wake = threading.Condition()
        self._thread: threading.Thread | None = None
        self._closed = False

    def open(self) -> None:
        """Serve reads again (an application started again after :meth:`close`)."""
        with self._wake:
            self._closed = False

    def close(self) -> None:
        """Stop the thread (the requests still waiting get an error, and go to their routes)."""
        with self._wake:
            self._closed = True
            self._wake.notify()
            thread, self._thread = self._thread, None
        if thread is not None:
            thread.join(timeout=10)

    async def read(self) -> Revision:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Revision] = loop.create_future()
        with self._wake:
            if self._closed:
                raise RevisionUnavailable("the service is stopping")
            self._waiting.append((loop, future))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="org-revision", daemon=True)
                self._thread.start()
            self._wake.notify()
        return await future

    def _run(self) -> None:
        while True:
            with self._wake:
                while not self._waiting and not self._closed:
                    self._wake.wait()
                batch, self._waiting = self._waiting, []
                if self._closed:
                    for loop, future in batch:
                        with contextlib.suppress(RuntimeError):
                            loop.call_soon_threadsafe(_settle, future, None, RevisionUnavailable("stopping"))
                    return
            result: Revision | None = None
            error: BaseException | None = None
            try:
                result = self._read()
            except SQLAlchemyError as exc:  # handed to each waiting request, which goes to its route uncached
                error = RevisionUnavailable(str(exc))
            except BaseException as exc:  # a bug: each waiting request answers 500 (Guard logs it)
                error = exc
            for loop, future in batch:
                with contextlib.suppress(RuntimeError):  # a loop closed meanwhile: nobody waits any more
                    loop.call_soon_threadsafe(_settle, future, result, error)


class AnswerCache:
    """ASGI middleware: see the module's docstring."""

    def __init__(
        self, app: ASGIApp, answers: Answers, feed: RevisionFeed, authenticator: Authenticator
    ) -> None:
        self.app = app
        self.answers = answers
        self.feed = feed
        self.authenticator = authenticator
        self.compositions = Compositions()
        #: The answers being composed, by key: requests that need one meanwhile wait for it.
        self._pending: dict[tuple[Any, ...], asyncio.Future[Answer | None]] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "GET" or not scope["path"].startswith(PREFIX):
            await self.app(scope, receive, send)
            return
        caller = _caller(scope, self.authenticator)
        if caller is None:
            await self.app(scope, receive, send)
            return
        try:
            revision = await self.feed.read()
        except RevisionUnavailable:
            await self.app(scope, receive, send)
            return
        key = (revision, scope["path"], scope["query_string"], caller)
        found = self.answers.get(key)
        pending = self._pending.get(key)
        if found is None and pending is not None and pending.get_loop() is asyncio.get_running_loop():
            found = await asyncio.shield(pending)  # the same answer is being composed: wait for it
        if found is not None:
            STATS.add("hits")
            await send({"type": "http.response.start", "status": 200, "headers": [*found.headers, _HIT]})
            await send({"type": "http.response.body", "body": found.body})
            return
        STATS.add("misses")
        await self._compose(key, scope, receive, send)

    async def _compose(self, key: tuple[Any, ...], scope: Scope, receive: Receive, send: Send) -> None:
        """The route's answer, kept when it is a ``200``; requests for the same key meanwhile wait for it
        (``None`` when there is none to share: each of them then asks the route itself)."""
        headers: list[tuple[bytes, bytes]] | None = None
        chunks: list[bytes] = []
        shared: asyncio.Future[Answer | None] | None = None
        if key not in self._pending:
            shared = self._pending[key] = asyncio.get_running_loop().create_future()

        async def keeping(message: Message) -> None:
            nonlocal headers
            if message["type"] == "http.response.start":
                if message["status"] == 200:
                    headers = list(message.get("headers", ()))
                    message = {**message, "headers": [*headers, _MISS]}
            elif message["type"] == "http.response.body" and headers is not None:
                chunks.append(message.get("body", b""))
                if not message.get("more_body", False):
                    answer = Answer(tuple(headers), b"".join(chunks))
                    self.answers.put(key, answer)
                    self._share(key, shared, answer)
            await send(message)

        token = CURRENT_READING.set(Reading(key[0], self.compositions))
        try:
            await self.app(scope, receive, keeping)
        finally:
            CURRENT_READING.reset(token)
            self._share(key, shared, None)

    def _share(
        self, key: tuple[Any, ...], shared: asyncio.Future[Answer | None] | None, answer: Answer | None
    ) -> None:
        if shared is not None and not shared.done():
            shared.set_result(answer)
            del self._pending[key]
