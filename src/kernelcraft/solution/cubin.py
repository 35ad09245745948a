"""``nvcc -cubin`` with a content-addressed cache: the compile half of the ``kernelcraft`` CUDA binding.

Each ``.cu`` source of a solution is compiled on its own, from a private copy of the solution's
sources (so ``#include "common.cuh"`` finds the solution's headers), with::

    nvcc -cubin -arch=sm_XY -O3 -lineinfo -std=c++17 -I. --keep --keep-dir <dir> -o <n>.cubin <file.cu>

``--keep`` leaves the PTX nvcc produced on the way; its ``.entry`` lines give every kernel's
parameter list (kind and size per parameter), which the launcher checks arguments against.

The cache lives in ``<cache_root>/cubin/<key>/``, ``key`` = sha256 over every non-Python source
(path and bytes: a header the ``.cu`` includes counts), the nvcc command line, the output of
``nvcc --version`` and the architecture. An entry is one cubin per ``.cu`` plus ``manifest.json``
(the sha256 of each cubin and the kernels' signatures). It is written in a private temporary
directory and renamed into place in one step (``os.replace``), so a parallel worker sees no entry
or a complete one. A reader re-hashes every cubin against the manifest: a truncated or corrupted
entry is a miss, compiled again and replaced. Compile errors are not cached.

This module imports neither torch nor a CUDA runtime: the static gate uses :func:`launch_findings`,
and a machine without a GPU still compiles (so compile errors surface).
"""

from __future__ import annotations

import ast
import functools
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from kernelcraft.solution.model import SourceFile

CACHE_FORMAT = "kc-cubin/1"
NVCC_TIMEOUT_S = 600
# The variable a solution's entry module reaches its kernels through (injected by the builder).
KERNELS_NAME = "kernels"
# Sources that are compiled; headers (.cuh, .h, ...) only count towards the cache key.
CU_SUFFIX = ".cu"


class NvccError(Exception):
    """nvcc rejected a source; the message holds what it said, files named relative to the solution."""


class NvccMissing(Exception):
    """No nvcc on this machine (or its toolkit lacks a header the source needs)."""


@dataclass(frozen=True)
class Param:
    kind: str  # "int" (integers and pointers), "float", or "bytes" (a struct passed by value)
    size: int  # bytes
    name: str  # from the .cu source when it could be read there, else "arg<i>"

    @property
    def ctype(self) -> str:
        if self.kind == "float":
            return {2: "f16", 4: "f32", 8: "f64"}.get(self.size, f"f{8 * self.size}")
        if self.kind == "int":
            return "ptr|i64" if self.size == 8 else f"i{8 * self.size}"
        return f"struct[{self.size}B]"


@dataclass(frozen=True)
class KernelSig:
    name: str
    source: str  # the .cu file that defines it
    params: tuple[Param, ...]

    def describe(self) -> str:
        return f"{self.name}(" + ", ".join(f"{p.name}: {p.ctype}" for p in self.params) + ")"


@dataclass
class CubinBuild:
    """What :func:`compile_cubins` produced (or found in the cache)."""

    key: str
    arch: str
    directory: Path
    cubins: dict[str, Path]  # .cu source path -> its cubin
    kernels: dict[str, KernelSig]  # extern "C" kernel name -> signature
    mangled: dict[str, list[str]] = field(default_factory=dict)  # .cu -> kernels without extern "C"
    cache_hit: bool = False
    seconds: float = 0.0
    log: str = ""  # nvcc's warnings, if any

    def summary(self) -> str:
        how = "cache hit" if self.cache_hit else f"nvcc {self.seconds:.1f} s"
        return f"{len(self.kernels)} kernels from {len(self.cubins)} cubins, {how}: " + ", ".join(sorted(self.kernels))


# ----------------------------------------------------------------------------------------------
# nvcc


def find_nvcc() -> str | None:
    """nvcc on PATH, else ``$CUDA_HOME/bin/nvcc`` (default /usr/local/cuda), else None."""
    found = shutil.which("nvcc")
    if found:
        return found
    candidate = Path(os.environ.get("CUDA_HOME", "/usr/local/cuda")) / "bin" / "nvcc"
    return str(candidate) if candidate.is_file() else None


@functools.lru_cache(maxsize=8)
def _nvcc_version(nvcc: str, mtime_ns: int) -> str:
    proc = subprocess.run([nvcc, "--version"], capture_output=True, text=True, timeout=60)
    if proc.returncode != 0:
        raise NvccMissing(f"{nvcc} --version failed: {(proc.stdout + proc.stderr).strip()[-500:]}")
    return proc.stdout.strip()


def nvcc_version(nvcc: str) -> str:
    return _nvcc_version(nvcc, os.stat(nvcc).st_mtime_ns)


def nvcc_command(nvcc: str, arch: str, source: str, output: str, keep_dir: str) -> list[str]:
    return [nvcc, "-cubin", f"-arch=sm_{arch}", "-O3", "-lineinfo", "-std=c++17", "-I.",
            "--keep", "--keep-dir", keep_dir, "-o", output, source]


def cache_key(sources: list[SourceFile], arch: str, version: str) -> str:
    h = hashlib.sha256()
    h.update(CACHE_FORMAT.encode() + b"\0" + arch.encode() + b"\0" + version.encode() + b"\0")
    h.update(json.dumps(nvcc_command("nvcc", arch, "<src>", "<out>", "<keep>")).encode() + b"\0")
    for s in sorted(sources, key=lambda s: s.path):
        if s.path.endswith(".py"):
            continue  # the Python entry is imported, not compiled: editing it must not recompile
        h.update(s.path.encode() + b"\0" + hashlib.sha256(s.content.encode()).digest())
    return h.hexdigest()


# ----------------------------------------------------------------------------------------------
# signatures: PTX for kinds and sizes, the .cu text for parameter names

_PTX_ENTRY = re.compile(r"\.entry\s+([\w$]+)\s*\(([^)]*)\)")
_PTX_TYPES = {f"{k}{b}": b // 8 for k in "usbf" for b in (8, 16, 32, 64) if not (k == "f" and b == 8)}
_GLOBAL_DEF = re.compile(r"__global__\b[^;{}]*?\bvoid\s+(?:__launch_bounds__\s*\([^)]*\)\s*)?([A-Za-z_]\w*)\s*\(")


def parse_ptx_entries(ptx: str) -> dict[str, list[tuple[str, int]]]:
    """Kernel name -> [(kind, size)] for every ``.entry`` of a PTX file."""
    entries = {}
    for m in _PTX_ENTRY.finditer(ptx):
        params = []
        for decl in filter(None, (d.strip() for d in m.group(2).split(","))):
            params.append(_ptx_param(decl, m.group(1)))
        entries[m.group(1)] = params
    return entries


def _ptx_param(decl: str, kernel: str) -> tuple[str, int]:
    tokens = decl.split()
    ptype = next((t[1:] for t in tokens if t.startswith(".") and t[1:] in _PTX_TYPES), None)
    if tokens[:1] != [".param"] or ptype is None:
        raise NvccError(f"cannot read parameter {decl!r} of kernel {kernel} in nvcc's PTX")
    size = _PTX_TYPES[ptype]
    array = re.search(r"\[(\d+)\]\s*$", decl)
    if array:
        return "bytes", size * int(array.group(1))
    return ("float" if ptype.startswith("f") else "int"), size


def global_kernel_names(text: str) -> set[str]:
    """Names of the ``__global__`` functions defined or declared in C++ source text."""
    return set(_GLOBAL_DEF.findall(_strip_comments(text)))


def _strip_comments(text: str) -> str:
    return re.sub(r"//[^\n]*|/\*.*?\*/", " ", text, flags=re.S)


def source_param_names(text: str, kernel: str) -> list[str] | None:
    """The parameter names of ``__global__ void kernel(...)`` as written, or None if not readable."""
    text = _strip_comments(text)
    for m in _GLOBAL_DEF.finditer(text):
        if m.group(1) != kernel:
            continue
        depth, start = 0, m.end()
        for i in range(start, len(text)):
            depth += {"(": 1, "<": 1, ")": -1, ">": -1}.get(text[i], 0)
            if depth < 0:
                return _names_of(text[start:i])
        return None
    return None


def _names_of(params: str) -> list[str] | None:
    parts, depth, cur = [], 0, ""
    for ch in params:
        depth += {"(": 1, "<": 1, "[": 1, ")": -1, ">": -1, "]": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    names = []
    for p in (p.split("=")[0].strip() for p in parts):
        if p in ("", "void"):
            continue
        m = re.search(r"([A-Za-z_]\w*)\s*(\[[^\]]*\]\s*)*$", p)
        if not m:
            return None
        names.append(m.group(1))
    return names


def referenced_kernels(py_sources: dict[str, ast.Module]) -> set[str]:
    """Names used as ``kernels.NAME`` in the solution's Python sources (the static gate's launch check)."""
    found = set()
    for tree in py_sources.values():
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                    and node.value.id == KERNELS_NAME):
                found.add(node.attr)
    return found


def launch_findings(cxx_text: str, py_trees: dict[str, ast.Module]) -> list[str]:
    """The static gate's launch check for ``binding = "kernelcraft"``: some Python source must use
    ``kernels.NAME`` for a ``__global__`` kernel the C++ sources define (``<<<`` has no place there)."""
    defined = global_kernel_names(cxx_text)
    if referenced_kernels(py_trees) & defined:
        return []
    return [f"a __global__ kernel is defined but never launched (no {KERNELS_NAME}.NAME(...) in the Python "
            f"sources naming one of: {', '.join(sorted(defined)) or 'none found'})"]


# ----------------------------------------------------------------------------------------------
# compile and cache


def compile_cubins(sources: list[SourceFile], arch: str, root: Path) -> CubinBuild:
    """Compile every ``.cu`` of ``sources`` for ``sm_<arch>``, or take the result from the cache under
    ``root``. Raises :class:`NvccMissing` without nvcc, :class:`NvccError` when a source does not compile."""
    units = [s.path for s in sources if s.path.endswith(CU_SUFFIX)]
    if not units:
        raise NvccError("no .cu source: the kernelcraft binding compiles .cu files to cubins")
    nvcc = find_nvcc()
    if nvcc is None:
        raise NvccMissing("nvcc not found (not on PATH, not in $CUDA_HOME/bin): cannot compile CUDA here")
    key = cache_key(sources, arch, nvcc_version(nvcc))
    base = root / "cubin"
    entry = base / key
    t0 = time.monotonic()
    found = _read_entry(entry, key)
    if found is not None:
        found.seconds = time.monotonic() - t0
        found.cache_hit = True
        return found
    base.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{key[:16]}-", dir=base))
    try:
        manifest = _compile_into(tmp, sources, units, nvcc, arch, key)
        (tmp / "manifest.json").write_text(json.dumps(manifest, indent=1))
        _install(tmp, entry, key)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    built = _read_entry(entry, key)
    if built is None:
        raise NvccError(f"the cubin cache entry {entry} could not be read back after writing it")
    built.seconds = time.monotonic() - t0
    return built


def _compile_into(tmp: Path, sources: list[SourceFile], units: list[str], nvcc: str, arch: str, key: str) -> dict:
    src_dir = tmp / "src"
    for s in sources:
        f = src_dir / s.path
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(s.content)

    def one(i: int, unit: str) -> tuple[str, dict[str, list[tuple[str, int]]]]:
        keep = tmp / "keep" / str(i)
        keep.mkdir(parents=True)
        out = tmp / f"{i}.cubin"
        cmd = nvcc_command(nvcc, arch, unit, str(out), str(keep))
        try:
            proc = subprocess.run(cmd, cwd=src_dir, capture_output=True, text=True, timeout=NVCC_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise NvccError(f"{unit}: nvcc did not finish within {NVCC_TIMEOUT_S} s") from None
        said = (proc.stdout + proc.stderr).replace(str(src_dir) + os.sep, "").replace(str(tmp) + os.sep, "")
        if proc.returncode != 0:
            missing = _missing_toolkit_header(said, sources)
            if missing:
                raise NvccMissing(f"cannot compile here: this machine's CUDA toolkit lacks {missing} "
                                  f"(included by {unit}); build it on the target device")
            raise NvccError(f"{unit} failed to compile (nvcc -cubin -arch=sm_{arch}):\n{said.strip()[-20000:]}")
        ptx = sorted(keep.glob("*.ptx"))
        if not ptx:
            raise NvccError(f"{unit}: nvcc --keep left no PTX in {keep}; cannot read the kernels' parameters")
        entries = {}
        for p in ptx:
            entries.update(parse_ptx_entries(p.read_text()))
        return said.strip(), entries

    with ThreadPoolExecutor(max_workers=max(1, min(len(units), os.cpu_count() or 1))) as pool:
        results = list(pool.map(one, range(len(units)), units))
    texts = {s.path: s.content for s in sources}
    kernels: dict[str, dict] = {}
    mangled: dict[str, list[str]] = {}
    logs = []
    for unit, (said, entries) in zip(units, results, strict=True):
        if said:
            logs.append(said)
        for name, params in entries.items():
            if not name.isidentifier() or name.startswith("_Z"):
                mangled.setdefault(unit, []).append(name)
                continue
            if name in kernels:
                raise NvccError(f"kernel {name!r} is defined in both {kernels[name]['source']} and {unit}")
            names = source_param_names(texts[unit], name)
            if names is None or len(names) != len(params):
                names = [f"arg{j}" for j in range(len(params))]
            kernels[name] = {"source": unit, "params": [[k, s, n] for (k, s), n in zip(params, names, strict=True)]}
    files = {f"{i}.cubin": hashlib.sha256((tmp / f"{i}.cubin").read_bytes()).hexdigest() for i in range(len(units))}
    shutil.rmtree(tmp / "src")
    shutil.rmtree(tmp / "keep")
    return {"format": CACHE_FORMAT, "key": key, "arch": arch, "units": {u: f"{i}.cubin" for i, u in enumerate(units)},
            "sha256": files, "kernels": kernels, "mangled": mangled, "log": "\n".join(logs)[-4000:]}


def _install(tmp: Path, entry: Path, key: str) -> None:
    """Rename the finished build into place in one step. A directory can only be renamed over a
    missing (or empty) one: if the entry exists, a parallel worker installed it first (keep it when
    it reads back sound) or it is corrupt (move it aside, atomically, and try again)."""
    for _ in range(3):
        try:
            os.replace(tmp, entry)
            return
        except OSError:
            if _read_entry(entry, key) is not None:
                return
            trash = entry.with_name(f".trash-{key[:16]}-{os.getpid()}-{time.monotonic_ns()}")
            try:
                os.replace(entry, trash)
            except OSError:
                pass
            shutil.rmtree(trash, ignore_errors=True)


def _read_entry(entry: Path, key: str) -> CubinBuild | None:
    """A cache entry whose manifest parses and whose every cubin hashes as recorded, else None."""
    try:
        manifest = json.loads((entry / "manifest.json").read_text())
        if manifest.get("format") != CACHE_FORMAT or manifest.get("key") != key:
            return None
        for name, digest in manifest["sha256"].items():
            if PurePosixPath(name).name != name:
                return None
            if hashlib.sha256((entry / name).read_bytes()).hexdigest() != digest:
                return None
        kernels = {
            n: KernelSig(n, k["source"], tuple(Param(kind, int(size), pname) for kind, size, pname in k["params"]))
            for n, k in manifest["kernels"].items()
        }
        cubins = {u: entry / f for u, f in manifest["units"].items()}
        if set(manifest["units"].values()) != set(manifest["sha256"]):
            return None
        return CubinBuild(key=key, arch=manifest["arch"], directory=entry, cubins=cubins, kernels=kernels,
                          mangled=manifest.get("mangled", {}), log=manifest.get("log", ""))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _missing_toolkit_header(compiler_output: str, sources: list[SourceFile]) -> str | None:
    """A header nvcc could not find that is none of the solution's own files: the machine's toolkit
    is incomplete (a CPU box with nvcc but no cuBLAS headers), not the source wrong."""
    own = {PurePosixPath(s.path).name for s in sources}
    for m in re.finditer(r"fatal error: ([\w./-]+): No such file or directory", compiler_output):
        if PurePosixPath(m.group(1)).name not in own:
            return m.group(1)
    return None
