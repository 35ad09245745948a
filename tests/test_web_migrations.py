"""The ledger's schema comes from Alembic migrations, on SQLite and PostgreSQL: a new database is
created, one made by ``create_all`` before migrations is adopted with its rows, an older revision is
upgraded, concurrent first opens do not collide, the migrated schema equals the models (a table
added to store.py without a migration fails here), and the migrations ship in the wheel."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile

import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext

from kernelcraft.ledger import Ledger
from kernelcraft.ledger.migrations import BASELINE, PRE_ALEMBIC_TABLES, head, migrate
from kernelcraft.ledger.store import Base
from kernelcraft.web.models import WebBase

from conftest import ROOT
from web_support import DATABASES, fresh_database

db_url = pytest.fixture(params=DATABASES)(fresh_database)


def _diff(url: str) -> list:
    """What differs between the database and the models (store.py's and the web app's)."""
    eng = sa.create_engine(url)
    try:
        with eng.connect() as c:
            out = []
            for md in (Base.metadata, WebBase.metadata):
                def include(obj, name, type_, reflected, compare_to, ours=frozenset(md.tables)):
                    table = name if type_ == "table" else getattr(getattr(obj, "table", None), "name", None)
                    return table in ours

                ctx = MigrationContext.configure(c, opts={"include_object": include, "compare_type": True})
                out += compare_metadata(ctx, md)
            return out
    finally:
        eng.dispose()


def _revision(url: str) -> str | None:
    eng = sa.create_engine(url)
    try:
        with eng.connect() as c:
            return MigrationContext.configure(c).get_current_revision()
    finally:
        eng.dispose()


def _use_ledger(led: Ledger) -> int:
    """The ledger's public functions, as optimize uses them."""
    run = led.new_run("t", "/tmp/t", {"name": "t"}, "tuner", "cpu", 2, {"target": None})
    base = led.add_candidate(run, None, "baseline", "baseline.py", "", {"name": "b"}, "0" * 64)
    led.record(base, "PASSED", None, "", 1.0, "", {"solutions": [{"name": "b", "status": "PASSED"}]})
    cand = led.add_candidate(run, base, "tuner", "BLOCK=4", "", {"name": "c"}, "1" * 64)
    led.record(cand, "PASSED", None, "", 1.5, "ok", {"solutions": [{"name": "c", "status": "PASSED"}]})
    led.promote(run, cand, "rule")
    led.finish(run)
    got = led.run(run)
    assert [c.speedup_vs_baseline for c in got.candidates] == [1.0, 1.5] and got.promoted_id == cand
    assert got.status == "finished" and led.runs("t")[-1].id == run
    return run


def test_new_ledger_is_created_at_head_and_matches_the_models(db_url):
    led = Ledger(db_url)
    assert _revision(db_url) == head()
    tables = set(sa.inspect(led.engine).get_table_names())
    assert set(Base.metadata.tables) <= tables, "a table of store.py has no migration"
    assert set(WebBase.metadata.tables) <= tables
    assert _diff(db_url) == [], "the migrations and the models disagree (add a revision in ledger/migrations/versions)"
    _use_ledger(led)
    assert migrate(led.engine) == "current"  # the next open is one query


def test_pre_migration_ledger_is_adopted_with_its_rows(db_url):
    # What kernelcraft 0.1.0 made: create_all of store.py's four tables, and a run in them.
    eng = sa.create_engine(db_url)
    Base.metadata.create_all(eng, tables=[Base.metadata.tables[t] for t in sorted(PRE_ALEMBIC_TABLES)])
    tasks, runs = Base.metadata.tables["tasks"], Base.metadata.tables["runs"]
    with eng.begin() as c:
        task_id = c.execute(tasks.insert().values(name="old", root="/x", definition={}, created_at="2026-01-01")
                            .returning(tasks.c.id)).scalar_one()
        run_id = c.execute(runs.insert().values(task_id=task_id, agent="tuner", device="cpu", budget=3, status="finished",
                                                options={}, created_at="2026-01-01").returning(runs.c.id)).scalar_one()
    eng.dispose()
    assert migrate(sa.create_engine(db_url)) == "adopted"
    led = Ledger(db_url)
    assert _revision(db_url) == head()
    assert [r.id for r in led.runs("old")] == [run_id]
    assert _diff(db_url) == []
    _use_ledger(led)


def test_adoption_skips_tables_a_newer_create_all_made(db_url):
    eng = sa.create_engine(db_url)
    Base.metadata.create_all(eng, tables=[Base.metadata.tables[t] for t in sorted(PRE_ALEMBIC_TABLES)])
    WebBase.metadata.tables["accounts"].create(eng)  # as if a create_all had made a later table already
    eng.dispose()
    assert migrate(sa.create_engine(db_url)) == "adopted"
    assert _diff(db_url) == []


def test_older_revision_is_upgraded(db_url):
    from alembic import command
    from alembic.config import Config

    from kernelcraft.ledger.migrations import HERE

    eng = sa.create_engine(db_url)
    with eng.begin() as c:
        cfg = Config()
        cfg.set_main_option("script_location", str(HERE))
        cfg.attributes["connection"] = c
        command.upgrade(cfg, BASELINE)
    assert _revision(db_url) == BASELINE
    assert migrate(eng) == "upgraded"
    assert _revision(db_url) == head() and _diff(db_url) == []


def test_concurrent_first_opens_do_not_collide(db_url):
    code = "import sys; from kernelcraft.ledger import Ledger; Ledger(sys.argv[1]); print('ok')"
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    procs = [subprocess.Popen([sys.executable, "-c", code, db_url], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(3)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1][-2000:] for o in outs]
    assert _revision(db_url) == head()


def test_an_open_waits_for_another_process_holding_the_write_lock(tmp_path):
    """CI once failed the test above: a process switching a new (rollback-journal) SQLite file to
    WAL while another held its write lock got "database is locked" at once, SQLite's deadlock
    avoidance skipping the busy handler. Here a separate process holds that lock on such a file
    for 2 s; the open must wait it out and migrate, not fail."""
    path = tmp_path / "held.db"
    holder = subprocess.Popen([sys.executable, "-c", (
        "import sqlite3, sys, time\n"
        "c = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
        "c.execute('BEGIN IMMEDIATE'); c.execute('CREATE TABLE held(a)')\n"
        "print('held', flush=True); time.sleep(2); c.execute('COMMIT')\n"), str(path)],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        led = Ledger(f"sqlite:///{path}")
    finally:
        holder.communicate(timeout=60)
    assert holder.returncode == 0
    assert _revision(f"sqlite:///{path}") == head()
    with led.engine.connect() as c:
        assert c.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert "held" in sa.inspect(c).get_table_names()  # the other process's commit is kept


def test_a_partial_ledger_is_refused_not_guessed(tmp_path):
    url = f"sqlite:///{tmp_path / 'odd.db'}"
    eng = sa.create_engine(url)
    Base.metadata.tables["tasks"].create(eng)
    with pytest.raises(RuntimeError, match="lacks"):
        migrate(eng)


def test_migrations_templates_and_styles_ship_in_the_wheel(tmp_path):
    """Build the wheel, install it alone into a folder, and open a ledger and the app from there."""
    wheel_dir, target = tmp_path / "wheel", tmp_path / "site"
    build = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                            "-w", str(wheel_dir), str(ROOT)], capture_output=True, text=True, timeout=300)
    assert build.returncode == 0, build.stderr[-3000:]
    (wheel,) = wheel_dir.glob("kernelcraft-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for must in ("kernelcraft/ledger/migrations/env.py", "kernelcraft/ledger/migrations/versions/0001_ledger.py",
                 "kernelcraft/ledger/migrations/versions/0002_web.py", "kernelcraft/ledger/migrations/script.py.mako",
                 "kernelcraft/web/templates/wishlist.html", "kernelcraft/web/static/style.css"):
        assert must in names, f"{must} is not in {wheel.name}"
    with zipfile.ZipFile(wheel) as z:
        z.extractall(target)
    code = ("import sys, kernelcraft; assert kernelcraft.__file__.startswith(sys.argv[2]), kernelcraft.__file__\n"
            "from fastapi.testclient import TestClient\n"
            "from kernelcraft.web import Settings, create_app\n"
            "c = TestClient(create_app(Settings(db_url=sys.argv[1])))\n"
            "assert c.get('/wishlist').status_code == 200 and c.get('/static/style.css').status_code == 200\n"
            "print('ok')")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(target)
    run = subprocess.run([sys.executable, "-c", code, f"sqlite:///{tmp_path / 'w.db'}", str(target)],
                         capture_output=True, text=True, timeout=300, cwd=tmp_path, env=env)
    assert run.returncode == 0 and "ok" in run.stdout, run.stderr[-3000:]
