"""The kernelcraft skill for coding agents: a ``SKILL.md`` (front matter with ``name`` and
``description``, then the workflow) plus ``references/solution-format.md`` and
``references/verdicts.md``, in the open Agent Skills layout both Claude Code and Codex read.

Where it goes by default:

- ``claude``: ``~/.claude/skills/kernelcraft``. Claude Code's skills documentation ("Extend
  Claude with skills") names ``~/.claude/skills/<name>/SKILL.md`` for personal skills, available
  in every project, and ``<project>/.claude/skills/<name>/SKILL.md`` for one project.
- ``codex``: ``~/.agents/skills/kernelcraft``, not ``~/.codex/skills``. Codex's skills
  documentation (developers.openai.com/codex/skills, "Where to save skills") lists the scopes
  ``REPO`` (``.agents/skills`` in the working directory, its parents, and the repository root),
  ``USER`` (``$HOME/.agents/skills``), ``ADMIN`` (``/etc/codex/skills``) and ``SYSTEM`` (bundled).
  ``~/.codex/skills`` (``$CODEX_HOME/skills``) was the user location of earlier Codex releases and
  is no longer among the documented ones, so the documented ``USER`` place is the default; pass
  ``dest`` (``--dest DIR``) for any other. (``AGENTS.md`` is Codex's always-loaded instruction
  file, not a skill location.)

The CLI agents (:mod:`kernelcraft.agent.cli_agents`) write the same files into each workspace
at the project-scope place: ``.claude/skills/kernelcraft`` and ``.agents/skills/kernelcraft``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

Target = Literal["claude", "codex"]
SKILL_NAME = "kernelcraft"

# Relative to the user's home directory (``install``) or to a project / workspace root.
_SKILL_HOME = {"claude": Path(".claude") / "skills", "codex": Path(".agents") / "skills"}

_DESCRIPTION = (
    "Write, check and improve a GPU kernel (Triton, CUDA C++ or Python) for a kernelcraft task "
    "folder (definition.json, workloads.jsonl, baseline.py). Use when asked to write or optimize "
    "a kernel for a kernelcraft / FlashInfer-Trace task, or to interpret a kernelcraft eval "
    "verdict. Candidates are judged only by `kernelcraft eval` (the gauntlet)."
)

SKILL_MD = f"""\
---
name: {SKILL_NAME}
description: {_DESCRIPTION}
---

# kernelcraft: write a kernel, let the gauntlet judge it

A *task folder* is a contract: `definition.json` (axes, inputs and outputs by name, dtype and
shape, constraints, and the reference `run`), `workloads.jsonl` (the shapes that are timed),
`baseline.py` (the implementation to beat), `README.md` (the contract in words) and optionally
`contract.toml` (tolerances, limits, timing, promotion). Your job is ONE solution file that is
correct on every allowed shape and faster than the baseline. kernelcraft's *gauntlet*, not you,
decides whether it is.

## Workflow

1. **Read the contract.** Run `kernelcraft task check TASK_DIR` (validates the folder and prints
   the axes, inputs, outputs, constraints, workloads and any warnings) and read the task's
   `README.md`, `definition.json` (the `reference` is the definition of correct) and
   `baseline.py`. Note the input order of `run`, the output shapes and dtypes, the constraints
   (every shape they allow is tested, not only the listed workloads) and the tolerance.
2. **Search before you write.** The team's measured techniques and traps are one command away:

   ```
   kernelcraft knowledge search "WORDS" --op-type OP_TYPE --device "NVIDIA H200"
   kernelcraft knowledge show PAGE
   kernelcraft ledger similar TASK_DIR --device "NVIDIA H200" --json --source
   ```

   Search with the task's op type (from `definition.json`) and the words of what you plan
   (`"fp8 conversion"`, `"row reduction registers"`, `"cuda graph decode"`, `"tf32 precision"`).
   Each page gives a claim, the conditions it was measured under, the evidence (a record and its
   numbers), what differs on other GPUs and how to apply it; its `confidence` says whether it was
   measured here, cited, or is a hypothesis. `ledger similar` lists the best candidates of similar
   tasks (same op type or stage tags) with their strategies and speedups; start from the best one
   whose `entry_fits` is true, or adapt one that is not. (MCP: `knowledge_search`,
   `knowledge_page`, `ledger_similar`.)
3. **Plan before code.** Write down in a few lines the approach (tiling, what stays in registers,
   the reduction order, the launch grid) and why it should be both correct and fast, naming the
   pages or ledger candidates it builds on. The first line is a one-line summary of the strategy.
4. **Write ONE solution file** (see `references/solution-format.md`): a bare `.py` whose
   value-returning `run` launches your own `@triton.jit` kernel(s) is the simplest form.
5. **Evaluate it only with the gauntlet:**

   ```
   kernelcraft eval TASK_DIR SOLUTION --device cuda|cpu --json result.json
   ```

   Use `--device cuda` on a GPU machine, `--device cpu` elsewhere (Triton then runs through the
   Triton interpreter: correctness counts, timings are `cpu-wall` and only indicative; CUDA
   solutions are compiled with nvcc and then skipped for running). Useful options:
   `--no-timing` (correctness only, faster), `--workload UUID_PREFIX` (one workload),
   `--seed N` (replay the inputs of an earlier run, from its record), `--timeout S`.
   A Triton kernel with `tl.dot` inside a loop: also run `kernelcraft profile TASK_DIR SOLUTION
   --device cpu` (no GPU needed): it compiles your kernels for sm_90, reports registers and
   spills, and names a pipelined loop that refills a shared buffer while an async wgmma may still
   read it (a race the CPU interpreter cannot show: results change from call to call on the GPU).
6. **Read the verdict and the feedback**: the printed verdict table, then `result.json`:
   `solutions[0].status`, `gate`, `reason` (it names the failing workload, the worst element and
   by how much, or the compiler's message), `speedup_vs_baseline`, and per workload
   `max_abs_error`, `max_rel_error`, `latency_ms` vs `baseline_latency_ms`. What each status
   means and what to do about it: `references/verdicts.md`.
7. **Iterate**: fix the cause the verdict names (never paper over it), or, once `PASSED`, find
   where time goes (memory traffic, launches, occupancy, block sizes, warps) and try one clear
   improvement at a time, re-evaluating after each change.

## Do not write your own timing or checking code

No benchmark loops, no `time`/`perf_counter`/CUDA-event timers, no comparisons against the
reference, no test scripts, no `if __name__ == "__main__"` blocks: neither in the solution nor
beside it. The gauntlet's numbers are the only trusted ones: it draws fresh inputs from a secret
seed each run, runs the reference in float64, checks holdout shapes you have not seen, guards
every call with integrity checks, and times candidate, baseline and reference interleaved with a
device-wide sync and an L2 flush before each call. A home-made timer or checker measures
something else (a warm cache, reused inputs, only the listed shapes) and will disagree with the
verdict; the verdict is what counts. Besides, the solution's static gate rejects timer, thread,
process, file and harness imports outright.

## Rules the gauntlet enforces

- **No torch compute ops in `run`.** Torch may allocate (`torch.empty`, `empty_like`, ...) and
  take views and metadata (`.shape`, `.stride()`, `.view`, `.numel()`); every other aten op
  (matmul, sum, softmax, copies, arithmetic on tensors) is recorded during the call and
  `REJECTED` (`[torch-compute]`). The computation happens in your own kernel: a launched
  `@triton.jit` kernel or a `__global__` CUDA kernel.
- **Inputs unmodified**: the candidate runs on clones that are compared bit for bit with
  pristine copies afterwards (`[input-mutation]`).
- **Fresh outputs**: return new, plain `torch.Tensor`s that do not alias an input or each other
  (`[output-aliasing]`, `[not-a-plain-tensor]`); nothing cached across calls
  (`[output-caching]`: shapes are re-run with fresh values).
- **Deterministic**: every passing call is repeated on identical inputs and must be
  bit-identical (`[nondeterminism]`); avoid atomics whose order varies.
- **All shapes within the constraints**: holdout shapes are drawn per run over the whole
  range the constraints allow (odd and even sizes, between and above the workloads, several axes
  at once; on a GPU one shape past 2^31 elements: use 64-bit offsets) (`[holdout-shapes]`); inputs
  with outliers (|x| ~ 100-1000) and near-zero rows (`[stress-inputs]`); exact output shapes
  and dtypes; NaN/Inf must agree with the reference.
- **Static rules**: no threads, processes, files, timers, CUDA streams, device syncs, or imports
  of the harness (`kernelcraft`), `os`, `time`, `inspect`, `gc`, `importlib`, `ctypes`, ...

## Tolerances (unless the task's `contract.toml` says otherwise)

Against a float64 reference; an element fails only when its error exceeds *both* atol and
rtol x |reference|: bf16 atol 1e-2 / rtol 1.6e-2, fp16 1e-3 / 2e-3, fp32 1e-5 / 1e-4, integers
exact. Accumulate in float32 and round once at the store.

References: `references/solution-format.md` (the file forms, destination-passing style, CUDA via
a torch extension), `references/verdicts.md` (every status and what to do).
"""

SOLUTION_FORMAT_MD = """\
# Solution formats kernelcraft accepts

`kernelcraft eval TASK_DIR SOLUTION` takes any of these as SOLUTION (the formats are
FlashInfer-Trace's, so a FlashInfer-Trace solution evaluates unchanged).

## 1. A bare `.py` file (simplest)

A module with a **value-returning** `run`: it takes exactly the reference's inputs, positionally
and in the same order as the reference's `run` in `definition.json`, and RETURNS the output (one
tensor) or a tuple of outputs in the definition's output order, with exactly their shapes and
dtypes. It is packed as language `triton` when it contains a `@triton.jit` kernel, else `python`;
the entry point is `<file>::run` and `destination_passing_style` is false.

```python
import torch
import triton
import triton.language as tl


@triton.jit
def _kernel(x_ptr, y_ptr, n, stride_x, stride_y, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n
    x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(y_ptr + row * stride_y + cols, (x * 2.0).to(y_ptr.dtype.element_ty), mask=mask)


def run(x):
    out = torch.empty_like(x)          # allocation: allowed
    rows, n = x.shape                  # metadata: allowed
    _kernel[(rows,)](x, out, n, x.stride(0), out.stride(0), BLOCK=triton.next_power_of_2(n))
    return out
```

Pass strides to the kernel rather than copying inputs; torch in `run` only allocates and takes
views/metadata.

## 2. A FlashInfer-Trace Solution JSON, or a folder with `solution.json`

```json
{
  "name": "my_kernel_v1",
  "definition": "<definition name from definition.json>",
  "author": "you",
  "description": "one line: what it does",
  "spec": {
    "language": "triton",
    "target_hardware": ["NVIDIA_H200"],
    "entry_point": "main.py::run",
    "dependencies": [],
    "destination_passing_style": true
  },
  "sources": [{"path": "main.py", "content": "..."}]
}
```

- `spec.language`: `python`, `triton`, `cuda` or `cpp`. `entry_point`: `file::function`.
- In a folder (`my_kernel/solution.json` plus the source files beside it) `sources` may omit
  `content`: it is read from the file at `path`.
- **`destination_passing_style` defaults to true**, as in FlashInfer-Trace: the outputs are
  preallocated by the harness, poisoned with NaN, and passed to `run` *after* the inputs
  (`run(x, weight, eps, output)`); `run` writes into them and returns nothing. Set it to false for
  a value-returning `run`. Every output element must be written: a NaN left behind fails.

## 3. CUDA / C++: a torch extension

`"language": "cuda"` (or `cpp`) with `"binding": "torch"`: the sources are built with
`torch.utils.cpp_extension` for the device's own compute capability, and the entry point is a
function bound with `PYBIND11_MODULE`. Keep the kernels in a `.cu` file free of torch headers and
the torch binding in a `.cpp` (nvcc then compiles in about 2 s instead of 90 s):

```json
"spec": {"language": "cuda", "entry_point": "binding.cpp::run",
         "destination_passing_style": false, "binding": "torch", "dependencies": []},
"sources": [{"path": "kernel.cu"}, {"path": "binding.cpp"}]
```

- `kernel.cu`: `#include <cuda_runtime.h>` (and `cuda_bf16.h` etc.), the `__global__` kernel(s)
  and a plain C++ launcher, e.g. `void my_launch(const __nv_bfloat16* x, ..., cudaStream_t s)`.
- `binding.cpp`: `#include <torch/extension.h>`; declares the launcher, defines
  `torch::Tensor run(torch::Tensor x, ...)` that checks dtypes/shapes/contiguity, allocates the
  output with `torch::empty_like` / `torch::empty`, launches on
  `c10::cuda::getCurrentCUDAStream()`, checks `cudaGetLastError()`, and returns the output; then
  `PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("run", &run); }`.
- Python scalar inputs arrive as `double` (floats) or `int64_t` (ints). Create no streams and
  never synchronize the device.
- On `--device cpu` a CUDA solution is compiled (so compiler errors show up as
  `COMPILE_ERROR`) and then `SKIPPED` for running.

## 4. CUDA in about a second: `"binding": "kernelcraft"`

A torch extension build takes 25-90 s. For a fast loop write `extern "C" __global__` kernels in
`.cu` files (no torch headers, no host code) and launch them from a Python entry file:

```json
"spec": {"language": "cuda", "entry_point": "launch.py::run",
         "destination_passing_style": false, "binding": "kernelcraft", "dependencies": []},
"sources": [{"path": "kernel.cu"}, {"path": "launch.py"}]
```

- The harness compiles each `.cu` with `nvcc -cubin` for the device (cached by content) and puts a
  global `kernels` into `launch.py` before running it; do not import kernelcraft.
- `kernels.NAME(grid, block, *args, shared_mem=0)` launches on torch's current stream: tensors go
  as device pointers (contiguous, on the GPU), Python ints as the kernel's integer type, floats as
  `float`; the argument count and kinds are checked against the compiled kernel.
- Example: `tasks/rmsnorm/solutions/cuda_cubin/`.
"""

VERDICTS_MD = """\
# Verdicts: what each status means and what to do

`kernelcraft eval ... --json result.json` records, per solution, `status`, `gate` (the gate that
stopped it; empty when PASSED), `reason`, `speedup_vs_baseline` and per-workload details.
The gates run in order and the first failure decides: **static** -> **build** -> **correctness**
(every workload; shape, dtype and values against a float64 reference, with integrity checks
around every call) -> **generalization** (the first shape again with fresh values, and holdout
shapes drawn per run within the constraints) -> **timing** (candidate, baseline and reference
interleaved; then every workload re-checked on fresh values). Each candidate runs in a fresh
worker process with a deadline per phase.

| status | means | what to do |
|---|---|---|
| `PASSED` | every gate passed; `speedup_vs_baseline` is the weighted geometric mean of per-workload speedups | Look at the per-workload `latency_ms` vs `baseline_latency_ms`; improve where it loses (memory traffic, launch overhead, occupancy, block sizes, warps), one change at a time, re-evaluating each. It is promotable at a speedup >= the contract's minimum (1.0 by default). |
| `COMPILE_ERROR` | the build failed: Triton/Python import or syntax error, nvcc/C++ error; `reason` holds the compiler's message | Read the first error in `reason` (file, line) and fix it; check the entry point name and that `run` exists. |
| `RUNTIME_ERROR` | the call raised, the worker died (a segfault or CUDA fault names the signal), or the reference failed; `gate` says where | Read the traceback in `reason`: out-of-bounds loads/stores (missing masks), wrong argument count or order, wrong pointer dtypes, grid too large, shared memory or register over-subscription. Gate `generalization`: a holdout shape broke it; handle every shape the constraints allow. |
| `TIMEOUT` | a phase exceeded its deadline (a hang, an endless loop, or far too slow) | Check loop bounds and grid computation; avoid spinning on flags; make sure every program terminates for every shape, including size 1 and odd sizes. |
| `INCORRECT_SHAPE` | an output's shape differs from the reference's | Return exactly the definition's output shapes (no extra or squeezed dimensions), in the output order. |
| `INCORRECT_DTYPE` | an output's dtype differs from the reference's | Allocate outputs in the definition's dtype; cast at the store (`.to(y_ptr.dtype.element_ty)`). |
| `INCORRECT_NUMERICAL` | some elements exceed both atol and rtol x \\|ref\\| (or NaN/Inf disagree); `reason` names the workload, the worst element, the values and by how much | Compare the math with the reference line by line: accumulate in float32, round once; check masks (`other=` values in reductions), strides, eps placement, the reduction axis, and tails when the size is not a multiple of the block. A failure only on holdouts (gate `generalization`) means a hard-coded shape. |
| `REJECTED` | a gate other than correctness failed; `gate` names it and `reason` starts with the class in brackets | See below. Fix the cause; do not try to hide it. |
| `SKIPPED` | cannot run on this device (e.g. a CUDA solution on `--device cpu`, or a workload larger than `--cpu-max-mb` on CPU), with the reason | Not a failure of the kernel. Evaluate on a GPU (`--device cuda`) for a real verdict. |

## REJECTED, by gate

- gate `static`: the source is not what it claims (no launched `@triton.jit` / `__global__`
  kernel), or it uses threads, processes, files, timers, CUDA streams, device syncs, or imports a
  forbidden module (`kernelcraft`, `os`, `time`, `inspect`, `gc`, `importlib`, `ctypes`, `runpy`,
  `types`, ...) or a forbidden name from a library (`from torch import sys`, `from torch.cuda
  import Stream`, `torch._dynamo`). Any reference to `exec`, `eval`, `getattr` and the like counts,
  not only a call; a coding cookie other than UTF-8 is `[encoding]`; a Triton/Python solution holds
  only `.py` files; C++/CUDA is checked after the preprocessor too (token pasting does not hide a
  name) and may not call the Python C-API. Remove the offending code; launch your own kernel from `run`.
- gate `integrity`, by class in `reason`:
  - `[torch-compute]`: torch compute ops ran inside `run` (the reason lists them). Move that work
    into your kernel; torch may only allocate and take views/metadata.
  - `[input-mutation]`: an input was modified. Write only to outputs you allocated.
  - `[output-aliasing]`: an output shares storage with an input or another output. Allocate
    fresh outputs.
  - `[not-a-plain-tensor]`: an output is a tensor subclass or not a tensor. Return plain tensors.
  - `[output-caching]`: results were reused across calls. Compute on every call.
  - `[nondeterminism]`: two calls on identical inputs differed. Remove order-dependent atomics
    and uninitialised reads; make reductions fixed-order. The same line under an
    `INCORRECT_NUMERICAL` verdict means the wrong values changed from call to call: a race or
    an unwritten buffer, not rounding; fix that before touching the arithmetic.
  - `[threads]`: a thread was left running after the call. Do all work inside the call.
- gate `generalization` with `[holdout-shapes]`: correct on the listed workloads but not on other
  allowed shapes. Remove shape assumptions; mask tails; derive blocks from the actual sizes.
"""

REFERENCES = {"solution-format.md": SOLUTION_FORMAT_MD, "verdicts.md": VERDICTS_MD}


def skill_files() -> dict[str, str]:
    """The skill's files, by path relative to the skill folder."""
    files = {"SKILL.md": SKILL_MD}
    files.update({f"references/{name}": text for name, text in REFERENCES.items()})
    return files


def project_skill_dir(target: Target, root: Path) -> Path:
    """Where ``target`` looks for a project-scope skill named kernelcraft under ``root``."""
    return Path(root) / _check(target) / SKILL_NAME


def default_dest(target: Target) -> Path:
    """The documented per-user place (see the module docstring)."""
    return Path.home() / _check(target) / SKILL_NAME


def _check(target: str) -> Path:
    try:
        return _SKILL_HOME[target]
    except KeyError:
        raise ValueError(f"unknown skill target {target!r}; use 'claude' or 'codex'") from None


def write_skill(dest: Path) -> Path:
    """Write the skill's files into ``dest`` (created; existing skill files replaced)."""
    dest = Path(dest)
    for rel, text in skill_files().items():
        path = dest / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return dest


def install(target: Target, dest: Path | None = None) -> Path:
    """Install the kernelcraft skill for ``target`` into ``dest`` (default: the documented
    per-user place) and return the skill folder."""
    folder = Path(dest).expanduser() if dest is not None else default_dest(target)
    _check(target)
    return write_skill(folder)
