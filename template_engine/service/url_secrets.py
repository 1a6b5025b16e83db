"""The secrets of a database URL, hidden wherever one is shown (docs/operations.md, "Settings"): the standard
library only, so that :mod:`.settings` (whose table the core CLI's help reads) and :mod:`.storage.database`
share it without importing each other."""

from __future__ import annotations

import re

#: Query parameters of a database URL whose values are hidden wherever a URL is shown (as its password is):
#: a name holding one of these words, without regard to case (``password``, libpq's ``sslpassword``, a
#: driver's ``auth_token``).  ``passfile`` and ``sslkey`` name files: the path is shown, not what it holds.
SECRET_QUERY_WORDS = ("password", "passwd", "secret", "token")
#: ``SCHEME://USER:`` then the password: everything up to the *last* ``@`` before the query, so that a
#: password holding an unescaped ``@`` (or ``/``) is hidden whole, never cut at its first ``@``.
_USERINFO = re.compile(r"^(?P<head>[^:/?#]*://[^:/?#]*:)(?P<password>[^?#]*)(?=@)")
_QUERY_ITEM = re.compile(r"(?P<head>[?&](?P<name>[^=&#]*)=)(?P<value>[^&#]*)")
#: What follows the password in ``SCHEME://USER:PASSWORD@...``: SQLAlchemy ends the password at its first
#: ``@`` (``[^@]*``), so the rest of a password holding an unescaped ``@`` would be read as the host (or, past
#: a ``/``, the database) and shown in the driver's messages.
_AFTER_PASSWORD = re.compile(r"^[\w+]+://[^:/]*:[^@]*@(?P<rest>[^?#]*)")
#: The problem of a URL with a second ``@`` before its query: it names no part of the URL.
UNESCAPED_AT = (
    "its user name, password or database name holds an unescaped '@': write each '@' in them as %40, "
    "as in postgresql://USER:P%40SS@HOST:PORT/DB for the password p@ss"
)


def secret_query_name(name: str) -> bool:
    """Whether the URL's query parameter ``name`` holds a secret (:data:`SECRET_QUERY_WORDS`)."""
    return any(word in name.lower() for word in SECRET_QUERY_WORDS)


def unescaped_at(url: str) -> bool:
    """Whether ``url`` has a password and a second ``@`` after it (before the query), not written ``%40``:
    SQLAlchemy would read the part of the password after its first ``@`` as the host or database (and a
    driver's error would show it)."""
    match = _AFTER_PASSWORD.match(url)
    return match is not None and "@" in match["rest"]


def hide_secrets(url: str) -> str:
    """``url`` as text with its password (``://USER:PASSWORD@``) and every secret query value as ``***``,
    read with the standard library alone: for a URL that may not parse (a message saying it does not)."""
    url = _USERINFO.sub(lambda m: m["head"] + "***", url, count=1)

    def query(match: re.Match[str]) -> str:
        return match["head"] + ("***" if secret_query_name(match["name"]) else match["value"])

    return _QUERY_ITEM.sub(query, url)
