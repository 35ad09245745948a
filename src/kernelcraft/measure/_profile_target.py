"""The process ncu profiles: build one solution, check it once, warm it up, call it in a profiler range.

``python -m kernelcraft.measure._profile_target JOB.json``. Candidate code runs only here, never in
the kernelcraft process that prints the summary. The job names the task, the solution record, the
workload, the device and where to write the result; the result (JSON) says whether it built, how
the output compared with the reference, and the Triton kernels' compiled resources.

Only the calls between ``torch.cuda.profiler.start()`` and ``stop()`` are profiled (ncu runs with
``--profile-from-start off``): the build, Triton's compilation and autotuning, input generation and
the correctness check all happen before it. Exit codes: 0 profiled, 3 the solution failed to build
or run (the result says how).
"""

from __future__ import annotations

import importlib.util
import os
import sys
import tempfile
from pathlib import Path

from kernelcraft._target import target_main, write_result

WARMUP_CALLS = 3
PROFILED_CALLS = 3


def _triton_kernels(fn) -> list[dict]:
    """Compiled resources of the Triton kernels the solution launched, from Triton's own cache
    (registers and spills come from the loaded binary; shared memory from the compile metadata)."""
    try:
        from triton.runtime.jit import JITFunction
    except Exception:  # noqa: BLE001 - no triton, or a broken one: nothing to report
        return []
    package = (getattr(fn, "__module__", "") or "").split(".")[0]
    if not package:
        return []
    found, seen = [], set()
    for mod_name, module in list(sys.modules.items()):
        if module is None or not (mod_name == package or mod_name.startswith(package + ".")):
            continue
        for obj in list(vars(module).values()):
            jit = obj
            for _ in range(4):  # Autotuner and Heuristics hold the JITFunction in .fn
                if isinstance(jit, JITFunction) or jit is None:
                    break
                jit = getattr(jit, "fn", None)
            if not isinstance(jit, JITFunction) or id(jit) in seen:
                continue
            seen.add(id(jit))
            for cache in list(getattr(jit, "device_caches", {}).values()):
                compiled = cache[0] if isinstance(cache, tuple) and cache and isinstance(cache[0], dict) else {}
                for kernel in list(compiled.values()):
                    meta = getattr(kernel, "metadata", None)
                    found.append({"name": getattr(kernel, "name", getattr(jit, "__name__", "?")),
                                  "n_regs": getattr(kernel, "n_regs", None),
                                  "n_spills": getattr(kernel, "n_spills", None),
                                  "shared_bytes": getattr(meta, "shared", None),
                                  "num_warps": getattr(meta, "num_warps", None)})
    return found


def run(job: dict) -> int:
    device = job["device"]
    on_gpu = device.startswith("cuda")
    if not on_gpu:
        # Only tests run the target without a GPU (under a stand-in for ncu): Triton then needs its
        # interpreter, switched on before anything imports triton.
        os.environ["TRITON_INTERPRET"] = "1"
    import torch

    from kernelcraft.gauntlet.judge import Judge, LocalSubject
    from kernelcraft.solution.build import BuildError, CannotRun, build
    from kernelcraft.solution.model import Solution
    from kernelcraft.task.dtypes import torch_dtype
    from kernelcraft.task.inputs import make_inputs
    from kernelcraft.task.loader import load_task

    torch.set_grad_enabled(False)
    result: dict = {"status": "STARTED", "device_name": device}
    if on_gpu:
        torch.cuda.set_device(torch.device(device).index or 0)
        result["device_name"] = torch.cuda.get_device_name(device)
    task = load_task(job["task_root"])
    d = task.definition
    workload = task.workload(job["workload_uuid"])
    workdir = Path(tempfile.mkdtemp(prefix="kc_profile_"))

    # Trusted code first: the reference is imported before any candidate code runs.
    ref_file = workdir / "kc_reference.py"
    ref_file.write_text(d.reference)
    spec = importlib.util.spec_from_file_location("kc_reference", ref_file)
    ref_module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ref_module)

    solution = Solution.model_validate_json(Path(job["solution_path"]).read_text())
    try:
        fn = build(solution, device, workdir)
    except (BuildError, CannotRun) as e:
        write_result(job["result_path"], result | {"status": "COMPILE_ERROR" if isinstance(e, BuildError) else "SKIPPED",
                                             "reason": str(e)})
        return 3
    dps = solution.spec.destination_passing_style

    # One checked call: a profile of a wrong kernel is worth knowing about, and it compiles Triton.
    # In this process, beside the candidate: a diagnostic for the person profiling, never a verdict
    # (verdicts come from `eval`, whose judge never shares a process with candidate code).
    judge = Judge(task, None, ref_module.run, None, device, job["seed"])
    judge.subject = LocalSubject(fn, judge, dps=dps)
    check = judge.check(workload)
    result["check"] = {k: check.get(k) for k in ("status", "gate", "reason", "max_abs_error", "max_rel_error")}
    if check["status"] in ("COMPILE_ERROR", "RUNTIME_ERROR") and check.get("gate") != "reference":
        write_result(job["result_path"], result | {"status": check["status"], "reason": check.get("reason", "")})
        return 3

    axes = d.axis_values(workload.axes)
    args = make_inputs(task, workload, job["seed"], device)
    outs = [torch.empty(d.shape(s, axes), dtype=torch_dtype(s.dtype), device=device)
            for s in d.outputs.values()] if dps else []

    def call():
        return fn(*args, *outs)

    def sync():
        if on_gpu:
            torch.cuda.synchronize()

    for _ in range(WARMUP_CALLS):
        call()
    sync()
    result["triton_kernels"] = _triton_kernels(fn)
    if on_gpu:
        torch.cuda.profiler.start()  # cudaProfilerStart: ncu --profile-from-start off begins here
    for _ in range(PROFILED_CALLS):
        call()
    sync()
    if on_gpu:
        torch.cuda.profiler.stop()
    write_result(job["result_path"], result | {"status": "PROFILED", "profiled_calls": PROFILED_CALLS})
    return 0


if __name__ == "__main__":
    target_main(run)
