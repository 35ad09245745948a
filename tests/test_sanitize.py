"""`kernelcraft eval --sanitize`: compute-sanitizer rejects what the numeric gates cannot see.

On a GPU: three CUDA RMSNorms that compute the right numbers (an out-of-bounds "prefetch", a read of
the uninitialised output, a shared-memory race in the block reduction) pass every other gate and are
rejected by memcheck, initcheck and racecheck respectively, naming the tool; the catalog's honest
CUDA and Triton RMSNorms pass all three tools. Without a GPU: the command refuses clearly, and the
sanitizer's target process builds and runs a solution for real (under a stand-in for the tool).
"""

from __future__ import annotations

import json
import sys
import uuid

import pytest

from conftest import FIXTURES, ROOT, TASKS, kc, small_task

SAN = FIXTURES / "sanitize"

# compute-sanitizer's report format (CUDA 12/13), as printed with --show-backtrace no
MEMCHECK_OUT = """========= COMPUTE-SANITIZER
========= Invalid __global__ read of size 2 bytes
=========     at rmsnorm_flawed+0x2d0 in kernel.cu:27
=========     by thread (7,0,0) in block (776,0,0)
=========     Address 0x7f3a1c00a00e is out of bounds
=========     and is 15 bytes after the nearest allocation at 0x7f3a1a000000 of size 6365184 bytes
=========
========= ERROR SUMMARY: 8 errors
"""
RACECHECK_OUT = """========= COMPUTE-SANITIZER
========= Error: Race reported between Write access at rmsnorm_flawed+0x3a0 in kernel.cu:38
=========     and Read access at rmsnorm_flawed+0x3c0 in kernel.cu:39 [62 hazards]
=========
========= RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)
"""


def test_reports_are_parsed():
    from kernelcraft.gauntlet.sanitize import _errors, _excerpt

    assert _errors("memcheck", MEMCHECK_OUT) == 8
    assert _errors("racecheck", RACECHECK_OUT) == 1
    assert _errors("initcheck", "========= ERROR SUMMARY: 0 errors\n") == 0
    assert _errors("memcheck", "Segmentation fault\n") is None  # no summary: the tool itself failed
    ex = _excerpt(MEMCHECK_OUT)
    assert ex.splitlines()[0] == "Invalid __global__ read of size 2 bytes"
    assert "out of bounds" in ex and "COMPUTE-SANITIZER" not in ex and "SUMMARY" not in ex


def test_sanitize_needs_a_gpu_and_known_tools(tmp_path):
    proc = kc("eval", TASKS / "rmsnorm", "--device", "cpu", "--sanitize")
    assert proc.returncode == 2
    assert "--sanitize checks GPU kernels" in proc.stderr and "--device cuda" in proc.stderr
    proc = kc("eval", TASKS / "rmsnorm", "--device", "cpu", "--sanitize", "--sanitize-tools", "memcheck,valgrind")
    assert proc.returncode == 2 and "unknown tool(s) ['valgrind']" in proc.stderr


STAND_IN = """import subprocess, sys
# A stand-in for compute-sanitizer: skip its options, run the target, print a clean summary.
args = sys.argv[1:]
i = args.index(sys.executable) if sys.executable in args else next(k for k, a in enumerate(args) if "python" in a)
rc = subprocess.run(args[i:]).returncode
print("========= ERROR SUMMARY: 0 errors")
sys.exit(rc)
"""


def _with_stand_in(tmp_path, monkeypatch, script: str):
    """compute-sanitizer replaced by ``script``; a small rmsnorm task to run under it."""
    stand_in = tmp_path / "compute-sanitizer"
    stand_in.write_text(f"#!{sys.executable}\n" + script)
    stand_in.chmod(0o755)
    monkeypatch.setenv("KERNELCRAFT_COMPUTE_SANITIZER", str(stand_in))
    monkeypatch.setenv("PYTHONPATH", str(ROOT / "src"))
    return small_task("rmsnorm", tmp_path, [{"batch_size": 1}, {"batch_size": 3}])


def test_target_runs_the_solution_for_real(tmp_path, monkeypatch):
    """The sanitizer's target process builds the solution and calls it on the chosen shapes (CPU,
    Triton interpreter, stand-in tool); a solution that raises is a RUNTIME_ERROR naming the call."""
    from kernelcraft.gauntlet.sanitize import sanitize
    from kernelcraft.solution.model import load_solution
    from kernelcraft.task.loader import load_task

    task = load_task(_with_stand_in(tmp_path, monkeypatch, STAND_IN))
    ok = sanitize(task, load_solution(TASKS / "rmsnorm/solutions/triton_rowwise.py", task.definition.name),
                  "cpu", 1234, task.workloads, tools=("memcheck",))
    assert ok.status == "PASSED", ok.reason
    assert ok.tools[0].errors == 0 and ok.tools[0].target["status"] == "RAN"
    assert len(ok.tools[0].target["calls"]) == len(ok.workloads) >= 2
    assert {"batch_size": 1} in ok.workloads
    bad = sanitize(task, load_solution(TASKS / "rmsnorm/solutions/wrong/raises.py", task.definition.name),
                   "cpu", 1234, task.workloads, tools=("memcheck",))
    assert bad.status == "RUNTIME_ERROR" and "ValueError" in bad.reason


@pytest.mark.gpu
def test_sanitizer_catches_what_numbers_cannot(tmp_path):
    task = small_task("rmsnorm", tmp_path, [{"batch_size": 1}, {"batch_size": 777}])
    out = tmp_path / f"sanitize_{uuid.uuid4().hex[:8]}.json"
    proc = kc("eval", task, TASKS / "rmsnorm/solutions/cuda_cubin", TASKS / "rmsnorm/solutions/triton_rowwise.py",
              SAN / "rmsnorm_oob_read", SAN / "rmsnorm_uninit_read", SAN / "rmsnorm_smem_race",
              "--device", "cuda", "--budget-ms", "20", "--no-peers", "--sanitize", "--json", out)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rep = {s["name"]: s for s in json.loads(out.read_text())["solutions"]}
    for honest in ("rmsnorm_bf16_h4096_cuda_cubin", "triton_rowwise"):
        s = rep[honest]
        assert s["status"] == "PASSED", (honest, s["reason"])
        assert [t["tool"] for t in s["sanitize"]["tools"]] == ["memcheck", "racecheck", "initcheck"]
        assert all(t["errors"] == 0 for t in s["sanitize"]["tools"]), s["sanitize"]
    for fixture, tool in (("oob_read", "memcheck"), ("uninit_read", "initcheck"), ("smem_race", "racecheck")):
        s = rep[f"rmsnorm_sanitize_{fixture}"]
        # every numeric and integrity gate passed: only the sanitizer saw the flaw
        assert all(w["status"] == "PASSED" for w in s["workloads"]), (fixture, s["workloads"])
        assert s["status"] == "REJECTED" and s["gate"] == "sanitize", (fixture, s["status"], s["reason"])
        assert s["reason"].startswith(f"[{tool}]"), (fixture, s["reason"])
        assert s["sanitize"]["tools"][-1]["errors"] > 0


STAND_IN_ERRORS = STAND_IN.replace(
    'print("========= ERROR SUMMARY: 0 errors")',
    'print("========= Invalid __global__ read of size 2 bytes\\n=========     at k+0x10 in kernel.cu:3\\n'
    '========= ERROR SUMMARY: 2 errors")')


def test_evaluate_runs_the_sanitizer_after_every_job(tmp_path, monkeypatch):
    """The pass after the pool's jobs: a candidate that passed every gate but gets a sanitizer report
    is REJECTED naming the tool; the baseline is never sanitized; the record keeps the tool's lines."""
    from kernelcraft.gauntlet import Options, baseline_solution, evaluate
    from kernelcraft.solution.model import load_solution
    from kernelcraft.task.loader import load_task

    log = tmp_path / "runs.log"
    script = STAND_IN_ERRORS.replace("rc = subprocess.run(args[i:]).returncode", (
        "import time\n"
        f"open({str(log)!r}, 'a').write(f'start {{time.time()}}\\n')\n"
        "rc = subprocess.run(args[i:]).returncode\n"
        f"open({str(log)!r}, 'a').write(f'end {{time.time()}}\\n')"))
    task = load_task(_with_stand_in(tmp_path, monkeypatch, script))
    cand = load_solution(TASKS / "rmsnorm/solutions/triton_rowwise.py", task.definition.name)
    other = load_solution(TASKS / "rmsnorm/solutions/triton_rowwise.py", task.definition.name)
    other = other.model_copy(update={"name": "triton_rowwise_again"})
    rep = evaluate(task, [("baseline", baseline_solution(task), "baseline.py"), ("candidate", cand, "c.py"),
                          ("candidate", other, "d.py")],
                   Options(device="cpu", timing={"budget_ms": 5}, sanitize=("memcheck",)))
    base, got, again = rep.solutions
    assert base.status == "PASSED" and base.sanitize is None, base.reason
    assert again.status == "REJECTED" and again.gate == "sanitize"
    # the two candidates' sanitizer runs went side by side: the second started before the first ended
    events = [line.split() for line in log.read_text().splitlines()]
    assert [e[0] for e in events][:2] == ["start", "start"], events
    assert all(w.status == "PASSED" for w in got.workloads)
    assert got.status == "REJECTED" and got.gate == "sanitize" and not got.promotable
    assert got.reason.startswith("[memcheck] compute-sanitizer --tool memcheck reported 2 error(s)")
    assert "Invalid __global__ read" in got.reason
    assert got.sanitize["tools"][0]["errors"] == 2 and got.sanitize["tools"][0]["target"]["status"] == "RAN"
