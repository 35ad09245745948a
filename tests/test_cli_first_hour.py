"""Issue 24, a newcomer's first hour: what `eval` and `optimize` say on a CPU machine. Correctness
only unless --time; timed CPU figures labelled as interpreter figures in the table and the record;
one intra-op thread per worker; one plain progress line per phase when not on a terminal; tables
that name each solution distinguishably and show the baseline once; only candidates promotable."""

from __future__ import annotations

import json
import os

import pytest
from export_support import TRITON, kc, rms64_task
from rich.console import Console

from kernelcraft.gauntlet.records import EvalReport

from conftest import FIXTURES


@pytest.fixture(scope="module")
def task(tmp_path_factory):
    return rms64_task(tmp_path_factory.mktemp("first_hour"))


def _eval(task, tmp_path, *extra):
    out = tmp_path / "rec.json"
    proc = kc("eval", task, task / "solutions" / f"{TRITON}.py", "--with-baseline", "--device", "cpu",
              "--budget-ms", "20", "--no-calibrate", "--json", out, *extra)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc, json.loads(out.read_text())


def test_cpu_eval_checks_correctness_only_by_default(task, tmp_path):
    proc, rec = _eval(task, tmp_path)
    assert [s["status"] for s in rec["solutions"]] == ["PASSED", "PASSED"]
    assert all(w["latency_ms"] is None for s in rec["solutions"] for w in s["workloads"])
    assert all("timing" not in s["phases_s"] for s in rec["solutions"])
    assert rec["timing_note"] == "" and "correctness only" in proc.stdout
    # one plain line per phase (stdout is not a terminal here), in the order the worker ran them
    lines = [ln.strip() for ln in proc.stdout.splitlines() if ln.startswith(f"  {TRITON}:")]
    assert lines == [f"{TRITON}: started on cpu", f"{TRITON}: build", f"{TRITON}: correctness",
                     f"{TRITON}: holdouts", f"{TRITON}: PASSED"], proc.stdout


def test_cpu_timing_on_request_is_labelled_and_single_threaded(task, tmp_path):
    proc, rec = _eval(task, tmp_path, "--time")
    base, cand = rec["solutions"]
    assert all(w["latency_ms"] > 0 for w in cand["workloads"]) and cand["speedup_vs_baseline"] > 0
    assert "say nothing about a GPU" in rec["timing_note"] and "interpreter" in rec["timing_note"]
    assert rec["environment"]["device_info"]["omp_num_threads"] == "1"  # one intra-op thread per worker
    assert "x baseline (cpu)" in proc.stdout and "say nothing about a GPU" in proc.stdout
    assert f"  {TRITON}: timing" in proc.stdout
    # the contract's bar is 0.0001x: the candidate is promotable, the baseline row never is
    assert cand["promotable"] is True and base["promotable"] is False
    # the baseline appears once in the latency table: its own column, no second "baseline.py" one
    lat = proc.stdout[proc.stdout.index("median latency"):]
    assert "baseline.py" not in lat and "baseline" in lat


def test_conflicting_timing_flags_exit_2(task):
    proc = kc("eval", task, "--device", "cpu", "--time", "--no-timing")
    assert proc.returncode == 2 and "contradict" in proc.stderr


def test_busy_machine_warning(monkeypatch):
    from kernelcraft.measure import cpu

    monkeypatch.setattr(cpu.os, "getloadavg", lambda: (7.5, 7.0, 6.0))
    monkeypatch.setattr(cpu, "cores", lambda: 2)
    assert "load average 7.5 on 2 cores" in cpu.load_warning(1, 1)
    monkeypatch.setattr(cpu.os, "getloadavg", lambda: (0.2, 0.2, 0.2))
    assert cpu.load_warning(1, 1) == ""


def test_few_repetitions_warning():
    from kernelcraft.measure.cpu import timing_warnings

    rep = EvalReport.model_validate(json.loads((FIXTURES / "records" / "h200" / "rmsnorm.json").read_text()))
    assert timing_warnings(rep) == []  # the H200's medians rest on 100+ repetitions
    w = rep.solutions[1].workloads[0]
    w.timing = dict(w.timing, reps=3)
    [text] = timing_warnings(rep)
    assert f"{rep.solutions[1].name} {w.uuid[:8]} (3)" in text and "--budget-ms" in text


def test_latency_headers_tell_solutions_apart():
    """The H200 record's solutions mostly start with the definition's name: the headers were all
    cut to that prefix."""
    from kernelcraft.report.terminal import headers, latency_table

    rep = EvalReport.model_validate(json.loads((FIXTURES / "records" / "h200" / "rmsnorm.json").read_text()))
    names = [s.name for s in rep.solutions]
    short = headers(names, rep.task)
    assert len(set(short)) == len(names) and "cuda_vec8" in short and "triton_dps" in short
    c = Console(width=100, record=True, color_system=None, file=open(os.devnull, "w"))  # noqa: SIM115
    c.print(latency_table(rep))
    # the header lines, each column's pieces joined again (a long name folds over two lines)
    rows = [ln.split("┃")[1:-1] for ln in c.export_text().split("┡")[0].splitlines() if ln.startswith("┃")]
    shown = ["".join(row[i].strip() for row in rows) for i in range(len(rows[0]))]
    assert shown == ["workload", *short, "reference"], shown
    assert headers(["x_a", "a"], "x") == ["x_a", "a"]  # stripping would make two headers equal


def test_optimize_help_lists_every_agent():
    proc = kc("optimize", "--help")
    text = " ".join(proc.stdout.split())
    for agent in ("tuner", "files:DIR", "openai:MODEL", "anthropic:MODEL", "claude-code", "codex"):
        assert agent in text, agent


def test_cpu_workers_run_with_the_pinned_intra_op_threads(task, tmp_path):
    """What torch in the worker process sees, reported by a candidate that raises it. torch caps its
    pool at the machine's cores, so this can tell one thread from the default only on 2 cores or more."""
    from kernelcraft.measure.cpu import cores

    if cores() < 2:
        pytest.skip("one core: torch's default pool has one thread anyway")
    probe = tmp_path / "threads_probe.py"
    probe.write_text("import torch\n\n\ndef run(hidden_states, weight, eps):\n"
                     "    raise RuntimeError(f'intra-op threads: {torch.get_num_threads()}')\n")
    out = tmp_path / "probe.json"
    proc = kc("eval", task, probe, "--device", "cpu", "--no-calibrate", "--json", out)
    assert proc.returncode == 0, proc.stderr
    [s] = json.loads(out.read_text())["solutions"]
    assert s["status"] == "RUNTIME_ERROR" and "intra-op threads: 1" in s["reason"], s["reason"]
