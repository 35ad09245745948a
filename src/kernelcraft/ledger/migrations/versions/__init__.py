"""Alembic revisions of the ledger's schema, oldest first (``0001_...``, ``0002_...``)."""
