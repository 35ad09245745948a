"""``kernelcraft e2e``: exported kernels inside a real model, measured end to end, eager and under
torch.compile, prefill and decode, next to the Amdahl prediction from the regions' measured shares.

Steps, each recorded in the ``kc-e2e/2`` JSON record:

1. the kernels: exported torch-op packages (``--package``, repeatable), one per region kind
   (``regions.kind_of``); each must be validated for the model's device, dtype and every shape the
   phases feed it (the package's own envelope check), and its reference must compute what the model's
   region computes, else this stops before measuring anything;
2. the model: ``capture.models.build`` (a preset, ``hf:MODEL_TYPE,...``; random weights, nothing
   downloaded); the patched copy (``regions.patch``) shares its weights; a third copy holds the stock
   regions in the patched layout (profiling ranges; it must equal the model bit for bit);
3. per phase (prefill: ``B x S`` tokens; decode: one token per sequence after a KV cache of ``S``,
   deep-copied for every call: the ``decode inputs`` row times that copy alone):
   correctness of the patched logits and the packages' own kernel/fallback counts; each kind alone on
   the phase's shape (stock region vs kernel region, eager calls, and under torch.compile); the shares
   (``measure.region_shares``); end-to-end latency of eager / eager+kernels / torch.compile /
   torch.compile+kernels with the one timer, interleaved, launched from the host as a user's would be;
   for compiled mode what the compiler kept (``compiled.py``) and, when the compiled model with the
   kernels is slower, the reasons found.
"""

from __future__ import annotations

import copy
import datetime as dt
import importlib
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch

from kernelcraft.e2e import compiled as C
from kernelcraft.e2e import regions as R
from kernelcraft.e2e.measure import amdahl, region_shares

E2E_VERSION = "kc-e2e/2"
DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}
PHASES = ("prefill", "decode")


class E2EError(Exception):
    """The model cannot be built or a kernel cannot be placed; the message says what to do."""


@dataclass
class E2EOptions:
    model: str = "llama-tiny"  # a capture MODEL_SPEC: preset or hf:MODEL_TYPE[,key=value...]
    layers: int | None = None
    batch: int = 1
    seq: int = 8
    device: str = "cpu"
    dtype: str = "bfloat16"
    phases: tuple[str, ...] = PHASES
    compile: bool = True
    compile_backend: str = "inductor"  # aot_eager traces the same graph without generating code (CPU tests)
    budget_ms: float = 300.0  # measured time per timed function (the timer's budget)
    profile_iters: int = 5
    reps: int = 10  # the timer's minimum repetitions per function (CPU tests: fewer)
    seed: int = 0
    packages: list[str] = field(default_factory=list)
    # gated delta rule: what the stock model's regions call ("model": what transformers resolved, FLA's when
    # it imports; "torch": transformers' torch fallback even then), and peers run as extra rows ("fla")
    gdn_function: str = "model"
    peers: tuple[str, ...] = ()


def load_package(spec: str):
    """An exported torch-op package: an installed module name, or a folder ``kernelcraft export`` wrote."""
    path = Path(spec)
    if path.exists():
        src = path / "src"
        pkgs = [p for p in src.iterdir() if (p / "kernelcraft_export.json").is_file()] if src.is_dir() else [path]
        if len(pkgs) != 1 or not (pkgs[0] / "kernelcraft_export.json").is_file():
            raise E2EError(f"{spec}: not a torch-op export (expected src/<package>/kernelcraft_export.json; "
                           "make one with kernelcraft export RECORD DEST --format torch-op --solution NAME)")
        if str(pkgs[0].parent) not in sys.path:
            sys.path.insert(0, str(pkgs[0].parent))
        spec = pkgs[0].name
    try:
        pkg = importlib.import_module(spec)
    except ImportError as e:
        raise E2EError(f"cannot import the exported package {spec!r}: {e}") from None
    if not hasattr(pkg, "export_info") or not hasattr(pkg, "_exported"):
        raise E2EError(f"{spec!r} is not a kernelcraft torch-op export (no export_info)")
    return pkg


def by_kind(pkgs: list) -> dict:
    out: dict = {}
    for pkg in pkgs:
        try:
            kind = R.kind_of(pkg.export_info["definition"])
        except R.PatchError as e:
            raise E2EError(f"--package {pkg.__name__}: {e}") from None
        if kind in out:
            raise E2EError(f"--package {pkg.__name__} and {out[kind].__name__} both replace {kind} regions; give one")
        out[kind] = pkg
    return out


def _region_args(kind: str, region, tokens: int, config, device: str, dtype, batch: int = 1) -> tuple:
    """The exported op's arguments for one region call at ``tokens`` rows (the envelope check)."""
    x = R.region_inputs(kind, tokens, config, device, dtype, batch=batch, region=region)
    if kind in R.G.KINDS:
        return region.op_args(*x.args, {k: x.kwargs[k] for k in R.G.EXTRA},
                              **{k: v for k, v in x.kwargs.items() if k not in R.G.EXTRA})
    if kind == "rmsnorm":
        return (x[0], region.weight, region.eps)
    if kind == "fused_add_rmsnorm":
        return (x[0], x[1], region.weight, region.eps)
    gu = torch.empty(tokens, 2 * config.intermediate_size, device=device, dtype=dtype)
    return (gu,)


def check_fit(pkgs: dict, stock_regions: dict, config, tokens: dict[str, int], device: str, dtype,
              batch: int = 1) -> dict:
    """Every package validated for every shape the phases feed it, and its reference computes the
    model's region (the stock region on the same inputs, within the export's tolerance)."""
    problems, checked = [], {}
    for kind, pkg in pkgs.items():
        region = stock_regions[kind]
        mine = {p: t for p, t in tokens.items() if p in R.PHASES_OF.get(kind, R.PHASES_OF_ALL)}
        for phase, t in mine.items():
            miss = pkg._exported.check(_region_args(kind, region, t, config, device, dtype, batch))
            if miss:
                problems.append(f"{pkg.__name__} ({kind}) at the {phase} shape ({t} tokens): {miss[1]}")
        if not mine:
            continue
        x = R.region_inputs(kind, min(mine.values()), config, device, dtype, seed=1, batch=batch, region=region)
        with torch.no_grad():
            if kind in R.G.KINDS:  # the model's function vs the reference on the adapted arguments
                # output_final_state to compare the states too; beta = sigmoid(b) in float32 as the op makes
                # it (the model rounds it to its dtype first: gdn.ADAPTATION, in the logits comparison)
                x = R.Call(x.args, {**x.kwargs, "output_final_state": True,
                                    "beta": x.kwargs["kc_b"].float().sigmoid()})
                want = R.call(region, x)
                args = region.op_args(*x.args, {k: x.kwargs[k] for k in R.G.EXTRA},
                                      **{k: v for k, v in x.kwargs.items() if k not in R.G.EXTRA})
                got = pkg.reference(*args)
                got = (got[0].reshape(want[0].shape), got[1].transpose(-1, -2))
            else:
                want = region(*x)
                args = _region_args(kind, region, x[0].shape[0], config, device, dtype)
                if kind == "silu_mul":  # the reference on [gate | up] of the same input
                    args = (torch.cat([region.gate_proj(x[0]), region.up_proj(x[0])], -1),)
                else:
                    args = (*x, *args[len(x):])
                got = pkg.reference(*args)
        want = want if isinstance(want, tuple) else (want,)
        got = got if isinstance(got, tuple) else (got,)
        tol = list(pkg.export_info["tolerance"].values())
        worst = []
        for i, (w, g) in enumerate(zip(want, got, strict=True)):
            t = tol[i] if i < len(tol) else tol[0]
            err = (g.float() - w.float().reshape(g.shape)).abs()
            bad = (err > t["atol"]) & (err > t["rtol"] * w.float().reshape(g.shape).abs())
            worst.append(int(bad.sum()))
        checked[kind] = {"reference_vs_model_region_bad_elements": worst}
        if any(worst):
            problems.append(f"{pkg.__name__}'s reference does not compute this model's {kind} region: {worst} "
                            "elements outside the export's tolerance")
    if problems:
        raise E2EError("the kernels do not fit this model (every call would run the reference, or compute "
                       "something else): " + "; ".join(problems))
    return checked


def _ms(t) -> float:
    return t.median_ms


def run_e2e(pkg_list: list, opts: E2EOptions) -> dict:
    import torch._dynamo

    cfg = torch._dynamo.config
    limit = "recompile_limit" if hasattr(cfg, "recompile_limit") else "cache_size_limit"
    # A phase compiles up to 3 kinds x 2 regions sharing one forward's code, and 2 models of one class:
    # past the default limit (8) dynamo would run the rest eagerly and say so only in a warning.
    with cfg.patch({limit: 64}):
        return _run(pkg_list, opts)


def _run(pkg_list: list, opts: E2EOptions) -> dict:
    from kernelcraft.capture.models import CaptureError, build
    from kernelcraft.measure.environment import environment
    from kernelcraft.measure.timing import TIMING_VERSION, time_interleaved

    dtype = DTYPES.get(opts.dtype)
    if dtype is None:
        raise E2EError(f"--dtype {opts.dtype}: use one of {sorted(DTYPES)}")
    if opts.compile and opts.compile_backend not in C.BACKENDS:
        raise E2EError(f"--compile-backend {opts.compile_backend}: use one of {list(C.BACKENDS)}")
    bad = [p for p in opts.phases if p not in PHASES]
    if bad or not opts.phases:
        raise E2EError(f"--phase {bad[0] if bad else '(none)'}: use prefill and/or decode")
    if opts.device.startswith("cuda"):
        torch.cuda.set_device(torch.device(opts.device).index or 0)
    pkgs = by_kind(pkg_list)
    if not pkgs:
        raise E2EError("no kernel: give --package (an exported torch-op package) at least once")
    ops = {k: p.op for k, p in pkgs.items()}
    namespaces = {p.export_info["namespace"] for p in pkgs.values()}
    try:
        subject = build(opts.model, opts.device, dtype, opts.batch, opts.seq, opts.layers, opts.seed)
    except CaptureError as e:
        raise E2EError(str(e)) from None
    stock = subject.model
    config = stock.config
    gdn_kinds = tuple(k for k in pkgs if k in R.G.KINDS)
    if opts.gdn_function not in ("model", "torch"):
        raise E2EError(f"--gdn-function {opts.gdn_function}: use model or torch")
    bad_peers = [p for p in opts.peers if p != "fla"]
    if bad_peers or (opts.peers and not gdn_kinds):
        raise E2EError(f"--peer {', '.join(opts.peers)}: the one peer is fla, for the gated delta rule kinds "
                       "(give a gdn_prefill or gdn_decode package)")
    try:
        if gdn_kinds and opts.gdn_function != "model":  # the stock model's own rule calls, as asked
            R.patch(stock, {}, stock=gdn_kinds, gdn_function=opts.gdn_function)
        shared = {id(t): t for t in [*stock.parameters(), *stock.buffers()]}  # copies share the weights
        patched, layout = copy.deepcopy(stock, memo=dict(shared)), copy.deepcopy(stock, memo=dict(shared))
        placed = R.patch(patched, ops, gdn_function=opts.gdn_function)
        R.patch(layout, {}, stock=tuple(pkgs), gdn_function=opts.gdn_function)
        peers = {}
        for peer in opts.peers:
            peers[peer] = copy.deepcopy(stock, memo=dict(shared))
            fns = R.G.fla_functions()
            R.G.patch_layers(peers[peer], {k: fns[k] for k in gdn_kinds}, (), opts.gdn_function, op_interface="model")
    except (R.PatchError, R.G.GDNPatchError) as e:
        raise E2EError(str(e)) from None
    stock_regions = {}
    for r in R.regions(layout):
        stock_regions.setdefault(r.kind, r)
    kernel_regions = {}
    for r in R.regions(patched):
        kernel_regions.setdefault(r.kind, r)
    tokens = {"prefill": opts.batch * opts.seq, "decode": opts.batch}
    tokens = {p: tokens[p] for p in opts.phases}
    fit = check_fit(pkgs, stock_regions, config, tokens, opts.device, dtype, opts.batch)
    env = environment(opts.device)
    env["libs"]["transformers"] = subject.describe.get("transformers")
    record: dict = {
        "format": E2E_VERSION, "timestamp": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "device": opts.device, "environment": env, "timing_version": TIMING_VERSION,
        "options": asdict(opts),
        "kernels": {k: {"package": p.__name__, "op": str(p.op), "task": p.export_info["definition"]["name"],
                        "solution": p.export_info["solution"], "source_hash": p.export_info["solution"]["source_hash"],
                        "traceable_triton": p._exported.traceable_triton(),
                        "envelope": {x: p.export_info["envelope"][x] for x in ("device_type", "hardware", "dtypes",
                                                                               "const_axes", "var_axes")},
                        "evaluation": {x: p.export_info["provenance"].get(x) for x in (
                            "evidence", "seed", "evaluated_at", "harness_version")}, **fit.get(k, {})}
                    for k, p in pkgs.items()},
        "model": {**subject.describe, "spec": opts.model, "dtype": opts.dtype, "batch": opts.batch, "seq": opts.seq,
                  "patch": placed},
        "phases": {},
    }

    def step(m, phase):
        return lambda: m(**subject.inputs(phase)).logits

    timer = {"budget_ms": opts.budget_ms, "min_reps": opts.reps, "warmup": min(3, opts.reps)}
    for phase in opts.phases:
        # compiled functions of the phase before are done with; dynamo's cache holds the code of every
        # compiled region and model (one code object per class), so clear it and let it hold a phase's
        torch._dynamo.reset()
        ph: dict = {"tokens": tokens[phase], "wall_s": {}}
        record["phases"][phase] = ph
        all_pkgs = pkgs
        pkgs = {k: p for k, p in all_pkgs.items() if phase in R.PHASES_OF.get(k, R.PHASES_OF_ALL)}  # noqa: PLW2901
        if not pkgs:
            ph["skipped"] = (f"no kernel given runs in {phase}: " + ", ".join(
                f"{k} runs in {'/'.join(R.PHASES_OF.get(k, R.PHASES_OF_ALL))} only" for k in all_pkgs))
            pkgs = all_pkgs
            continue
        clock = [time.perf_counter()]

        def lap(name, ph=ph, clock=clock, phase=phase):  # where a phase's wall time went (device scripts budget by it)
            now = time.perf_counter()
            ph["wall_s"][name] = round(now - clock[0], 3)
            clock[0] = now
            _say(f"{phase}: {name} {ph['wall_s'][name]:.1f} s")
        _say(f"{phase}: {tokens[phase]} tokens, kernels {', '.join(pkgs)}")
        with torch.no_grad():
            ref = step(stock, phase)()
            ph["layout_bit_exact"] = bool(torch.equal(step(layout, phase)(), ref))
            for p in pkgs.values():
                p.reset_stats()
            for r in R.regions(patched):
                if isinstance(r, R.G.GDNRegion):
                    r.calls = 0
            got = step(patched, phase)()
            err = (got.float() - ref.float()).abs()
            ph["correctness"] = {
                "max_abs_logit_diff": err.max().item(), "mean_abs_logit_diff": err.mean().item(),
                "max_abs_logit": ref.float().abs().max().item(), "mean_abs_logit": ref.float().abs().mean().item(),
                "argmax_agreement": (got.argmax(-1) == ref.argmax(-1)).float().mean().item(),
                "dispatch": {k: p.stats() for k, p in pkgs.items()},
                "kernels_ran": all(p.stats()["kernel"] > 0 for p in pkgs.values()),
            }
            if any(k in R.G.KINDS for k in pkgs):
                ph["correctness"]["gdn_region_kernel_calls"] = {
                    k: sum(r.calls for r in R.regions(patched) if r.kind == k) for k in pkgs if k in R.G.KINDS}
            for peer, pm in peers.items():
                peer_regions = [r for r in R.regions(pm) if isinstance(r, R.G.GDNRegion)]
                for r in peer_regions:
                    r.calls = 0
                got_p = step(pm, phase)().float()
                # every peer region of the phase's kinds must have taken the peer's function: a region the step
                # never reached leaves the stock function in its place, and the row would be the stock model's
                missed = sorted({r.kind for r in peer_regions if r.kind in pkgs and r.calls == 0})
                if missed:
                    raise E2EError(
                        f"--peer {peer}: its function for {', '.join(missed)} was never called by "
                        f"{sum(r.calls == 0 for r in peer_regions if r.kind in missed)} of "
                        f"{sum(r.kind in missed for r in peer_regions)} regions in the {phase} step (region calls "
                        f"{[(r.kind, r.calls) for r in peer_regions if r.kind in pkgs]}): its row would be the stock "
                        "model's, not the peer's")
                err_p = (got_p - ref.float()).abs()
                ph.setdefault("peers", {})[peer] = {
                    # the peer's rule calls that took its function (each region at least once, checked above)
                    "region_calls": {k: sum(r.calls for r in peer_regions if r.kind == k) for k in pkgs
                                     if k in R.G.KINDS},
                    "max_abs_logit_diff": err_p.max().item(), "mean_abs_logit_diff": err_p.mean().item(),
                    "argmax_agreement": (got_p.argmax(-1) == ref.argmax(-1)).float().mean().item(),
                    "vs_kernels_max_abs_logit_diff": (got_p - got.float()).abs().max().item(),
                    "functions": {k: f"{getattr(f, '__module__', '?')}.{getattr(f, '__name__', '?')}"
                                  for k, f in R.G.fla_functions().items() if k in pkgs}}
            lap("correctness")
            # each kind alone, on the phase's shape
            iso: dict = {}
            for k in pkgs:
                s_r, k_r = stock_regions[k], kernel_regions[k]
                x = R.region_inputs(k, tokens[phase], config, opts.device, dtype, seed=2, batch=opts.batch, region=s_r)
                fns = {"stock": lambda s_r=s_r, x=x: R.call(s_r, x), "kernel": lambda k_r=k_r, x=x: R.call(k_r, x)}
                if opts.compile and opts.compile_backend == "inductor":  # aot_eager runs the same aten ops
                    for name, mod in (("stock_compiled", s_r), ("kernel_compiled", k_r)):
                        try:
                            cm = torch.compile(mod, backend=opts.compile_backend, fullgraph=True, dynamic=False)
                            R.call(cm, x)
                            fns[name] = lambda cm=cm, x=x: R.call(cm, x)
                        except Exception as e:  # noqa: BLE001 - recorded; the eager numbers stand
                            iso.setdefault(k, {})[f"{name}_error"] = f"{type(e).__name__}: {str(e)[:300]}"
                t = time_interleaved(fns, opts.device, use_graphs=False, **timer)
                e = iso.setdefault(k, {})
                e.update(shape=R.first_shape(x), **{f"{n}_ms": _ms(v) for n, v in t.items()})
                e["speedup"] = e["stock_ms"] / e["kernel_ms"]
                if "stock_compiled_ms" in e and "kernel_compiled_ms" in e:
                    e["speedup_compiled"] = e["stock_compiled_ms"] / e["kernel_compiled_ms"]
                e["what"] = ("gate_proj + up_proj + act*mul vs merged gate_up_proj + kernel" if k == "silu_mul"
                             else "the model's rule function vs the adapted op (layout copies included)"
                             if k in R.G.KINDS else "the region's torch ops vs the kernel")
            ph["isolated"] = iso
            lap("isolated")
            ph["profile"] = region_shares(layout, step(layout, phase), opts.device, opts.profile_iters)
            lap("profile")
            # end to end
            fns = {"eager": step(stock, phase), "eager+kernels": step(patched, phase)}
            for peer, pm in peers.items():
                fns[f"eager+{peer}"] = step(pm, phase)
            compiled: dict = {}
            if opts.compile:
                for name, m in (("torch.compile", stock), ("torch.compile+kernels", patched),
                                *((f"torch.compile+{peer}", pm) for peer, pm in peers.items())):
                    t0 = time.perf_counter()
                    fn, info = C.compile_step(m, lambda cm, phase=phase: cm(**subject.inputs(phase)).logits,
                                              opts.compile_backend, namespaces, opts.device)
                    _say(f"{phase}: compiled {name} in {time.perf_counter() - t0:.1f} s"
                         + ("" if fn is not None else " (failed: its row is left out)"))
                    compiled[name] = info
                    if fn is not None:
                        fns[name] = fn
            lap("compile")
            if phase == "decode":
                fns["decode inputs (cache copy)"] = lambda: subject.inputs("decode")
            for p in pkgs.values():
                p.reset_stats()
            lat = time_interleaved(fns, opts.device, use_graphs=False, **timer)
            ph["dispatch_during_timing"] = {k: p.stats() for k, p in pkgs.items()}
            lap("end_to_end")
            for name, info in compiled.items():
                if name in fns:
                    info["kernels_per_step"] = C.kernels_per_step(fns[name], opts.device)
        ph["latency_ms"] = {k: v.to_dict() for k, v in lat.items()}
        med = {k: v.median_ms for k, v in lat.items()}
        ph["compile"] = compiled
        ph.update(_predict(ph, med, pkgs, placed))
        for peer in peers:
            if f"eager+{peer}" in med:
                ph["measured"][f"eager_speedup_{peer}"] = med["eager"] / med[f"eager+{peer}"]
            if "torch.compile" in med and f"torch.compile+{peer}" in med:
                ph["measured"][f"compiled_speedup_{peer}"] = med["torch.compile"] / med[f"torch.compile+{peer}"]
        if "torch.compile" in compiled and "torch.compile+kernels" in compiled:
            ph["fusion"] = C.fusion_verdict(compiled["torch.compile"], compiled["torch.compile+kernels"],
                                            sum(placed["regions"][k] for k in pkgs))
        ph["why_slower"] = why_slower(ph, opts)
        pkgs = all_pkgs
    return record


def _say(msg: str) -> None:
    """A progress line on stderr: a device call cut by its time limit still shows which step took the time."""
    print(f"e2e {msg}", file=sys.stderr, flush=True)


def _predict(ph: dict, med: dict, pkgs: dict, placed: dict) -> dict:
    iso, prof = ph["isolated"], ph["profile"]["kinds"]
    shares = {k: prof[k]["share"] for k in pkgs if prof.get(k, {}).get("share") is not None}
    speed = {k: iso[k]["speedup"] for k in pkgs}
    pred: dict = {"formula": "1 / ((1 - sum share_k) + sum share_k / speedup_k)",
                  "eager": {"shares": shares, "speedups": speed, "basis": ph["profile"]["basis"],
                            "amdahl_speedup": amdahl(shares, speed) if len(shares) == len(pkgs) else None}}
    # a share no profiler overhead distorts: calls x the isolated stock time / the step (AGENTS.md)
    timed = {k: min(1.0, prof[k]["calls_per_step"] * iso[k]["stock_ms"] / med["eager"]) for k in pkgs if k in prof}
    if sum(timed.values()) <= 1:
        pred["eager"]["timed_shares"] = timed
        pred["eager"]["amdahl_speedup_timed_shares"] = amdahl(timed, speed)
    if "torch.compile" in med and all("speedup_compiled" in iso[k] for k in pkgs):
        cspeed = {k: iso[k]["speedup_compiled"] for k in pkgs}
        cshare = {k: prof[k]["calls_per_step"] * iso[k]["stock_compiled_ms"] / med["torch.compile"] for k in pkgs if k in prof}
        ok = sum(cshare.values()) <= 1
        pred["compiled"] = {"shares": cshare, "speedups": cspeed, "amdahl_speedup": amdahl(cshare, cspeed) if ok else None,
                            "basis": "calls per step x the region compiled alone / the compiled step (timed; "
                                     "profiler ranges do not survive compilation)"}
        if not ok:
            pred["compiled"]["note"] = "the timed shares sum past 1 (the region alone is slower than inside the step)"
    measured = {"eager_speedup": med["eager"] / med["eager+kernels"]}
    if "torch.compile" in med and "torch.compile+kernels" in med:
        measured["compiled_speedup"] = med["torch.compile"] / med["torch.compile+kernels"]
        measured["compiled_kernels_vs_eager"] = med["eager"] / med["torch.compile+kernels"]
    if "decode inputs (cache copy)" in med:
        measured["note"] = (f"every decode row includes a KV-cache copy of {med['decode inputs (cache copy)']:.4f} ms "
                            "(row 'decode inputs (cache copy)')")
    return {"prediction": pred, "measured": measured}


def why_slower(ph: dict, opts: E2EOptions) -> dict | None:
    """When the compiled model with the kernels is slower than the compiled stock model: the causes
    the record's own numbers show (each with its evidence), or that none was found."""
    m = ph["measured"].get("compiled_speedup")
    if m is None or m >= 1.0:
        return None
    reasons = []
    f = ph.get("fusion") or {}
    exp = ph["compile"].get("torch.compile+kernels", {})
    if exp.get("fullgraph") is False or exp.get("graph_breaks"):
        reasons.append({"cause": "graph break", "evidence": f"fullgraph={exp.get('fullgraph')}, "
                        f"{exp.get('graph_breaks')} graph break(s), {exp.get('graphs')} graphs"})
    if f.get("fusion_kept") is False:
        reasons.append({"cause": "fusion lost", "evidence": f"{f['extra_kernels']} kernel(s) more than Inductor's "
                        f"stock plan: {f['inductor_kernels_export']} Inductor + {f['kernels_placed']} exported vs "
                        f"{f['inductor_kernels_stock']} Inductor kernels"})
    if f.get("one_node_per_region") is False:
        reasons.append({"cause": "exported op not one node per region",
                        "evidence": f"{f['exported_op_nodes']} exported nodes for {f['kernels_placed']} regions"})
    for k, iso in ph["isolated"].items():
        if iso.get("speedup_compiled") is not None and iso["speedup_compiled"] < 1:
            reasons.append({"cause": f"{k} kernel slower than the compiler's code for the region",
                            "evidence": f"alone on {iso['shape']}: {iso['kernel_compiled_ms']:.4f} ms vs "
                                        f"{iso['stock_compiled_ms']:.4f} ms compiled stock"})
    for k, d in ph["dispatch_during_timing"].items():
        if d["fallback"]:
            reasons.append({"cause": f"{k} ran its reference", "evidence": f"{d['fallback']} fallback calls: "
                            f"{d['fallback_reasons']}"})
    if opts.compile_backend != "inductor":
        reasons.append({"cause": f"backend {opts.compile_backend} generates no code",
                        "evidence": "the compiled rows run the traced aten ops: they say nothing about Inductor's fusion"})
    lat = ph["latency_ms"]
    a, b = lat["torch.compile"], lat["torch.compile+kernels"]
    overlap = a["p25_ms"] <= b["p75_ms"] and b["p25_ms"] <= a["p75_ms"]
    return {"compiled_speedup": m, "reasons": reasons or [{"cause": "none found", "evidence": (
        "no graph break, fusion kept, each kernel at least as fast as the compiler's region code alone"
        + ("; the two rows' p25-p75 ranges overlap (noise)" if overlap else ""))}],
        "p25_p75_overlap": overlap}
