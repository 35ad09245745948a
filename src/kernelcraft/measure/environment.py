"""The environment a result was produced in: device, toolchain and library versions."""

from __future__ import annotations

import os
import platform
import re
import shutil
import socket
import subprocess
from functools import cache
from pathlib import Path


@cache
def nvcc_version() -> str | None:
    nvcc = shutil.which("nvcc") or next((p for p in ["/usr/local/cuda/bin/nvcc"] if os.path.exists(p)), None)
    if not nvcc:
        return None
    try:
        out = subprocess.run([nvcc, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = re.search(r"release ([\d.]+), V([\d.]+)", out)
    return m.group(2) if m else None


@cache
def _driver_version() -> str | None:
    smi = shutil.which("nvidia-smi")
    if not smi:
        return None
    try:
        out = subprocess.run([smi, "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.splitlines()[0] if out else None


def device_info(device: str) -> dict:
    import torch

    if device.startswith("cuda"):
        props = torch.cuda.get_device_properties(device)
        return {
            "hardware": props.name,
            "compute_capability": f"{props.major}.{props.minor}",
            "sm_count": props.multi_processor_count,
            "l2_bytes": props.L2_cache_size,
            "memory_bytes": props.total_memory,
            "driver": _driver_version(),
        }
    return {"hardware": f"CPU {platform.processor() or platform.machine()}", "cpu_count": _cpu_count()}


def _cpu_count() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


@cache
def harness_source_hash() -> str:
    """sha256 over kernelcraft's own Python sources (path and content, sorted): which harness code
    produced a record, also where no git checkout travels with the code (the device machine)."""
    import hashlib

    root = Path(__file__).resolve().parents[1]
    h = hashlib.sha256()
    for f in sorted(root.rglob("*.py")):
        h.update(str(f.relative_to(root)).encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()


def environment(device: str) -> dict:
    """FlashInfer-Trace's {hardware, libs} plus what else is needed to reproduce a number."""
    import torch

    from kernelcraft import HARNESS_VERSION
    from kernelcraft.measure.timing import TIMING_VERSION

    libs = {"torch": torch.__version__, "python": platform.python_version()}
    try:
        import triton

        libs["triton"] = triton.__version__
    except ImportError:
        pass
    if torch.version.cuda:
        libs["cuda"] = torch.version.cuda
    nv = nvcc_version()
    if nv:
        libs["nvcc"] = nv
    info = device_info(device)
    if not device.startswith("cuda"):
        from kernelcraft.measure.cpu import load_average

        # what CPU timings depend on: the workers' intra-op threads (kernelcraft.measure.cpu) and the
        # machine's load when the run began
        info["omp_num_threads"] = os.environ.get("OMP_NUM_THREADS")
        info["load_average_1m"] = load_average()
    return {
        "hardware": info.pop("hardware"),
        "device": device,
        "libs": libs,
        "device_info": info,
        "harness_version": HARNESS_VERSION,
        "timing_version": TIMING_VERSION,
        "harness_source_sha256": harness_source_hash(),
        "host": socket.gethostname(),
        "platform": platform.platform(),
    }
