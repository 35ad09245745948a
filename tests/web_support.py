"""Helpers of the web app's tests (tests/test_web*.py).

:func:`fresh_database`, made a fixture in each module with
``db_url = pytest.fixture(params=DATABASES)(fresh_database)``, runs a test on a fresh SQLite file and on a fresh database of a real PostgreSQL server.
The server is named by ``KERNELCRAFT_TEST_POSTGRES`` (a SQLAlchemy URL whose user may CREATE
DATABASE; ``.ci/run`` starts one with ``scripts/postgres_for_tests.sh``). Without it the PostgreSQL
cases skip, saying so, except under CI (``CI=true``), where they fail: CI must run them.
"""

from __future__ import annotations

import io
import json
import os
import re
import socket
import subprocess
import sys
import time
import uuid
import zipfile
from pathlib import Path

import pytest
import sqlalchemy as sa

from conftest import ROOT, TASKS

PG_ENV = "KERNELCRAFT_TEST_POSTGRES"


def _pg_admin_url() -> str:
    url = os.environ.get(PG_ENV)
    if not url:
        msg = (f"{PG_ENV} is not set: no PostgreSQL server to test against "
               "(start one with `eval \"$(scripts/postgres_for_tests.sh start)\"`)")
        if os.environ.get("CI"):
            pytest.fail(f"CI must run the PostgreSQL tests, but {msg}")
        pytest.skip(msg)
    return url


DATABASES = ["sqlite", "postgresql"]


def fresh_database(request, tmp_path):
    """A fresh, empty database: a SQLite file, or a new database on the PostgreSQL server."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'ledger.db'}"
        return
    admin = sa.make_url(_pg_admin_url())
    name = f"kc_test_{uuid.uuid4().hex[:12]}"
    eng = sa.create_engine(admin, isolation_level="AUTOCOMMIT")
    with eng.connect() as c:
        c.exec_driver_sql(f'CREATE DATABASE "{name}"')
    try:
        yield admin.set(database=name).render_as_string(hide_password=False)
    finally:
        with eng.connect() as c:
            c.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        eng.dispose()


def snapshot(url: str) -> dict[str, list]:
    """Every row of every table, to assert that a refused request changed nothing."""
    eng = sa.create_engine(url)
    try:
        md = sa.MetaData()
        md.reflect(eng)
        with eng.connect() as c:
            return {t.name: sorted((tuple(map(repr, r)) for r in c.execute(t.select())), key=repr)
                    for t in md.sorted_tables}
    finally:
        eng.dispose()


def task_zip(task: str = "softmax", name: str | None = None, top: bool = True, extra: dict[str, bytes] | None = None,
             edit=None) -> bytes:
    """A zip of a catalog task folder; ``name`` renames the definition; ``edit(files)`` may change any file."""
    root = TASKS / task
    files = {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*"))
             if p.is_file() and "__pycache__" not in p.parts}
    if name:
        d = json.loads(files["definition.json"])
        old, d["name"] = d["name"], name
        files["definition.json"] = json.dumps(d, indent=2).encode()
        files["workloads.jsonl"] = files["workloads.jsonl"].replace(f'"definition": "{old}"'.encode(),
                                                                    f'"definition": "{name}"'.encode())
        for k in list(files):  # solutions name their definition too
            if k.startswith("solutions/") and k.endswith(".json"):
                files[k] = files[k].replace(f'"{old}"'.encode(), f'"{name}"'.encode())
    if edit:
        edit(files)
    files.update(extra or {})
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for k, v in files.items():
            z.writestr(f"{name or task}/{k}" if top else k, v)
    return buf.getvalue()


def csrf_of(html: str) -> str:
    m = re.search(r'name="csrf_token" value="([0-9a-f]+)"', html)
    assert m, "no CSRF token in the page"
    return m.group(1)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """``kernelcraft serve`` as a real process on a loopback port."""

    def __init__(self, db: str, *args: str, log: Path):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]))
        self.log = log
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "kernelcraft", "serve", "--db", db, "--port", str(self.port), *args],
            cwd=ROOT, env=env, stdout=open(log, "w"), stderr=subprocess.STDOUT)
        self._wait()

    def _wait(self, timeout: float = 60) -> None:
        import httpx

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"kernelcraft serve exited {self.proc.returncode}:\n{self.log.read_text()}")
            try:
                if httpx.get(self.url + "/healthz", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        self.stop()
        raise AssertionError(f"kernelcraft serve did not answer in {timeout} s:\n{self.log.read_text()}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
