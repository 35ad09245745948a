"""The ``[validate]`` gate: a request's own verifier command (KDA's ``python benchmark.py --impl
FILE --skip-timing``) as one more gate, after kernelcraft's own checks.

The command imports the candidate, so it never runs in the judge: the judge prepares a folder in its
runner's scratch (the runner's landlock rules forbid reading the project folder): a copy of the task
folder (``{task}``) and the solution's sources with an entry file a request's benchmark can import
(``{solution}``: a module exposing ``run`` with the definition's inputs, returning its outputs, and
every other name of the solution's entry file, e.g. a deployment form ``Pool`` / ``step_inplace``).
The runner runs the command as its child, inside its sandbox (op ``validate``), and reports the exit
code and the output's tail. Exit 0 within ``timeout_s`` passes.

It is an extra gate and can only reject: the command runs in the candidate's process tree, so a
candidate can make it exit 0 early (``os._exit(0)`` on import). Kernelcraft's own gates, which the
candidate cannot reach, are what a PASSED verdict rests on.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
from pathlib import Path

from kernelcraft.solution.model import Solution
from kernelcraft.task.loader import Task

PACKAGE = "kc_solution"
SHIM = "kc_validate_impl.py"
MAX_TASK_BYTES = 256 << 20  # a copy of the task folder per candidate: large data files have no place in it
SKIP_DIRS = {".git", "__pycache__", ".kernelcraft", "solutions"}

_SHIM = '''"""Written by kernelcraft for the [validate] gate: the solution's entry point as a request's benchmark
imports it (a module with run(*inputs) -> outputs, plus every other name of the entry file)."""
import importlib
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
_mod = importlib.import_module({module!r})
globals().update({{k: v for k, v in vars(_mod).items() if not k.startswith("__")}})
_fn = getattr(_mod, {symbol!r})
_DPS = {dps!r}
_DEF = {definition!r}


def run(*inputs):
    if not _DPS:
        return _fn(*inputs)
    # destination-passing style: allocate the outputs the definition names, as the harness does
    import torch

    axes = {{n: a["value"] for n, a in _DEF["axes"].items() if a["type"] == "const"}}
    for spec, x in zip(_DEF["inputs"].values(), inputs):
        if spec["shape"] is not None:
            axes.update(zip(spec["shape"], x.shape))
    dev = next(x.device for x in inputs if isinstance(x, torch.Tensor))
    outs = [torch.empty([axes[a] for a in s["shape"]], dtype=getattr(torch, s["dtype"]), device=dev)
            for s in _DEF["outputs"].values()]
    _fn(*inputs, *outs)
    return outs[0] if len(outs) == 1 else tuple(outs)
'''


class CannotValidate(Exception):
    """The folder for the command could not be prepared (the task's fault, not the candidate's)."""


def _copy_task(src: Path, dest: Path) -> None:
    total = 0
    for dirpath, dirnames, filenames in os.walk(src):
        dirnames[:] = [d for d in dirnames if d not in SKIP_DIRS]
        rel = Path(dirpath).relative_to(src)
        (dest / rel).mkdir(parents=True, exist_ok=True)
        for name in filenames:
            f = Path(dirpath) / name
            if f.is_symlink() or not f.is_file():
                continue
            total += f.stat().st_size
            if total > MAX_TASK_BYTES:
                raise CannotValidate(f"the task folder {src} holds more than {MAX_TASK_BYTES >> 20} MiB; "
                                     "[validate] copies it for every candidate")
            shutil.copyfile(f, dest / rel / name)


def _chown_tree(root: Path, uid: int, gid: int) -> None:
    for dirpath, _, filenames in os.walk(root):
        os.chown(dirpath, uid, gid)
        for name in filenames:
            os.chown(Path(dirpath) / name, uid, gid)


def prepare(task: Task, solution: Solution, scratch: Path) -> tuple[list[str], Path]:
    """(argv, cwd) of the command, with its folder written under ``scratch``."""
    spec = task.contract.validate_
    root = scratch / "validate"
    shutil.rmtree(root, ignore_errors=True)
    (root / "solution" / PACKAGE).mkdir(parents=True)
    _copy_task(task.root, root / "task")
    pkg = root / "solution" / PACKAGE
    for src in solution.sources:
        f = pkg / src.path
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(src.content)
    (pkg / "__init__.py").touch()
    module = PACKAGE + "." + solution.spec.entry_file.removesuffix(".py").replace("/", ".")
    d = task.definition
    definition = {"axes": {n: a.model_dump() for n, a in d.axes.items()},
                  "inputs": {n: {"shape": s.shape, "dtype": s.dtype} for n, s in d.inputs.items()},
                  "outputs": {n: {"shape": s.shape, "dtype": s.dtype} for n, s in d.outputs.items()}}
    shim = root / "solution" / SHIM
    shim.write_text(_SHIM.format(module=module, symbol=solution.spec.entry_symbol,
                                 dps=solution.spec.destination_passing_style, definition=json.loads(json.dumps(definition))))
    st = scratch.stat()
    if os.geteuid() == 0 and st.st_uid != 0:
        _chown_tree(root, st.st_uid, st.st_gid)  # the runner's uid (the sandbox dropped root) may write there
    values = {"task": str(root / "task"), "solution": str(shim), "solution_dir": str(pkg), "python": sys.executable}
    argv = shlex.split(spec.command.format(**{k: shlex.quote(v) for k, v in values.items()}))
    if argv and argv[0] in ("python", "python3"):
        argv[0] = sys.executable  # the interpreter kernelcraft runs under: torch, triton, the candidate's imports
    return argv, root


def supported(solution: Solution) -> str:
    """"" when the command can import this solution; else why the gate does not apply."""
    if solution.spec.language in ("python", "triton"):
        return ""
    return (f"a {solution.spec.language} solution is not importable by a request's benchmark as a Python file; "
            "the [validate] gate applies to python and triton solutions")


# what torch / the CUDA runtime print when an allocation fails: inside the request's verifier that is the shared
# device's state (other jobs' caching allocators at a holdout's size), not a verdict on the candidate
OUT_OF_MEMORY = ("CUDA out of memory", "OutOfMemoryError", "CUDA_ERROR_OUT_OF_MEMORY", "cudaErrorMemoryAllocation")


def verdict(command: str, exit_code: int | None, timed_out: bool, output_tail: str, timeout_s: float,
            started: bool = True, error: str = "") -> dict:
    tail = "".join(c if c.isprintable() or c in "\n\t" else "?" for c in output_tail).strip()[-3000:]
    base = {"command": command, "exit_code": exit_code, "output_tail": tail}
    if not started:
        return {**base, "status": "RUNTIME_ERROR", "reason": (
            f"[request-validation] the validation command {command!r} could not start: {error} "
            "(contract.toml [validate] command: the task's fault, not the candidate's)")}
    if timed_out:
        return {**base, "status": "TIMEOUT", "reason": (
            f"[request-validation] {command!r} did not finish within {timeout_s:g} s "
            "(contract.toml [validate] timeout_s); its output ended with:\n" + tail)}
    if exit_code != 0 and any(m in tail for m in OUT_OF_MEMORY):
        # not PASSED either: a candidate that exhausts memory on purpose gains nothing from this
        return {**base, "status": "RUNTIME_ERROR", "out_of_memory": True, "reason": (
            f"[request-validation] the request's own verifier {command!r} ran out of GPU memory (exit code "
            f"{exit_code}): the device's memory was taken, possibly by other jobs on the same GPU, so this is no "
            "verdict on the candidate; re-run it with fewer jobs per GPU (--jobs 1). Its output ended with:\n" + tail)}
    if exit_code != 0:
        return {**base, "status": "REJECTED", "reason": (
            f"[request-validation] the request's own verifier {command!r} exited with code {exit_code}; "
            "its output ended with:\n" + tail)}
    return {**base, "status": "PASSED", "reason": ""}
