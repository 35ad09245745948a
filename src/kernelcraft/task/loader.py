"""Load and validate a task folder: definition.json, workloads.jsonl, baseline.py, contract.toml.

Every problem found is reported at once, each naming the file, the field and the fix.
"""

from __future__ import annotations

import ast
import json
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from kernelcraft.errors import InputError, Problem
from kernelcraft.task.contract import Contract, load_contract, pydantic_problems
from kernelcraft.task.definition import Definition, expression_names
from kernelcraft.task.workload import Workload, WorkloadTrace

SOLUTION_SUFFIXES = (".py", ".json")


@dataclass(frozen=True)
class Task:
    root: Path
    definition: Definition
    workloads: list[Workload]
    contract: Contract
    baseline_path: Path
    readme_path: Path | None = None
    warnings: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.definition.name

    def solution_paths(self) -> list[Path]:
        """Solutions kept with the task: ``solutions/*.py``, ``*.json`` and ``*/solution.json``.

        ``solutions/wrong/`` holds known-bad fixtures and is not part of the default set.
        """
        sdir = self.root / "solutions"
        if not sdir.is_dir():
            return []
        found = []
        for p in sorted(sdir.iterdir()):
            if p.is_file() and p.suffix in SOLUTION_SUFFIXES and not p.name.startswith("_"):
                found.append(p)
            elif p.is_dir() and (p / "solution.json").is_file():
                found.append(p)
        return found

    def io_bytes(self, var_axes: dict[str, int]) -> int:
        """Bytes a kernel must move at these axis values: every tensor input read once and every
        output written once (the default bytes model)."""
        from kernelcraft.task.dtypes import torch_dtype

        d = self.definition
        axes = d.axis_values(var_axes)
        total = 0
        for spec in [*d.inputs.values(), *d.outputs.values()]:
            shape = d.shape(spec, axes)
            if shape is not None:
                n = 1
                for size in shape:
                    n *= size
                total += n * torch_dtype(spec.dtype).itemsize
        return total

    def roofline(self, var_axes: dict[str, int]) -> tuple[float, float, str]:
        """(bytes, flops, flops dtype) of one call at these axis values, from ``[roofline]``."""
        from kernelcraft.task.definition import eval_expression

        r = self.contract.roofline
        axes = self.definition.axis_values(var_axes)
        nbytes = float(eval_expression(r.bytes, axes)) if r.bytes else float(self.io_bytes(var_axes))
        flops = float(eval_expression(r.flops, axes)) if r.flops else 0.0
        dtype = r.flops_dtype or next(
            (s.dtype for s in self.definition.inputs.values() if s.dtype.startswith(("float", "bfloat"))), "float32")
        return nbytes, flops, dtype

    def workload(self, uuid_prefix: str) -> Workload:
        hits = [w for w in self.workloads if w.uuid.startswith(uuid_prefix)]
        if len(hits) != 1:
            raise InputError(Problem(
                self.root / "workloads.jsonl", "workload.uuid",
                f"{len(hits)} workloads match {uuid_prefix!r}", "give a longer, unique uuid prefix",
            ))
        return hits[0]


def load_definition(path: Path) -> Definition:
    if not path.is_file():
        raise InputError(Problem(path, "", "file not found", "a task folder needs definition.json"))
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise InputError(Problem(path, "", f"not valid JSON: line {e.lineno} column {e.colno}: {e.msg}")) from None
    try:
        return Definition.model_validate(data)
    except ValidationError as e:
        raise InputError(pydantic_problems(path, e)) from None


def load_workloads(path: Path, definition: Definition) -> tuple[list[Workload], list[Problem]]:
    problems: list[Problem] = []
    workloads: list[Workload] = []
    if not path.is_file():
        return [], [Problem(path, "", "file not found", "add workloads.jsonl with one workload per line")]
    seen: dict[str, int] = {}
    for lineno, line in enumerate(path.read_text().splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path} line {lineno}"
        try:
            data = json.loads(line)
        except json.JSONDecodeError as e:
            problems.append(Problem(where, "", f"not valid JSON: column {e.colno}: {e.msg}"))
            continue
        try:
            if isinstance(data, dict) and "workload" in data:
                rec = WorkloadTrace.model_validate(data)
                if rec.definition != definition.name:
                    problems.append(Problem(
                        where, "definition", f"names {rec.definition!r}, but definition.json is {definition.name!r}",
                        "make them equal",
                    ))
                w = rec.workload
                prefix = "workload."
            else:
                w = Workload.model_validate(data)
                prefix = ""
        except ValidationError as e:
            problems.extend(pydantic_problems(where, e, "workload." if "workload" in data else ""))
            continue
        problems.extend(_check_workload(where, prefix, w, definition, path.parent))
        if w.uuid in seen:
            problems.append(Problem(where, f"{prefix}uuid", f"duplicate of line {seen[w.uuid]}", "give each workload its own uuid"))
        seen[w.uuid] = lineno
        workloads.append(w)
    if not workloads and not problems:
        problems.append(Problem(path, "", "no workloads", "add at least one workload line"))
    return workloads, problems


def _check_workload(where: str, prefix: str, w: Workload, d: Definition, root: Path) -> list[Problem]:
    problems = []
    for axis in d.var_axes:
        if axis not in w.axes:
            problems.append(Problem(where, f"{prefix}axes.{axis}", f"missing value for var axis {axis!r}", "add it to \"axes\""))
    for axis, value in w.axes.items():
        if axis not in d.axes:
            problems.append(Problem(where, f"{prefix}axes.{axis}", "not an axis of the definition", f"use one of {d.var_axes}"))
        elif d.axes[axis].type == "const" and value != d.axes[axis].value:
            problems.append(Problem(where, f"{prefix}axes.{axis}", f"const axis is {d.axes[axis].value}, workload says {value}", "drop it or make it equal"))
        elif value < 0:
            problems.append(Problem(where, f"{prefix}axes.{axis}", "negative size", "use a size >= 0"))
    for name, spec in w.inputs.items():
        if name not in d.inputs:
            problems.append(Problem(where, f"{prefix}inputs.{name}", "not an input of the definition", f"use one of {list(d.inputs)}"))
            continue
        if spec.type == "scalar" and d.inputs[name].shape is not None:
            problems.append(Problem(where, f"{prefix}inputs.{name}", "scalar value for a tensor input", "use \"random\" or \"safetensors\""))
        if spec.type == "safetensors":
            p = Path(spec.path) if Path(spec.path).is_absolute() else root / spec.path
            if not p.is_file():
                problems.append(Problem(where, f"{prefix}inputs.{name}.path", f"file {p} not found", "fix the path (relative to the task folder)"))
    if not problems:
        try:
            bad = d.violated_constraints(d.axis_values(w.axes))
        except ValueError as e:
            bad, problems = [], [Problem(where, f"{prefix}axes", str(e))]
        for c in bad:
            problems.append(Problem(where, f"{prefix}axes", f"violates the definition's constraint {c!r} ({w.axes})", "change the axis values"))
    return problems


def _check_python_run(path: Path, what: str) -> list[Problem]:
    if not path.is_file():
        return [Problem(path, "", "file not found", f"add {path.name} exposing `run` ({what})")]
    try:
        module = ast.parse(path.read_text(), filename=str(path))
    except SyntaxError as e:
        return [Problem(path, f"line {e.lineno}", f"syntax error: {e.msg}")]
    if not any(isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.name == "run" for n in module.body):
        return [Problem(path, "run", "no top-level function `run`", f"define run() ({what})")]
    return []


def _task_code_problems(root: Path, contract: Contract, definition: Definition) -> list[Problem]:
    """The functions of the task folder the contract names exist (checked without importing them);
    a validation command fits the workload phase's deadline."""
    from kernelcraft.task.contract import PythonCheck
    from kernelcraft.task.taskcode import static_problems

    where = root / "contract.toml"
    gen = contract.input_generator
    problems: list[Problem] = []
    if gen.generator:
        problems += static_problems(root, gen.generator, where, "inputs.generator")
    for name in gen.axes or []:
        if name not in definition.axes:
            problems.append(Problem(where, "inputs.axes", f"{name!r} is not an axis of the definition",
                                    f"use the definition's axes {list(definition.axes)}"))
    if gen.generator:
        for name in contract.inputs:
            problems.append(Problem(where, f"inputs.{name}", "a distribution table, but [inputs] generator makes "
                                    "every input", "remove the table, or the generator"))
    for i, s in enumerate(gen.sets):
        problems += static_problems(root, s.generator, where, f"inputs.sets.{i}.generator")
    for i, spec in enumerate(contract.check):
        if isinstance(spec, PythonCheck):
            extra = tuple(a.split("(")[0] for a in spec.args if "(" in a)
            problems += static_problems(root, spec.function, where, f"check.{i}.function", also=extra)
    v = contract.validate_
    if v is not None and v.timeout_s + 60 > contract.limits.workload_timeout_s:
        problems.append(Problem(where, "validate.timeout_s", f"{v.timeout_s:g} s plus a minute for the runner exceeds "
                                f"[limits] workload_timeout_s = {contract.limits.workload_timeout_s:g} s, the deadline "
                                "of the phase it runs in", "lower timeout_s or raise [limits] workload_timeout_s"))
    return problems


def _dist_problems(where: Path, name: str, dist, contract: Contract, definition: Definition) -> list[Problem]:
    spec = definition.inputs[name]
    problems = []
    if dist.dist == "offsets":
        if spec.shape is None or len(spec.shape) != 1 or spec.dtype.startswith(("float", "bfloat", "bool")):
            problems.append(Problem(where, f"inputs.{name}.dist", f"offsets need a 1-d integer input; {name} is "
                                    f"{spec.dtype} {spec.shape}", "use randint, or fix the definition"))
        if dist.within is not None:
            other = contract.inputs.get(dist.within)
            if other is None or other.dist != "offsets":
                problems.append(Problem(where, f"inputs.{name}.within", f"{dist.within!r} is not an input drawn as "
                                        "offsets", "name an input with dist = \"offsets\""))
    if dist.dist == "softmax" and not spec.dtype.startswith(("float", "bfloat")):
        problems.append(Problem(where, f"inputs.{name}.dist", f"softmax makes probabilities; {name} is {spec.dtype}",
                                "use it for a floating input"))
    return problems


def load_task(root: str | Path) -> Task:
    """Load a task folder, or raise InputError listing every problem found."""
    root = Path(root)
    if not root.is_dir():
        raise InputError(Problem(root, "", "not a folder", "give the path of a task folder"))
    definition = load_definition(root / "definition.json")
    problems: list[Problem] = []
    workloads, wp = load_workloads(root / "workloads.jsonl", definition)
    problems += wp
    problems += _check_python_run(root / "baseline.py", "the best known implementation, same inputs as the reference")
    contract: Contract | None = None
    try:
        contract = load_contract(root / "contract.toml")
    except InputError as e:
        problems += e.problems
    warnings: list[str] = []
    if contract is not None:
        uuids = {w.uuid for w in workloads}
        for uuid in contract.weights:
            if uuid not in uuids:
                problems.append(Problem(root / "contract.toml", f"weights.{uuid}", "no workload has this uuid", "fix or remove it"))
        for name, dist in contract.inputs.items():
            if name not in definition.inputs:
                problems.append(Problem(root / "contract.toml", f"inputs.{name}", "not an input of the definition", f"use one of {list(definition.inputs)}"))
                continue
            problems += _dist_problems(root / "contract.toml", name, dist, contract, definition)
            for bound in ("low", "high", "total"):
                expr = getattr(dist, bound)
                if isinstance(expr, str) and expression_names(expr) - set(definition.axes):
                    problems.append(Problem(root / "contract.toml", f"inputs.{name}.{bound}",
                                            f"names unknown axes {sorted(expression_names(expr) - set(definition.axes))}",
                                            f"use the definition's axes {list(definition.axes)}"))
        from kernelcraft.gauntlet.checkers import check_problems

        problems += check_problems(root / "contract.toml", contract, definition)
        problems += _task_code_problems(root, contract, definition)
        for name in contract.tolerance.output:
            if name not in definition.outputs:
                problems.append(Problem(root / "contract.toml", f"tolerance.output.{name}", "not an output of the definition", f"use one of {list(definition.outputs)}"))
        for field in ("bytes", "flops"):
            expr = getattr(contract.roofline, field)
            if expr:
                unknown = sorted(expression_names(expr) - set(definition.axes))
                if unknown:
                    problems.append(Problem(root / "contract.toml", f"roofline.{field}", f"names unknown axes {unknown}",
                                            f"use the definition's axes {list(definition.axes)}"))
    if problems:
        raise InputError(problems)
    readme = root / "README.md"
    if not readme.is_file():
        warnings.append(f"{readme}: missing (a task should say why it matters and where its shapes come from)")
    return Task(root, definition, workloads, contract or Contract(), root / "baseline.py",
                readme if readme.is_file() else None, warnings)
