"""On a CUDA device: the catalog's solutions (CUDA ones included) pass, the wrong ones are caught,
and timings come from device events. Skipped, with the reason, where no GPU is visible."""

from __future__ import annotations

import json
import tomllib
import uuid

import pytest

from conftest import kc

pytestmark = pytest.mark.gpu
TASK_NAMES = ["rmsnorm", "silu_mul", "softmax"]
GPU_AXES = {
    "rmsnorm": [{"batch_size": 1}, {"batch_size": 777}],
    "silu_mul": [{"num_tokens": 1}, {"num_tokens": 333}],
    "softmax": [{"num_rows": 5, "width": 1}, {"num_rows": 7, "width": 4099}, {"num_rows": 64, "width": 32768}],
}


def _gpu_eval(task_dir, *solutions, extra=(), tmp) -> dict:
    out = tmp / f"gpu_{uuid.uuid4().hex[:8]}.json"
    proc = kc("eval", task_dir, *solutions, "--device", "cuda", "--budget-ms", "50", "--no-peers", "--json", out,
              *extra)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads(out.read_text())


@pytest.fixture(scope="module")
def gpu_tasks(tmp_path_factory):
    from conftest import small_task

    base = tmp_path_factory.mktemp("gpu_tasks")
    return {n: small_task(n, base, GPU_AXES[n]) for n in TASK_NAMES}


@pytest.mark.parametrize("task", TASK_NAMES)
def test_catalog_passes_on_gpu(task, gpu_tasks, tmp_path):
    rep = _gpu_eval(gpu_tasks[task], tmp=tmp_path)
    assert rep["device"] == "cuda"
    for s in rep["solutions"]:
        assert s["status"] == "PASSED", (s["name"], s["reason"])
        for w in s["workloads"]:
            assert w["timing"]["method"] in ("cuda-graph+events+l2flush", "cuda-events+l2flush")
            assert w["latency_ms"] > 0


@pytest.mark.parametrize("task", TASK_NAMES)
def test_wrong_fixtures_caught_on_gpu(task, gpu_tasks, tmp_path):
    wrong = gpu_tasks[task] / "solutions" / "wrong"
    manifest = tomllib.loads((wrong / "expected.toml").read_text())
    # one eval for every fixture (each still in its own runner): one CLI start per fixture ran the 26 of
    # rmsnorm past 110 s on the H200 (session 6), the way the CPU suite's batching had found
    names = list(manifest)
    paths = [wrong / f"{n}.py" if (wrong / f"{n}.py").exists() else wrong / n for n in names]
    rep = _gpu_eval(gpu_tasks[task], *paths, extra=("--timeout", "60", "--no-timing"), tmp=tmp_path)
    rows = [s for s in rep["solutions"] if s["role"] == "candidate"]
    assert len(rows) == len(names), [s["name"] for s in rows]
    for name, s in zip(names, rows, strict=True):  # the report keeps the given order
        assert s["status"] == manifest[name]["status"], (name, s["reason"])


def test_checks_give_up_the_gpu_while_triton_compiles(gpu_tasks, tmp_path, monkeypatch):
    """A Triton candidate in a GPU lane, with an empty Triton cache: its checks hold the GPU slot
    shared once per workload checked, plus once more after each compile (given up while Triton
    compiled), and it passes."""
    from kernelcraft.gauntlet import Options, evaluate
    from kernelcraft.solution.model import pack_python_file
    from kernelcraft.task.loader import load_task
    from kernelcraft.worker import pool
    from kernelcraft.worker.executor import Done, LocalExecutor, gpu_lanes

    from conftest import ROOT

    class Keep(LocalExecutor):
        def __init__(self, lanes):
            super().__init__(lanes)
            self.done: list = []

        def next_event(self):
            ev = super().next_event()
            if isinstance(ev, Done):
                self.done.append(ev)
            return ev

    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton_cache"))  # every kernel compiles
    pool.shutdown_spares()  # spares started before took the old environment
    task = load_task(gpu_tasks["silu_mul"])
    f = ROOT / "tasks/silu_mul/solutions/triton_tunable.py"
    entry = ("candidate", pack_python_file(f, task.definition.name, name="tunable"), str(f))
    try:
        with Keep(gpu_lanes("cuda", [0])) as ex:
            rep = evaluate(task, [entry], Options(device="cuda", timing={"budget_ms": 20}), executor=ex)
    finally:
        pool.shutdown_spares()
    [s] = rep.solutions
    assert s.status == "PASSED", s.reason
    [ev] = ex.done
    checked = sum(g in ("correctness", "generalization") for gates in ev.outcome.workloads.values() for g in gates)
    assert checked >= 2
    assert len(ev.outcome.slot_shared) > checked, (len(ev.outcome.slot_shared), checked)


def test_confirmation_runs_after_the_timings(gpu_tasks, tmp_path):
    """With --confirm (the default) the runner under Nsight Compute starts once the candidate's timings
    are done (its own phase in the record), and confirms them; it never sits beside a timed runner."""
    from kernelcraft.measure._ncu import find_ncu

    if find_ncu() is None:
        pytest.skip("needs Nsight Compute (ncu) on PATH")
    sol = gpu_tasks["rmsnorm"] / "solutions" / "triton_rowwise.py"
    rep = _gpu_eval(gpu_tasks["rmsnorm"], sol, extra=("--confirm",), tmp=tmp_path)
    row = next(s for s in rep["solutions"] if s["role"] == "candidate")
    assert row["status"] == "PASSED", row["reason"]
    assert row["confirmation"]["confirmed"], row["confirmation"]
    assert "confirmation" in row["phases_s"] and row["phases_s"]["confirmation"] > 0, row["phases_s"]
    assert len(row["confirmation"]["per_workload"]) == sum(bool(w["latency_ms"]) for w in row["workloads"])
