"""KernelBench problems -> kernelcraft task folders.

A KernelBench problem (github.com/ScalingIntelligence/KernelBench) is one Python file: ``class
Model(nn.Module)`` with ``__init__(*init_inputs)`` and ``forward(*inputs)``, module-level constants
(``batch_size = 16``), ``get_inputs()`` returning the forward arguments (usually tensors built from
those constants) and ``get_init_inputs()`` returning the constructor arguments.

:func:`import_kernelbench` turns each problem into ``out_dir/<problem stem>/``:

- ``definition.json``: inputs are forward()'s arguments (named after its parameters), then the
  model's parameters and buffers (``named_parameters()`` / ``named_buffers()``, ``.`` -> ``__``).
  Axes come from the module's int constants: each is changed in turn (halved, doubled) by patching
  the module's globals, ``get_inputs()`` re-run on the meta device, and the input dims that follow it
  get an axis of its name. Such an axis is ``var`` when changing the constant leaves
  ``get_init_inputs()`` alone, changes no dim other than those equal to it, keeps ``forward()``
  working (run on the meta device, or on the CPU when meta cannot) and every output dim is either
  constant or equal to one var axis in every shape tried; otherwise it is ``const``. Every other dim
  is a const axis ``<input>_d<k>`` / ``<output>_d<k>``. The reference embeds the problem's source
  verbatim and runs ``torch.func.functional_call(model, {parameters and buffers}, args)``.
- ``workloads.jsonl``: the problem's own shapes plus a smaller and a larger variant (every var axis
  halved / doubled together; one axis at a time where the joint variant does not run), and, when none
  of those fits a CPU run (16 MB of inputs and outputs, ``eval --cpu-max-mb``'s default; the
  parameters and buffers are inputs too and count), one scaled down further. Forward arguments are ``random``, drawn by the problem's own ``get_inputs()``
  (``inputs.py``, named by ``contract.toml [inputs] generator``): the module constants are set to the
  workload's axis values and it runs under ``torch.manual_seed`` of the workload's seed, as KernelBench
  seeds it, so triangular, symmetric, normalised and +-1 inputs keep their structure. Parameters and
  buffers come from ``weights.safetensors``: ``torch.manual_seed(seed)``, then ``Model(*get_init_inputs())``.
- ``contract.toml``: the generator (``[inputs] generator = "inputs.py::make_inputs"`` and ``axes``, the
  problem's var constants it is called with: :mod:`kernelcraft.task.generated`, the mechanism a KDA
  request's ``benchmark.py`` uses too), and each floating output's tolerance with the rule that chose it
  (:mod:`._tolerance`: KernelBench's 1e-4, widened to 4x the problem's own fp32 error against float64
  where that is larger; problems whose fp32 forward cannot be judged, or whose output a constant
  would match, are refused with the reason).
- ``baseline.py``: the problem's own PyTorch forward, same calling convention as the reference
  (TF32 off on a GPU, as fp32 means).
- ``README.md``: provenance (path, sha256, date, seed), the contract in words, why each axis is what
  it is.

Shapes and dtypes are probed on the meta device (no memory), so a problem with gigabytes of inputs
is analysed in megabytes; only the check runs real tensors, on the smallest workload. Each problem is
converted in a process of its own under a memory limit (:mod:`._isolate`), one problem's failure
(an exception, running out of memory, a hang) is that problem's reason and never another's, the
report is written line by line as each problem finishes, and a dead conversion's temporary folder
is removed. A folder is swapped into place only once it is complete; an existing one is replaced,
never deleted first.

The problem file is executed in a fresh module namespace under ``torch.manual_seed(seed)`` (in the
importer and again in the generated reference, baseline and generator, so module-level random tensors
agree). Before a folder is kept, it must load, and its baseline must run on the check workload, twice
with equal results (a forward using dropout or random numbers is refused), without writing its inputs
(or, if it does, those inputs are cloned first) and without returning views of them (cloned if it does).
"""

from __future__ import annotations

import json
import os
import signal
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor, as_completed
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from ._isolate import Outcome, kill_all, remove_leftovers, run_isolated

__all__ = ["DEFAULT_MAX_MEMORY_MB", "DEFAULT_TIMEOUT_S", "ImportReport", "import_kernelbench"]

DEFAULT_MAX_MEMORY_MB = 8192  # data (heap, private writable maps) per problem's conversion: RLIMIT_DATA
DEFAULT_TIMEOUT_S = 900.0  # per problem: a level-3 network's weights and check run take a minute on 2 cores
REPORT_NAME = "kernelbench_import.jsonl"


@dataclass
class ImportReport:
    converted: list[Path] = field(default_factory=list)  # the task folders written
    failures: list[tuple[Path, str]] = field(default_factory=list)  # (problem file, why it was not converted)
    warnings: list[str] = field(default_factory=list)  # converted, but worth a look
    report_path: Path | None = None  # one JSON line per problem, written as each finished


@contextmanager
def _terminate_as_interrupt() -> Iterator[None]:
    """SIGTERM (a scheduler's kill, a timeout) unwinds like Ctrl-C: each running child's process group is
    killed and its temporary folder removed (run_isolated's cleanup), instead of orphaning the children."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")

    old = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    except BaseException:
        kill_all()  # children of worker threads too; their threads then clean up their folders
        raise
    finally:
        signal.signal(signal.SIGTERM, old)


def _files(paths: list[Path], report: ImportReport) -> list[Path]:
    files: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            files += sorted(f for f in p.glob("*.py") if f.is_file())
        elif p.is_file():
            files.append(p)
        else:
            report.failures.append((p, "not found (give KernelBench problem files, or folders of them)"))
    return files


def import_kernelbench(paths: list[Path], out_dir: Path, seed: int = 0, device: str = "cpu", workers: int = 1,
                       max_memory_mb: int = DEFAULT_MAX_MEMORY_MB, timeout_s: float = DEFAULT_TIMEOUT_S,
                       on_result: Callable[[Outcome], None] | None = None) -> ImportReport:
    """Convert KernelBench problem files (a folder means every ``*.py`` in it, sorted) into task
    folders under ``out_dir``; parameters are made under ``torch.manual_seed(seed)``. Each problem runs
    in its own process (``max_memory_mb`` of data: RLIMIT_DATA, ``timeout_s``), ``workers`` at a time, on
    ``device`` for its check run. ``out_dir/kernelbench_import.jsonl`` gets one line per problem as it
    finishes; ``on_result`` is called with each outcome too."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    report = ImportReport(report_path=out_dir / REPORT_NAME)
    files = _files(paths, report)
    todo: list[Path] = []
    written: dict[str, Path] = {}
    for f in files:
        if f.stem in written:
            report.failures.append((f, f"{written[f.stem]} of this import already writes {out_dir / f.stem}; "
                                       "import problems with the same file name into different folders"))
            continue
        written[f.stem] = f
        todo.append(f)
    for f in todo:
        remove_leftovers(out_dir, f.stem)  # an earlier import killed half-way
    with report.report_path.open("a") as log:
        for p, why in report.failures:
            log.write(json.dumps(Outcome(Path(p), reason=why).to_json()) + "\n")

        def done(o: Outcome) -> None:
            log.write(json.dumps(o.to_json()) + "\n")
            log.flush()
            os.fsync(log.fileno())
            if o.folder is not None:
                report.converted.append(o.folder)
                report.warnings += [f"{o.path}: {w}" for w in o.warnings]
            else:
                report.failures.append((o.path, o.reason))
            if on_result is not None:
                on_result(o)

        run = lambda f: run_isolated(f, out_dir, seed, device, max_memory_mb, timeout_s)  # noqa: E731
        with _terminate_as_interrupt():
            if workers <= 1:
                for f in todo:
                    done(run(f))
            else:
                with ThreadPoolExecutor(max_workers=workers) as pool:
                    for fut in as_completed([pool.submit(run, f) for f in todo]):
                        done(fut.result())
    order = {f: i for i, f in enumerate(todo)}
    report.converted.sort(key=lambda p: order.get(written.get(p.name, p), 0))
    return report
