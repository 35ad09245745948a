"""Device calibration: the measured ceilings that speed-of-light fractions are computed from.

``kernelcraft calibrate [--device cuda]`` measures, on this device, with the one timer
(:mod:`kernelcraft.measure.timing`):

- copy bandwidth: ``dst.copy_(src)`` of a buffer far larger than the L2 (1 GiB on a GPU, 64 MiB on
  a CPU); reported as bytes read + written per second, the way a kernel's bytes are counted;
- matrix throughput per dtype: square matmuls (bf16, fp16, fp32 with TF32 off, tf32, fp8 e4m3
  through ``torch._scaled_mm`` where the device has it) in TFLOP/s;
- the SM count, the L2 size, the memory size and the clocks nvidia-smi reports.

Datasheet peaks are never used: a kernel's "sol" is its distance from what this device measurably
does. The result is cached per device fingerprint (device name, compute capability, SM count,
memory, driver, torch and CUDA versions) under ``$KERNELCRAFT_CACHE/calibration/``, so a driver or
torch upgrade recalibrates.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from pydantic import BaseModel, Field

CALIBRATION_VERSION = "kc-calibrate/3"


class Calibration(BaseModel):
    version: str = CALIBRATION_VERSION
    device: str  # "cuda:0", "cpu"
    hardware: str
    fingerprint: str  # sha256 prefix of what makes the numbers valid (see fingerprint())
    fingerprint_fields: dict
    copy_gbs: float  # measured device copy, (bytes read + bytes written) / time, in GB/s (1e9)
    matmul_tflops: dict[str, float] = Field(default_factory=dict)  # dtype -> measured TFLOP/s
    sm_count: int | None = None
    l2_bytes: int | None = None
    memory_bytes: int | None = None
    clocks_mhz: dict[str, float] = Field(default_factory=dict)  # from nvidia-smi: sm, max_sm, mem, max_mem
    timing_version: str
    timestamp: str
    details: dict = Field(default_factory=dict)  # sizes and per-measurement timings

    def floor_ms(self, nbytes: float, flops: float = 0.0, flops_dtype: str = "bfloat16") -> float:
        """The fastest time a kernel moving ``nbytes`` and doing ``flops`` can take here."""
        t_mem = nbytes / (self.copy_gbs * 1e9)
        t_flop = 0.0
        if flops:
            peak = self.matmul_tflops.get(flops_dtype) or max(self.matmul_tflops.values(), default=0.0)
            if peak:
                t_flop = flops / (peak * 1e12)
        return max(t_mem, t_flop) * 1e3


def fingerprint_fields(device: str) -> dict:
    import platform

    import torch

    from kernelcraft.measure.environment import _driver_version

    fields = {"torch": torch.__version__, "cuda": torch.version.cuda}
    if device.startswith("cuda"):
        p = torch.cuda.get_device_properties(device)
        fields |= {"name": p.name, "cc": f"{p.major}.{p.minor}", "sm_count": p.multi_processor_count,
                   "memory_bytes": p.total_memory, "driver": _driver_version()}
    else:
        fields |= {"name": platform.processor() or platform.machine(), "cpus": len(os.sched_getaffinity(0))}
    return fields


def _fingerprint(fields: dict) -> str:
    return hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()[:16]


def cache_path(device: str) -> Path:
    from kernelcraft.solution.build import cache_root

    kind = "cuda" if device.startswith("cuda") else "cpu"
    version = CALIBRATION_VERSION.rsplit("/", 1)[-1]
    return cache_root() / "calibration" / f"{kind}-v{version}-{_fingerprint(fingerprint_fields(device))}.json"


def _clocks() -> dict[str, float]:
    smi = shutil.which("nvidia-smi")
    if not smi:
        return {}
    q = "clocks.sm,clocks.max.sm,clocks.mem,clocks.max.mem"
    try:
        out = subprocess.run([smi, f"--query-gpu={q}", "--format=csv,noheader,nounits"], capture_output=True,
                             text=True, timeout=30).stdout.strip().splitlines()
        vals = [float(v) for v in out[0].split(",")]
    except (OSError, subprocess.TimeoutExpired, ValueError, IndexError):
        return {}
    return dict(zip(["sm", "max_sm", "mem", "max_mem"], vals, strict=False))


def measure(device: str) -> Calibration:
    """Run the measurements (seconds on a GPU, a few seconds on a CPU)."""
    import torch

    from kernelcraft.measure.environment import device_info
    from kernelcraft.measure.timing import TIMING_VERSION, time_interleaved

    cuda = device.startswith("cuda")
    if cuda:
        torch.cuda.set_device(torch.device(device).index or 0)
    info = device_info(device)
    details: dict = {}
    # Copy: far past the L2 on a GPU; on a CPU large enough to leave the caches.
    n = (1 << 30) if cuda else (64 << 20)
    src = torch.empty(n, dtype=torch.uint8, device=device).fill_(1)
    dst = torch.empty_like(src)
    # Eager, never as a graph replay: a device-to-device copy captured in a CUDA graph becomes a memcpy
    # node run by the copy engines, measured at 2.70 TB/s on the H200 against 4.12-4.16 TB/s for the
    # eager copy's SM kernel (2026-11-29); kernels move data with SMs.
    t = time_interleaved({"copy": lambda dst=dst, src=src: dst.copy_(src)}, device, budget_ms=200 if cuda else 300,
                         min_reps=5, max_reps=200, warmup=2, use_graphs=False)["copy"]
    copy_gbs = 2 * n / (t.median_ms * 1e-3) / 1e9
    details["copy"] = {"bytes_each_way": n, "median_ms": t.median_ms, "reps": t.reps}
    del src, dst

    tflops: dict[str, float] = {}
    if cuda:
        cases = [("bfloat16", torch.bfloat16, 8192), ("float16", torch.float16, 8192),
                 ("float32", torch.float32, 4096), ("tf32", torch.float32, 4096)]
    else:
        cases = [("float32", torch.float32, 512)]
    prev_tf32 = torch.backends.cuda.matmul.allow_tf32
    try:
        for name, dtype, m in cases:
            torch.backends.cuda.matmul.allow_tf32 = name == "tf32"
            a = torch.randn(m, m, device=device).to(dtype)
            b = torch.randn(m, m, device=device).to(dtype)
            t = time_interleaved({"mm": lambda a=a, b=b: a @ b}, device, budget_ms=150 if cuda else 300,
                                 min_reps=5, max_reps=100, warmup=2, use_graphs=False)["mm"]
            tflops[name] = 2 * m**3 / (t.median_ms * 1e-3) / 1e12
            details[f"matmul_{name}"] = {"m": m, "median_ms": t.median_ms, "reps": t.reps}
        if cuda and torch.cuda.get_device_capability(device) >= (8, 9) and hasattr(torch, "_scaled_mm"):
            m = 8192
            a = torch.randn(m, m, device=device).to(torch.float8_e4m3fn)
            b = torch.randn(m, m, device=device).to(torch.float8_e4m3fn).t()  # column-major, as _scaled_mm wants
            one = torch.ones((), device=device)
            try:
                t = time_interleaved({"mm": lambda: torch._scaled_mm(a, b, one, one, out_dtype=torch.bfloat16)},
                                     device, budget_ms=150, min_reps=5, max_reps=100, warmup=2,
                                     use_graphs=False)["mm"]
                tflops["float8_e4m3fn"] = 2 * m**3 / (t.median_ms * 1e-3) / 1e12
                details["matmul_float8_e4m3fn"] = {"m": m, "median_ms": t.median_ms, "reps": t.reps}
            except RuntimeError as e:  # an fp8 path this torch build lacks: say so, do not guess
                details["matmul_float8_e4m3fn"] = {"error": str(e)[:300]}
    finally:
        torch.backends.cuda.matmul.allow_tf32 = prev_tf32
    fields = fingerprint_fields(device)
    return Calibration(
        device=device, hardware=info["hardware"], fingerprint=_fingerprint(fields), fingerprint_fields=fields,
        copy_gbs=copy_gbs, matmul_tflops=tflops, sm_count=info.get("sm_count"), l2_bytes=info.get("l2_bytes"),
        memory_bytes=info.get("memory_bytes"), clocks_mhz=_clocks() if cuda else {},
        timing_version=TIMING_VERSION, timestamp=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        details=details,
    )


def _key() -> bytes:
    """This machine's key for calibration files: readable by the judge's user only (0600), never by a
    candidate's runner (another uid, or landlock), so a candidate cannot forge a calibration that
    makes the impossible-speed gate accept anything."""
    from kernelcraft.solution.build import cache_root

    path = cache_root() / "calibration.key"
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return path.read_bytes()
    with os.fdopen(fd, "wb") as f:
        key = os.urandom(32)
        f.write(key)
    return key


def _signature(text: str) -> str:
    return hmac.new(_key(), text.encode(), hashlib.sha256).hexdigest()


def save(cal: Calibration, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    body = cal.model_dump_json(indent=2)
    tmp.write_text(json.dumps({"calibration": json.loads(body), "signature": _signature(body)}, indent=2) + "\n")
    tmp.replace(path)  # atomic: parallel evaluations never read half a file


def cached(device: str) -> Calibration | None:
    """The cached calibration, if its signature verifies: a file changed outside kernelcraft (by
    hand, by a candidate) is measured again, and said so."""
    path = cache_path(device)
    if not path.exists():
        return None
    try:
        data = json.loads(path.read_text())
        cal = Calibration.model_validate(data["calibration"])
        body = cal.model_dump_json(indent=2)
        if not hmac.compare_digest(str(data.get("signature", "")), _signature(body)):
            print(f"kernelcraft: {path} was changed outside kernelcraft (its signature does not verify): "
                  "measuring the device again", file=sys.stderr)
            return None
        return cal
    except (ValueError, KeyError, TypeError):
        return None  # an unreadable or older-format cache entry is measured again


def calibrate(device: str, force: bool = False) -> Calibration:
    """The cached calibration of this device, measured now if missing (or ``force``)."""
    if not force:
        cal = cached(device)
        if cal is not None:
            return cal
    cal = measure(device)
    save(cal, cache_path(device))
    return cal


def calibrate_in_subprocess(device: str, timeout_s: float = 300) -> Calibration | None:
    """Calibrate in a child process (the recording process allocates no measurement buffers); None
    with the reason on stderr when it cannot be done."""
    proc = subprocess.run([sys.executable, "-m", "kernelcraft.measure.calibrate", device],
                          capture_output=True, text=True, timeout=timeout_s)
    if proc.returncode != 0:
        print(f"calibration of {device} failed: {proc.stderr[-1500:]}", file=sys.stderr)
        return None
    return Calibration.model_validate_json(proc.stdout)


if __name__ == "__main__":
    print(calibrate(sys.argv[1]).model_dump_json())
