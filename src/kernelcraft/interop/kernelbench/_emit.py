"""The generated files of a task folder: reference/baseline source, definition, workloads, contract, README."""

from __future__ import annotations

import datetime as dt
import json
import uuid

from ._analyze import _Plan
from ._problem import _Problem
from .hub import uses_hub

OP_TYPE = "kernelbench"
SOURCE_TAG = "source:kernelbench"
# fixed, so that importing the same problem again gives the same workload uuids
_UUID_NAMESPACE = uuid.UUID("6b3c1e0a-5d2f-4f7e-9a51-6b6b1c2e8f40")


def _python_literal(text: str) -> str:
    """A Python string literal equal to ``text``: a readable raw triple-quoted one when possible."""
    for quote in ("'''", '"""'):
        candidate = f"r{quote}{text}{quote}"
        try:
            if eval(compile(candidate, "<literal>", "eval"), {"__builtins__": {}}) == text:  # noqa: S307
                return candidate
        except SyntaxError:
            pass
    return repr(text)


_HUB_LINES = [
    "",
    "",
    "def _hub():",
    '    """Level 4 (transformers models): configs without the hub, random weights (kernelcraft.interop.kernelbench.hub)."""',
    "    if not _HUB:",
    "        return contextlib.nullcontext()",
    "    from kernelcraft.interop.kernelbench.hub import offline_hub",
    "",
    "    return offline_hub()",
]


def _runner_source(kind: str, plan: _Plan, prob: _Problem, name: str, sha: str, seed: int,
                   clone_positions: list[int], clone_outputs: bool) -> str:
    args = [i.name for i in plan.inputs]
    fwd = args[:plan.n_args]
    state_keys = [i.state_key for i in plan.inputs[plan.n_args:]]
    if kind == "reference":
        doc = (f"Reference for KernelBench problem {prob.path.name}: Model(*get_init_inputs()).forward("
               f"{', '.join(fwd)}).\n\n")
    else:
        doc = (f"Baseline: KernelBench problem {prob.path.name}'s own PyTorch forward, in the inputs' precision.\n\n"
               "The same computation as the reference (it is the problem's forward); this is the number to beat.\n")
    doc += (
        "The model's parameters and buffers are inputs of run() (named after named_parameters() and\n"
        "named_buffers(), '.' -> '__'), passed with torch.func.functional_call; the model itself is built\n"
        f"once, on the {plan.build_device} device, from the problem source embedded below, and stays in\n"
        "training mode, as KernelBench runs it.\n"
    )
    if plan.build_device == "cpu" and plan.loose:
        doc += (f"It is built on the CPU under torch.manual_seed({seed}) because it keeps tensors that are not\n"
                f"parameters or buffers ({', '.join(plan.loose)}).\n")
    clone_doc = "run() inputs the forward writes in place (cloned first, so inputs stay unmodified)"
    lines = [
        f'"""{doc}"""',
        "",
        "import contextlib",
        "import linecache",
        "import types",
        "",
        "import torch",
        "",
        f"# KernelBench problem {prob.path.name}, verbatim (sha256 {sha})",
        f"PROBLEM_SOURCE = {_python_literal(prob.source)}",
        "",
        f"_HUB = {uses_hub(prob.source)!r}  # transformers from_pretrained: configs without the hub, random weights",
        f"_BUILD_DEVICE = {plan.build_device!r}",
        f"_SEED = {seed}  # torch.manual_seed before get_init_inputs() and Model(...), as when imported",
        f"_N_ARGS = {plan.n_args}  # forward() arguments; the rest of run()'s inputs are parameters and buffers",
        f"_STATE_NAMES = {tuple(state_keys)!r}",
        f"_CLONE = {tuple(clone_positions)!r}  # {clone_doc}",
        f"_CLONE_OUTPUTS = {clone_outputs!r}  # the forward returns views of its inputs: outputs are copied",
        "_cache = {}",
        *_HUB_LINES,
        "def _model():",
        '    if "model" not in _cache:',
        f'        filename = "<kernelbench {name}>"',
        "        linecache.cache[filename] = (len(PROBLEM_SOURCE), None, PROBLEM_SOURCE.splitlines(True), filename)",
        '        module = types.ModuleType("kernelbench_problem")',
        "        with _hub(), torch.random.fork_rng(devices=[]):  # the caller's random state is left alone",
        "            torch.manual_seed(_SEED)  # module-level random tensors: the same in every process",
        '            exec(compile(PROBLEM_SOURCE, filename, "exec"), module.__dict__)',
        "            torch.manual_seed(_SEED)",
        '            init_inputs = list(getattr(module, "get_init_inputs", list)())',
        "            with torch.device(_BUILD_DEVICE):",
        '                _cache["model"] = module.Model(*init_inputs)',
        '    return _cache["model"]',
        "",
        "",
        "class _NoTF32:",
        '    """fp32 as KernelBench means it: no TF32 in matmuls or convolutions (cuDNN allows it by',
        '    default); the previous settings come back on exit, so the calling process is left as it was."""',
        "",
        "    def __enter__(self):",
        "        self.saved = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)",
        "        torch.backends.cuda.matmul.allow_tf32 = False",
        "        torch.backends.cudnn.allow_tf32 = False",
        "",
        "    def __exit__(self, *exc):",
        "        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = self.saved",
        "",
        "",
        "def _forward(values):",
        "    values = [v.clone() if i in _CLONE else v for i, v in enumerate(values)]",
        "    state = dict(zip(_STATE_NAMES, values[_N_ARGS:], strict=True))",
        "    with torch.no_grad(), _NoTF32():",
        "        out = torch.func.functional_call(_model(), state, tuple(values[:_N_ARGS]))",
        "    if isinstance(out, list):",
        "        out = tuple(out)",
        "    if _CLONE_OUTPUTS:",
        "        if isinstance(out, tuple):",
        "            return tuple(o.clone() if isinstance(o, torch.Tensor) else o for o in out)",
        "        return out.clone() if isinstance(out, torch.Tensor) else out",
        "    return out",
        "",
        "",
        f"def run({', '.join(args)}):",
        f"    return _forward([{', '.join(args)}])",
        "",
    ]
    return "\n".join(lines)


def _definition(plan: _Plan, prob: _Problem, name: str, seed: int, reference: str) -> dict:
    inputs = {}
    for inp in plan.inputs:
        desc = {"tensor": "forward() argument", "scalar": "forward() argument (a Python number)",
                "state": f"{'buffer' if inp.is_buffer else 'parameter'} {inp.state_key}"}[inp.kind]
        inputs[inp.name] = {"shape": inp.axes if inp.shape is not None else None, "dtype": inp.dtype,
                            "description": desc}
    outputs = {o: {"shape": axes, "dtype": dtype} for o, axes, dtype in plan.outputs}
    state_note = (f" Parameters and buffers come from torch.manual_seed({seed}) then "
                  "Model(*get_init_inputs()), stored in weights.safetensors." if plan.n_args < len(plan.inputs) else "")
    return {
        "name": name,
        "op_type": OP_TYPE,
        "description": f"KernelBench problem {prob.path.name}: Model.forward, imported with seed {seed}.{state_note}",
        "tags": [SOURCE_TAG],
        "axes": plan.axes,
        "constraints": [f"{c} >= 1" for c in plan.var] + plan.constraints,
        "inputs": inputs,
        "outputs": outputs,
        "reference": reference,
    }


def _workload_lines(plan: _Plan, name: str) -> list[str]:
    lines = []
    for w in plan.workloads:
        specs: dict[str, dict] = {}
        for inp in plan.inputs:
            if inp.kind == "state":
                specs[inp.name] = {"type": "safetensors", "path": "weights.safetensors", "tensor_key": inp.state_key}
            elif inp.kind == "scalar":
                specs[inp.name] = {"type": "scalar", "value": w["scalars"][inp.name]}
            else:
                specs[inp.name] = {"type": "random"}
        uid = uuid.uuid5(_UUID_NAMESPACE, f"{name}/{json.dumps(w['axes'], sort_keys=True)}")
        lines.append(json.dumps({"definition": name, "workload": {"uuid": str(uid), "axes": w["axes"], "inputs": specs},
                                 "solution": None, "evaluation": None}))
    return lines


INPUTS_FILE = "inputs.py"
INPUTS_FUNC = "make_inputs"


def _inputs_source(plan: _Plan, prob: _Problem, sha: str, seed: int) -> str:
    """The task's input generator: the problem's own get_inputs(), at each workload's shapes, seeded."""
    var_consts = tuple(plan.var)
    n_state = len(plan.inputs) - plan.n_args
    lines = [
        f'"""Inputs of KernelBench problem {prob.path.name}: its own get_inputs(), seeded, at each workload\'s shapes.',
        "",
        "contract.toml names this file ([inputs] generator, axes); the judge calls",
        "make_inputs(*axis values, device, seed=seed) for every set of inputs it draws, the axis values in",
        "the order of [inputs] axes. The problem's module constants that are var axes are set to the",
        "workload's values, then get_inputs() runs under torch.manual_seed(seed) with the device as the",
        "default device, so its structure is kept (triangular, symmetric or normalised matrices, +-1 labels,",
        "index ranges that follow the shapes). The model's parameters and buffers (the last run() inputs)",
        'come from weights.safetensors, named by the workloads, so they are None here.',
        '"""',
        "",
        "import contextlib",
        "import linecache",
        "import types",
        "",
        "import torch",
        "",
        f"# KernelBench problem {prob.path.name}, verbatim (sha256 {sha})",
        f"PROBLEM_SOURCE = {_python_literal(prob.source)}",
        "",
        f"_HUB = {uses_hub(prob.source)!r}  # transformers from_pretrained: configs without the hub",
        f"_SEED = {seed}  # torch.manual_seed before executing the problem (module-level random tensors)",
        f"_VAR_CONSTANTS = {var_consts!r}  # module constants set from the workload's axes",
        f"_N_STATE = {n_state}  # parameters and buffers after the forward() arguments",
        "_cache = {}",
        *_HUB_LINES,
        "def _module():",
        '    if "module" not in _cache:',
        f'        filename = "<kernelbench {prob.path.stem} inputs>"',
        "        linecache.cache[filename] = (len(PROBLEM_SOURCE), None, PROBLEM_SOURCE.splitlines(True), filename)",
        '        module = types.ModuleType("kernelbench_problem")',
        "        with _hub(), torch.random.fork_rng(devices=[]):",
        "            torch.manual_seed(_SEED)",
        '            exec(compile(PROBLEM_SOURCE, filename, "exec"), module.__dict__)',
        '        _cache["module"] = module',
        '    return _cache["module"]',
        "",
        "",
        "def make_inputs(*args, seed):",
        "    *values, device = args  # the axes of _VAR_CONSTANTS, in order, then the device",
        "    ns = _module().__dict__",
        "    saved = {k: ns[k] for k in _VAR_CONSTANTS}",
        "    ns.update({k: int(v) for k, v in zip(_VAR_CONSTANTS, values, strict=True)})",
        "    dev = torch.device(device)",
        "    cuda = [dev.index if dev.index is not None else torch.cuda.current_device()] if dev.type == 'cuda' else []",
        "    try:",
        "        with torch.random.fork_rng(devices=cuda):",
        "            torch.manual_seed(seed)",
        "            with dev:",
        '                items = list(ns["get_inputs"]())',
        "    finally:",
        "        ns.update(saved)",
        "    items = [x.to(dev) if isinstance(x, torch.Tensor) and x.device != dev else x for x in items]",
        "    return items + [None] * _N_STATE",
        "",
    ]
    return "\n".join(lines)


def _contract(tolerances: list, axes: list[str]) -> str:
    """``axes``: the generator's positional axis arguments (the problem's var constants, in order)."""
    out = ["# Written by `kernelcraft import kernelbench` (README.md says why).", "",
           "[inputs]", f'generator = "{INPUTS_FILE}::{INPUTS_FUNC}"  # the problem\'s own get_inputs(), seeded',
           f"axes = {json.dumps(list(axes))}  # {INPUTS_FUNC}(*these axes' values, device, seed=seed)", ""]
    by_output = {t.name: t for t in tolerances}
    for name, t in by_output.items():
        out += [f"# {t.why}", f"[tolerance.output.{name}]", f"atol = {t.atol!r}", f"rtol = {t.rtol!r}", ""]
    return "\n".join(out)


def _readme(plan: _Plan, prob: _Problem, name: str, sha: str, seed: int, smoke_note: str,
            tolerances: list | None = None) -> str:
    tolerances = tolerances or []
    fwd = plan.inputs[:plan.n_args]
    state = plan.inputs[plan.n_args:]
    sig = ", ".join(i.name for i in plan.inputs)

    def shape(axes: list[str] | None) -> str:
        return "scalar" if axes is None else "[" + ", ".join(axes) + "]"

    lines = [
        f"# {name}",
        "",
        f"KernelBench problem `{prob.path.name}`, converted by `kernelcraft import kernelbench`.",
        "",
        f"- source: `{prob.path.resolve()}`",
        f"- sha256 of the source: `{sha}`",
        f"- imported: {dt.datetime.now(dt.UTC).date().isoformat()}",
        f"- seed: {seed} (`torch.manual_seed({seed})`, then `Model(*get_init_inputs())`; "
        + ("its parameters and buffers are stored in `weights.safetensors`)" if state else "the model has no "
           "parameters or buffers)"),
        "",
        "## The contract",
        "",
        f"`run({sig})` returns what the problem's `Model(*get_init_inputs()).forward("
        f"{', '.join(i.name for i in fwd)})` returns"
        + (", with the model's parameters and buffers replaced by the inputs of the same name "
           "(`torch.func.functional_call`)" if state else "")
        + ". The model is in training mode, as KernelBench runs it (BatchNorm uses the batch's statistics).",
        "",
        "Inputs:",
        "",
    ]
    for i in fwd:
        how = ("a Python number, the value get_inputs() returns (per workload)" if i.kind == "scalar" else
               "drawn by the problem's own get_inputs() (`inputs.py`), seeded per workload")
        lines.append(f"- `{i.name}`: {i.dtype} {shape(i.axes)}, forward() argument; {how}")
    for i in state:
        lines.append(f"- `{i.name}`: {i.dtype} {shape(i.axes)}, {'buffer' if i.is_buffer else 'parameter'} "
                     f"`{i.state_key}`, fixed: `weights.safetensors[{i.state_key!r}]`")
    lines += ["", "Outputs:", ""]
    for o, axes, dtype in plan.outputs:
        lines.append(f"- `{o}`: {dtype} {shape(axes)}")
    lines += [
        "",
        *(["Level 4: the problem loads a transformers model with `from_pretrained`. There is no hub here, so "
           "its config comes from transformers' own defaults for that checkpoint or a local config.json "
           "(`kernelcraft.interop.kernelbench.hub`) and its weights are random, drawn under the seed "
           "(`weights.safetensors`): the architecture and shapes of the checkpoint, not its trained values.", ""]
          if uses_hub(prob.source) else []),
        "## Correctness",
        "",
        "Against the reference run in float64 (every floating input, parameters included, upcast); an element "
        "fails when its error exceeds both atol and rtol x |reference|. KernelBench itself accepts a kernel "
        "`torch.allclose` to the fp32 forward at atol = rtol = 1e-4 (1e-2 for fp16/bf16). The rule here: "
        "KernelBench's tolerance, unless 4 x the problem's own forward's error against float64 on the check "
        "workload is larger (then that, refused above 1e-2), with atol lowered where a constant output would "
        "pass (`contract.toml` has each output's values and the measured error). On a GPU the reference and "
        "the baseline run with TF32 off, as fp32 means.",
        "",
    ]
    lines += [f"- `{t.name}`: atol {t.atol:.3g}, rtol {t.rtol:.3g}: {t.why}" for t in tolerances]
    lines += [
        "",
        "## Axes",
        "",
        "| axis | kind | value | why |",
        "|---|---|---|---|",
    ]
    for ax, spec in plan.axes.items():
        value = "per workload" if spec["type"] == "var" else str(spec["value"])
        lines.append(f"| `{ax}` | {spec['type']} | {value} | {plan.axis_why.get(ax, '')} |")
    lines += [
        "",
        f"Shapes were probed on the {plan.probe_device} device: each module int constant changed (halved, "
        "doubled) in the module's globals, get_inputs() and forward() run again. A dim is var only when it "
        "follows a constant that get_init_inputs() does not use, forward() works at the changed shapes and "
        "every output dim is constant or equals one var axis in every shape tried; otherwise it is const "
        "at the problem's value (correctness first).",
        "",
        "## Workloads",
        "",
    ]
    for w in plan.workloads:
        axes = ", ".join(f"{k}={v}" for k, v in w["axes"].items()) or "no var axes"
        lines.append(f"- {w['label']}: {axes}")
    lines += [
        "",
        "## Baseline",
        "",
        "`baseline.py` is the problem's own PyTorch forward (the same `functional_call` as the reference, "
        "in the inputs' own precision): KernelBench's eager PyTorch time is the number to beat.",
    ]
    if smoke_note:
        lines += ["", "## Notes", "", smoke_note]
    return "\n".join(lines) + "\n"
