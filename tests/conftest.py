"""Shared test helpers: small copies of the catalog's tasks, and running the real command."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TASKS = ROOT / "tasks"
FIXTURES = Path(__file__).resolve().parent / "fixtures"

# Small shapes per task, inside each definition's constraints: the Triton interpreter is slow.
SMALL_AXES = {
    "rmsnorm": [{"batch_size": 1}, {"batch_size": 3}],
    "silu_mul": [{"num_tokens": 1}, {"num_tokens": 2}],
    "softmax": [{"num_rows": 1, "width": 1000}, {"num_rows": 3, "width": 4099}, {"num_rows": 2, "width": 32768}],
    "fused_add_rmsnorm": [{"num_tokens": 1, "hidden_size": 4096}, {"num_tokens": 2, "hidden_size": 5120}],
    "layernorm": [{"num_tokens": 1, "hidden_size": 2560}, {"num_tokens": 2, "hidden_size": 4544}],
    "gelu_tanh_mul": [{"num_tokens": 1, "two_i": 16384, "intermediate_size": 8192},
                      {"num_tokens": 2, "two_i": 6000, "intermediate_size": 3000}],
    "rope": [{"num_tokens": 1}, {"num_tokens": 2}],
    # Rows much wider than 1024 columns: wrong/partial_amax.py is caught unless every row's amax
    # falls in its first 1024 columns (probability ~1e-6 over these rows).
    "fp8_rowwise_quant": [{"num_tokens": 3, "hidden_size": 14336}, {"num_tokens": 2, "hidden_size": 4096}],
}
CATALOG = list(SMALL_AXES)  # catalog I (issue 6); catalog II is tested in test_catalog2.py


def small_task(name: str, dest: Path, axes_list: list[dict] | None = None) -> Path:
    """A copy of tasks/<name> whose workloads.jsonl holds only small workloads (fixed uuids)."""
    src = TASKS / name
    out = dest / name
    shutil.copytree(src, out)
    definition = json.loads((src / "definition.json").read_text())
    template = json.loads((src / "workloads.jsonl").read_text().splitlines()[0])
    lines = []
    for i, axes in enumerate(axes_list or SMALL_AXES[name]):
        rec = json.loads(json.dumps(template))
        # the same uuids every run: a workload's inputs come from (seed, uuid), so a test that fixes
        # --seed replays the same inputs (a stress draw that failed in CI once is reproducible)
        rec["workload"]["uuid"] = str(uuid.uuid5(uuid.NAMESPACE_URL, f"kernelcraft-test:{name}:{i}:{json.dumps(axes, sort_keys=True)}"))
        rec["workload"]["axes"] = axes
        rec["definition"] = definition["name"]
        lines.append(json.dumps(rec))
    (out / "workloads.jsonl").write_text("\n".join(lines) + "\n")
    return out


def built_subject(client, task, solution, timeout: float = 120):
    """A CPU judge for ``task`` and its RemoteSubject on ``client``'s runner, the solution built there
    (asserted PASSED): the round trips a job makes, without a worker."""
    from kernelcraft.gauntlet.judge import Judge, RemoteSubject
    from kernelcraft.runner import protocol

    judge = Judge(task, None, lambda *a: None, None, "cpu", 1)
    subject = RemoteSubject(client, judge, False, timeout)
    judge.subject = subject
    built = subject._ask("build", protocol.BuildReply, timeout=timeout, solution=solution.to_json_dict(),
                         inputs=list(task.definition.inputs), outputs=list(task.definition.outputs))
    assert built.status == "PASSED", built.reason
    return judge, subject


def kc(*args: str, timeout: float = 900) -> subprocess.CompletedProcess:
    """Run the real `kernelcraft` command (python -m kernelcraft) and capture its output."""
    # Import the tree under test, whatever an editable install elsewhere points at.
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, "-m", "kernelcraft", *map(str, args)], capture_output=True,
                          text=True, timeout=timeout, cwd=ROOT, env=env)


def eval_json(task_dir: Path, *solutions: Path | str, extra: tuple[str, ...] = (), tmp: Path) -> dict:
    out = tmp / f"eval_{uuid.uuid4().hex[:8]}.json"
    proc = kc("eval", task_dir, *solutions, "--device", "cpu", "--budget-ms", "20", "--json", out, *extra)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads(out.read_text())


@pytest.fixture(scope="session", autouse=True)
def _fresh_build_cache(tmp_path_factory):
    """Every test session builds from scratch: a CUDA source that compiled in an earlier session
    must not pass the compile check from a stale cache entry."""
    os.environ["KERNELCRAFT_CACHE"] = str(tmp_path_factory.mktemp("kc_cache"))
    # what candidates' runners build into (outside the judge's cache: runner/client.py::sandbox_cache).
    # Under xdist both workers of this run share it, as a pool's workers do (entries are renamed into
    # place, torch's extension builds hold a lock): rmsnorm's cuda_vec8, a ~25 CPU-s torch-extension
    # build, is built by four tests in three files. The judge's cache stays per worker (calibration files
    # are compared byte for byte across an eval in tests/test_adversarial.py).
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = tmp_path_factory.getbasetemp().parent / "kc_sandbox_cache"  # this run's pytest-N folder
        shared.mkdir(exist_ok=True)
        os.environ["KERNELCRAFT_SANDBOX_CACHE"] = str(shared)
    else:
        os.environ["KERNELCRAFT_SANDBOX_CACHE"] = str(tmp_path_factory.mktemp("kc_sandbox_cache"))
    yield


@pytest.fixture(scope="session")
def small_tasks(tmp_path_factory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("tasks")
    return {name: small_task(name, base) for name in SMALL_AXES}


# The files that take longest on the 2-core CI machine, longest first (per-file sums of two full
# `scripts/test.sh` runs, 2026-12-06; every file of 13 s or more). xdist (--dist loadfile
# --no-loadscope-reorder, scripts/test.sh) hands files to its workers in collection order, so these start
# first and the small files (the rest, in collection order) fill in at the end: longest-processing-time
# order, in which the two workers end within seconds of each other. The older, shorter list left
# test_task_loading (~95 s of `kc task check` calls) and test_interop_fib to the end, where one worker ran
# them while the other idled (~20-35 s of the wall time). xdist's own reorder (most tests first) put
# test_e2e_gdn's 100 s, with 5 tests, at the end.
LONGEST_FIRST = ("test_gauntlet_cpu.py", "test_requests.py", "test_linear_attention.py", "test_task_loading.py",
                 "test_interop_fib.py", "test_kernelbench_real.py", "test_scale.py", "test_e2e_gdn.py",
                 "test_import_kernelbench.py", "test_catalog2.py", "test_optimize.py", "test_review.py",
                 "test_capture.py", "test_e2e_qwen3_next.py", "test_export.py", "test_memory.py", "test_report.py",
                 "test_integrity.py", "test_e2e_regions.py", "test_cli_first_hour.py", "test_web_api.py",
                 "test_static.py", "test_sanitize.py", "test_agents_llm.py", "test_fib_faithful.py",
                 "test_trusted_timing.py", "test_adversarial.py", "test_peers_beside.py", "test_judged_sources.py", "test_profile.py",
                 "test_e2e.py", "test_calling_convention.py", "test_export_triton_op.py")


def pytest_collection_modifyitems(config, items):
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: each file's own order kept
    try:
        import torch

        has_cuda = torch.cuda.is_available()
    except ImportError:
        has_cuda = False
    if has_cuda:
        return
    skip = pytest.mark.skip(reason="needs a CUDA device: torch.cuda.is_available() is False on this machine")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
