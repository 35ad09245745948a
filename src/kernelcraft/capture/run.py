"""``kernelcraft capture MODEL_SPEC --out DIR``: the steps, and the ``kc-capture/1`` index they write.

1. build the model (``models.py``) and, per phase (prefill; decode after a KV cache of ``seq``
   tokens), capture its graphs (``graphs.py``) and the values of every node on the real inputs;
2. profile the phase: eager mode, each operator of the graph run node by node; ``--compile``, the
   compiled step, each Inductor kernel or extern call found among the profiler's events;
3. cut regions (``regions.py``), merge identical ones (every layer has the same), pair each region's
   prefill occurrence with its decode one (``codegen.py``: same structure, sizes that vary = var axes);
4. rank by the share of the step, averaged over the phases captured, and for the top N: link a
   catalog task that computes the same (``write.py``), or write a task folder.

``DIR/capture.json`` keeps every ranked region (share per phase, the link or folder, or why none was
written); ``DIR/README.md`` is the same as a table.
"""

from __future__ import annotations

import datetime as dt
import json
import shlex
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch

from kernelcraft.capture import codegen, graphs, regions, write
from kernelcraft.capture.models import CaptureError, build

CAPTURE_VERSION = "kc-capture/1"
DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}
PHASES = ("prefill", "decode")


@dataclass
class CaptureOptions:
    spec: str
    out: Path
    compile: bool = False
    top: int = 5
    batch: int = 1
    seq: int = 32
    device: str = "cpu"
    dtype: str = "bfloat16"
    layers: int | None = None
    iters: int = 5
    seed: int = 0
    catalog: Path | None = None  # default: the repository's tasks/ when it is there
    phases: tuple[str, ...] = PHASES
    command: str = ""
    extra: dict = field(default_factory=dict)


def _default_catalog() -> Path | None:
    here = Path(__file__).resolve()
    for parent in here.parents:
        if (parent / "tasks").is_dir() and (parent / "pyproject.toml").is_file():
            return parent / "tasks"
    return None


def _flat_outputs(out) -> list[torch.Tensor]:
    if isinstance(out, torch.Tensor):
        return [out]
    if hasattr(out, "logits"):
        return [out.logits]
    if isinstance(out, tuple | list):
        return [o for o in out if isinstance(o, torch.Tensor)]
    return []


def _phase(opts: CaptureOptions, subject, phase: str) -> dict | None:
    kwargs = subject.inputs(phase)
    if kwargs is None:
        return None
    model = subject.model
    with torch.no_grad():
        expected = _flat_outputs(model(**subject.inputs(phase)))
    if opts.compile:
        comp = graphs.capture_compiled(model, kwargs, opts.device)
        caps = comp.graphs

        def call(kw):
            return comp.fn(**kw)
    else:
        caps, _ = graphs.capture_eager(model, kwargs)

        def call(kw):
            return model(**kw)
    if not caps:
        raise CaptureError(f"{opts.spec}: torch.compile produced no graph for the {phase} step")
    step = graphs.step_ms(call, lambda: subject.inputs(phase), opts.iters, opts.device)
    envs = {c.graph_id: graphs.run_graph(c) for c in caps}
    # the captured graph reproduces the model: its logits (the last graph's first tensor output)
    got = [v for v in _graph_outputs(caps[-1], envs[caps[-1].graph_id])]
    graph_check = None
    if expected and got:
        e, g = expected[0], next((t for t in got if t.shape == expected[0].shape), None)
        if g is not None:
            graph_check = {"max_abs_diff": float((e.float() - g.float()).abs().max()),
                           "max_abs": float(e.float().abs().max())}
    found: list[regions.Region] = []
    if opts.compile:
        times = graphs.kernel_ms(caps, step["events"], opts.iters, opts.device)
        for c in caps:
            for r in regions.compiled_regions(c):
                r.ms = times.get((c.graph_id, r.kernel_index), 0.0)
                found.append(r)
        mapped = sum(times.values())
    else:
        # The operators' times come from running the graph node by node; their share is of that run
        # (on the CPU the interpreter and profiler add per-node overhead the model's own step lacks).
        graph_ms = 0.0
        for c in caps:
            rs = regions.eager_regions(c)
            core = {n for r in rs for n in r.nodes if not regions.is_view(_node(c, n)) and not regions.is_getitem(_node(c, n))}
            t, total = graphs.node_ranges(c, core, opts.iters, opts.device)
            graph_ms += total
            for r in rs:
                r.ms = sum(t.get(n, 0.0) for n in r.nodes)
                found.append(r)
        mapped = sum(r.ms for r in found)
        step["model_ms"], step["ms"] = step["ms"], max(graph_ms, mapped)
        step["basis"] += " of the captured graph run node by node"
    return {"caps": {c.graph_id: c for c in caps}, "envs": envs, "regions": found, "step": step,
            "graph_check": graph_check, "mapped_ms": mapped,
            "kernels": sum(len(c.kernels) for c in caps) if opts.compile else None}


def _node(cap, name):
    return next(n for n in cap.gm.graph.nodes if n.name == name)


def _graph_outputs(cap, env) -> list[torch.Tensor]:
    out = next(n for n in cap.gm.graph.nodes if n.op == "output")
    vals = []

    def walk(a):
        if isinstance(a, torch.fx.Node):
            v = env.get(a.name)
            if isinstance(v, torch.Tensor):
                vals.append(v)
        elif isinstance(a, list | tuple):
            for x in a:
                walk(x)

    walk(out.args)
    return vals


def _merge(phase_data: dict) -> list[dict]:
    """Identical regions of one phase (same ops, wiring and sizes: one per layer) become one entry."""
    merged: dict[str, dict] = {}
    for r in phase_data["regions"]:
        cap = phase_data["caps"][r.graph_id]
        try:
            prog = codegen.program(cap, r)
            key, err = prog.full, None
        except codegen.Unsupported as e:
            prog, key, err = None, f"unsupported:{r.graph_id}:{r.nodes}", str(e)
        m = merged.get(key)
        if m is None:
            merged[key] = {"region": r, "program": prog, "unsupported": err, "ms": r.ms, "count": 1}
        else:
            m["ms"] += r.ms
            m["count"] += 1
    return list(merged.values())


def _hints(opts: CaptureOptions) -> dict[tuple[int, ...], str]:
    b, s = opts.batch, opts.seq
    h = {(b * s, b): "num_tokens", (s, 1): "seq_len", (s, s + 1): "kv_len"}
    if b == 1:
        h[(s, 1)] = "num_tokens"
    return h


def capture(opts: CaptureOptions) -> dict:
    dtype = DTYPES.get(opts.dtype)
    if dtype is None:
        raise CaptureError(f"--dtype {opts.dtype}: use one of {sorted(DTYPES)}")
    if opts.top < 1:
        raise CaptureError(f"--top {opts.top}: give at least 1")
    out = Path(opts.out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise CaptureError(f"--out {out}: exists and is not an empty folder (give a new folder)")
    if opts.device.startswith("cuda"):
        torch.cuda.set_device(torch.device(opts.device).index or 0)
    subject = build(opts.spec, opts.device, dtype, opts.batch, opts.seq, opts.layers, opts.seed)
    data = {}
    for phase in opts.phases:
        d = _phase(opts, subject, phase)
        if d is not None:
            data[phase] = d
    phases = list(data)
    entries = {ph: _merge(data[ph]) for ph in phases}
    # pair occurrences across phases by structure
    groups: list[dict] = []
    for ph in phases:
        for e in entries[ph]:
            struct = e["program"].struct if e["program"] else None
            target = None
            if struct is not None:
                cands = [g for g in groups if g["struct"] == struct and ph not in g["by_phase"]]
                if cands:
                    target = max(cands, key=lambda g: _similarity(next(iter(g["by_phase"].values()))["program"], e["program"]))
            if target is None:
                target = {"struct": struct, "by_phase": {}}
                groups.append(target)
            target["by_phase"][ph] = e
    for g in groups:
        shares = [g["by_phase"][ph]["ms"] / data[ph]["step"]["ms"] if ph in g["by_phase"] and data[ph]["step"]["ms"] else 0.0
                  for ph in phases]
        g["share"] = sum(shares) / len(phases)
        g["shares"] = dict(zip(phases, shares, strict=True))
    groups.sort(key=lambda g: -g["share"])
    catalog_root = opts.catalog or _default_catalog()
    catalog = write.load_catalog(catalog_root) if catalog_root else []
    out.mkdir(parents=True, exist_ok=True)
    index: dict = {
        "format": CAPTURE_VERSION, "timestamp": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "command": opts.command, "options": {k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(opts).items()},
        "model": subject.describe, "torch": torch.__version__, "device": opts.device,
        "catalog": str(catalog_root) if catalog_root else None,
        "phases": {ph: {"step_ms": data[ph]["step"]["ms"], "basis": data[ph]["step"]["basis"],
                        "cpu_step_ms": data[ph]["step"]["cpu_ms"], "mapped_ms": data[ph]["mapped_ms"],
                        "graphs": len(data[ph]["caps"]), "kernels": data[ph]["kernels"],
                        "graph_check": data[ph]["graph_check"]} for ph in phases},
        "regions": [],
    }
    written = 0
    for rank, g in enumerate(groups, 1):
        doc = _describe(g, phases, data)
        doc["rank"] = rank
        if written < opts.top:
            doc.update(_emit(opts, subject, g, phases, data, catalog, out, rank))
            if doc.get("task_dir") or doc.get("link"):
                written += 1
        index["regions"].append(doc)
    (out / "capture.json").write_text(json.dumps(index, indent=2, default=str) + "\n")
    (out / "README.md").write_text(_index_readme(index))
    return index


def _similarity(a, b) -> int:
    va = [d for _, s in a.inputs for d in s] + a.ints
    vb = [d for _, s in b.inputs for d in s] + b.ints
    return sum(x == y for x, y in zip(va, vb, strict=False))


def _describe(g: dict, phases: list[str], data: dict) -> dict:
    first = next(iter(g["by_phase"].values()))
    r = first["region"]
    return {"label": r.label, "kind": r.kind, "ops": r.ops, "share": g["share"], "shares": g["shares"],
            "phases": {ph: {"ms": e["ms"], "count": e["count"],
                            "input_shapes": [s for _, s in e["program"].inputs] if e["program"] else None}
                       for ph, e in g["by_phase"].items()},
            "unsupported": first["unsupported"]}


def _values(data: dict, ph: str, e: dict) -> tuple[list, list]:
    r = e["region"]
    env = data[ph]["envs"][r.graph_id]
    return [env[n] for n in r.inputs], [env[n] for n in r.outputs]


def _emit(opts, subject, g, phases, data, catalog, out: Path, rank: int) -> dict:
    by = g["by_phase"]
    first_ph = next(iter(by))
    e0 = by[first_ph]
    if e0["unsupported"]:
        return {"skipped": e0["unsupported"]}
    if not e0["region"].inputs:
        return {"skipped": "the region reads no tensor (it computes from constants alone)"}
    ins, outs = _values(data, first_ph, e0)
    if not all(isinstance(x, torch.Tensor) for x in ins + outs):
        return {"skipped": "an input or output is not a tensor"}
    consts = sorted({t[1] for _, a, _ in e0["program"].code for t in _leaves(a) if t[0] == "float"})
    link = write.find_link(catalog, ins, outs, consts)
    if link is not None:
        return {"link": link}
    obs = [ph for ph in phases if ph in by]
    progs = [by[ph]["program"] for ph in obs]
    try:
        axes = codegen.infer_axes(progs, _hints(opts))
    except codegen.Unsupported as err:  # sizes no expression explains: keep the first phase's, fixed
        obs, progs = obs[:1], progs[:1]
        axes = codegen.infer_axes(progs, {})
        note = f"sizes fixed to the {obs[0]} phase's: {err}"
    else:
        note = ""
    p = progs[0]
    name = f"cap_{write.slug(opts.spec, 20)}_{rank:02d}_{write.slug('_'.join(e0['region'].ops) or e0['region'].label, 40)}"
    header = (f"Reference for {name}: region {e0['region'].label} of {opts.spec}, captured by kernelcraft capture "
              f"({'post-grad Inductor graph' if opts.compile else 'eager aten graph'}).\n\nThe same aten ops as the "
              "captured graph, generated from it.")
    try:
        src = codegen.source(p, axes, header)
        ref = write._compile_reference(src)
        with torch.no_grad():
            got = ref(*ins)
    except Exception as err:  # noqa: BLE001 - a reference that does not reproduce its region is not written
        return {"skipped": f"the generated reference does not run on the captured inputs: {type(err).__name__}: {err}"}
    try:  # the judge runs the reference in float64 where its ops allow, else in the inputs' precision
        with torch.no_grad():
            got64 = ref(*write.upcast(ins))
        precision = "float64"
    except (RuntimeError, TypeError, NotImplementedError):
        got64, precision = got, "native"
        src = codegen.source(p, axes, header, native=True)  # float64 inputs then run in the model's dtypes
    got = list(got) if isinstance(got, tuple | list) else [got]
    got64 = list(got64) if isinstance(got64, tuple | list) else [got64]
    native_err = max(write.max_abs_error(a, b) for a, b in zip(got, outs, strict=True))
    from kernelcraft.task.dtypes import DEFAULT_TOLERANCE

    tol_lines, notes = [], []
    for dt_name in sorted({d for d, _ in p.output_meta}):
        if dt_name not in DEFAULT_TOLERANCE or dt_name.startswith(("int", "uint", "bool")):
            continue
        base_atol, rtol = DEFAULT_TOLERANCE[dt_name]
        need = max(write.needed_atol(o, r64, rtol) for o, r64, (d, _) in zip(outs, got64, p.output_meta, strict=True)
                   if d == dt_name)
        atol = base_atol if need <= base_atol else float(f"{2 * need:.3g}")
        tol_lines += [f"[tolerance.{dt_name}]",
                      f"# measured at capture: the model's own {dt_name} outputs need atol {need:.3g} at rtol {rtol:g}"
                      f" against the {precision} reference" + ("; the default holds" if atol == base_atol else
                                                          "; atol is twice that (the model's own error, doubled)"),
                      f"atol = {atol:g}", f"rtol = {rtol:g}", ""]
        notes.append(f"{dt_name}: atol {atol:g}, rtol {rtol:g} (the model's own outputs need atol {need:.3g})")
    int_ranges = {}
    for i, x in enumerate(ins):
        if not x.is_floating_point() and x.dtype != torch.bool and x.numel():
            lo = min(int(by[ph]["region"] and _values(data, ph, by[ph])[0][i].min()) for ph in obs)
            hi = max(int(_values(data, ph, by[ph])[0][i].max()) for ph in obs)
            int_ranges[f"x{i}"] = (lo, hi)
    kind = "fused region (one Inductor kernel)" if e0["region"].kind == "kernel" else (
        "library call Inductor keeps (extern kernel)" if e0["region"].kind == "extern" else "eager operator")
    describe = (f"{e0['region'].label} ({kind}) of {opts.spec}, captured by kernelcraft capture: "
                f"{', '.join(e0['region'].ops)}; {g['share']:.1%} of the step (mean over {', '.join(phases)}).")
    defn = write.definition(name, write.slug("_".join(e0["region"].ops) or "captured", 60), p, axes, src,
                            e0["region"], obs, describe,
                            ["captured", f"model:{write.slug(opts.spec)}", f"stage:{e0['region'].kind}"])
    wl = write.workloads(name, axes, obs, len(p.inputs))
    region_doc = {
        "label": e0["region"].label, "model": f"`{opts.spec}` ({subject.describe.get('arch')}, random weights)",
        "mode": "compile" if opts.compile else "eager", "device": opts.device,
        "what": f"A {kind}." + (f" {note}." if note else ""), "ops": e0["region"].ops, "nodes": e0["region"].nodes,
        "basis": data[first_ph]["step"]["basis"],
        "phases": [{"phase": ph, "shapes": " ".join(str(s) for _, s in by[ph]["program"].inputs), "ms": by[ph]["ms"],
                    "share": g["shares"][ph], "count": by[ph]["count"]} for ph in obs],
        "tolerance_note": "; ".join(notes) or "defaults",
        "reference_check": {"max_abs_error": native_err},
    }
    folder = out / name
    baseline = src.replace('"""Reference for', '"""Baseline (the model as it runs today) for', 1)
    write.write_task(folder, defn, wl, write.contract_toml(p, int_ranges, tol_lines),
                     write.readme(name, region_doc, opts.command or f"kernelcraft capture {shlex.quote(opts.spec)}"), baseline)
    return {"task_dir": str(folder), "definition": name, "reference_check": {"native_max_abs_error": native_err},
            "axes": {"const": axes.const, "var": {k: list(v) for k, v in axes.var.items()}, "derived": axes.derived},
            "observations": obs, **({"note": note} if note else {})}


def _leaves(t):
    if t[0] == "list":
        for x in t[1]:
            yield from _leaves(x)
    else:
        yield t


def _index_readme(index: dict) -> str:
    lines = [f"# capture of `{index['options']['spec']}`", "",
             f"`{index['command']}` ({index['format']}, {index['timestamp']}, torch {index['torch']}, {index['device']}).", ""]
    for ph, p in index["phases"].items():
        gc = p["graph_check"]
        lines.append(f"- {ph}: step {p['step_ms']:.4f} ms ({p['basis']}), {p['mapped_ms']:.4f} ms of it mapped to regions; "
                     f"{p['graphs']} graph(s)" + (f", {p['kernels']} kernels" if p["kernels"] is not None else "")
                     + (f"; captured graph vs model: max |diff| {gc['max_abs_diff']:.3g}" if gc else ""))
    lines += ["", "| rank | region | share (mean) | per phase | written |", "|---|---|---|---|---|"]
    for r in index["regions"][:max(20, index['options']['top'] * 2)]:
        per = ", ".join(f"{ph} {s:.1%}" for ph, s in r["shares"].items())
        if r.get("link"):
            w = f"linked: catalog task `{r['link']['task']}`"
        elif r.get("task_dir"):
            w = f"`{Path(r['task_dir']).name}/`"
        elif r.get("skipped"):
            w = f"not written: {r['skipped'][:120]}"
        else:
            w = "-"
        lines.append(f"| {r['rank']} | {r['label']} ({', '.join(r['ops'][:6])}) | {r['share']:.1%} | {per} | {w} |")
    return "\n".join(lines) + "\n"
