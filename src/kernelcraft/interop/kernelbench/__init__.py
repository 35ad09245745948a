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
  halved / doubled together; one axis at a time where the joint variant does not run). Forward
  arguments are ``random`` (``contract.toml`` keeps integer inputs inside the range get_inputs()
  drew, and non-negative float inputs uniform over the range it drew); parameters and buffers come
  from ``weights.safetensors``: ``torch.manual_seed(seed)``, then ``Model(*get_init_inputs())``.
- ``baseline.py``: the problem's own PyTorch forward, same calling convention as the reference.
- ``README.md``: provenance (path, sha256, date, seed), the contract in words, why each axis is what
  it is.

The problem file is executed in a fresh module namespace under ``torch.manual_seed(seed)`` (in the
importer and again in the generated reference and baseline, so module-level random tensors agree).
Before a folder is kept, it must load, and its baseline must run on the smallest workload on the CPU,
twice with equal results (a forward using dropout or random numbers is refused), without writing its
inputs (or, if it does, those inputs are cloned first) and without returning views of them (cloned
if it does). A problem that cannot be converted is reported with its reason; the others still are.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ._convert import _convert_problem
from ._errors import ConversionError, _describe_error

__all__ = ["ImportReport", "import_kernelbench"]


@dataclass
class ImportReport:
    converted: list[Path] = field(default_factory=list)  # the task folders written
    failures: list[tuple[Path, str]] = field(default_factory=list)  # (problem file, why it was not converted)
    warnings: list[str] = field(default_factory=list)  # converted, but worth a look


def import_kernelbench(paths: list[Path], out_dir: Path, seed: int = 0) -> ImportReport:
    """Convert KernelBench problem files (a folder means every ``*.py`` in it, sorted) into task
    folders under ``out_dir``; parameters are made under ``torch.manual_seed(seed)``."""
    out_dir = Path(out_dir)
    report = ImportReport()
    files: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            files += sorted(f for f in p.glob("*.py") if f.is_file())
        elif p.is_file():
            files.append(p)
        else:
            report.failures.append((p, "not found (give KernelBench problem files, or folders of them)"))
    written: dict[str, Path] = {}
    for f in files:
        if f.stem in written:
            report.failures.append((f, f"{written[f.stem]} of this import already writes {out_dir / f.stem}; "
                                       "import problems with the same file name into different folders"))
            continue
        try:
            folder, warnings = _convert_problem(f, out_dir, seed)
        except (Exception, SystemExit) as e:  # noqa: BLE001 - one bad problem must not stop the others
            report.failures.append((f, str(e) if isinstance(e, ConversionError) else _describe_error(e)))
            continue
        written[f.stem] = f
        report.converted.append(folder)
        report.warnings += [f"{f}: {w}" for w in warnings]
    return report
