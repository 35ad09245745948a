"""The preprocessor passes behind the static gate's C/C++/CUDA rules (:mod:`kernelcraft.gauntlet.static_cxx`).

Each translation unit goes through the preprocessor the build will use (``nvcc -E`` twice for a
``.cu``, the device pass and the host pass, which see different ``#if __CUDA_ARCH__`` branches; the
host compiler's ``-E`` for ``.cpp``), with the build's include paths and defines. What is kept are
the lines of the expansion that come from the solution's own files (the linemarkers say which), and
the headers those files include. Headers this machine lacks are replaced by empty stubs, one round
per missing header (remembered in the cache), so a toolkit without cuBLAS headers still expands the
rest.

A second tree has a probe after each ``#define`` of the solution, one invocation of the macro it
defines: a macro that smuggles a name into a system header's code (``#define
cudaStreamGetPriority(s, p) CAT(cudaStream, Create)(s)`` before including the header that calls it)
shows its expansion among the solution's own lines.

The system headers a unit starts with are read from a cached macro dump instead of being
preprocessed again: ``<torch/extension.h>`` costs the preprocessor 2 s on a 2-core machine, its dump
a few milliseconds to read back.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from kernelcraft.solution.model import Solution

UNIT_SUFFIXES = (".cu", ".cpp", ".cc", ".cxx", ".c")
PREPROCESS_TIMEOUT_S = 120
MAX_STUB_ROUNDS = 12
INCLUDE = re.compile(r"^\s*(?:#|%:)\s*include\s*[<\"]([^>\"]+)[>\"]")


@dataclass
class Expanded:
    """What the preprocessor made of the solution's own files, per file: (line, text) pairs, and
    the system headers each includes directly."""

    lines: dict[str, list[tuple[int, str]]] = field(default_factory=dict)
    includes: dict[str, set[tuple[int, str]]] = field(default_factory=dict)
    passes: list[str] = field(default_factory=list)  # "kernel.cu (device pass)", ...: the ones that gave text
    failed: list[str] = field(default_factory=list)  # passes that gave no usable text, and why



_DEFINE = re.compile(r"^\s*(?:#|%:)\s*define\s+([A-Za-z_]\w*)(\(([^)]*)\))?")
_MARKER = re.compile(r'^#\s*(?:line\s+)?(\d+)\s+"((?:[^"\\]|\\.)*)"(.*)$')
_MISSING_HEADER = re.compile(r"fatal error: ([^\s:][^:\n]*): No such file or directory")
_known_missing: set[str] = set()  # headers this machine lacks, stubbed from the start in later checks


def _with_probes(path: str, text: str) -> str:
    """The source with one invocation of each macro right after its #define (line numbers kept)."""
    out = []
    lines = text.split("\n")
    logical_start = None
    for i, phys in enumerate(lines, 1):
        out.append(phys)
        if logical_start is None:
            logical_start = i
        if phys.endswith("\\"):
            continue
        logical = "".join(p[:-1] if p.endswith("\\") else p for p in lines[logical_start - 1: i])
        logical_start = None
        m = _DEFINE.match(logical)
        if not m:
            continue
        name, params = m.group(1), m.group(3)
        if m.group(2) is None:
            probe = name
        else:
            names = [p.strip() for p in params.split(",") if p.strip()]
            probe = f"{name}({', '.join(f'__kc_probe{k}' for k in range(len(names)))})"
        quoted = path.replace("\\", "\\\\").replace('"', '\\"')
        # the `;` keeps an expansion that ends in a function-like macro's name from taking the
        # next line as its arguments
        out += [f'#line {i} "{quoted}"', probe + " ;", f'#line {i + 1} "{quoted}"']
    return "\n".join(out)


def _torch_paths() -> list[str]:
    import importlib.util
    import sysconfig

    spec = importlib.util.find_spec("torch")
    inc = []
    if spec and spec.origin:
        base = Path(spec.origin).parent / "include"
        inc += [str(base), str(base / "torch" / "csrc" / "api" / "include")]
    inc.append(sysconfig.get_paths()["include"])
    inc.append(str(Path(os.environ.get("CUDA_HOME", "/usr/local/cuda")) / "include"))
    return [f"-I{p}" for p in inc]


def _commands(solution: Solution, unit: str) -> list[tuple[str, list[str]]]:
    """(pass name, argv) for each preprocessing pass of one translation unit, as the build compiles it."""
    from kernelcraft.solution.build import _arch_for
    from kernelcraft.solution.cubin import find_nvcc

    arch = _arch_for("cpu", solution)
    torch_binding = (solution.spec.binding or "tvm-ffi") != "kernelcraft"
    extra = ["-O3", "-std=c++17", "-I."]
    if torch_binding:
        extra += [*_torch_paths(), f"-DTORCH_EXTENSION_NAME=kc_{solution.source_hash[:16]}",
                  "-DTORCH_API_INCLUDE_EXTENSION_H"]
    cxx = os.environ.get("CXX", "c++")
    if unit.endswith(".cu"):
        nvcc = find_nvcc()
        if torch_binding:  # torch.utils.cpp_extension's nvcc flags
            extra += ["-D__CUDA_NO_HALF_OPERATORS__", "-D__CUDA_NO_HALF_CONVERSIONS__",
                      "-D__CUDA_NO_BFLOAT16_CONVERSIONS__", "-D__CUDA_NO_HALF2_OPERATORS__"]
        if nvcc:
            base = [nvcc, "-E", f"-arch=sm_{arch}", *extra, unit]
            return [(f"{unit} (device pass)", base), (f"{unit} (host pass)", [*base[:-1], "-U__CUDA_ARCH__", unit])]
        if not shutil.which(cxx):
            return []
        base = [cxx, "-E", "-x", "c++", "-D__CUDACC__", "-D__NVCC__", *extra, unit]
        return [(f"{unit} (device pass, {cxx})", [*base[:-1], f"-D__CUDA_ARCH__={arch}0", unit]),
                (f"{unit} (host pass, {cxx})", base)]
    if not shutil.which(cxx):
        return []
    return [(unit, [cxx, "-E", *extra, unit])]


def _run_all(jobs: list[tuple[str, list[str], str]], stub_dir: Path) -> dict[str, tuple[int, str, str]]:
    """Run every (name, argv, cwd) pass in parallel, stubbing missing headers and rerunning, until
    none is missing."""
    results: dict[str, tuple[int, str, str]] = {}
    pending = list(jobs)
    for _ in range(MAX_STUB_ROUNDS):
        if not pending:
            break
        procs = []
        for name, argv, cwd in pending:
            try:
                procs.append((name, argv, cwd, subprocess.Popen(
                    [*argv, f"-I{stub_dir}"], cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                    text=True, errors="replace")))
            except OSError as e:
                results[name] = (-1, "", str(e))
        again = []
        for name, argv, cwd, p in procs:
            try:
                out, err = p.communicate(timeout=PREPROCESS_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                p.kill()
                p.communicate()
                results[name] = (-1, "", f"did not finish within {PREPROCESS_TIMEOUT_S} s")
                continue
            missing = [m.strip() for m in _MISSING_HEADER.findall(err)]
            if p.returncode != 0 and missing and all(_stub(stub_dir, h) for h in missing):
                again.append((name, argv, cwd))
                continue
            results[name] = (p.returncode, out, err)
        pending = again
    for name, _, _ in pending:
        results[name] = (-1, "", f"still missing headers after {MAX_STUB_ROUNDS} rounds of stubs")
    return results


def _stub(stub_dir: Path, header: str) -> bool:
    p = PurePosixPath(header)
    if p.is_absolute() or ".." in p.parts:
        return False
    f = stub_dir / p
    if f.exists():
        return False  # stubbed already and still missing: something else is wrong
    f.parent.mkdir(parents=True, exist_ok=True)
    f.write_text("/* empty stand-in written by the static gate: this machine lacks the header */\n")
    if header not in _known_missing:
        _known_missing.add(header)
        try:  # later processes stub it from the start instead of finding it missing again
            with open(_missing_list(), "a", encoding="utf-8") as fh:
                fh.write(header + "\n")
        except OSError:
            pass
    return True


def _pp_cache() -> Path:
    """The judge's cache of the static gate's preprocessing (missing headers, macro dumps, expansions)."""
    from kernelcraft.solution.build import cache_root

    return cache_root() / "static_pp"


def _missing_list() -> Path:
    d = _pp_cache()
    d.mkdir(parents=True, exist_ok=True)
    return d / "missing_headers.txt"


def _missing_on_disk() -> set[str]:
    try:
        return {h for h in _missing_list().read_text(encoding="utf-8").split("\n") if h}
    except OSError:
        return set()


EXPANSION_FORMAT = "kc-static-pp/1"  # bump when what expand() keeps changes: older cache entries are ignored


def _expansion_key(solution: Solution, commands: list[list[str]], missing: set[str]) -> str:
    import hashlib
    import json

    blob = json.dumps({"format": EXPANSION_FORMAT, "sources": sorted((s.path, s.content) for s in solution.sources),
                       "commands": commands, "toolchains": [_toolchain(e) for e in sorted({argv[0] for argv in commands})],
                       "missing": sorted(missing)}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()


def _cached_expansion(key: str) -> Expanded | None:
    import json

    try:
        d = json.loads((_pp_cache() / f"expanded-{key}.json").read_text(encoding="utf-8"))
        if d.get("format") != EXPANSION_FORMAT:
            return None
        return Expanded(lines={p: [(int(n), str(t)) for n, t in v] for p, v in d["lines"].items()},
                        includes={p: {(int(n), str(h)) for n, h in v} for p, v in d["includes"].items()},
                        passes=[str(x) for x in d["passes"]], failed=[str(x) for x in d["failed"]])
    except (OSError, ValueError, KeyError, TypeError):
        return None  # absent or unreadable: expand again


def _store_expansion(key: str, exp: Expanded) -> None:
    import json

    d = _pp_cache()
    try:
        d.mkdir(parents=True, exist_ok=True)
        tmp = d / f".expanded-{key}.{os.getpid()}.tmp"
        tmp.write_text(json.dumps({"format": EXPANSION_FORMAT, "lines": exp.lines,
                                   "includes": {p: sorted(v) for p, v in exp.includes.items()},
                                   "passes": exp.passes, "failed": exp.failed}), encoding="utf-8")
        tmp.replace(d / f"expanded-{key}.json")
    except OSError:
        pass  # a cache that cannot be written costs the next evaluation time, nothing else


def expand(solution: Solution) -> Expanded:
    """Every pass of every unit as the build runs it, plus one (the host pass) over a copy of the
    sources with a probe after each #define: probes change what follows them (a macro name before
    a #define no longer meets its arguments), so they get a tree of their own.

    The result is kept in the judge's cache (``static_pp/expanded-<key>.json``), keyed by the sources,
    every pass's command line, the compilers and torch (:func:`_toolchain`) and the headers stubbed as
    missing: the same solution evaluated again (an agent's loop, a cached turnaround) skips the
    preprocessor, ~0.5 s of nvcc -E per evaluation. Only the recording process writes that cache; a
    candidate's runner has a cache of its own (runner/client.py::sandbox_cache)."""
    sources = [s for s in solution.sources if not s.path.endswith(".py")]
    units = [s.path for s in sources if s.path.endswith(UNIT_SUFFIXES)]
    commands = [argv for u in units for _, argv in _commands(solution, u)]
    missing = _known_missing | _missing_on_disk()
    key = _expansion_key(solution, commands, missing)
    cached = _cached_expansion(key)
    if cached is not None:
        return cached
    exp = _expand(solution, sources, units, missing)
    if not exp.failed:  # a failed pass (a timeout, a broken toolkit) is tried again next time
        # under the headers known missing after this expansion too (it may have found new ones):
        # the key the next check computes
        for k in {key, _expansion_key(solution, commands, _known_missing | _missing_on_disk())}:
            _store_expansion(k, exp)
    return exp


def _expand(solution: Solution, sources: list, units: list[str], missing: set[str]) -> Expanded:
    own = {s.path for s in sources}
    exp = Expanded()
    with tempfile.TemporaryDirectory(prefix="kc_static_") as tmp:
        stub_dir = Path(tmp) / "stubs"
        stub_dir.mkdir()
        for h in sorted(missing):
            _stub(stub_dir, h)
        trees = {}
        for tree, transform in (("as-written", lambda p, t: t), ("probed", _with_probes)):
            texts = {s.path: transform(s.path, s.content) for s in sources}
            for path, text in texts.items():
                f = Path(tmp) / tree / path
                f.parent.mkdir(parents=True, exist_ok=True)
                f.write_text(text, encoding="utf-8")
            trees[tree] = (Path(tmp) / tree, texts)
        passes = []  # (tree root, its texts, unit, pass name, argv)
        for u in units:
            commands = _commands(solution, u)
            passes += [(*trees["as-written"], u, name, argv) for name, argv in commands]
            if commands and trees["probed"][1] != trees["as-written"][1]:  # without a #define, no probe
                passes.append((*trees["probed"], u, f"{u} (macro probes)", commands[-1][1]))
        dumps = _prefix_dumps(passes, own, stub_dir)
        jobs = []
        for i, (root, texts, unit, name, argv) in enumerate(passes):
            dump = dumps.get(i)
            if dump is not None:  # the system headers' macros from the cache, the rest of the unit as is
                n_prefix, text = dump
                body = texts[unit].split("\n")
                variant = root / PurePosixPath(unit).parent / f".kc_pass{i}{PurePosixPath(unit).suffix}"
                variant.write_text(f'#include "{text}"\n#line {n_prefix + 1} "{unit}"\n'
                                   + "\n".join(body[n_prefix:]), encoding="utf-8")
                argv = [*argv[:-1], os.path.relpath(variant, root)]
            jobs.append((name, argv, str(root)))
        results = _run_all(jobs, stub_dir)
        roots = {name: str(root) for root, _, _, name, _ in passes}
        for name, (_rc, out, err) in results.items():
            if not out.strip():
                exp.failed.append(f"{name}: {(err.strip().splitlines() or ['no output'])[-1][:300]}")
                continue
            exp.passes.append(name)
            _collect(out, roots[name], own, exp)
    for path in exp.lines:
        exp.lines[path] = sorted(set(exp.lines[path]))
    return exp


# ------------------------------------------------------------------------------------------------
# the system headers a unit starts with, as a cached macro dump: <torch/extension.h> costs the
# preprocessor 2 s on a 2-core machine, the dump of what it defines a few milliseconds to read back.
# Macros are the only state preprocessing carries from one line to the next, so expanding the rest
# of the unit after the dump gives the same text as expanding it after the headers.

_dump_memo: dict[str, str] = {}


def _system_prefix(text: str, own: set[str], unit: str) -> tuple[int, list[str]]:
    """How many leading lines of ``text`` hold only comments, blank lines and includes of headers
    that are not the solution's own, up to the last such include (0 without one), and those
    includes (read with the comments taken out: a commented-out include is not one)."""
    n, in_comment, includes = 0, False, []
    here = PurePosixPath(unit).parent
    for i, line in enumerate(text.split("\n")):
        if line.endswith("\\"):
            break
        rest, in_comment = _strip_comments(line, in_comment)
        if not rest.strip():
            continue
        m = INCLUDE.match(rest)
        if not m or os.path.normpath(str(here / m.group(1))) in own or m.group(1) in own:
            break
        n = i + 1
        includes.append(m.group(0).strip())
    return n, includes


def _strip_comments(line: str, in_comment: bool) -> tuple[str, bool]:
    out, i = "", 0
    while i < len(line):
        if in_comment:
            j = line.find("*/", i)
            if j < 0:
                return out, True
            i, in_comment = j + 2, False
        elif line.startswith("//", i):
            break
        elif line.startswith("/*", i):
            in_comment, i = True, i + 2
        else:
            out += line[i]
            i += 1
    return out, in_comment


def _prefix_dumps(passes, own: set[str], stub_dir: Path) -> dict[int, tuple[int, str]]:
    """For each pass whose unit starts with system includes: (prefix lines, path of the macro dump)."""
    import hashlib
    import json

    wanted: dict[int, tuple[int, str]] = {}
    jobs, keys = [], {}
    for i, (root, texts, unit, _name, argv) in enumerate(passes):
        n, includes = _system_prefix(texts[unit], own, unit)
        if not n:
            continue
        prefix = "\n".join(includes)  # comments do not change the macros: equal includes share a dump
        dump_argv = [a for a in argv[:-1] if not a.startswith("-DTORCH_EXTENSION_NAME=")]
        key = hashlib.sha256(json.dumps([prefix, dump_argv, _toolchain(argv[0])]).encode()).hexdigest()[:24]
        path = _pp_cache() / f"{key}.h"
        wanted[i] = (n, str(path))
        if key in _dump_memo or path.is_file() or key in keys:
            continue
        keys[key] = path
        d = root / PurePosixPath(unit).parent
        suffix = PurePosixPath(unit).suffix
        (d / f".kc_prefix_{key}{suffix}").write_text(prefix + "\n", encoding="utf-8")
        (d / f".kc_empty_{key}{suffix}").write_text("\n", encoding="utf-8")
        dm = ["-Xcompiler", "-dM"] if PurePosixPath(argv[0]).name.startswith("nvcc") else ["-dM"]
        rel = os.path.relpath(d, root)
        jobs.append((f"prefix {key}", [*dump_argv, *dm, os.path.join(rel, f".kc_prefix_{key}{suffix}")], str(root)))
        jobs.append((f"empty {key}", [*dump_argv, *dm, os.path.join(rel, f".kc_empty_{key}{suffix}")], str(root)))
    if jobs:
        results = _run_all(jobs, stub_dir)
        for key, path in keys.items():
            rc_p, out_p, _ = results.get(f"prefix {key}", (-1, "", ""))
            rc_e, out_e, _ = results.get(f"empty {key}", (-1, "", ""))
            if rc_p != 0 or rc_e != 0 or "#define" not in out_p:
                continue  # no dump: that pass preprocesses its headers itself
            text = _macro_difference(out_e, out_p)
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
            tmp.write_text(text, encoding="utf-8")
            os.replace(tmp, path)  # a parallel gate never reads half a dump
    for i, (_n, path) in list(wanted.items()):
        if not Path(path).is_file():
            del wanted[i]
    return wanted


def _macro_difference(before: str, after: str) -> str:
    """#undef/#define lines that turn the macro state ``before`` into ``after`` (both -dM dumps)."""
    def table(dump: str) -> dict[str, str]:
        out = {}
        for line in dump.split("\n"):
            m = re.match(r"#define ([A-Za-z_]\w*)", line)
            if m:
                out[m.group(1)] = line
        return out

    b, a = table(before), table(after)
    lines = [f"#undef {name}" for name in b if name not in a]
    for name, line in a.items():
        if b.get(name) != line:
            lines += [f"#undef {name}", line]
    return "\n".join(lines) + "\n"


_toolchains: dict[str, str] = {}


def _toolchain(exe: str) -> str:
    """The compiler's --version and torch's version: a dump is only valid for the headers it read."""
    if exe not in _toolchains:
        try:
            v = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=60).stdout
        except (OSError, subprocess.TimeoutExpired):
            v = ""
        try:
            from importlib.metadata import version

            v += " torch " + version("torch")
        except Exception:  # noqa: BLE001 - torch absent: its headers are not in the dump either
            pass
        _toolchains[exe] = v
    return _toolchains[exe]


def _squash(text: str) -> str:
    """``std :: thread`` as ``std::thread``: the rules' spelling, whatever spaces an expansion left."""
    return re.sub(r"\s*::\s*", "::", text)


def _collect(output: str, root: str, own: set[str], exp: Expanded) -> None:
    """Keep the expanded lines that come from the solution's own files, and what they include."""
    cur: str | None = None
    line = 0
    for text in output.split("\n"):
        m = _MARKER.match(text)
        if m:
            number, name, flags = int(m.group(1)), m.group(2), m.group(3).split()
            new = _own_path(re.sub(r"\\(.)", r"\1", name), root, own)
            if "1" in flags and cur is not None and new is None:
                exp.includes.setdefault(cur, set()).add((line, _header_name(name)))
            cur, line = new, number
            continue
        if cur is not None and text.strip():
            exp.lines.setdefault(cur, []).append((line, _squash(text)))
        line += 1


def _own_path(name: str, root: str, own: set[str]) -> str | None:
    if name.startswith("<"):
        return None
    full = os.path.normpath(name if os.path.isabs(name) else os.path.join(root, name))
    rel = os.path.relpath(full, root)
    return rel if rel in own else None


def _header_name(path: str) -> str:
    """Include spelling of a system header path: the part after the include directory."""
    for marker in ("/include/", "/stubs/"):
        if marker in path:
            return path.rsplit(marker, 1)[1]
    return path
