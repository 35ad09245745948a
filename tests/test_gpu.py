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
    proc = kc("eval", task_dir, *solutions, "--device", "cuda", "--budget-ms", "50", "--json", out, *extra)
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
    for name, exp in manifest.items():
        path = wrong / f"{name}.py" if (wrong / f"{name}.py").exists() else wrong / name
        rep = _gpu_eval(gpu_tasks[task], path, extra=("--timeout", "60", "--no-timing"), tmp=tmp_path)
        [s] = rep["solutions"]
        assert s["status"] == exp["status"], (name, s["reason"])
