"""Persistence: SQLAlchemy Core tables, the engine and its schema, and a repository used one transaction per
request."""
