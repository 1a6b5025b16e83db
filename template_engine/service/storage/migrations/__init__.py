"""The schema's Alembic revisions (``versions/``), run by :func:`..database.upgrade` without an
``alembic.ini`` or an ``env.py``: the script directory is this folder, the connection is the service's own.

Revision ``0005`` is the baseline: the schema as the releases before Alembic left it at their schema version
5 (``schema_info``), every table written out here as it was, so that the revisions never depend on
:mod:`..tables` as it is later.  A database those releases made is adopted by :func:`..database.upgrade`:
at version 5 it is stamped ``0005``; at versions 1 to 4 the baseline brings it up (it creates only the
tables and columns that are missing, as those releases' own migrations did).

A later revision (``0006``...) is written by hand here, with ``down_revision`` the one before, and:

- keeps the numbering: its id is the next four-digit number (:func:`..database.newer` calls an unknown id of
  that form above the head a later release's, and every other unknown id only unknown);

- changes :mod:`..tables` in the same commit (``tests/service/test_schema_upgrades.py`` holds a database
  made by the revisions equal to the tables);
- uses ``op.batch_alter_table`` for anything SQLite's ``ALTER TABLE`` cannot do (it is a no-op wrapper on
  PostgreSQL);
- sets ``schema_info.version`` to 6 or more, so that a release from before Alembic, which reads only
  ``schema_info``, refuses the database instead of writing to a schema it does not know.
"""

from __future__ import annotations

from pathlib import Path

#: The Alembic script directory (its ``versions/`` holds the revisions).
SCRIPT_LOCATION = Path(__file__).parent
