"""What ``kernelcraft task check`` says of a KDA wishlist request folder kernelcraft would otherwise
judge by its own defaults: tolerances its README states without a ``contract.toml``, and a
``benchmark.py`` (the request's own inputs, judge and verifier command) the contract does not use.
Each warning carries the contract lines to add. Nothing here imports the task's code: the README is
read as text and ``benchmark.py`` parsed with :mod:`ast`.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from kernelcraft.task.loader import Task

_NUM = r"([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)"
_RTOL = re.compile(r"\brtol\b\W{0,4}" + _NUM)
_ATOL = re.compile(r"\batol\b\W{0,4}" + _NUM)
_BOTH = re.compile(r"tolerances? (?:are|is) both\W{0,4}" + _NUM, re.IGNORECASE)


def readme_tolerances(text: str) -> list[tuple[float, float]]:
    """Distinct (rtol, atol) pairs a README states, in the order it states them."""
    rtols = [float(m.group(1)) for m in _RTOL.finditer(text)]
    atols = [float(m.group(1)) for m in _ATOL.finditer(text)]
    pairs = list(zip(rtols, atols, strict=False))
    pairs += [(float(m.group(1)), float(m.group(1))) for m in _BOTH.finditer(text)]
    return list(dict.fromkeys(pairs))


def _floating_output_dtypes(task: Task) -> list[str]:
    return list(dict.fromkeys(s.dtype for s in task.definition.outputs.values()
                              if s.dtype.startswith(("float", "bfloat"))))


def _tolerance_lines(task: Task, rtol: float, atol: float) -> str:
    return "\n".join(f"  [tolerance.{dt}]\n  atol = {atol:g}\n  rtol = {rtol:g}" for dt in _floating_output_dtypes(task))


def _readme_warning(task: Task) -> str:
    if (task.root / "contract.toml").exists() or task.readme_path is None:
        return ""
    pairs = readme_tolerances(task.readme_path.read_text(errors="replace"))
    if not pairs or not _floating_output_dtypes(task):
        return ""
    (rtol, atol), others = pairs[0], pairs[1:]
    text = (f"{task.readme_path.name} states tolerances rtol = {rtol:g}, atol = {atol:g}, but there is no "
            "contract.toml: kernelcraft judges with its defaults (src/kernelcraft/task/contract.py). Add to "
            f"{task.root / 'contract.toml'}:\n{_tolerance_lines(task, rtol, atol)}")
    if others:
        text += ("\n  (the README also states " + ", ".join(f"rtol = {r:g} / atol = {a:g}" for r, a in others)
                 + ": check which one is the contract)")
    return text


class _Benchmark:
    def __init__(self, path: Path):
        src = path.read_text(errors="replace")
        tree = ast.parse(src, filename=str(path))
        strings = {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
        self.impl = "--impl" in strings
        self.skip_timing = "--skip-timing" in strings
        self.device_pinned = sorted(s for s in strings if s in ("B200", "B300", "H100", "H200", "GB200"))
        self.functions = {n.name: [a.arg for a in n.args.args] for n in tree.body if isinstance(n, ast.FunctionDef)}


def _judge_args(params: list[str], functions: dict[str, list[str]]) -> list[str] | None:
    """The ``args`` of a ``[[check]] kind = "python"`` for a judge with these parameter names."""
    args = []
    for i, p in enumerate(params):
        if i == 0:
            args.append("outputs")
        elif "ref" in p.lower():
            args.append("reference")
        elif "inp" in p.lower():
            args.append("inputs")
        else:  # a quantity derived from the inputs (the flush requests' exact state S)
            derived = [f for f, ps in functions.items() if len(ps) == 1 and ("exact" in f or "state" in f)]
            if not derived:
                return None
            args.append(f"{derived[0]}(inputs)")
    return args


def _benchmark_warning(task: Task) -> str:
    path = task.root / "benchmark.py"
    if not path.is_file():
        return ""
    try:
        b = _Benchmark(path)
    except (OSError, SyntaxError):
        return ""
    contract = task.contract
    lines: list[str] = []
    if b.impl and contract.validate_ is None:
        lines += ["  [validate]",
                  '  command = "python {task}/benchmark.py --impl {solution}' + (' --skip-timing"' if b.skip_timing else '"'),
                  "  timeout_s = 240"]
        if b.device_pinned:
            lines.append(f"  # benchmark.py names {', '.join(b.device_pinned)}: if it asserts that device, the command "
                         "fails elsewhere and rejects every candidate there")
    gen = contract.input_generator
    fns = b.functions
    if gen.generator is None and "random_inputs" in fns:
        lines += ["  [inputs]", '  generator = "benchmark.py::random_inputs"'
                  f"  # called as random_inputs(<{', '.join(task.definition.var_axes)}>, device, seed=...)"]
    if not gen.sets:
        if "structured_inputs" in fns:
            lines += ["  [[inputs.sets]]", '  name = "structured"', '  generator = "benchmark.py::structured_inputs"']
        if "next_step" in fns and "structured_inputs" in fns:
            lines += ["  [[inputs.sets]]", '  name = "next-step"', '  generator = "benchmark.py::next_step"',
                      '  after = "structured"  # called as next_step(inputs, reference outputs, device, seed)']
    if "judge" in fns and not any(c.kind == "python" for c in contract.check):
        args = _judge_args(fns["judge"], fns)
        lines += ["  [[check]]", '  kind = "python"', '  function = "benchmark.py::judge"']
        lines.append("  args = [" + ", ".join(f'"{a}"' for a in args) + "]" if args else
                     f"  # judge{tuple(fns['judge'])}: name its arguments with args = [...] (outputs, reference, inputs, NAME(inputs))")
    if not lines:
        return ""
    return ("benchmark.py holds the request's own inputs, judge or verifier, and contract.toml does not use them: "
            "kernelcraft draws independent random inputs and judges element-wise. Contract lines to add "
            f"({task.root / 'contract.toml'}; README 'Evaluating a KDA wishlist request'):\n" + "\n".join(lines))


def request_warnings(task: Task) -> list[str]:
    return [w for w in (_readme_warning(task), _benchmark_warning(task)) if w]
