"""The environment FlashInfer's JIT needs to build its kernels (nvcc, at a peer's first call).

FlashInfer finds the CUDA toolkit as CUDA_HOME, else as the folder above the folder of the `nvcc`
on PATH, compiles with ``-I$CUDA_HOME/include`` and links ``-L$CUDA_HOME/lib64 -lcudart -lcuda``.
Three things break that on a machine like this one (seen here with FlashInfer 0.6.13 and nvcc 13.0):
``/usr/local/bin/nvcc`` is a wrapper script, so the guessed CUDA_HOME is /usr/local, which has no
toolkit; the toolkit keeps cuRAND's headers elsewhere or not at all (``curand.h``, which FlashInfer's
top-k includes through sampling.cuh); and a toolkit without ``lib64/stubs`` gives ``ld`` no
unversioned ``libcuda.so`` to link against. This module works out CUDA_HOME, an include folder that
has curand.h (the nvidia-curand wheel's, if the toolkit has none) and a folder with a libcuda.so
link, and hands them over through FlashInfer's FLASHINFER_EXTRA_CUDAFLAGS / _CFLAGS / _LDFLAGS.

    eval "$(python3 scripts/peer_jit_env.py)"     # prints export lines; changes nothing else
    from peer_jit_env import apply; apply()        # the same, for this process
"""

from __future__ import annotations

import glob
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

LINK_DIR = Path("/tmp/peer-ld")  # holds the libcuda.so link when nothing else offers one


def _toolkit(path: str | None) -> Path | None:
    if not path:
        return None
    p = Path(path)
    return p if (p / "bin" / "nvcc").is_file() and (p / "include" / "cuda_runtime.h").is_file() else None


def cuda_home() -> Path | None:
    nvcc = shutil.which("nvcc")
    candidates = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH")]
    if nvcc:
        candidates.append(str(Path(nvcc).resolve().parent.parent))
    candidates += ["/usr/local/cuda", *sorted(glob.glob("/usr/local/cuda-*"), reverse=True)]
    for c in candidates:
        found = _toolkit(c)
        if found is not None:
            return found
    return None


def curand_include(home: Path) -> Path | None:
    if (home / "include" / "curand.h").is_file():
        return None  # the toolkit has it: nothing to add
    roots = [Path(p) for p in sys.path if p and Path(p).is_dir()]
    for root in roots:
        for hit in sorted(root.glob("nvidia/*/include/curand.h")) + sorted(root.glob("nvidia/include/curand.h")):
            return hit.parent
    return None


def libcuda_dir(home: Path) -> Path | None:
    for d in (home / "lib64" / "stubs", home / "lib" / "stubs", home / "lib64", home / "lib"):
        if (d / "libcuda.so").exists():
            return None  # FlashInfer's own -L flags find it
    try:
        listing = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True, check=False).stdout
    except OSError:
        listing = ""
    target = None
    for line in listing.splitlines():
        name, _, path = line.strip().partition(" => ")
        if name.startswith("libcuda.so ") and path:
            return Path(path).parent
        if name.startswith("libcuda.so.1 ") and path:
            target = path
    if target is None:
        for p in ("/usr/local/nvidia/lib64/libcuda.so.1", "/usr/lib/x86_64-linux-gnu/libcuda.so.1"):
            if Path(p).exists():
                target = p
                break
    if target is None:
        return None
    LINK_DIR.mkdir(parents=True, exist_ok=True)
    link = LINK_DIR / "libcuda.so"
    if link.is_symlink() or link.exists():
        link.unlink()
    link.symlink_to(target)
    return LINK_DIR


def settings() -> dict[str, str]:
    home = cuda_home()
    if home is None:
        return {}
    env = {"CUDA_HOME": str(home)}
    inc = curand_include(home)
    if inc is not None:
        for key in ("FLASHINFER_EXTRA_CUDAFLAGS", "FLASHINFER_EXTRA_CFLAGS"):
            env[key] = f"{os.environ.get(key, '')} -I{inc}".strip()
    lib = libcuda_dir(home)
    if lib is not None:
        env["FLASHINFER_EXTRA_LDFLAGS"] = f"{os.environ.get('FLASHINFER_EXTRA_LDFLAGS', '')} -L{lib}".strip()
    return env


def apply() -> dict[str, str]:
    env = settings()
    os.environ.update(env)
    return env


if __name__ == "__main__":
    for key, value in settings().items():
        print(f"export {key}={shlex.quote(value)}")
