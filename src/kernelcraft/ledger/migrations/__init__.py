"""Schema migrations of the ledger (Alembic), shipped inside the package so an installed wheel
migrates its own database: :func:`migrate` runs at every :class:`~kernelcraft.ledger.Ledger` open.

What :func:`migrate` does with the database it is given:

- at the newest revision: nothing (one query);
- empty: every revision, from ``0001_ledger`` on;
- ledger tables but no ``alembic_version`` table: a ledger made by ``Base.metadata.create_all``
  before migrations existed. It is **adopted**: stamped at ``0001_ledger`` (exactly the tables
  create_all made then), then upgraded; in that one upgrade a later revision's
  :func:`create_table` skips a table that already exists, because a create_all of a newer
  ``store.py`` may have made it. Nothing is copied or rewritten;
- anything else (an ``alembic_version`` at an older revision): upgraded to the newest.

The upgrade holds a lock for its whole transaction, so two processes opening one new ledger at
once do not both create it: ``BEGIN IMMEDIATE`` on SQLite (DDL is transactional there too),
``pg_advisory_xact_lock`` on PostgreSQL. A schema change is a new file in ``versions/``; a table
added to ``store.py`` without one fails ``tests/test_web_migrations.py``, naming the table.
"""

from __future__ import annotations

import functools
from pathlib import Path

import sqlalchemy as sa
from alembic import command, op
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory

HERE = Path(__file__).resolve().parent
BASELINE = "0001_ledger"
# The tables create_all made before migrations existed; their presence means "adopt".
PRE_ALEMBIC_TABLES = frozenset({"tasks", "runs", "candidates", "promotions"})
_PG_LOCK_KEY = 0x6B635F6C6564  # "kc_led": one advisory lock id for every kernelcraft ledger migration


@functools.cache
def head() -> str:
    return ScriptDirectory(str(HERE)).get_current_head()


def current_revision(conn: sa.Connection) -> str | None:
    return MigrationContext.configure(conn).get_current_revision()


def create_table(name: str, *columns, **kw) -> None:
    """``op.create_table``, except while adopting a pre-migration ledger that already has it."""
    adopting = op.get_context().config.attributes.get("adopt", False)
    if adopting and sa.inspect(op.get_bind()).has_table(name):
        return
    op.create_table(name, *columns, **kw)


def create_index(name: str, table: str, columns: list[str], **kw) -> None:
    adopting = op.get_context().config.attributes.get("adopt", False)
    if adopting and name in {ix["name"] for ix in sa.inspect(op.get_bind()).get_indexes(table)}:
        return
    op.create_index(name, table, columns, **kw)


def _migration_engine(engine: sa.Engine) -> tuple[sa.Engine, bool]:
    """An engine whose transactions really are transactions. pysqlite runs DDL outside any
    transaction and begins lazily; for the migration, begin explicitly with ``BEGIN IMMEDIATE``
    (the write lock, taken before reading the schema)."""
    url = engine.url
    if engine.dialect.name != "sqlite" or url.database in (None, "", ":memory:"):
        return engine, False  # PostgreSQL locks below; an in-memory SQLite has one connection
    mig = sa.create_engine(url, poolclass=sa.pool.NullPool, connect_args={"timeout": 60})

    @sa.event.listens_for(mig, "connect")
    def _connect(dbapi_conn, _):
        dbapi_conn.isolation_level = None  # no implicit BEGIN/COMMIT from the driver
        from kernelcraft.ledger.store import wal_mode

        cur = dbapi_conn.cursor()
        wal_mode(cur)  # a new ledger is created in WAL, as the Ledger's own connections expect
        cur.close()

    @sa.event.listens_for(mig, "begin")
    def _begin(conn):
        conn.exec_driver_sql("BEGIN IMMEDIATE")

    return mig, True


def migrate(engine: sa.Engine) -> str:
    """Bring the database to the newest revision; say what was done: ``current``, ``created``,
    ``adopted`` or ``upgraded``."""
    with engine.connect() as conn:
        if current_revision(conn) == head():
            return "current"
    mig, own = _migration_engine(engine)
    try:
        with mig.begin() as conn:
            if conn.dialect.name == "postgresql":
                conn.execute(sa.text("SELECT pg_advisory_xact_lock(:k)"), {"k": _PG_LOCK_KEY})
            current = current_revision(conn)  # again: another process may have migrated meanwhile
            if current == head():
                return "current"
            tables = set(sa.inspect(conn).get_table_names())
            adopt = current is None and bool(tables & PRE_ALEMBIC_TABLES)
            if adopt and not PRE_ALEMBIC_TABLES <= tables:
                missing = sorted(PRE_ALEMBIC_TABLES - tables)
                raise RuntimeError(f"{engine.url!r}: has ledger tables but lacks {missing} and has no "
                                   "alembic_version: not a kernelcraft ledger this version can adopt")
            cfg = Config()
            cfg.set_main_option("script_location", str(HERE))
            cfg.attributes["connection"] = conn
            cfg.attributes["adopt"] = adopt
            if adopt:
                command.stamp(cfg, BASELINE)
            command.upgrade(cfg, "head")
            return "adopted" if adopt else ("created" if current is None else "upgraded")
    finally:
        if own:
            mig.dispose()
