"""The compiler's resource report for CUDA sources: ``nvcc -cubin -Xptxas -v``, parsed per kernel.

Needs nvcc only, no GPU: registers, spills and shared memory are fixed at compile time, so an agent
gets them on any machine. ptxas prints, per entry function (CUDA 12.x and 13.0 seen)::

    ptxas info    : Compiling entry function '_Z6kernelPf' for 'sm_90'
    ptxas info    : Function properties for _Z6kernelPf
        0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
    ptxas info    : Used 16 registers, used 1 barriers, 132 bytes smem, 380 bytes cmem[0]

``cmem`` and ``barriers`` are absent on some versions (13.0 prints no cmem); a missing field is None.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sysconfig
from dataclasses import asdict, dataclass, field
from pathlib import Path

_ENTRY = re.compile(r"Compiling entry function '([^']+)' for '(\w+)'")
_PROPS = re.compile(r"Function properties for (\S+)")
_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"Used (\d+) registers(.*)")


@dataclass
class PtxasKernel:
    mangled: str
    arch: str
    name: str = ""  # demangled when a demangler is on PATH, else the mangled name
    registers: int | None = None
    spill_store_bytes: int | None = None
    spill_load_bytes: int | None = None
    stack_bytes: int | None = None
    smem_bytes: int | None = None
    cmem_bytes: int | None = None  # all constant banks together
    barriers: int | None = None
    source: str = ""  # the .cu file it came from

    def to_dict(self) -> dict:
        return asdict(self) | {"short_name": short_name(self.name or self.mangled)}


@dataclass
class PtxasReport:
    arch: str
    kernels: list[PtxasKernel] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # ptxas warnings, e.g. spilled registers
    text: str = ""  # what nvcc printed, verbatim

    def to_dict(self) -> dict:
        return {"arch": f"sm_{self.arch}", "kernels": [k.to_dict() for k in self.kernels], "warnings": self.warnings}


class CompileFailed(Exception):
    """nvcc rejected a source; the message is the compiler's, trimmed to its errors."""


def parse_ptxas(text: str, source: str = "") -> list[PtxasKernel]:
    """Entry functions (kernels) in the order ptxas compiled them; device functions are skipped."""
    kernels: dict[str, PtxasKernel] = {}
    current: PtxasKernel | None = None  # the entry function a "Used N registers" line belongs to
    props_for: str | None = None  # the function a "stack frame" line belongs to
    for line in text.splitlines():
        if m := _ENTRY.search(line):
            current = kernels.setdefault(m.group(1), PtxasKernel(m.group(1), m.group(2).removeprefix("sm_"),
                                                                 source=source))
        elif m := _PROPS.search(line):
            props_for = m.group(1)
        elif (m := _FRAME.search(line)) and props_for in kernels:
            k = kernels[props_for]
            k.stack_bytes, k.spill_store_bytes, k.spill_load_bytes = map(int, m.groups())
        elif (m := _USED.search(line)) and current is not None:
            current.registers = int(m.group(1))
            rest = m.group(2)
            # "2048+0 bytes smem" on some versions: static plus reserved
            if s := re.search(r"(\d+)(?:\+(\d+))? bytes smem", rest):
                current.smem_bytes = int(s.group(1)) + int(s.group(2) or 0)
            cmem = [int(c) for c in re.findall(r"(\d+) bytes cmem\[\d+\]", rest)]
            current.cmem_bytes = sum(cmem) if cmem else None
            if b := re.search(r"used (\d+) barriers", rest):
                current.barriers = int(b.group(1))
    return list(kernels.values())


def demangle(names: list[str]) -> dict[str, str]:
    """Mangled -> demangled through cu++filt or c++filt; names stay as they are without either."""
    tool = shutil.which("cu++filt") or shutil.which("c++filt")
    if not tool or not names:
        return {n: n for n in names}
    try:
        proc = subprocess.run([tool], input="\n".join(names) + "\n", capture_output=True, text=True, timeout=30)
        out = proc.stdout.splitlines()
    except (OSError, subprocess.SubprocessError):
        return {n: n for n in names}
    return {n: (d.strip() or n) for n, d in zip(names, out, strict=False)} | {n: n for n in names[len(out):]}


def short_name(name: str) -> str:
    """``void (anonymous namespace)::k<true>(float const*, int)`` -> ``k<true>``: what a person
    calls the kernel. ncu and ptxas print the long form; both shorten to the same key."""
    s = name.strip()
    if s.endswith(")"):  # drop the parameter list: the last top-level parenthesis group
        depth = 0
        for i in range(len(s) - 1, -1, -1):
            depth += {")": 1, "(": -1}.get(s[i], 0)
            if depth == 0:
                s = s[:i].rstrip()
                break
    s = s.removeprefix("void ").replace("(anonymous namespace)::", "")
    return s


def _filter_errors(text: str, src_dir: Path) -> str:
    text = text.replace(str(src_dir) + os.sep, "")
    keep = [ln for ln in text.splitlines()
            if not ln.startswith("ptxas info") and ("warning" not in ln.lower() or "error" in ln.lower())]
    return "\n".join(keep)[-20000:]


def _includes(src_dir: Path, scratch: Path) -> list[str]:
    """The include paths the torch-extension build gives nvcc, so a .cu that includes torch or
    c10 headers compiles here as it does there (keeping torch headers out of .cu files is faster)."""
    inc = [f"-I{src_dir}"]
    try:
        import torch

        torch_inc = Path(torch.__file__).parent / "include"
        inc += [f"-I{torch_inc}", f"-I{torch_inc / 'torch/csrc/api/include'}"]
        if not (torch_inc / "c10/cuda/impl/cuda_cmake_macros.h").exists():
            # CPU wheels of torch lack this generated header; it only sets build macros.
            stub = scratch / "stub_include"
            (stub / "c10/cuda/impl").mkdir(parents=True, exist_ok=True)
            (stub / "c10/cuda/impl/cuda_cmake_macros.h").write_text("#pragma once\n#define C10_CUDA_BUILD_SHARED_LIBS\n")
            inc.append(f"-I{stub}")
    except ImportError:
        pass
    cuda_home = os.environ.get("CUDA_HOME", "/usr/local/cuda")
    return inc + [f"-I{sysconfig.get_paths()['include']}", f"-I{cuda_home}/include"]


def _nvcc_flags() -> list[str]:
    """The flags torch's extension build adds (bf16/half operator macros change what compiles)."""
    try:
        from torch.utils.cpp_extension import COMMON_NVCC_FLAGS

        return list(COMMON_NVCC_FLAGS)
    except ImportError:
        return ["--expt-relaxed-constexpr"]


def nvcc_resource_report(sources: list[Path], src_dir: Path, arch: str, scratch: Path,
                         timeout: float = 300) -> PtxasReport:
    """Compile each .cu to a cubin for ``sm_<arch>`` with ``-Xptxas -v`` and parse the report.

    Device code only (``-cubin``): the host side and the torch binding are not compiled, which keeps
    this to about a second per file. Raises CompileFailed with nvcc's errors, FileNotFoundError
    without nvcc.
    """
    nvcc = shutil.which("nvcc") or os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "bin", "nvcc")
    if not Path(nvcc).exists():
        raise FileNotFoundError("nvcc")
    scratch.mkdir(parents=True, exist_ok=True)
    report = PtxasReport(arch)
    for src in sources:
        cmd = [nvcc, "-cubin", "-O3", "-std=c++17", *_nvcc_flags(), f"-arch=sm_{arch}", "-Xptxas", "-v",
               *_includes(src_dir, scratch), "-DTORCH_API_INCLUDE_EXTENSION_H",
               "-o", str(scratch / (src.name + ".cubin")), str(src)]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        text = proc.stdout + proc.stderr
        if proc.returncode != 0:
            raise CompileFailed(f"{src.name} failed to compile (nvcc -arch=sm_{arch}):\n{_filter_errors(text, src_dir)}")
        report.text += f"$ {' '.join(cmd)}\n{text}"
        report.kernels += parse_ptxas(text, source=src.name)
        report.warnings += [ln.strip() for ln in text.splitlines() if ln.startswith("ptxas warning")]
    names = demangle([k.mangled for k in report.kernels])
    for k in report.kernels:
        k.name = names.get(k.mangled, k.mangled)
    return report
