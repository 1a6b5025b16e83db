"""The revisions, one module each (Alembic loads them from this folder by file name)."""
