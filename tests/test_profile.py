"""kernelcraft profile: the ptxas report (real nvcc), the ncu raw-CSV summary (fixture in ncu's
format), the command on a CPU machine, and, on a GPU, the real Nsight Compute run."""

from __future__ import annotations

import json
import os
import shutil
import stat
import sys

import pytest

from kernelcraft.measure import _ncu
from kernelcraft.measure._ptxas import nvcc_resource_report, parse_ptxas, short_name
from kernelcraft.measure.profile import Profile, ProfileError, _run_ncu, pick_workload, render
from kernelcraft.solution.model import load_solution
from kernelcraft.task.loader import load_task

from conftest import FIXTURES, ROOT, kc, small_task

RMSNORM = ROOT / "tasks" / "rmsnorm"
CUDA_SOL = RMSNORM / "solutions" / "cuda_vec8"
needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not on PATH")


# -- ptxas ------------------------------------------------------------------------------------------

@needs_nvcc
def test_ptxas_report_of_the_cuda_rmsnorm(tmp_path):
    report = nvcc_resource_report([CUDA_SOL / "kernel.cu"], CUDA_SOL, "90", tmp_path)
    by_name = {k.to_dict()["short_name"]: k for k in report.kernels}
    assert set(by_name) == {"rmsnorm_cached_kernel", "rmsnorm_generic_kernel<true>", "rmsnorm_generic_kernel<false>"}
    for k in report.kernels:
        assert k.arch == "90" and k.source == "kernel.cu"
        assert k.registers and k.registers > 0
        assert (k.spill_store_bytes, k.spill_load_bytes, k.stack_bytes) == (0, 0, 0)
        assert k.smem_bytes and k.smem_bytes >= 33 * 4  # warp_sums[32] + total, in shared memory
        assert k.mangled.startswith("_Z")
    # register-cached fast path holds 4 uint4 per thread: it needs more registers than the scalar one
    assert by_name["rmsnorm_cached_kernel"].registers > by_name["rmsnorm_generic_kernel<false>"].registers
    assert "Compiling entry function" in report.text


def test_ptxas_parser_reads_the_cuda12_fields():
    # CUDA 12.x prints constant banks (13.0 does not); a non-inlined device function has properties
    # but no "Used" line of its own and must not become a kernel.
    text = """ptxas info    : 0 bytes gmem
ptxas info    : Function properties for _Z6helperf
    16 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Compiling entry function '_Z3fftPK6float2PS_i' for 'sm_89'
ptxas info    : Function properties for _Z3fftPK6float2PS_i
    24 bytes stack frame, 8 bytes spill stores, 12 bytes spill loads
ptxas info    : Used 38 registers, used 1 barriers, 8448 bytes smem, 380 bytes cmem[0], 4 bytes cmem[2]
ptxas info    : Compile time = 33.918 ms
"""
    [k] = parse_ptxas(text)
    assert (k.mangled, k.arch, k.registers, k.barriers) == ("_Z3fftPK6float2PS_i", "89", 38, 1)
    assert (k.stack_bytes, k.spill_store_bytes, k.spill_load_bytes) == (24, 8, 12)
    assert (k.smem_bytes, k.cmem_bytes) == (8448, 384)


def test_short_names_agree_between_ncu_and_cxxfilt():
    ncu = "void (anonymous namespace)::k<true>(const __nv_bfloat16 *, float (*)[4], int)"
    cxxfilt = "void (anonymous namespace)::k<true>(__nv_bfloat16 const*, float (*) [4], int)"
    assert short_name(ncu) == short_name(cxxfilt) == "k<true>"
    assert short_name("_rmsnorm_row_kernel") == "_rmsnorm_row_kernel"


# -- ncu raw page -----------------------------------------------------------------------------------

def _fixture_kernels():
    return _ncu.summarize(_ncu.parse_raw_csv((FIXTURES / "profile" / "raw_page.csv").read_text()))


def test_raw_page_condensed_per_kernel():
    cached, generic = _fixture_kernels()
    assert (cached.short_name, cached.launches, generic.short_name, generic.launches) == (
        "rmsnorm_cached_kernel", 3, "rmsnorm_generic_kernel<true>", 1)
    d = cached.to_dict()
    assert d["duration_us"] == pytest.approx((41.216 + 41.600 + 41.024) / 3)
    assert d["total_us"] == pytest.approx(41.216 + 41.600 + 41.024)
    assert cached.time_share == pytest.approx(123.84 / (123.84 + 9.5))
    assert d["dram_pct"] == pytest.approx(88.1) and d["sm_pct"] == pytest.approx(22.51)
    assert (d["achieved_occupancy_pct"], d["theoretical_occupancy_pct"]) == (pytest.approx(50.1), pytest.approx(56.25))
    assert d["occupancy_limiter"] == "registers"
    assert (d["registers_per_thread"], d["shared_static_bytes"], d["shared_dynamic_bytes"]) == (52, 132, 0)
    assert (d["local_load_bytes"], d["local_store_bytes"]) == (0, 0)
    assert d["grid_size"] == 16384  # "16,384" in the CSV
    assert [(s["reason"], round(s["share"], 6)) for s in d["stalls"][:3]] == [
        ("long_scoreboard", 0.6), ("barrier", 0.15), ("wait", 0.1)]
    assert "selected" not in [s["reason"] for s in d["stalls"]]
    g = generic.to_dict()
    assert (g["local_load_bytes"], g["local_store_bytes"]) == (1024, 512)
    assert g["occupancy_limiter"] == "registers+warps"


def test_diagnosis_follows_the_throughputs():
    cached, generic = _fixture_kernels()
    assert cached.bound == "memory" and cached.diagnosis.startswith("memory-bound: DRAM at 88% of peak")
    assert "long_scoreboard (60%)" in cached.diagnosis
    assert generic.bound == "latency" and generic.diagnosis.startswith("latency-bound: DRAM 12% and SM 8%")
    assert "1 blocks for 132 SMs" in generic.diagnosis
    compute = _ncu.KernelProfile("k", 1, 1.0, 1.0, values={"dram_pct": 20.0, "sm_pct": 81.0, "memory_pct": 30.0})
    assert _ncu.diagnose(compute)[0] == "compute"
    cache_bound = _ncu.KernelProfile("k", 1, 1.0, 1.0, values={"dram_pct": 10.0, "sm_pct": 30.0, "memory_pct": 75.0})
    bound, text = _ncu.diagnose(cache_bound)
    assert bound == "memory" and "memory-bound in the caches" in text


def test_units_other_than_base_are_converted():
    text = (FIXTURES / "profile" / "raw_page.csv").read_text()
    header, units, *rows = text.splitlines()
    units = units.replace('"nsecond"', '"usecond"').replace('"byte/block"', '"Kbyte/block"')
    rows = [r.replace('"41,216"', '"41.216"').replace('"41,600"', '"41.6"').replace('"41,024"', '"41.024"')
            .replace('"9,500"', '"9.5"') for r in rows]
    cached, _ = _ncu.summarize(_ncu.parse_raw_csv("\n".join([header, units, *rows])))
    assert cached.duration_us == pytest.approx((41.216 + 41.600 + 41.024) / 3)
    assert cached.values["shared_static_bytes"] == pytest.approx(132_000)


def test_raw_page_rejects_other_output():
    with pytest.raises(ValueError, match="Kernel Name"):
        _ncu.parse_raw_csv("==PROF== Connected to process 1\n==WARNING== No kernels were profiled.\n")


def test_summary_text_names_each_fact():
    prof = Profile("rmsnorm_bf16_h4096", "cuda_vec8", "cuda", "cuda",
                   {"uuid": "19a11d82-0000", "axes": {"batch_size": 16384}, "io_bytes": 2**28}, "/tmp/x",
                   kernels=_fixture_kernels(), ncu={"ran": True, "report": "/tmp/x/report.ncu-rep"})
    text = render(prof)
    assert "kernel rmsnorm_cached_kernel: 3 launches" in text
    assert "duration      41.28 us per launch, 93% of kernel time" in text
    assert "DRAM 88.1% of peak, SM 22.5%" in text
    assert "limited by registers (9 blocks/SM)" in text
    assert "52 registers/thread" in text and "local (spill) traffic 1.0 KiB loaded / 512 B stored" in text
    assert "long_scoreboard 60%, barrier 15%, wait 10%" in text
    assert text.rstrip().splitlines()[-1].startswith("diagnosis: rmsnorm_cached_kernel (93% of kernel time): memory-bound")


def test_ncu_command_lines():
    collect = _ncu.collect_command("ncu", "/o/report", ["python", "-m", "t", "job.json"])
    assert collect[:9] == ["ncu", "--target-processes", "all", "--profile-from-start", "off",
                           "--launch-count", str(_ncu.LAUNCH_COUNT), "--export", "/o/report"]
    assert collect[-4:] == ["python", "-m", "t", "job.json"]
    assert collect[collect.index("--metrics") + 1].split(",") == _ncu.METRICS
    assert "--metrics" not in _ncu.collect_command("ncu", "/o/r", ["t"], with_metrics=False)
    assert _ncu.import_command("ncu", "/o/report.ncu-rep") == [
        "ncu", "--import", "/o/report.ncu-rep", "--csv", "--page", "raw", "--print-units", "base",
        "--print-kernel-base", "demangled"]


# -- the command on this machine --------------------------------------------------------------------

@needs_nvcc
def test_cli_cuda_solution_on_cpu_prints_the_compiler_report(tmp_path):
    out = tmp_path / "prof"
    proc = kc("profile", RMSNORM, CUDA_SOL, "--device", "cpu", "--out", out, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "compiler report (nvcc -Xptxas -v, sm_90)" in proc.stdout
    assert "rmsnorm_cached_kernel:" in proc.stdout and "spill stores 0 B" in proc.stdout
    assert "ncu needs a CUDA device" in proc.stdout
    assert "workload 19a11d82 (batch_size=16384" in proc.stdout  # the largest by default
    summary = json.loads((out / "summary.json").read_text())
    assert summary["ncu"]["ran"] is False and summary["kernels"] == []
    assert len(summary["ptxas"]["kernels"]) == 3
    assert all(k["registers"] > 0 and k["spill_store_bytes"] == 0 for k in summary["ptxas"]["kernels"])
    assert (out / "summary.txt").read_text() == proc.stdout
    assert "ptxas info" in (out / "ptxas.txt").read_text()


def test_cli_unknown_workload_lists_the_available_ones(tmp_path):
    proc = kc("profile", RMSNORM, CUDA_SOL, "--device", "cpu", "--workload", "zzz", "--out", tmp_path, timeout=120)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "0 workloads match 'zzz'" in proc.stderr
    assert "e211ec53 (batch_size=1)" in proc.stderr and "19a11d82 (batch_size=16384)" in proc.stderr


def test_cli_triton_solution_without_a_gpu_gets_the_static_report(tmp_path):
    """No GPU: the Triton kernels are compiled for sm_90 without a run (registers, spills, the pipeline lint)."""
    out = tmp_path / "prof"
    proc = kc("profile", RMSNORM, RMSNORM / "solutions" / "triton_rowwise.py", "--device", "cpu",
              "--out", out, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "ncu needs a CUDA device" in proc.stdout and "Triton compiled without a run" in proc.stdout
    summary = json.loads((out / "summary.json").read_text())
    [launch] = summary["triton_static"]["launches"]
    assert launch["registers"] > 0 and launch["spill_store_bytes"] == 0 and launch["grid"][0] == 16384
    assert summary["diagnosis"] == "compiler report only (no run-time profile): no spills, no pipeline race"


def test_cli_triton_solution_whose_launcher_fails_says_what_is_missing(tmp_path):
    proc = kc("profile", RMSNORM, RMSNORM / "solutions" / "wrong" / "raises.py", "--device", "cpu",
              "--out", tmp_path, timeout=300)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "cannot profile the triton solution" in proc.stderr and "needs a CUDA device and Nsight Compute" in proc.stderr
    assert "the static compile failed" in proc.stderr and "ValueError" in proc.stderr


def test_cli_names_the_pipeline_race_of_gdn_prefill_chunk4(tmp_path):
    """The race that cost gdn_prefill two sessions, named by `kernelcraft profile` on a machine with no GPU; the
    promoted chunk6 (its loops unpipelined) has none."""
    gdn = ROOT / "tasks" / "gdn_prefill"
    proc = kc("profile", gdn, gdn / "candidates" / "triton_chunk4.py", "--device", "cpu", "--workload", "32bd0dca",
              "--out", tmp_path / "c4", "--json", timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["diagnosis"].startswith("pipeline race:") and "_kkt (TTGIR line" in summary["diagnosis"]
    races = [f for r in summary["triton_static"]["launches"] for f in r["pipeline"] if f["race"]]
    assert races and all((f["buffers"], f["distance"], f["pendings"]) == (2, 2, 1) for f in races)
    proc = kc("profile", gdn, gdn / "solutions" / "triton_chunk6.py", "--device", "cpu", "--workload", "32bd0dca",
              "--out", tmp_path / "c6", "--json", timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    summary = json.loads(proc.stdout)
    assert not any(f["race"] for r in summary["triton_static"]["launches"] for f in r["pipeline"])
    assert not summary["diagnosis"].startswith("pipeline race")


@needs_nvcc
def test_cli_build_failure_shows_the_compiler_message(tmp_path):
    proc = kc("profile", RMSNORM, RMSNORM / "solutions" / "wrong" / "cuda_compile_error", "--device", "cpu",
              "--out", tmp_path, timeout=300)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "failed to build" in proc.stderr and "kernel.cu(43): error" in proc.stderr


# -- the ncu orchestration, with a stand-in for ncu ------------------------------------------------

# Records its argv and environment, runs the target the way ncu launches it, writes a report file,
# and on --import prints the raw-page fixture. MODE: ok, badmetric (an unknown --metrics name fails
# the collection before the target runs, as ncu does), nokernels (the target's result, no report).
FAKE_NCU = """#!{python}
import json, os, subprocess, sys
args = sys.argv[1:]
log = {log!r}
with open(log, "a") as f:
    f.write(json.dumps({{"argv": args, "pythonpath": os.environ.get("PYTHONPATH", "")}}) + "\\n")
if "--import" in args:
    sys.stdout.write(open({fixture!r}).read())
    sys.exit(0)
if {mode!r} == "badmetric" and "--metrics" in args:
    print("==ERROR== Failed to find metric l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum")
    sys.exit(1)
if {mode!r} == "nokernels":  # a target that launched nothing: no need to start one
    job = json.load(open(args[-1]))
    json.dump({{"status": "PROFILED", "check": {{"status": "PASSED"}}}}, open(job["result_path"], "w"))
    print("==WARNING== No kernels were profiled.")
    sys.exit(0)
rc = subprocess.run(args[args.index("-m") - 1:]).returncode
open(args[args.index("--export") + 1] + ".ncu-rep", "wb").write(b"NVIDIA Nsight Compute report")
sys.exit(rc)
"""


def _stand_in(tmp_path, mode):
    log = tmp_path / "ncu_calls.jsonl"
    fake = tmp_path / "ncu"
    fake.write_text(FAKE_NCU.format(python=sys.executable, log=str(log), mode=mode,
                                    fixture=str(FIXTURES / "profile" / "raw_page.csv")))
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    return str(fake), log


def _run_stand_in(tmp_path, solution_path, mode="ok"):
    task = load_task(small_task("rmsnorm", tmp_path, [{"batch_size": 2}]))
    sol = load_solution(solution_path, task.definition.name)
    w = pick_workload(task, None)
    out = tmp_path / "out"
    out.mkdir()
    prof = Profile(task.name, sol.name, sol.spec.language, "cpu", {"uuid": w.uuid, "axes": w.axes, "io_bytes": 0},
                   str(out))
    ncu, log = _stand_in(tmp_path, mode)
    calls = lambda: [json.loads(ln) for ln in log.read_text().splitlines()] if log.exists() else []  # noqa: E731
    try:
        _run_ncu(prof, ncu, task, sol, w, "cpu", out, False, 240)
    except Exception as e:  # noqa: BLE001 - the caller checks it
        return prof, out, calls(), e
    return prof, out, calls(), None


def test_orchestration_runs_the_target_under_ncu_and_reads_the_report_back(tmp_path):
    # "badmetric": the first collection fails on a metric name, as an older ncu would; the retry
    # without --metrics runs the target.
    prof, out, calls, error = _run_stand_in(tmp_path, RMSNORM / "solutions" / "triton_rowwise.py", "badmetric")
    assert error is None, error
    first, collect, imp = calls
    assert "--metrics" in first["argv"] and "--metrics" not in collect["argv"]
    for c in (first, collect):
        assert c["argv"][:5] == ["--target-processes", "all", "--profile-from-start", "off", "--launch-count"]
        assert c["argv"][-3:-1] == ["-m", "kernelcraft.measure._profile_target"]
        assert c["pythonpath"].split(os.pathsep)[0] == str(ROOT / "src")
    assert imp["argv"] == ["--import", str(out / "report.ncu-rep"), "--csv", "--page", "raw", "--print-units",
                           "base", "--print-kernel-base", "demangled"]
    target = json.loads((out / "target.json").read_text())
    assert target["status"] == "PROFILED" and target["profiled_calls"] == 3
    assert target["check"]["status"] == "PASSED", target["check"]
    assert [k.short_name for k in prof.kernels] == ["rmsnorm_cached_kernel", "rmsnorm_generic_kernel<true>"]
    assert (out / "raw.csv").read_text() == (FIXTURES / "profile" / "raw_page.csv").read_text()
    assert prof.notes == [] and len(prof.ncu["commands"]) == 3


def test_orchestration_reports_an_empty_profile_range(tmp_path):
    _, _, _, error = _run_stand_in(tmp_path, RMSNORM / "solutions" / "triton_rowwise.py", "nokernels")
    assert isinstance(error, ProfileError) and error.exit_code == 1
    assert "no kernel ran inside the profiled range" in str(error)


def test_orchestration_reports_the_build_failure(tmp_path):
    broken = tmp_path / "broken.py"
    broken.write_text("import triton\n\ndef run(hidden_states, weight, eps)\n    return hidden_states\n")
    _, out, _, error = _run_stand_in(tmp_path, broken)
    assert isinstance(error, ProfileError) and error.exit_code == 1, error
    assert "failed to build" in str(error) and "SyntaxError" in str(error)


# -- on a GPU ---------------------------------------------------------------------------------------

@pytest.mark.gpu
@pytest.mark.parametrize("solution", ["triton_rowwise.py", "cuda_vec8"])
def test_profile_on_gpu(solution, tmp_path):
    out = tmp_path / "prof"
    proc = kc("profile", RMSNORM, RMSNORM / "solutions" / solution, "--device", "cuda", "--out", out, timeout=590)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    s = json.loads((out / "summary.json").read_text())
    assert s["ncu"]["ran"], s["ncu"]
    assert (out / "report.ncu-rep").stat().st_size > 0
    assert s["output_check"]["status"] == "PASSED", s["output_check"]
    assert any((k["duration_us"] or 0) > 0 and (k["dram_pct"] or 0) > 0 for k in s["kernels"]), s["kernels"]
    assert s["diagnosis"]
    if solution == "cuda_vec8":
        assert s["ptxas"]["kernels"] and all(k["registers"] > 0 for k in s["ptxas"]["kernels"])
        # the kernel ncu saw is one ptxas reported (mangled names contain the plain function name)
        assert any(k["short_name"].split("<")[0] in p["mangled"] for k in s["kernels"] for p in s["ptxas"]["kernels"])
    else:
        assert any((t["n_regs"] or 0) > 0 for t in s["triton_kernels"]), s["triton_kernels"]
