"""The process ``task check`` runs a task's own code in: the reference and ``baseline.py`` on the
smallest workload (:mod:`kernelcraft.task.runcheck`).

``python -m kernelcraft.task._runcheck_target JOB.json``. Task code is trusted, but it can still
hang, crash the interpreter or call ``sys.exit``: in a process of its own none of that takes the
``kernelcraft`` command down with it. The result (JSON) holds one entry per function, ``reference``
and ``baseline``, each with a ``status``: ``ok``, ``error`` (with ``stage``: import, signature, call,
outputs, or memory: an allocation failed under the process's memory limit; and ``reason``),
``unavailable`` (the baseline imports a module this machine lacks: ``module``) or ``needs_gpu`` (the
baseline raised a CUDA error on a machine without a GPU). Before each function it writes that
function's name to the job's ``stage_path``: a process killed mid-call leaves the parent where it was.
"""

from __future__ import annotations

import importlib.util
import inspect
import os
import traceback
from pathlib import Path

from kernelcraft._memlimit import out_of_memory
from kernelcraft._target import target_main, write_result

_GPU_WORDS = ("cuda", "nvidia", "gpu")


def _arity_problem(fn, n_inputs: int, names: list[str]) -> str:
    """Why ``fn`` cannot be called with the definition's inputs, positionally; "" when it can."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return ""  # a builtin or C function: the call itself will say
    try:
        sig.bind(*range(n_inputs))
    except TypeError as e:
        return f"run{sig} cannot take the definition's {n_inputs} inputs ({', '.join(names)}): {e}"
    return ""


def _tail(limit: int = 1500) -> str:
    return traceback.format_exc()[-limit:].strip()


def _outputs_problem(out, task, axes: dict) -> str:
    """The returned value against the definition's outputs: their number and shapes."""
    import torch

    from kernelcraft.gauntlet.compare import normalize_outputs

    try:
        outs = normalize_outputs(out, task.definition)
    except TypeError as e:
        return str(e)
    values = task.definition.axis_values(axes)
    for (name, spec), got in zip(task.definition.outputs.items(), outs, strict=True):
        want = task.definition.shape(spec, values)
        if want is None or not isinstance(got, torch.Tensor):
            continue
        if tuple(got.shape) != tuple(want):
            return f"output {name!r} has shape {list(got.shape)}; the definition says {list(want)}"
    return ""


def _call(label: str, fn, args, task, axes: dict) -> dict:
    import torch

    names = list(task.definition.inputs)
    why = _arity_problem(fn, len(names), names)
    if why:
        return {"status": "error", "stage": "signature", "reason": why}
    try:
        with torch.no_grad():
            out = fn(*args)
    except Exception as e:  # noqa: BLE001 - whatever the task's code raises is what check reports
        if out_of_memory(f"{type(e).__name__}: {e}"):
            return {"status": "error", "stage": "memory", "reason": _tail()}
        text = f"{type(e).__name__}: {e}".lower()
        if label == "baseline" and not torch.cuda.is_available() and any(w in text for w in _GPU_WORDS):
            return {"status": "needs_gpu", "reason": f"{type(e).__name__}: {e}"[:500]}
        return {"status": "error", "stage": "call", "reason": _tail()}
    why = _outputs_problem(out, task, axes)
    if why:
        return {"status": "error", "stage": "outputs", "reason": why}
    return {"status": "ok"}


def _reference(task, small) -> dict:
    import torch

    from kernelcraft.task.inputs import make_inputs

    namespace: dict = {}
    try:
        exec(compile(task.definition.reference, "definition.json:reference", "exec"), namespace)  # noqa: S102
    except Exception:  # noqa: BLE001
        return {"status": "error", "stage": "import", "reason": _tail()}
    fn = namespace.get("run")
    if not callable(fn):
        return {"status": "error", "stage": "import", "reason": "the reference defines no function `run`"}
    # As the gauntlet runs it: floating inputs in float64 (the judge's higher precision).
    try:
        args = [a.to(torch.float64) if isinstance(a, torch.Tensor) and a.is_floating_point() else a
                for a in make_inputs(task, small, 0, "cpu")]
    except (MemoryError, RuntimeError) as e:
        if out_of_memory(f"{type(e).__name__}: {e}"):
            return {"status": "error", "stage": "memory", "reason": _tail()}
        raise
    return _call("reference", fn, args, task, small.axes)


def _baseline(task, small) -> dict:
    from kernelcraft.task.inputs import make_inputs

    spec = importlib.util.spec_from_file_location("kc_baseline_check", task.baseline_path)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except ModuleNotFoundError as e:
        return {"status": "unavailable", "module": e.name or str(e), "reason": f"{type(e).__name__}: {e}"}
    except Exception:  # noqa: BLE001
        return {"status": "error", "stage": "import", "reason": _tail()}
    fn = getattr(module, "run", None)
    if not callable(fn):
        return {"status": "error", "stage": "import", "reason": "baseline.py defines no function `run`"}
    device = "cuda" if _cuda() else "cpu"
    try:
        args = make_inputs(task, small, 0, device)
    except (MemoryError, RuntimeError) as e:
        if out_of_memory(f"{type(e).__name__}: {e}"):
            return {"status": "error", "stage": "memory", "reason": _tail()}
        raise
    return _call("baseline", fn, args, task, small.axes)


def _cuda() -> bool:
    import torch

    return torch.cuda.is_available()


def run(job: dict) -> int:
    if "TRITON_INTERPRET" not in os.environ and not _cuda():
        os.environ["TRITON_INTERPRET"] = "1"  # a Triton baseline on a CPU machine: before triton loads
    from kernelcraft.task.loader import load_task
    from kernelcraft.task.runcheck import smallest_workload

    task = load_task(Path(job["task_root"]))
    small = smallest_workload(task)
    stage = Path(job["stage_path"])
    stage.write_text("reference")  # a process killed mid-call leaves the parent this to say where
    reference = _reference(task, small)
    stage.write_text("baseline")
    result = {"workload": small.uuid, "axes": small.axes, "reference": reference, "baseline": _baseline(task, small)}
    write_result(job["result_path"], result)
    return 0


if __name__ == "__main__":
    target_main(run)
