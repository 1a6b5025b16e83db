"""Schema revisions run backwards, for the tests of ``db upgrade``: a database as an earlier revision left
it, its rows kept, by the revisions' own ``downgrade`` (in the schema transaction ``db upgrade`` uses:
SQLite rebuilds tables with foreign keys off)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Engine

from template_engine.service.storage import database
from template_engine.service.storage.database import transaction


def downgrade(engine: Engine, revision: str) -> None:
    """Run the revisions' downgrades from the head to ``revision``."""
    from alembic.config import Config
    from alembic.runtime.environment import EnvironmentContext

    scripts = database._scripts()

    def down(current: Any, _context: Any) -> Any:
        return scripts._downgrade_revs(revision, current)

    with (
        transaction(engine, write=True, org=False, schema=True) as connection,
        EnvironmentContext(Config(), scripts, fn=down, destination_rev=revision) as environment,
    ):
        environment.configure(connection=connection)
        with environment.begin_transaction():
            environment.run_migrations()
