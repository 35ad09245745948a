"""The design loop on CPU: the tuner improves a tunable Triton solution, the ledger keeps the DAG,
files are evaluated in order, and a run killed with SIGKILL resumes without losing a record."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time

import pytest

from conftest import ROOT, TASKS, kc, small_task


@pytest.fixture()
def rms(tmp_path):
    # 32 rows: enough programs that rows-per-program visibly changes the interpreter's time
    return small_task("rmsnorm", tmp_path, [{"batch_size": 32}])


def _optimize(task_dir, db, *extra, budget=3):
    out = db.parent / f"run_{time.monotonic_ns()}.json"
    proc = kc("optimize", task_dir, "--device", "cpu", "--db", f"sqlite:///{db}", "--budget", str(budget),
              "--budget-ms", "60", "--json", out, *extra)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads(out.read_text()), proc.stdout


def test_tuner_improves_and_ledger_shows_dag(rms, tmp_path):
    db = tmp_path / "ledger.db"
    run, _ = _optimize(rms, db, "--agent", "tuner", budget=3)
    assert set(run) >= {"run_id", "task", "agent", "candidates", "promoted"}
    cands = run["candidates"]
    assert cands[0]["agent"] == "baseline" and cands[0]["status"] == "PASSED"
    tuned = cands[1:]
    assert len(tuned) == 3 and all(c["status"] == "PASSED" for c in tuned)
    start = tuned[0]
    assert "BLOCK_M=1" in start["strategy"] and start["parent"] is None
    assert all(c["parent"] is not None for c in tuned[1:])  # children of the best so far
    best = max(tuned, key=lambda c: c["speedup_vs_baseline"])
    # BLOCK_M=4 runs a quarter of the programs of BLOCK_M=1; the interpreter's cost is per program
    assert best["speedup_vs_baseline"] > 1.5 * start["speedup_vs_baseline"], tuned
    show = kc("ledger", "show", "--db", f"sqlite:///{db}", "--run", str(run["run_id"]))
    assert show.returncode == 0, show.stderr
    assert "DAG" in show.stdout and "tune BLOCK_M" in show.stdout
    listing = kc("ledger", "show", rms, "--db", f"sqlite:///{db}", "--json")
    assert json.loads(listing.stdout)[0]["run_id"] == run["run_id"]


def test_files_agent_evaluates_in_order(rms, tmp_path):
    d = tmp_path / "proposals"
    d.mkdir()
    shutil.copy(rms / "solutions" / "triton_rowwise.py", d / "a_good.py")
    shutil.copy(rms / "solutions" / "wrong" / "slightly_off.py", d / "b_off.py")
    run, out = _optimize(rms, tmp_path / "l.db", "--agent", f"files:{d}", budget=5)
    statuses = [(c["strategy"], c["status"]) for c in run["candidates"][1:]]
    assert statuses == [("file a_good.py", "PASSED"), ("file b_off.py", "INCORRECT_NUMERICAL")]
    # progress, one line per phase when not on a terminal: the candidate count, best so far, budget left
    good, off = (c["id"] for c in run["candidates"][1:])
    for phase in ("build", "correctness", "holdouts", "timing"):
        assert f"  candidate {good}: {phase}\n" in out, out
    best = f"best {run['candidates'][1]['speedup_vs_baseline']:.3g}x (candidate {good})"
    assert f"candidate {good}: PASSED" in out and f"{best} · 4 of 5 left" in out, out
    assert f"candidate {off}: INCORRECT_NUMERICAL; {best} · 3 of 5 left" in out, out


def test_agent_misconfiguration_exits_2(tmp_path):
    task = small_task("softmax", tmp_path, [{"num_rows": 1, "width": 8}])  # no tunable solution there
    proc = kc("optimize", task, "--agent", "tuner", "--device", "cpu", "--db", f"sqlite:///{tmp_path / 'x.db'}")
    assert proc.returncode == 2 and "TUNABLES" in proc.stderr
    proc = kc("optimize", task, "--agent", "gpt5", "--device", "cpu", "--db", f"sqlite:///{tmp_path / 'x.db'}")
    assert proc.returncode == 2 and "unknown agent" in proc.stderr


def test_sigkill_then_resume_loses_nothing(rms, tmp_path):
    db = tmp_path / "ledger.db"
    d = tmp_path / "proposals"
    d.mkdir()
    for i, name in enumerate(["triton_rowwise.py", "triton_tunable.py", "triton_rowwise.py"]):
        text = (rms / "solutions" / name).read_text() + f"\n# variant {i}\n"
        (d / f"{i}_{name}").write_text(text)
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    proc = subprocess.Popen([sys.executable, "-m", "kernelcraft", "optimize", str(rms), "--agent", f"files:{d}",
                             "--device", "cpu", "--db", f"sqlite:///{db}", "--budget", "3", "--budget-ms", "60"],
                            cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    deadline = time.monotonic() + 300
    recorded: list = []
    while time.monotonic() < deadline:
        time.sleep(0.5)
        if db.exists():
            try:
                with sqlite3.connect(db) as con:
                    recorded = con.execute(
                        "SELECT id, status FROM candidates WHERE status != 'PENDING' ORDER BY id").fetchall()
            except sqlite3.OperationalError:  # the file exists before the migrations have made the tables
                continue
            if len(recorded) >= 2:  # the baseline and the first proposal are in the ledger
                break
    os.killpg(proc.pid, signal.SIGKILL)  # the whole group: the CLI and its worker
    proc.wait()
    assert len(recorded) >= 2, "the run did not record two candidates in time"
    with sqlite3.connect(db) as con:
        before = con.execute("SELECT id, status, source_hash FROM candidates ORDER BY id").fetchall()
        run_id = con.execute("SELECT id FROM runs").fetchone()[0]
    run, _ = _optimize(rms, db, "--agent", f"files:{d}", "--resume", str(run_id), budget=3)
    after = {c["id"]: c for c in run["candidates"]}
    for cid, status, _ in before:
        if status != "PENDING":
            assert after[cid]["status"] == status  # nothing recorded was lost or redone
    assert [c["status"] for c in run["candidates"]] == ["PASSED"] * 4
    assert len({h for _, _, h in before}) == len(before)  # no duplicate proposals before the kill
    with sqlite3.connect(db) as con:
        hashes = [r[0] for r in con.execute("SELECT source_hash FROM candidates")]
    assert len(hashes) == len(set(hashes)) == 4  # each file evaluated once: baseline + 3


def test_unknown_run_on_resume_exits_2(rms, tmp_path):
    proc = kc("optimize", rms, "--agent", "tuner", "--device", "cpu", "--db", f"sqlite:///{tmp_path / 'x.db'}",
              "--resume", "99")
    assert proc.returncode == 2 and "no such run" in proc.stderr


def test_catalog_task_declares_tunables():
    from kernelcraft.agent.tuner import tunables_of

    text = (TASKS / "rmsnorm" / "solutions" / "triton_tunable.py").read_text()
    space, config = tunables_of(text)
    assert set(config) <= set(space) and all(config[k] in space[k] for k in config)


def test_tuner_with_a_file_searches_that_solutions_tunables(tmp_path):
    """tuner:FILE tunes the named solution (a candidate outside solutions/), not the first tunable one."""
    from kernelcraft.agent.base import AgentError
    from kernelcraft.agent.loop import make_agent
    from kernelcraft.task.loader import load_task

    task = load_task(TASKS / "softmax")
    with pytest.raises(AgentError, match="TUNABLES"):  # no promoted softmax solution declares any
        make_agent("tuner", task)
    named = make_agent(f"tuner:{TASKS / 'softmax/candidates/triton_dispatch.py'}", task)
    assert "CHUNK" in named.space
    with pytest.raises(AgentError, match="no such file"):
        make_agent(f"tuner:{tmp_path / 'missing.py'}", task)


def test_tuner_accepts_list_valued_tunables(tmp_path):
    """A tunable whose values are lists (softmax's ROWS = [tile, elements per thread]) is searched
    like any other (it crashed the tuner on the H200: unhashable list)."""
    from kernelcraft.agent.base import Context
    from kernelcraft.agent.loop import make_agent
    from kernelcraft.task.loader import load_task

    task = load_task(TASKS / "softmax")
    agent = make_agent(f"tuner:{TASKS / 'softmax/candidates/triton_dispatch.py'}", task)
    assert any(isinstance(v, list) for vals in agent.space.values() for v in vals)
    first = agent.propose(Context(task=task, device="cpu", brief="", history=[]))
    assert first is not None and "ROWS=" in first.strategy
