"""The secrets of a database URL, hidden wherever one is shown (docs/operations.md, "Settings"): the standard
library only, so that :mod:`.settings` (whose table the core CLI's help reads) and :mod:`.storage.database`
share it without importing each other."""

from __future__ import annotations

import re

#: Query parameters of a database URL whose values are hidden wherever a URL is shown (as its password is):
#: a name holding one of these words, without regard to case (``password``, libpq's ``sslpassword``, a
#: driver's ``auth_token``).  ``passfile`` and ``sslkey`` name files: the path is shown, not what it holds.
SECRET_QUERY_WORDS = ("password", "passwd", "secret", "token")
_USERINFO = re.compile(r"^(?P<head>[^:/?#]*://[^:@/?#]*:)(?P<password>[^@]*)(?=@)")
_QUERY_ITEM = re.compile(r"(?P<head>[?&](?P<name>[^=&#]*)=)(?P<value>[^&#]*)")


def secret_query_name(name: str) -> bool:
    """Whether the URL's query parameter ``name`` holds a secret (:data:`SECRET_QUERY_WORDS`)."""
    return any(word in name.lower() for word in SECRET_QUERY_WORDS)


def hide_secrets(url: str) -> str:
    """``url`` as text with its password (``://USER:PASSWORD@``) and every secret query value as ``***``,
    read with the standard library alone: for a URL that may not parse (a message saying it does not)."""
    url = _USERINFO.sub(lambda m: m["head"] + "***", url, count=1)

    def query(match: re.Match[str]) -> str:
        return match["head"] + ("***" if secret_query_name(match["name"]) else match["value"])

    return _QUERY_ITEM.sub(query, url)
