"""The process compute-sanitizer watches: build one solution and call it once per workload.

``python -m kernelcraft.gauntlet._sanitize_target JOB.json``. Candidate code runs only here, never
in the process that records results. The parent (:mod:`kernelcraft.gauntlet.sanitize`) starts this
under ``compute-sanitizer --tool memcheck|racecheck|initcheck`` with PyTorch's caching allocator
switched off (``PYTORCH_NO_CUDA_MEMORY_CACHING=1``): every tensor is then its own ``cudaMalloc``, so
a read one element past an input is out of bounds for memcheck (inside a cached block it would not
be), and a freshly allocated output is uninitialised memory for initcheck.

Each workload gets fresh inputs; destination-passing outputs are allocated with ``torch.empty``
(never written before the candidate runs). The result JSON says whether it built and how many calls
ran. Exit codes: 0 every call ran, 3 the solution failed to build or raised.
"""

from __future__ import annotations

import os
import tempfile
import traceback
from pathlib import Path

from kernelcraft._target import target_main, write_result


def run(job: dict) -> int:
    device = job["device"]
    if not device.startswith("cuda"):
        # Only tests run the target without a GPU (under a stand-in for compute-sanitizer).
        os.environ["TRITON_INTERPRET"] = "1"
    import torch

    from kernelcraft.solution.build import BuildError, CannotRun, build
    from kernelcraft.solution.model import Solution
    from kernelcraft.task.dtypes import torch_dtype
    from kernelcraft.task.inputs import make_inputs
    from kernelcraft.task.loader import load_task
    from kernelcraft.task.workload import Workload

    torch.set_grad_enabled(False)
    if device.startswith("cuda"):
        torch.cuda.set_device(torch.device(device).index or 0)
    task = load_task(job["task_root"])
    d = task.definition
    solution = Solution.model_validate_json(Path(job["solution_path"]).read_text())
    workdir = Path(tempfile.mkdtemp(prefix="kc_sanitize_"))
    try:
        fn = build(solution, device, workdir)
    except (BuildError, CannotRun) as e:
        write_result(job["result_path"], {"status": "COMPILE_ERROR" if isinstance(e, BuildError) else "SKIPPED",
                                    "reason": str(e)})
        return 3
    dps = solution.spec.destination_passing_style
    calls = []
    for raw in job["workloads"]:
        w = Workload.model_validate(raw)
        axes = d.axis_values(w.axes)
        args = make_inputs(task, w, job["seed"], device)
        outs = [torch.empty(d.shape(s, axes), dtype=torch_dtype(s.dtype), device=device)
                for s in d.outputs.values()] if dps else []
        try:
            fn(*args, *outs)
            if device.startswith("cuda"):
                torch.cuda.synchronize()
        except BaseException:  # noqa: BLE001 - reported, with the workload, to the parent
            write_result(job["result_path"], {"status": "RUNTIME_ERROR", "workload": w.uuid, "axes": w.axes,
                                        "reason": traceback.format_exc()[-4000:], "calls": calls})
            return 3
        calls.append({"uuid": w.uuid, "axes": w.axes})
    write_result(job["result_path"], {"status": "RAN", "calls": calls})
    return 0


if __name__ == "__main__":
    target_main(run)
