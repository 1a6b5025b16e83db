"""The UI's sessions in the database: opened at sign-in, found on every request, deleted at sign-out.

A session id is drawn here (:func:`secrets.token_urlsafe`, 32 random bytes) and given to the caller once;
the table keeps only its SHA-256, so reading the table (a backup, a replica) opens no session.  Every
process on the database sees a session the moment it is committed, and none after it is revoked.  Time is
given by the caller (``now``): this module never reads the clock.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Engine, delete, insert, select

from template_engine.service.storage.database import transaction
from template_engine.service.storage.tables import ui_sessions

__all__ = ["MAX_ID_LENGTH", "SessionRow", "Sessions", "well_formed"]

#: A cookie value longer than this is no session id of this service (one is 43 characters).
MAX_ID_LENGTH = 64
_ID_ALPHABET = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")


@dataclass(frozen=True, slots=True)
class SessionRow:
    """What a session holds: the principal it signs in (by its fields), the credential it was opened with
    (a digest naming it, never the token), when it was opened and when it ends."""

    subject: str
    role: str
    department: str | None
    project: str | None
    credential: str
    created_at: datetime
    expires_at: datetime


def _hash(session_id: str) -> str:
    return hashlib.sha256(session_id.encode("ascii")).hexdigest()


def well_formed(session_id: str) -> bool:
    """Whether ``session_id`` could be an id :meth:`Sessions.open` drew (anything else is never looked up)."""
    return 0 < len(session_id) <= MAX_ID_LENGTH and set(session_id) <= _ID_ALPHABET


class Sessions:
    """The ``ui_sessions`` table of one database."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    def open(self, row: SessionRow) -> str:
        """Store ``row`` as a new session and answer its id (the only time the id exists outside a cookie).
        Sessions that ended before ``row.created_at`` are deleted in the same transaction."""
        session_id = secrets.token_urlsafe(32)
        with transaction(self._engine, write=True, org=False) as connection:
            connection.execute(delete(ui_sessions).where(ui_sessions.c.expires_at <= row.created_at))
            connection.execute(
                insert(ui_sessions).values(
                    id_hash=_hash(session_id),
                    subject=row.subject,
                    role=row.role,
                    department=row.department,
                    project=row.project,
                    credential=row.credential,
                    created_at=row.created_at,
                    expires_at=row.expires_at,
                )
            )
        return session_id

    def find(self, session_id: str, now: datetime) -> SessionRow | None:
        """The session of ``session_id`` if it exists and has not ended at ``now``; ``None`` otherwise (an
        unknown, revoked, expired or malformed id)."""
        if not well_formed(session_id):
            return None
        with transaction(self._engine, write=False) as connection:
            found = connection.execute(
                select(
                    ui_sessions.c.subject,
                    ui_sessions.c.role,
                    ui_sessions.c.department,
                    ui_sessions.c.project,
                    ui_sessions.c.credential,
                    ui_sessions.c.created_at,
                    ui_sessions.c.expires_at,
                ).where(ui_sessions.c.id_hash == _hash(session_id))
            ).first()
        if found is None:
            return None
        row = SessionRow(*found)
        return row if now < row.expires_at else None

    def revoke(self, session_id: str) -> None:
        """End the session of ``session_id`` everywhere (nothing happens for an unknown one)."""
        if not well_formed(session_id):
            return
        with transaction(self._engine, write=True, org=False) as connection:
            connection.execute(delete(ui_sessions).where(ui_sessions.c.id_hash == _hash(session_id)))
