"""The fast CUDA binding (``"binding": "kernelcraft"``): .cu files compiled with ``nvcc -cubin`` into a
content-addressed cache, launched from a Python entry file through the injected ``kernels`` object.

On this machine (nvcc, no GPU): the compile, the cache (hits skip nvcc, changes and corrupt entries
miss), compile errors naming file and line, SKIPPED with a reason, argument checks. On a GPU
(``gpu``-marked): the rmsnorm example passes the gauntlet, builds in seconds, launches on torch's
current stream with either loader.
"""

from __future__ import annotations

import importlib.util
import json
import os
import stat
import subprocess
import sys
import textwrap
import time
import types
import uuid
from pathlib import Path

import numpy as np
import pytest
import torch

from kernelcraft.solution import cuda_binding
from kernelcraft.solution.build import BuildError, CannotRun, _toolchain_tag, _write_if_changed, build
from kernelcraft.solution.cubin import (
    compile_cubins,
    find_nvcc,
    global_kernel_names,
    launch_findings,
    parse_ptx_entries,
)
from kernelcraft.solution.cuda_binding import LoaderUnavailable, load_kernels, offline_kernels
from kernelcraft.solution.model import SourceFile, load_solution

from conftest import ROOT, TASKS, eval_json, kc, small_task

EXAMPLE = TASKS / "rmsnorm" / "solutions" / "cuda_cubin"
RMSNORM_DEF = "rmsnorm_bf16_h4096"
needs_nvcc = pytest.mark.skipif(find_nvcc() is None, reason="nvcc not found on this machine")

SIG_CU = """\
#include <cstdint>
#include <cuda_fp16.h>
// parameters of every kind the binding converts
extern "C" __global__ void __launch_bounds__(128) many(const float* __restrict__ x, float* y, int n,
                                                       float scale, int64_t big, double d,
                                                       unsigned char flag, __half h) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] * scale + (float)big + (float)d + flag + __half2float(h);
}
template <int N> __global__ void templated(float* y) { y[0] = N; }
template __global__ void templated<3>(float*);
"""


def _sources(cu: str, name: str = "k.cu", py: str = "def run():\n    return kernels\n") -> list[SourceFile]:
    return [SourceFile(path=name, content=cu), SourceFile(path="launch.py", content=py)]


def _counting_nvcc(tmp_path: Path, monkeypatch) -> Path:
    """Put an nvcc first on PATH that logs its arguments and runs the real one; returns the log."""
    real = find_nvcc()
    log = tmp_path / "nvcc_calls.log"
    bindir = tmp_path / "bin"
    bindir.mkdir()
    wrapper = bindir / "nvcc"
    wrapper.write_text(f'#!/bin/sh\necho "$@" >> "{log}"\nexec "{real}" "$@"\n')
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    assert find_nvcc() == str(wrapper)
    return log


def _compiles(log: Path) -> int:
    return sum("-cubin" in line for line in log.read_text().splitlines()) if log.exists() else 0


def _solution_dir(tmp_path: Path, cu: str, py: str, name: str = "kernel.cu") -> Path:
    d = tmp_path / f"sol_{uuid.uuid4().hex[:8]}"
    d.mkdir()
    (d / name).write_text(cu)
    (d / "launch.py").write_text(py)
    (d / "solution.json").write_text(json.dumps({
        "name": d.name, "definition": RMSNORM_DEF, "author": "test",
        "spec": {"language": "cuda", "target_hardware": ["NVIDIA_H200"], "entry_point": "launch.py::run",
                 "destination_passing_style": False, "binding": "kernelcraft"},
        "sources": [{"path": name}, {"path": "launch.py"}],
    }))
    return d


# ---------------------------------------------------------------------------------------------
# CPU: through the real command


@needs_nvcc
def test_eval_example_is_skipped_and_a_cu_syntax_error_is_a_compile_error(small_tasks, tmp_path):
    """One `kernelcraft eval` (each solution in its own worker): the catalog's example and a broken .cu."""
    cu = 'extern "C" __global__ void k(float* y) {\n  float v = 1.0f\n  y[0] = v;\n}\n'
    broken = _solution_dir(tmp_path, cu, "def run(x, w, eps):\n    kernels.k(1, 32, x)\n", name="broken.cu")
    rep = eval_json(small_tasks["rmsnorm"], EXAMPLE, broken, tmp=tmp_path)
    example, bad = rep["solutions"]
    assert example["language"] == "cuda"
    assert example["status"] == "SKIPPED" and example["gate"] == "build", example["reason"]
    assert "compiled for sm_90" in example["reason"] and "needs a CUDA device" in example["reason"]
    assert "rmsnorm_cached" in example["reason"]  # the kernels the cubin holds, read back from it
    # built by the candidate's runner, into the sandbox's build cache (never the judge's)
    cubins = list(Path(os.environ["KERNELCRAFT_SANDBOX_CACHE"], "build", "cubin").glob("*/0.cubin"))
    assert cubins and all(c.read_bytes()[:4] == b"\x7fELF" for c in cubins)

    assert bad["status"] == "COMPILE_ERROR", bad["reason"]
    assert bad["reason"].startswith("broken.cu failed to compile"), bad["reason"]
    assert "broken.cu(3): error" in bad["reason"], bad["reason"]  # nvcc: the missing ';' seen at line 3


# ---------------------------------------------------------------------------------------------
# CPU: the cache


@needs_nvcc
def test_second_build_is_a_cache_hit_and_a_change_misses(tmp_path, monkeypatch):
    log = _counting_nvcc(tmp_path, monkeypatch)
    cu = 'extern "C" __global__ void k(float* y, int n) { if (threadIdx.x < n) y[threadIdx.x] = 1.f; }\n'
    first = compile_cubins(_sources(cu), "90", tmp_path / "cache")
    assert not first.cache_hit and _compiles(log) == 1
    second = compile_cubins(_sources(cu), "90", tmp_path / "cache")
    assert second.cache_hit and _compiles(log) == 1, "a cache hit must not run nvcc"
    assert second.directory == first.directory and second.kernels == first.kernels
    # the Python entry is not compiled: editing it keeps the cubins
    edited_py = compile_cubins(_sources(cu, py="def run():\n    return 1\n"), "90", tmp_path / "cache")
    assert edited_py.cache_hit and _compiles(log) == 1
    changed = compile_cubins(_sources(cu.replace("1.f", "2.f")), "90", tmp_path / "cache")
    assert not changed.cache_hit and _compiles(log) == 2 and changed.directory != first.directory
    other_arch = compile_cubins(_sources(cu), "80", tmp_path / "cache")
    assert not other_arch.cache_hit and _compiles(log) == 3


@needs_nvcc
def test_corrupt_or_half_written_cache_entry_is_not_used(tmp_path, monkeypatch):
    log = _counting_nvcc(tmp_path, monkeypatch)
    cu = 'extern "C" __global__ void k(float* y) { y[0] = 3.f; }\n'
    good = compile_cubins(_sources(cu), "90", tmp_path / "cache")
    cubin = good.cubins["k.cu"]
    pristine = cubin.read_bytes()
    cubin.write_bytes(pristine[: len(pristine) // 2])  # a torn write
    again = compile_cubins(_sources(cu), "90", tmp_path / "cache")
    assert not again.cache_hit and _compiles(log) == 2
    assert again.cubins["k.cu"].read_bytes()[:4] == b"\x7fELF"
    assert len(again.cubins["k.cu"].read_bytes()) == len(pristine)  # the entry was replaced, whole
    (again.directory / "manifest.json").write_text('{"format": "kc-cubin/1", "ke')  # truncated manifest
    third = compile_cubins(_sources(cu), "90", tmp_path / "cache")
    assert not third.cache_hit and _compiles(log) == 3
    assert compile_cubins(_sources(cu), "90", tmp_path / "cache").cache_hit and _compiles(log) == 3
    # a crashed writer's temporary directory sits beside the entries and is never read as one
    leftovers = [p.name for p in (tmp_path / "cache" / "cubin").iterdir() if p.name.startswith(".")]
    assert leftovers == []


@needs_nvcc
def test_missing_nvcc_is_skipped_with_a_reason(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no nvcc here
    monkeypatch.setenv("CUDA_HOME", str(tmp_path / "no_cuda"))
    monkeypatch.setenv("KERNELCRAFT_CACHE", str(tmp_path / "cache"))
    sol = load_solution(EXAMPLE, RMSNORM_DEF)
    with pytest.raises(CannotRun, match="nvcc not found"):
        build(sol, "cpu", tmp_path / "work")


# ---------------------------------------------------------------------------------------------
# CPU: what the launcher knows about each kernel, and how it checks arguments


@needs_nvcc
def test_signatures_come_from_the_compiled_ptx(tmp_path):
    built = compile_cubins(_sources(SIG_CU), "90", tmp_path)
    assert set(built.kernels) == {"many"}  # the template instance is mangled: not launchable by name
    assert built.mangled["k.cu"] and all(n.startswith("_Z") for n in built.mangled["k.cu"])
    many = built.kernels["many"]
    assert [(p.name, p.kind, p.size) for p in many.params] == [
        ("x", "int", 8), ("y", "int", 8), ("n", "int", 4), ("scale", "float", 4), ("big", "int", 8),
        ("d", "float", 8), ("flag", "int", 1), ("h", "bytes", 2)]
    assert global_kernel_names(SIG_CU) == {"many", "templated"}


def test_ptx_parameter_forms():
    ptx = """.visible .entry f(
        .param .u64 .ptr .global .align 16 f_param_0,
        .param .align 4 .b8 f_param_1[12],
        .param .s32 f_param_2
    )
    .visible .entry g()
    """
    assert parse_ptx_entries(ptx) == {"f": [("int", 8), ("bytes", 12), ("int", 4)], "g": []}


@pytest.fixture(scope="module")
def sig_build(tmp_path_factory):
    """SIG_CU compiled once for the module."""
    return compile_cubins(_sources(SIG_CU), "90", tmp_path_factory.mktemp("sigbuild"))


@pytest.fixture(scope="module")
def many(sig_build):
    """The ``many`` kernel of SIG_CU without a device (argument checks need none)."""
    return offline_kernels(sig_build).many


@needs_nvcc
def test_arguments_are_converted_to_the_compiled_types(many):
    k = many
    packed = k.pack((None, None, 7, 0.5, -(2**40), 0.25, True, np.float16(1.5)))
    assert [type(v) for v in packed] == [np.uint64, np.uint64, np.uint32, np.float32, np.int64, np.float64,
                                         np.uint8, np.float16]
    assert packed[2] == 7 and packed[3] == np.float32(0.5) and packed[4] == -(2**40)
    assert k.pack((None, None, -1, 2, 0, 1, 0, np.float16(0)))[2:4] == [np.int32(-1), np.float32(2.0)]


@needs_nvcc
@pytest.mark.parametrize("args, error, message", [
    ((None, None, 2**31 * 2, 1.0, 0, 0.0, 0, np.float16(0)), OverflowError, r"argument 2 \(n: i32\)"),
    ((None, None, 1.5, 1.0, 0, 0.0, 0, np.float16(0)), TypeError, "got float 1.5 for an integer"),
    ((None, None, 1, 1.0, 0, 0.0, 0, 1.0), TypeError, r"argument 7 \(h: struct\[2B\]\)"),
    ((None, None, np.int64(1), 1.0, 0, 0.0, 0, np.float16(0)), TypeError, r"numpy int64 \(8 bytes\)"),
    ((None, None, 1, 1e39, 0, 0.0, 0, np.float16(0)), OverflowError, "out of f32 range"),
    ((None, None, torch.zeros(1), 1.0, 0, 0.0, 0, np.float16(0)), TypeError, r"argument 2 \(n: i32\): got a tensor"),
    ((None, None, 1), TypeError, "takes 8 argument"),
    ((None, torch.zeros(4, 4).t(), 1, 1.0, 0, 0.0, 0, np.float16(0)), ValueError,
     r"argument 1 \(y: ptr\|i64\): tensor is not contiguous"),
    ((torch.zeros(4), None, 1, 1.0, 0, 0.0, 0, np.float16(0)), ValueError,
     r"argument 0 \(x: ptr\|i64\): tensor is on cpu"),
])
def test_wrong_arguments_are_refused_naming_the_argument(many, args, error, message):
    with pytest.raises(error, match=message):
        many.pack(args)


@needs_nvcc
def test_launch_configuration_is_checked_before_launching(many):
    k = many
    ok = (None, None, 1, 1.0, 0, 0.0, 0, np.float16(0))
    with pytest.raises(ValueError, match="dimension < 1"):
        k(0, 128, *ok)
    with pytest.raises(ValueError, match="2048 threads"):
        k(1, (64, 32), *ok)
    with pytest.raises(TypeError, match="grid must be an int or a tuple"):
        k(1.0, 128, *ok)
    with pytest.raises(RuntimeError, match="launching needs a CUDA device"):
        k((4, 2), 128, *ok)  # everything checked; only the device is missing


@needs_nvcc
def test_unknown_kernel_name_lists_the_ones_there(sig_build):
    kernels = offline_kernels(sig_build)
    assert kernels.names == ("many",)
    with pytest.raises(AttributeError, match=r"no extern \"C\" __global__ kernel named 'templated'.*many.*mangled"):
        _ = kernels.templated


@needs_nvcc
def test_entry_errors_are_build_errors(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNELCRAFT_CACHE", str(tmp_path / "cache"))
    cu = 'extern "C" __global__ void scale(float* y, float a) { y[threadIdx.x] *= a; }\n'
    sol = load_solution(_solution_dir(tmp_path, cu, "launch = kernels.scael\n\ndef run(x, w, eps):\n    pass\n"),
                        RMSNORM_DEF)
    with pytest.raises(BuildError, match="no extern .* named 'scael'; the .cu sources define: scale"):
        build(sol, "cpu", tmp_path / "work")
    no_extern_c = load_solution(_solution_dir(tmp_path, cu.replace('extern "C" ', ""), "def run(x, w, eps):\n"
                                              "    kernels.scale(1, 32, x, 1.0)\n"), RMSNORM_DEF)
    with pytest.raises(BuildError, match='declare them extern "C"'):
        build(no_extern_c, "cpu", tmp_path / "work2")


def test_static_launch_check():
    cu = 'extern "C" __global__ void a(float* y) {}\n__global__ void __launch_bounds__(64) b(int n) {}\n'
    import ast

    assert launch_findings(cu, {"l.py": ast.parse("def run(x):\n    kernels.a(1, 32, x)\n")}) == []
    found = launch_findings(cu, {"l.py": ast.parse("import torch\ndef run(x):\n    return torch.relu(x)\n")})
    assert len(found) == 1 and "never launched" in found[0] and "a, b" in found[0]


# ---------------------------------------------------------------------------------------------
# CPU: choosing the loader. Neither cuda.core nor CuPy is installed here; stand-ins with the
# documented API shapes check the calls made and the fallback from one to the other.


def _fake_cuda_core(calls: list, modern: bool = True) -> types.ModuleType:
    core = types.ModuleType("cuda.core")

    class Device:
        def __init__(self, index):
            calls.append(("Device", index))

        def set_current(self):
            calls.append(("set_current",))

    class ObjectCode:
        def get_kernel(self, name):
            return f"kernel:{name}"

    if modern:
        ObjectCode.from_cubin = staticmethod(lambda data: calls.append(("from_cubin", data[:4])) or ObjectCode())

    class Stream:
        @staticmethod
        def from_handle(h):
            calls.append(("from_handle", h))
            return f"stream:{h}"

    class LaunchConfig:
        def __init__(self, grid=None, block=None, shmem_size=None):
            self.fields = (grid, block, shmem_size)

    core.Device, core.ObjectCode, core.Stream, core.LaunchConfig = Device, ObjectCode, Stream, LaunchConfig
    core.launch = lambda stream, config, kernel, *args: calls.append(("launch", stream, config.fields, kernel, args))
    return core


def _fake_cupy(calls: list) -> types.ModuleType:
    cupy = types.ModuleType("cupy")
    cupy.__version__ = "0.fake"

    class Device:
        def __init__(self, index):
            calls.append(("Device", index))

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    class RawModule:
        def __init__(self, *, path):
            calls.append(("RawModule", Path(path).read_bytes()[:4]))

        def get_function(self, name):
            return lambda grid, block, args, shared_mem=0, stream=None: calls.append(
                ("launch", name, grid, block, args, shared_mem, stream))

    cupy.cuda = types.SimpleNamespace(Device=Device, ExternalStream=lambda h: f"ext:{h}")
    cupy.RawModule = RawModule
    return cupy


ARGS = (None, None, 5, 0.5, 7, 0.25, 1, np.float16(0))


@needs_nvcc
def test_no_loader_installed_is_a_clear_error(sig_build, monkeypatch):
    if importlib.util.find_spec("cupy") or importlib.util.find_spec("cuda"):
        pytest.skip("cuda.core or CuPy is installed here")
    monkeypatch.delenv("KERNELCRAFT_CUDA_LOADER", raising=False)
    with pytest.raises(LoaderUnavailable, match="cuda.core: ModuleNotFoundError.*; cupy: ModuleNotFoundError"):
        load_kernels(sig_build, 0)
    monkeypatch.setenv("KERNELCRAFT_CUDA_LOADER", "numba")
    with pytest.raises(ValueError, match="use cuda.core, cupy or auto"):
        load_kernels(sig_build, 0)


@needs_nvcc
def test_cuda_core_loader_calls(sig_build, monkeypatch):
    calls = []
    monkeypatch.setitem(sys.modules, "cuda", types.ModuleType("cuda"))
    monkeypatch.setitem(sys.modules, "cuda.core", _fake_cuda_core(calls))
    monkeypatch.setattr(cuda_binding, "_torch_stream_handle", lambda index: 0xBEEF)
    monkeypatch.delenv("KERNELCRAFT_CUDA_LOADER", raising=False)
    kernels = load_kernels(sig_build, 0)
    assert kernels.loader.startswith("cuda.core")
    assert calls == [("Device", 0), ("set_current",), ("from_cubin", b"\x7fELF")]
    kernels.many(3, (32, 4), *ARGS)
    kernels.many(3, (32, 4), *ARGS)
    launches = [c for c in calls if c[0] == "launch"]
    assert [c for c in calls if c[0] == "from_handle"] == [("from_handle", 0xBEEF)]  # one wrapper per stream
    assert len(launches) == 2
    _, stream, fields, kernel, args = launches[0]
    assert (stream, fields, kernel) == ("stream:48879", ((3, 1, 1), (32, 4, 1), 0), "kernel:many")
    assert [type(a) for a in args] == [np.uint64, np.uint64, np.uint32, np.float32, np.uint64, np.float64,
                                       np.uint8, np.float16]


@needs_nvcc
def test_cupy_loader_calls_and_fallback_from_an_old_cuda_core(sig_build, monkeypatch):
    calls = []
    monkeypatch.setitem(sys.modules, "cuda", types.ModuleType("cuda"))
    monkeypatch.setitem(sys.modules, "cuda.core", _fake_cuda_core([], modern=False))  # no from_cubin
    monkeypatch.setitem(sys.modules, "cupy", _fake_cupy(calls))
    monkeypatch.setattr(cuda_binding, "_torch_stream_handle", lambda index: 77)
    monkeypatch.delenv("KERNELCRAFT_CUDA_LOADER", raising=False)
    kernels = load_kernels(sig_build, 1)
    assert kernels.loader == "cupy 0.fake"
    kernels.many(2, 64, *ARGS, shared_mem=1024)
    assert calls[:2] == [("Device", 1), ("RawModule", b"\x7fELF")]
    _, name, grid, block, args, smem, stream = calls[-1]
    assert (name, grid, block, smem, stream) == ("many", (2, 1, 1), (64, 1, 1), 1024, "ext:77")
    assert isinstance(args, tuple) and args[2] == np.uint32(5) and type(args[3]) is np.float32


# ---------------------------------------------------------------------------------------------
# CPU: the torch-extension path reuses its build directory


def test_torch_extension_sources_keep_their_mtime(tmp_path):
    sol = load_solution(TASKS / "rmsnorm" / "solutions" / "cuda_vec8", RMSNORM_DEF)
    dest = _write_if_changed(sol, tmp_path / "src")
    kernel = dest / "kernel.cu"
    os.utime(kernel, ns=(1_000_000_000, 1_000_000_000))
    _write_if_changed(sol, dest)
    assert kernel.stat().st_mtime_ns == 1_000_000_000, "identical bytes must not be rewritten (ninja rebuilds)"
    changed = sol.model_copy(deep=True)
    changed.sources[0].content += "\n// edited\n"
    _write_if_changed(changed, dest)
    assert kernel.read_text().endswith("// edited\n") and kernel.stat().st_mtime_ns != 1_000_000_000
    tag = _toolchain_tag()
    assert len(tag) == 8 and tag == _toolchain_tag()


# ---------------------------------------------------------------------------------------------
# GPU

GPU_AXES = [{"batch_size": 1}, {"batch_size": 777}, {"batch_size": 4096}]

STREAM_CU = """\
// copy with a 64-bit count, and a sum through 64 KiB of dynamic shared memory (above the 48 KiB default)
#include <cstdint>
extern "C" __global__ void copy_f32(const float* __restrict__ x, float* __restrict__ y, int64_t n) {
  int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i];
}
extern "C" __global__ void smem_roundtrip(const float* __restrict__ x, float* __restrict__ y, int n) {
  extern __shared__ float buf[];
  for (int i = threadIdx.x; i < n; i += blockDim.x) buf[i] = x[i] * 2.0f;
  __syncthreads();
  for (int i = threadIdx.x; i < n; i += blockDim.x) y[i] = buf[n - 1 - i];
}
"""


@pytest.mark.gpu
def test_gpu_example_passes_the_gauntlet(tmp_path):
    task = small_task("rmsnorm", tmp_path, GPU_AXES)
    out = tmp_path / "gpu.json"
    proc = kc("eval", task, EXAMPLE, "--device", "cuda", "--budget-ms", "50", "--no-peers", "--json", out)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    [s] = [s for s in json.loads(out.read_text())["solutions"] if s["role"] == "candidate"]
    assert s["status"] == "PASSED", s["reason"]
    assert all(w["status"] == "PASSED" and w["latency_ms"] > 0 for w in s["workloads"])
    print({w["axes"]["batch_size"]: (w["latency_ms"], w["baseline_latency_ms"]) for w in s["workloads"]})


@pytest.mark.gpu
@pytest.mark.parametrize("loader", ["cuda.core", "cupy"])
def test_gpu_example_with_each_loader(loader, tmp_path, monkeypatch):
    monkeypatch.setenv("KERNELCRAFT_CUDA_LOADER", loader)
    task = small_task("rmsnorm", tmp_path, GPU_AXES[:2])
    out = tmp_path / "gpu.json"
    proc = kc("eval", task, EXAMPLE, "--device", "cuda", "--no-timing", "--no-peers", "--json", out)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    [s] = [s for s in json.loads(out.read_text())["solutions"] if s["role"] == "candidate"]
    assert s["status"] == "PASSED", (loader, s["reason"])


@pytest.mark.gpu
def test_gpu_cold_build_takes_seconds_and_all_three_kernels_are_right(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNELCRAFT_CACHE", str(tmp_path / "cold_cache"))
    sol = load_solution(EXAMPLE, RMSNORM_DEF)
    t0 = time.perf_counter()
    run = build(sol, "cuda", tmp_path / "work")
    cold = time.perf_counter() - t0
    t0 = time.perf_counter()
    build(sol, "cuda", tmp_path / "work2")
    warm = time.perf_counter() - t0
    print(f"kernelcraft binding build on {torch.cuda.get_device_name()}: cold {cold:.2f} s, cached {warm:.2f} s")
    assert cold < 5.0, f"cold build took {cold:.1f} s"
    assert warm < cold
    g = torch.Generator(device="cuda").manual_seed(0)
    # 4096: rmsnorm_cached; 4100 (not a multiple of 8): the scalar kernel; 40960 (more vectors than
    # 4 per thread of 1024): rmsnorm_generic_vec; a 1-element offset view: unaligned -> scalar.
    for rows, cols, offset in ((3, 4096, 0), (5, 4100, 0), (2, 40960, 0), (3, 4096, 1)):
        base = torch.randn(rows * cols + offset, generator=g, device="cuda").to(torch.bfloat16)
        x = base[offset:].view(rows, cols)
        w = torch.randn(cols, generator=g, device="cuda").to(torch.bfloat16)
        y = run(x, w, 1e-5)
        ref = torch.nn.functional.rms_norm(x.float(), (cols,), w.float(), 1e-5)
        torch.testing.assert_close(y.float(), ref, atol=1e-2, rtol=1.6e-2, msg=f"rows {rows} cols {cols} +{offset}")


@pytest.mark.gpu
@pytest.mark.parametrize("loader", ["cuda.core", "cupy"])
def test_gpu_launches_follow_torch_current_stream_and_large_shared_memory(loader, tmp_path, monkeypatch):
    monkeypatch.setenv("KERNELCRAFT_CUDA_LOADER", loader)
    monkeypatch.setenv("KERNELCRAFT_CACHE", str(tmp_path / "cache"))
    d = _solution_dir(tmp_path, STREAM_CU, "def run():\n    return kernels\n")
    kernels = build(load_solution(d, RMSNORM_DEF), "cuda", tmp_path / "work")()
    assert kernels.loader.startswith(loader)
    n = 1 << 20
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        x = torch.zeros(n, device="cuda")
        y = torch.full((n,), -1.0, device="cuda")
        torch.cuda._sleep(200_000_000)  # ~0.1 s of GPU time on `side` before x is filled
        x.fill_(7.0)
        kernels.copy_f32((n + 255) // 256, 256, x, y, n)  # must queue behind the fill, on `side`
    side.synchronize()
    assert bool((y == 7.0).all()), "the launch did not go onto torch's current stream"
    m = 16 * 1024  # 64 KiB of float: needs the opt-in above 48 KiB
    a = torch.arange(m, device="cuda", dtype=torch.float32)
    b = torch.empty_like(a)
    kernels.smem_roundtrip(1, 1024, a, b, m, shared_mem=m * 4)
    torch.cuda.synchronize()
    assert torch.equal(b, (a * 2).flip(0))
    with pytest.raises(ValueError, match=r"argument 1 \(y: ptr\|i64\): tensor is not contiguous"):
        kernels.copy_f32(1, 32, a, torch.empty(8, 8, device="cuda").t(), 8)


@pytest.mark.gpu
@pytest.mark.slow
def test_gpu_torch_extension_second_build_is_a_cache_hit(tmp_path):
    """Two fresh processes build cuda_vec8 into one cache: the second finds ninja's work done."""
    script = textwrap.dedent(f"""
        import sys, tempfile, time
        from pathlib import Path
        from kernelcraft.solution.build import build
        from kernelcraft.solution.model import load_solution
        sol = load_solution({str(TASKS / "rmsnorm" / "solutions" / "cuda_vec8")!r}, {RMSNORM_DEF!r})
        t0 = time.perf_counter()
        build(sol, "cuda", Path(tempfile.mkdtemp()))
        print(time.perf_counter() - t0)
    """)
    env = dict(os.environ, KERNELCRAFT_CACHE=str(tmp_path / "cache"), PYTHONPATH=str(ROOT / "src"))
    times = []
    for _ in range(2):
        proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=600)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        times.append(float(proc.stdout.strip().splitlines()[-1]))
    print(f"torch extension build: cold {times[0]:.1f} s, second {times[1]:.1f} s")
    assert times[1] < times[0] / 2
