"""The gauntlet end to end on CPU: real Triton kernels through the interpreter, in worker processes.

Correct solutions pass; every known-wrong fixture gets its status and a message that says where;
CUDA solutions are compiled with nvcc and skipped for running.
"""

from __future__ import annotations

import re
import tomllib

import pytest

from conftest import CATALOG, FIXTURES, TASKS, eval_json

TASK_NAMES = CATALOG
WORKLOAD_FIELDS = {"uuid", "status", "max_abs_error", "max_rel_error", "latency_ms", "baseline_latency_ms",
                   "reference_latency_ms"}
SOLUTION_FIELDS = {"name", "status", "gate", "reason", "speedup_vs_baseline", "speedup_vs_reference", "workloads"}


def _wrong_cases():
    for task in TASK_NAMES:
        manifest = TASKS / task / "solutions" / "wrong" / "expected.toml"
        for name, exp in tomllib.loads(manifest.read_text()).items():
            yield pytest.param(task, name, exp, id=f"{task}-{name}")


@pytest.mark.parametrize("task", TASK_NAMES)
def test_catalog_solutions_on_cpu(task, small_tasks, tmp_path, monkeypatch):
    if task == "rmsnorm":
        # every reference call goes through the judge's cache (gauntlet/refcache.py; by default only
        # calls of >= 1 s): the solutions are checked on one seed's inputs, so the later ones read the
        # earlier ones' reference outputs back, and must still pass
        monkeypatch.setenv("KERNELCRAFT_REFCACHE_MIN_S", "0")
    rep = eval_json(small_tasks[task], extra=("--time",), tmp=tmp_path)  # its phases and latencies are checked
    assert {"task", "device", "environment", "solutions"} <= set(rep)
    assert rep["device"] == "cpu" and rep["environment"]["hardware"].startswith("CPU")
    by_name = {s["name"]: s for s in rep["solutions"]}
    assert by_name["baseline"]["status"] == "PASSED"
    languages = set()
    for s in rep["solutions"]:
        assert SOLUTION_FIELDS <= set(s)
        languages.add(s["language"])
        if s["language"] == "cuda":
            # built for real with nvcc and the host compiler, then skipped: no GPU here
            assert s["status"] == "SKIPPED", s["reason"]
            assert "compiled for sm_90" in s["reason"] and "needs a CUDA device" in s["reason"]
            continue
        assert s["status"] == "PASSED", (s["name"], s["reason"])
        assert s["gate"] is None
        # where the worker's time went: spawn and imports, build, checks, timing
        assert {"start", "build", "correctness", "timing"} <= set(s["phases_s"]), s["phases_s"]
        assert all(v >= 0 for v in s["phases_s"].values())
        # and its CPU: the interpreter's checks and timings cost CPU seconds, as the worker reported
        assert s["phases_cpu_s"]["correctness"] > 0 and s["phases_cpu_s"]["timing"] > 0, s["phases_cpu_s"]
        assert s["worker_cpu_s"] >= sum(s["phases_cpu_s"].values()) - 0.01
        for w in s["workloads"]:
            assert WORKLOAD_FIELDS <= set(w)
            assert w["status"] == "PASSED"
            assert w["max_abs_error"] is not None and w["latency_ms"] > 0
            assert w["baseline_latency_ms"] > 0 and w["reference_latency_ms"] > 0
            assert w["timing"]["method"] == "cpu-wall"
        assert s["speedup_vs_baseline"] > 0 and s["speedup_vs_reference"] > 0
    assert "triton" in languages
    if task in ("rmsnorm", "silu_mul", "softmax"):
        assert "cuda" in languages
    if task == "rmsnorm":
        caches = [s["reference_cache"] for s in rep["solutions"] if s["status"] == "PASSED" and s["reference_cache"]]
        assert caches and sum(c["stored"] for c in caches) > 0 and sum(c["hits"] for c in caches) > 0, caches
        assert all(c["rejected"] == 0 for c in caches), caches


_BATCHED: dict[str, dict[str, dict]] = {}  # task -> fixture -> its solution record


def _fixture_path(wrong, name: str):
    return wrong / f"{name}.py" if (wrong / f"{name}.py").exists() else wrong / name


def _batched(task: str, small_tasks, tmp_path) -> dict[str, dict]:
    """One `eval` per task for all its wrong fixtures (each still in its own worker process): a CLI
    start per fixture cost the suite minutes. Hang fixtures run alone, under a short --timeout."""
    if task not in _BATCHED:
        wrong = small_tasks[task] / "solutions" / "wrong"
        manifest = tomllib.loads((TASKS / task / "solutions" / "wrong" / "expected.toml").read_text())
        names = [n for n, e in manifest.items() if e["status"] != "TIMEOUT"]
        rep = eval_json(small_tasks[task], *[_fixture_path(wrong, n) for n in names], tmp=tmp_path)
        assert len(rep["solutions"]) == len(names)
        _BATCHED[task] = dict(zip(names, rep["solutions"], strict=True))  # the report keeps the given order
    return _BATCHED[task]


@pytest.mark.parametrize("task, name, exp", list(_wrong_cases()))
def test_wrong_fixture_is_caught(task, name, exp, small_tasks, tmp_path):
    if exp["status"] == "TIMEOUT":
        wrong = small_tasks[task] / "solutions" / "wrong"
        rep = eval_json(small_tasks[task], _fixture_path(wrong, name), extra=("--timeout", "6"), tmp=tmp_path)
        [s] = rep["solutions"]
    else:
        s = _batched(task, small_tasks, tmp_path)[name]
    assert s["status"] == exp["status"], s["reason"]
    reason = s["reason"]
    if exp["status"].startswith("INCORRECT") or exp["status"] in ("RUNTIME_ERROR", "TIMEOUT"):
        failing = [w for w in s["workloads"] + s["holdouts"] if w["status"] == exp["status"]]
        assert failing, s["workloads"]
        assert f"workload {failing[0]['uuid']}" in reason  # says which workload
    if exp["status"] == "INCORRECT_NUMERICAL":
        assert "worst at index" in reason or "NaN/Inf" in reason
        assert "expected" in reason
    if exp["status"] == "INCORRECT_SHAPE":
        assert "shape" in reason and "expected" in reason
    if exp["status"] == "INCORRECT_DTYPE":
        assert "dtype" in reason and "expected bfloat16" in reason
    if exp["status"] == "TIMEOUT":
        assert re.search(r"no progress within [0-9.]+ s", reason), reason
    if "gate" in exp:
        assert s["gate"] == exp["gate"], s["reason"]
    if exp["status"] == "COMPILE_ERROR":
        assert s["gate"] == "build" and reason
    for fragment in exp.get("reason_contains", []):
        assert fragment in reason, reason
    for fragment in exp.get("reason_lacks", []):
        assert fragment not in reason, reason


def test_crash_does_not_lose_neighbours(small_tasks, tmp_path):
    """A candidate that kills its worker gets a verdict; the solutions after it still run."""
    t = small_tasks["softmax"]
    good = next(p for p in (t / "solutions").iterdir() if p.suffix == ".py")
    crash = t / "solutions" / "wrong" / "crashes.py"
    rep = eval_json(t, good, crash, good, tmp=tmp_path)
    statuses = [s["status"] for s in rep["solutions"]]
    assert statuses == ["PASSED", "RUNTIME_ERROR", "PASSED"]
    assert "SIGSEGV" in rep["solutions"][1]["reason"] or "signal" in rep["solutions"][1]["reason"]


def test_seed_replays_inputs(small_tasks, tmp_path):
    t = small_tasks["rmsnorm"]
    sol = t / "solutions" / "triton_dps"
    runs = [eval_json(t, sol, extra=("--seed", str(s), "--no-timing"), tmp=tmp_path) for s in (11, 11, 12)]
    errs = [[w["max_abs_error"] for w in r["solutions"][0]["workloads"]] for r in runs]
    assert runs[0]["seed"] == 11
    assert errs[0] == errs[1]
    assert errs[0] != errs[2]


def test_fresh_seed_each_run(small_tasks, tmp_path):
    t = small_tasks["rmsnorm"]
    sol = t / "solutions" / "triton_dps"
    seeds = {eval_json(t, sol, extra=("--no-timing",), tmp=tmp_path)["seed"] for _ in range(2)}
    assert len(seeds) == 2


def test_foreign_task_and_fib_solution_evaluate_unchanged(tmp_path):
    """A KDA request folder and a FlashInfer-Trace Solution (inline sources, DPS by default)."""
    task = FIXTURES / "kda_gelu_request"
    rep = eval_json(task, extra=(), tmp=tmp_path)
    assert [s["name"] for s in rep["solutions"]] == ["baseline"]
    assert rep["solutions"][0]["status"] == "PASSED"
    rep = eval_json(task, FIXTURES / "fib_solutions" / "gelu_triton_dps.json", tmp=tmp_path)
    [s] = rep["solutions"]
    assert s["status"] == "PASSED", s["reason"]
    assert s["destination_passing_style"] is True and s["language"] == "triton"


def test_with_compile_adds_torch_compile_row(tmp_path):
    # --with-baseline keeps the baseline row next to a named solution (scripts/h200_catalog.sh
    # names only the promoted ones); without it named solutions come alone (test_wrong_fixture_is_caught)
    sol = FIXTURES / "fib_solutions" / "gelu_triton_dps.json"
    rep = eval_json(FIXTURES / "kda_gelu_request", sol, "--with-compile", "--with-baseline",
                    extra=("--workload", "0060a857", "--time"), tmp=tmp_path)
    names = [s["name"] for s in rep["solutions"]]
    # trusted rows first: the candidate is compared with every one of them (best peer)
    assert names == ["baseline", "torch.compile", "gelu_bias_triton_dps"], names
    assert all(s["status"] == "PASSED" for s in rep["solutions"]), [s["reason"] for s in rep["solutions"]]
    compiled, cand = rep["solutions"][1], rep["solutions"][2]
    assert compiled["workloads"][0]["latency_ms"] > 0 and compiled["role"] == "torch.compile"
    assert compiled["implementation"]["mode"] == "default" and compiled["implementation"]["dynamic"] is False
    w = cand["workloads"][0]
    fastest = min(rep["solutions"][:2], key=lambda r: r["workloads"][0]["latency_ms"])
    assert w["best_peer"] == fastest["name"]
    assert abs(w["speedup_vs_best_peer"] - fastest["workloads"][0]["latency_ms"] / w["latency_ms"]) < 1e-9


def test_independently_written_fib_task_with_two_outputs(tmp_path):
    """Written by a contributor from the FlashInfer-Trace spec alone, never edited here: a task with
    two outputs (a tuple from the reference and the baseline) and a DPS Triton solution writing both."""
    task = FIXTURES / "foreign_fused_add_rmsnorm"
    rep = eval_json(task, FIXTURES / "fib_solutions" / "fused_add_rmsnorm_triton.json", tmp=tmp_path)
    [s] = rep["solutions"]
    assert s["status"] == "PASSED", s["reason"]
    assert s["destination_passing_style"] is True
    assert all(w["status"] == "PASSED" for w in s["workloads"])
    rep = eval_json(task, extra=("--no-timing",), tmp=tmp_path)
    assert rep["solutions"][0]["name"] == "baseline" and rep["solutions"][0]["status"] == "PASSED"


def test_interrupted_eval_keeps_what_it_recorded(small_tasks, tmp_path):
    """The record is rewritten after every solution: killing eval mid-run keeps the finished ones."""
    import json
    import os
    import signal
    import subprocess
    import sys
    import time

    from conftest import ROOT

    t = small_tasks["silu_mul"]
    out = tmp_path / "partial.json"
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    proc = subprocess.Popen(
        [sys.executable, "-m", "kernelcraft", "eval", str(t), str(t / "solutions" / "triton_tiled.py"),
         str(t / "solutions" / "wrong" / "never_returns.py"), "--device", "cpu", "--no-timing",
         "--timeout", "120", "--json", str(out)],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not out.exists():
        time.sleep(0.5)
    time.sleep(1)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    rep = json.loads(out.read_text())
    assert [s["name"] for s in rep["solutions"]] == ["triton_tiled"]
    assert rep["solutions"][0]["status"] == "PASSED"
    assert rep["unfinished"] == ["never_returns"]  # the record says what the run never finished


def test_a_contract_may_leave_the_reference_untimed(tmp_path):
    """[timing] time_reference = false (gdn_prefill / kda_prefill: a token-by-token oracle whose speed nobody
    compares against): every row is timed as before, the reference is never timed (no "x reference"), and
    the default still times it, in the same run's terms."""
    from kernelcraft.task.loader import load_task

    from conftest import small_task

    untimed = small_task("rmsnorm", tmp_path / "a")
    contract = untimed / "contract.toml"
    text = contract.read_text()
    assert "time_reference" not in text
    contract.write_text(text.replace("[timing]\n", "[timing]\ntime_reference = false\n") if "[timing]\n" in text
                        else text + "\n[timing]\ntime_reference = false\n")
    assert load_task(untimed).contract.timing.time_reference is False
    assert load_task(TASKS / "gdn_prefill").contract.timing.time_reference is False
    assert load_task(TASKS / "rmsnorm").contract.timing.time_reference is True
    sol = untimed / "solutions" / "triton_rowwise.py"
    rep = eval_json(untimed, sol, extra=("--time", "--no-peers"), tmp=tmp_path)
    rows = [s for s in rep["solutions"] if s["name"] != "baseline" and s["status"] != "SKIPPED"]
    assert [s["name"] for s in rows] == [sol.stem], [(s["name"], s["status"]) for s in rep["solutions"]]
    for s in rows:
        assert s["status"] == "PASSED", (s["name"], s["reason"])
        assert s["speedup_vs_reference"] is None and s["speedup_vs_baseline"] > 0, s["name"]
        for w in s["workloads"]:
            assert w["latency_ms"] > 0 and w["baseline_latency_ms"] > 0
            assert w["reference_latency_ms"] is None, w
    timed = small_task("rmsnorm", tmp_path / "b")
    rep = eval_json(timed, timed / "solutions" / sol.name, extra=("--time", "--no-peers"), tmp=tmp_path)
    cand = next(s for s in rep["solutions"] if s["name"] == sol.stem)
    assert all(w["reference_latency_ms"] > 0 for w in cand["workloads"]) and cand["speedup_vs_reference"] > 0
