"""Task folders for captured regions, and links to the catalog tasks that already compute one.

A region is *linked* when a catalog task's reference, run on the region's captured inputs (leading
dims flattened to the task's rank, scalars taken from the task's workloads or the region's own
constants), reproduces the region's captured outputs within that task's tolerance: the catalog task
computes what this part of the model computes, so optimizing it there serves the model.
"""

from __future__ import annotations

import itertools
import json
import re
import textwrap
import uuid
from pathlib import Path

import torch

from kernelcraft.capture.codegen import Axes, Program

NAMESPACE = uuid.UUID("6f1c2a52-6b0e-4a39-9a35-2b8f0c6d9e11")  # workload uuids are stable across runs


def slug(text: str, limit: int = 48) -> str:
    s = re.sub(r"[^0-9a-zA-Z]+", "_", text).strip("_").lower()
    return s[:limit].rstrip("_") or "region"


def _compile_reference(src: str):
    ns: dict = {}
    exec(compile(src, "<reference>", "exec"), ns)  # noqa: S102 - trusted: a catalog task's or our own reference
    return ns["run"]


# -- numerics ---------------------------------------------------------------------------------------

def needed_atol(got: torch.Tensor, ref: torch.Tensor, rtol: float) -> float:
    """The smallest atol under which ``got`` passes against ``ref`` at ``rtol`` (an element fails only
    when its error exceeds both bounds)."""
    if not got.is_floating_point():
        return 0.0 if torch.equal(got, ref.to(got.dtype)) else math_inf()
    g, r = got.double(), ref.double()
    err = (g - r).abs()
    bad = (err > rtol * r.abs()) & ~same_values(g, r)
    return float(err[bad].max()) if bad.any() else 0.0


def same_values(g: torch.Tensor, r: torch.Tensor) -> torch.Tensor:
    """Where two outputs agree exactly: equal values (the same infinity included, as a -inf attention mask
    has) or NaN in both, where subtraction alone gives NaN."""
    return (g == r) | (torch.isnan(g) & torch.isnan(r))


def max_abs_error(got: torch.Tensor, ref: torch.Tensor) -> float:
    """Largest |got - ref| of a regenerated output against the model's own: positions where they agree
    (same_values) count 0; a NaN or an infinity in one of them only is an infinite error."""
    if not got.is_floating_point():
        return float(not torch.equal(got, ref))
    if got.numel() == 0:
        return 0.0
    g, r = got.double(), ref.double()
    diff = torch.where(same_values(g, r), torch.zeros_like(g), (g - r).abs())
    return float(diff.nan_to_num(nan=math_inf(), posinf=math_inf()).max())


def math_inf() -> float:
    return float("inf")


def upcast(xs):
    return [x.double() if isinstance(x, torch.Tensor) and x.is_floating_point() else x for x in xs]


# -- catalog links ----------------------------------------------------------------------------------

def load_catalog(root: Path) -> list:
    from kernelcraft.errors import InputError
    from kernelcraft.task.loader import load_task

    tasks = []
    if not root.is_dir():
        return tasks
    for d in sorted(p for p in root.iterdir() if (p / "definition.json").is_file()):
        try:
            tasks.append(load_task(d))
        except InputError:
            continue
    return tasks


def _flatten_to(t: torch.Tensor, rank: int) -> torch.Tensor | None:
    if t.dim() == rank:
        return t
    if t.dim() < rank or rank == 0:
        return None
    return t.reshape(-1, *t.shape[t.dim() - rank + 1:]) if rank > 1 else t.reshape(-1)


def find_link(task_list: list, ins: list[torch.Tensor], outs: list[torch.Tensor], consts: list[float]) -> dict | None:
    """The first catalog task whose reference reproduces this region's outputs on its inputs."""
    from kernelcraft.task.dtypes import torch_dtype

    for task in task_list:
        d = task.definition
        tensor_in = [(n, s) for n, s in d.inputs.items() if s.shape is not None]
        scalar_in = [(n, s) for n, s in d.inputs.items() if s.shape is None]
        if len(tensor_in) != len(ins) or len(d.outputs) != len(outs) or len(ins) > 6:
            continue
        scalars: dict[str, list] = {}
        for n, _s in scalar_in:
            vals = [w.inputs[n].value for w in task.workloads if getattr(w.inputs.get(n), "value", None) is not None]
            scalars[n] = list(dict.fromkeys([*consts, *vals]))[:6]
        if any(not v for v in scalars.values()):
            continue
        try:
            ref = _compile_reference(d.reference)
        except Exception:  # noqa: BLE001 - a reference that does not load here links nothing
            continue
        for perm in itertools.permutations(range(len(ins))):
            args = {}
            ok = True
            for (n, s), k in zip(tensor_in, perm, strict=True):
                x = ins[k]
                if x.dtype != torch_dtype(s.dtype):
                    ok = False
                    break
                x = _flatten_to(x, len(s.shape))
                if x is None:
                    ok = False
                    break
                args[n] = x
            if not ok or not _axes_fit(d, args):
                continue
            for combo in itertools.product(*scalars.values()) if scalars else [()]:
                call = dict(args)
                call.update(dict(zip(scalars, combo, strict=True)))
                try:
                    with torch.no_grad():
                        got = ref(*[call[n] for n in d.inputs])
                except Exception:  # noqa: BLE001 - shapes the task cannot take: not this task
                    continue
                got = list(got) if isinstance(got, tuple | list) else [got]
                match = _outputs_match(task, got, outs)
                if match is not None:
                    return {"task": task.root.name, "definition": d.name, "task_dir": str(task.root),
                            "inputs": {n: int(k) for (n, _), k in zip(tensor_in, perm, strict=True)},
                            "scalars": dict(zip(scalars, combo, strict=True)), "outputs": match}
    return None


def _axes_fit(d, args: dict) -> bool:
    bound: dict[str, int] = {}
    for n, x in args.items():
        for ax, size in zip(d.inputs[n].shape, x.shape, strict=True):
            a = d.axes[ax]
            if a.type == "const" and a.value != size:
                return False
            if bound.setdefault(ax, size) != size:
                return False
    return True


def _outputs_match(task, got: list, outs: list[torch.Tensor]) -> list[int] | None:
    names = list(task.definition.outputs)
    for perm in itertools.permutations(range(len(outs))):
        ok = True
        for i, k in enumerate(perm):
            g, o = got[i], outs[k]
            if not isinstance(g, torch.Tensor) or g.numel() != o.numel() or g.dtype != o.dtype:
                ok = False
                break
            tol = task.contract.tolerance.for_output(names[i], str(g.dtype).removeprefix("torch."))
            if needed_atol(o.reshape(g.shape), g, tol.rtol) > tol.atol:
                ok = False
                break
        if ok:
            return list(perm)
    return None


# -- task folders -----------------------------------------------------------------------------------

def definition(name: str, op_type: str, p: Program, axes: Axes, ref_src: str, region, observations: list[str],
               describe: str, tags: list[str]) -> dict:
    ax: dict = {}
    for a, v in axes.const.items():
        ax[a] = {"type": "const", "value": v, "description": f"fixed size {v} in every phase captured"}
    for a, vals in axes.var.items():
        seen = ", ".join(f"{o} {v}" for o, v in zip(observations, vals, strict=True))
        extra = f"; {a} == {axes.derived[a]}" if a in axes.derived else ""
        ax[a] = {"type": "var", "description": f"varies between phases: {seen}{extra}"}
    constraints = []
    for a, vals in axes.var.items():
        if a in axes.derived:
            constraints.append(f"{a} == {axes.derived[a]}")
        else:
            constraints += [f"{a} >= 1", f"{a} <= {2 * max(vals)}"]
    inputs = {}
    for i, ((dt, _), shape) in enumerate(zip(p.inputs, axes.input_shapes, strict=True)):
        inputs[f"x{i}"] = {"shape": shape, "dtype": dt,
                           "description": f"FX node {p.input_nodes[i]} of the captured graph (graph {region.graph_id})"}
    outputs = {}
    for i, ((dt, _), shape) in enumerate(zip(p.output_meta, axes.output_shapes, strict=True)):
        outputs[f"out{i}"] = {"shape": shape, "dtype": dt,
                              "description": f"FX node {p.names[p.outputs[i]]} of the captured graph"}
    return {"name": name, "op_type": op_type, "description": describe, "tags": tags, "axes": ax,
            "constraints": constraints, "inputs": inputs, "outputs": outputs, "reference": ref_src}


def workloads(name: str, axes: Axes, observations: list[str], n_inputs: int) -> list[dict]:
    out = []
    for k, phase in enumerate(observations):
        values = {a: v[k] for a, v in axes.var.items()}
        out.append({"definition": name, "workload": {
            "uuid": str(uuid.uuid5(NAMESPACE, f"{name}/{phase}/{json.dumps(values, sort_keys=True)}")),
            "axes": values, "inputs": {f"x{i}": {"type": "random"} for i in range(n_inputs)}},
            "solution": None, "evaluation": None})
    return out


def contract_toml(p: Program, int_ranges: dict[str, tuple[int, int]], tol_lines: list[str]) -> str:
    lines = ["# kernelcraft contract for a region captured from a model (kernelcraft capture).",
             "# An output element fails only when |got - ref| exceeds BOTH atol and rtol * |ref|.", ""]
    lines += tol_lines
    for name, (lo, hi) in int_ranges.items():
        lines += ["", f"[inputs.{name}]",
                  "# integer values as the model fed them (indices, positions): the observed range",
                  'dist = "randint"', f"low = {lo}", f"high = {hi + 1}"]
    return "\n".join(lines).rstrip() + "\n"


def write_task(folder: Path, defn: dict, wl: list[dict], contract: str, readme: str, baseline: str) -> None:
    folder.mkdir(parents=True, exist_ok=False)
    (folder / "definition.json").write_text(json.dumps(defn, indent=2) + "\n")
    (folder / "workloads.jsonl").write_text("".join(json.dumps(w) + "\n" for w in wl))
    (folder / "contract.toml").write_text(contract)
    (folder / "README.md").write_text(readme)
    (folder / "baseline.py").write_text(baseline)


def amdahl_ceiling(share: float) -> float:
    return float("inf") if share >= 1 else 1.0 / (1.0 - share)


def readme(name: str, region_doc: dict, command: str) -> str:
    r = region_doc
    rows = "\n".join(f"| {ph['phase']} | {ph['shapes']} | {ph['ms']:.4f} | {ph['share']:.1%} | {ph['count']} | "
                     f"{amdahl_ceiling(ph['share']):.3f}x | {1 / ((1 - ph['share']) + ph['share'] / 2):.3f}x |"
                     for ph in r["phases"])
    return textwrap.dedent(f"""\
    # {name}: {r['label']}

    Captured by `{command}` from {r['model']} ({r['mode']} mode, {r['device']}). {r['what']}

    Ops (in graph order): {', '.join(r['ops'])}. FX nodes of one occurrence: {', '.join(r['nodes'][:40])}{' ...' if len(r['nodes']) > 40 else ''}.

    ## Share of the step

    | phase | input shapes | ms per step | share | occurrences per step | Amdahl ceiling (region free) | at 2x faster |
    |---|---|---|---|---|---|---|
    @ROWS@

    The share is the region's time over the step's ({r['basis']}), from torch.profiler on {r['device']}; the
    ceiling `1 / (1 - share)` is the most the whole step can gain however fast the region gets.

    ## Contract

    `reference` in `definition.json` runs the captured aten ops unchanged (generated from the graph); with
    float64 inputs every floating dtype it names becomes float64. `baseline.py` is the same code: what the
    model runs today {'(eager mode)' if r['mode'] == 'eager' else '(the ops Inductor fused into this kernel, run eagerly)'}.
    Var axes are the sizes that differ between the phases captured; every other size is fixed.
    Tolerances (`contract.toml`): {r['tolerance_note']}

    Reference check at capture: the generated reference on the model's own captured inputs reproduced the
    model's outputs with max |error| {r['reference_check']['max_abs_error']:.3g} (native precision).
    """).replace("@ROWS@", rows)  # after dedent: a multi-line value inside the template would stop it
