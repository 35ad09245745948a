"""kernelcraft review and approve: the bundle shows the source, the diff against the DAG parent and
against what was promoted before (baseline.py when nothing was), the verdicts and the limits; only a
candidate that passed can be approved; a contract with require_approval promotes nothing until a
person approves, then promotes at once, and export waits for the approval too."""

from __future__ import annotations

import sqlite3

import pytest
from export_support import TRITON, WRONG, evaluated, kc, ledger_run, rms64_task


@pytest.fixture(scope="module")
def ev(tmp_path_factory):
    return evaluated(tmp_path_factory)


def test_review_bundle(ev, tmp_path):
    task, record = ev
    db = f"sqlite:///{tmp_path / 'l.db'}"
    ids = ledger_run(db, task, record)
    out = tmp_path / "bundle"
    proc = kc("review", str(ids[TRITON]), "--db", db, "--out", out)
    assert proc.returncode == 0, proc.stderr
    text = (out / "review.md").read_text()
    source = (task / "solutions" / f"{TRITON}.py").read_text()
    assert source.strip() in text and (out / "sources" / f"{TRITON}.py").read_text() == source
    assert f"# Review: candidate {ids[TRITON]} ({TRITON})" in text and "**PASSED** (every gate)" in text
    # its parent is the slightly-off fixture: the diff shows what the child changed
    parent = (task / "solutions" / "wrong" / f"{WRONG}.py").read_text()
    patch = (out / "diff_parent.patch").read_text()
    assert patch.startswith(f"--- candidate-{ids[WRONG]}/{WRONG}.py") or f"candidate-{ids[WRONG]}/" in patch
    removed = {ln[1:] for ln in patch.splitlines() if ln.startswith("-") and not ln.startswith("---")}
    assert removed and removed <= set(parent.splitlines())
    # nothing of this task was promoted before this run's selection: the comparison is baseline.py
    assert "## Diff against baseline.py (no solution of this task was promoted yet)" in text
    assert "batch_size: run at" in text and "values outside that range were never run" in text
    assert "inputs were contiguous" in text and "validated on the CPU" in text
    seed = __import__("json").loads(record.read_text())["seed"]
    assert f"--seed {seed}" in text and f"kernelcraft approve {ids[TRITON]} --by NAME" in text
    assert "No profile in this evaluation record" in text
    from kernelcraft.errors import InputError
    from kernelcraft.ledger import Ledger
    from kernelcraft.review.bundle import render
    from kernelcraft.review.candidate import resolve

    failed, _ = render(resolve(str(ids[WRONG]), db=db), Ledger(db))
    assert "**INCORRECT_NUMERICAL** at gate `correctness`" in failed and "nothing is validated" in failed
    with pytest.raises(InputError, match="no candidate 12345"):
        resolve("12345", db=db)


def test_approve_only_what_passed(ev, tmp_path):
    task, record = ev
    db_file = tmp_path / "l.db"
    db = f"sqlite:///{db_file}"
    ids = ledger_run(db, task, record)
    from kernelcraft.errors import InputError
    from kernelcraft.ledger import Ledger
    from kernelcraft.review.approve import approve
    from kernelcraft.review.candidate import resolve

    with pytest.raises(InputError, match=r"did not pass the gauntlet \(INCORRECT_NUMERICAL"):
        approve(resolve(str(ids[WRONG]), db=db), Ledger(db), "ada")
    proc = kc("approve", str(ids[TRITON]), "--by", "ada", "--note", "read it; limits fine", "--db", db)
    assert proc.returncode == 0, proc.stderr
    assert "does not require approval" in proc.stdout
    # a solution of an evaluation record can be approved too: its hash and the record are kept
    out = approve(resolve(str(record), TRITON, task_dir=task), Ledger(db), "grace")
    assert out.promoted is None and "not in a ledger run" in out.note
    with pytest.raises(InputError, match="give the name"):
        approve(resolve(str(record), TRITON, task_dir=task), Ledger(db), "  ")
    with sqlite3.connect(db_file) as con:
        rows = con.execute("SELECT candidate_id, by, note, source_hash, evidence FROM approvals ORDER BY id").fetchall()
        cand_hash = con.execute("SELECT source_hash FROM candidates WHERE id = ?", (ids[TRITON],)).fetchone()[0]
    assert rows[0][:3] == (ids[TRITON], "ada", "read it; limits fine") and rows[0][3] == cand_hash
    assert rows[1][0] is None and rows[1][1] == "grace" and rows[1][3] == cand_hash and rows[1][4] == str(record)


def test_contract_requiring_approval(ev, tmp_path):
    evaluated_task, record = ev
    task = rms64_task(tmp_path / "gated", require_approval=True)
    (task / "workloads.jsonl").write_text((evaluated_task / "workloads.jsonl").read_text())  # the same workloads
    db = f"sqlite:///{tmp_path / 'l.db'}"
    ids = ledger_run(db, task, record)  # evaluated under the same definition; this contract gates promotion
    from kernelcraft.agent.loop import summary
    from kernelcraft.ledger import Ledger
    from kernelcraft.task import load_task

    ledger = Ledger(db)
    s = summary(ledger, ids["run"], load_task(task))
    assert s["promoted"] is None and s["awaiting_approval"] == [ids[TRITON]]
    from kernelcraft.errors import InputError
    from kernelcraft.export import export
    from kernelcraft.review.bundle import render
    from kernelcraft.review.candidate import resolve

    r = resolve(str(ids[TRITON]), db=db)
    with pytest.raises(InputError) as e:
        export(r, "torch-op", tmp_path / "op", db=db)
    msg = str(e.value.problems[0])
    assert "promotion.require_approval" in msg and f"kernelcraft approve {ids[TRITON]} --by NAME" in msg
    proc = kc("approve", str(ids[TRITON]), "--by", "ada", "--db", db)
    assert proc.returncode == 0 and f"candidate {ids[TRITON]} is now promoted in run {ids['run']}" in proc.stdout
    assert ledger.run(ids["run"]).promoted_id == ids[TRITON]
    assert export(r, "fib", tmp_path / "fib", db=db)["trace_count"] == 3
    text, _ = render(r, ledger)
    assert "a person's approval is required" in text and "- ada at " in text


def test_review_replay_command_runs(ev, tmp_path):
    """Issue 24: the printed replay named the candidate `ledger:4`, which eval refused ("not found")."""
    import json
    import shlex

    task, record = ev
    db = f"sqlite:///{tmp_path / 'l.db'}"
    ids = ledger_run(db, task, record)
    proc = kc("review", str(ids[TRITON]), "--db", db)
    assert proc.returncode == 0, proc.stderr
    [line] = [ln for ln in proc.stdout.splitlines() if ln.startswith("kernelcraft eval ")]
    argv = shlex.split(line.split("   #")[0])
    assert f"ledger:{ids[TRITON]}" in argv and "--seed" in argv and "--time" in argv  # CPU timings were recorded
    out = tmp_path / "replay.json"
    proc = kc(*argv[1:], "--budget-ms", "5", "--no-calibrate", "--json", out)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rec, old = json.loads(out.read_text()), json.loads(record.read_text())
    [s] = rec["solutions"]
    judged = next(x for x in old["solutions"] if x["name"] == TRITON)
    assert s["status"] == "PASSED" and s["source_hash"] == judged["source_hash"] and rec["seed"] == old["seed"]
    assert s["path"] == f"ledger:{ids[TRITON]}"
    # the same inputs: the errors of every workload agree with the record's
    assert [w["max_abs_error"] for w in s["workloads"]] == [w["max_abs_error"] for w in judged["workloads"]]
    for bad, says in ((f"ledger:{ids[TRITON] + 999}", "no candidate"), ("ledger:x", "is not a ledger candidate")):
        proc = kc("eval", task, bad, "--db", db, "--device", "cpu")
        assert proc.returncode == 2 and says in proc.stderr, proc.stderr


def test_approve_and_export_warn_about_slow_or_unpromoted_candidates(ev, tmp_path):
    task, record = ev
    db = f"sqlite:///{tmp_path / 'l.db'}"
    ids = ledger_run(db, task, record)
    from kernelcraft.ledger import Ledger

    # the Triton interpreter is far slower than torch on the CPU: a slower candidate, promoted by the
    # test contract's 0.0001x bar
    proc = kc("export", str(ids[TRITON]), tmp_path / "fib", "--format", "fib", "--db", db)
    assert proc.returncode == 0, proc.stderr
    assert "is slower than the baseline" in proc.stderr and "exported anyway" in proc.stderr
    assert "never promoted" not in proc.stderr
    assert f"exported candidate {ids[TRITON]} ({TRITON})" in proc.stdout and "as fib into" in proc.stdout
    Ledger(db).promote(ids["run"], None, "nothing, for this test")
    proc = kc("approve", str(ids[TRITON]), "--by", "ada", "--db", db)
    assert proc.returncode == 0, proc.stderr
    assert f"was never promoted: run {ids['run']} promoted no candidate" in proc.stderr
    assert "is slower than the baseline" in proc.stderr and "approval 1:" in proc.stdout
