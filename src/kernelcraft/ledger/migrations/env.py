"""Alembic environment of the ledger. It runs only on a connection that
:func:`kernelcraft.ledger.migrations.migrate` hands over (``config.attributes["connection"]``),
inside the transaction that function holds, so a migration is all-or-nothing."""

from __future__ import annotations

from alembic import context

connection = context.config.attributes["connection"]
context.configure(
    connection=connection,
    # SQLite: DDL inside the caller's transaction (BEGIN IMMEDIATE), and ALTER through batch copies.
    transactional_ddl=True,
    render_as_batch=connection.dialect.name == "sqlite",
    compare_type=True,
)
with context.begin_transaction():
    context.run_migrations()
