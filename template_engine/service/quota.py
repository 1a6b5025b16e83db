"""The storage quota of a scope (issue 30): what one scope (the org's own, a department, a project) may
store, checked on every write of a template or an asset through the API and the UI, before it is stored.

A scope holds at most :data:`MAX_TEMPLATES` templates, :data:`MAX_ASSETS` assets and :data:`MAX_SCOPE_BYTES`
characters of their stored JSON together (a document's text once written: ``json.dumps``, non-ASCII
escaped, so characters are bytes).  Past any of them a write is a ``413`` naming the numbers, and nothing is
stored.  ``db import`` writes files an operator checked and is not held to it.  The figures are in
``docs/operations.md`` ("Limits").
"""

from __future__ import annotations

import json
from typing import Any

from template_engine.errors import Problem
from template_engine.service.errors import ApiError
from template_engine.service.storage.repository import Repository

#: The most templates one scope stores (the example org's busiest scope holds 12).
MAX_TEMPLATES = 1_000
#: The most assets one scope stores.
MAX_ASSETS = 1_000
#: The most characters of stored JSON one scope's templates and assets hold together: 64 documents of the
#: largest body (1 MiB), or thousands of ordinary ones (a template is 1 to 5 KB).
MAX_SCOPE_BYTES = 64 * 1024 * 1024


def stored_size(document: Any) -> int:
    """The characters ``document`` takes once stored (the database's JSON text, non-ASCII escaped)."""
    return len(json.dumps(document, separators=(",", ":")))


def admit_write(
    repo: Repository,
    kind: str,
    scope_type: str,
    unit: int | None,
    document: Any,
    replacing: str | None = None,
) -> None:
    """Refuse (``413``) the write of a ``kind`` (``template`` or ``asset``) document into a scope when the
    scope would pass its quota; ``replacing``: the id of the row the write replaces (not counted)."""
    templates, assets, size = repo.scope_usage(scope_type, unit, replacing)
    size += stored_size(document)
    count, most = (templates, MAX_TEMPLATES) if kind == "template" else (assets, MAX_ASSETS)
    count += replacing is None
    scope = "the org's own scope" if scope_type in ("system", "tenant") else f"{scope_type} {unit}"
    over: list[tuple[str, str]] = []
    if count > most:
        over.append((f"{scope} would hold {count:,} {kind}s", f"at most {most:,} {kind}s per scope"))
    if size > MAX_SCOPE_BYTES:
        over.append(
            (
                f"{scope} would store {size:,} bytes of templates and assets",
                f"at most {MAX_SCOPE_BYTES:,} bytes per scope",
            )
        )
    if over:
        problems = [Problem(what, (), None, f"{most} (docs/operations.md, 'Limits')") for what, most in over]
        message = "; ".join(f"{what}, {most}" for what, most in over)
        raise ApiError(413, f"This write passes the scope's storage quota: {message}.", problems)
