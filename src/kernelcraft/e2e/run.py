"""``kernelcraft e2e``: an exported kernel inside a real model, measured end to end, next to the
Amdahl prediction from the op's profiled share of the model's time.

Steps, each recorded in the ``kc-e2e/1`` JSON record:

1. the kernel: an exported torch-op package (``--package NAME|DIR``), or a candidate exported on
   the fly (a ledger ID, or RECORD.json --solution NAME); the model's shapes and dtype must lie in
   the kernel's validated envelope, else this stops before measuring anything;
2. the model: a ``transformers`` architecture from a config with random weights (``models.py``), and
   a deep copy whose RMSNorm modules call the exported op;
3. correctness: both models' logits on the same token ids, and the op's own count of kernel calls
   and reference fallbacks (a run where the kernel never ran says so);
4. the op alone: the stock RMSNorm module against the kernel module on the model's activation shape;
5. the op's share of the stock model's time (``measure.op_share``) and the prediction;
6. end to end: forward latency of both models, eager and under ``torch.compile(fullgraph=True)``,
   with the one timer (kc-timing), interleaved, every call launched from the host as a user's would be
   (no CUDA-graph replay; the op alone is also timed as a graph replay on CUDA, for comparison with
   the gauntlet's numbers).
"""

from __future__ import annotations

import copy
import datetime as dt
import importlib
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from kernelcraft.e2e.measure import amdahl, op_share
from kernelcraft.e2e.models import E2EError, build_model, make_config, place_rmsnorm, rmsnorm_modules

E2E_VERSION = "kc-e2e/1"
DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}


@dataclass
class E2EOptions:
    config: str = "llama-tiny"
    layers: int | None = None
    batch: int = 1
    seq: int = 8
    device: str = "cpu"
    dtype: str = "bfloat16"
    compile: bool = True
    compile_backend: str = "inductor"  # aot_eager traces the same graph without generating code (CPU tests)
    budget_ms: float = 300.0  # measured time per timed function (the timer's budget)
    profile_iters: int = 5
    seed: int = 0


def load_package(spec: str):
    """An exported torch-op package: an installed module name, or a folder ``kernelcraft export`` wrote."""
    path = Path(spec)
    if path.exists():
        src = path / "src" if (path / "src").is_dir() else path.parent
        pkgs = [p for p in src.iterdir() if (p / "kernelcraft_export.json").is_file()] if (path / "src").is_dir() else [path]
        if len(pkgs) != 1 or not (pkgs[0] / "kernelcraft_export.json").is_file():
            raise E2EError(f"{spec}: not a torch-op export (expected src/<package>/kernelcraft_export.json)")
        if str(pkgs[0].parent) not in sys.path:
            sys.path.insert(0, str(pkgs[0].parent))
        spec = pkgs[0].name
    try:
        pkg = importlib.import_module(spec)
    except ImportError as e:
        raise E2EError(f"cannot import the exported package {spec!r}: {e}") from None
    if not hasattr(pkg, "export_info"):
        raise E2EError(f"{spec!r} is not a kernelcraft torch-op export (no export_info)")
    return pkg


def _check_fit(pkg, opts: E2EOptions, hidden_size: int | None = None) -> None:
    """Refuse a model outside the kernel's envelope (device, dtype; the hidden size once it is built)."""
    info = pkg.export_info
    d, env = info["definition"], info["envelope"]
    if d.get("op_type") != "rmsnorm":
        raise E2EError(f"e2e places rmsnorm kernels into Llama models; {d['name']} is op_type {d.get('op_type')!r}")
    tensors = [n for n, s in d["inputs"].items() if s.get("shape") is not None]
    if len(tensors) != 2 or len(d["inputs"]) != 3 or len(d["outputs"]) != 1:
        raise E2EError(f"{d['name']}: expected rmsnorm(hidden_states, weight, eps) -> output, got inputs {list(d['inputs'])}")
    device_type = "cuda" if opts.device.startswith("cuda") else "cpu"
    problems = []
    if env["device_type"] != device_type:
        problems.append(f"the kernel was validated on {env['device_type']}, the model runs on {device_type}")
    want = env["dtypes"][tensors[0]]
    if want != opts.dtype:
        problems.append(f"the kernel was validated for {want}, the model is {opts.dtype} (use --dtype {want})")
    hidden_axis = d["inputs"][tensors[1]]["shape"][0]
    if hidden_size is not None and hidden_axis in env["const_axes"] and env["const_axes"][hidden_axis] != hidden_size:
        problems.append(f"the definition fixes {hidden_axis}={env['const_axes'][hidden_axis]}, the model's hidden size "
                        f"is {hidden_size} (choose a --config with that hidden size)")
    if problems:
        raise E2EError("the model is outside the kernel's validated envelope, so every call would run the "
                       "reference: " + "; ".join(problems))


def _timing_dict(t) -> dict:
    return t.to_dict() if hasattr(t, "to_dict") else asdict(t)


def run_e2e(pkg, opts: E2EOptions, kernel_info: dict | None = None) -> dict:
    from kernelcraft.measure.environment import environment
    from kernelcraft.measure.timing import TIMING_VERSION, time_interleaved

    dtype = DTYPES.get(opts.dtype)
    if dtype is None:
        raise E2EError(f"--dtype {opts.dtype}: use one of {sorted(DTYPES)}")
    if opts.device.startswith("cuda"):
        torch.cuda.set_device(torch.device(opts.device).index or 0)
    info = pkg.export_info
    _check_fit(pkg, opts)
    scalars = info["envelope"]["scalars_tested"]
    eps = next(iter(scalars.values()))[0] if scalars else 1e-5
    config = make_config(opts.config, opts.layers, eps=float(eps))
    _check_fit(pkg, opts, config.hidden_size)
    stock = build_model(config, opts.device, dtype, opts.seed)
    patched = copy.deepcopy(stock)
    replaced = place_rmsnorm(patched, pkg.op)
    g = torch.Generator().manual_seed(opts.seed)
    ids = torch.randint(0, config.vocab_size, (opts.batch, opts.seq), generator=g).to(opts.device)
    x = torch.randn(opts.batch, opts.seq, config.hidden_size, generator=g).to(opts.device, dtype)
    record: dict = {
        "format": E2E_VERSION, "timestamp": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "device": opts.device, "environment": environment(opts.device), "timing_version": TIMING_VERSION,
        "options": asdict(opts),
        "kernel": {**(kernel_info or {}), "package": pkg.__name__, "op": str(pkg.op),
                   "solution": info["solution"], "task": info["definition"]["name"],
                   "envelope": {k: info["envelope"][k] for k in ("device_type", "hardware", "dtypes", "const_axes", "var_axes")},
                   "evaluation": {k: info["provenance"].get(k) for k in ("evidence", "seed", "evaluated_at", "harness_version")}},
    }
    import transformers

    record["model"] = {"arch": type(stock).__name__, "transformers": transformers.__version__, "preset": opts.config,
                       "config": {k: getattr(config, k, None) for k in (
                           "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
                           "num_key_value_heads", "vocab_size", "rms_norm_eps")},
                       "params": sum(p.numel() for p in stock.parameters()), "dtype": opts.dtype,
                       "batch": opts.batch, "seq": opts.seq, "tokens": opts.batch * opts.seq,
                       "rmsnorm_modules_replaced": replaced, "weights": f"random, seed {opts.seed}"}

    def fwd(m):
        return lambda: m(input_ids=ids, use_cache=False).logits

    with torch.no_grad():
        pkg.reset_stats()
        got = fwd(patched)()
        stats = pkg.stats()
        ref = fwd(stock)()
        err = (got.float() - ref.float()).abs()
        record["correctness"] = {
            "max_abs_logit_diff": err.max().item(), "mean_abs_logit_diff": err.mean().item(),
            "max_abs_logit": ref.float().abs().max().item(), "mean_abs_logit": ref.float().abs().mean().item(),
            "argmax_agreement": (got.argmax(-1) == ref.argmax(-1)).float().mean().item(),
            "kernel_calls": stats["kernel"], "fallback_calls": stats["fallback"],
            "fallback_reasons": stats["fallback_reasons"], "kernel_ran": stats["kernel"] > 0,
        }
        norm_name, stock_norm = rmsnorm_modules(stock)[-1]
        kernel_norm = patched.get_submodule(norm_name)
        # Eager calls, launches included: what the model sees (kc-timing's CUDA-graph replay would hide
        # the host's launch path, which is what separates a kernel's speedup from the model's).
        iso_fns = {"stock": lambda: stock_norm(x), "kernel": lambda: kernel_norm(x)}
        iso = time_interleaved(iso_fns, opts.device, budget_ms=opts.budget_ms, use_graphs=False)
        s = iso["stock"].median_ms / iso["kernel"].median_ms
        record["isolated"] = {"shape": [opts.batch * opts.seq, config.hidden_size], "module": f"{norm_name} ({type(stock_norm).__name__})",
                              "stock_ms": iso["stock"].median_ms, "kernel_ms": iso["kernel"].median_ms, "speedup": s,
                              "method": "eager calls", "timing": {k: _timing_dict(v) for k, v in iso.items()}}
        if opts.device.startswith("cuda"):  # the device time alone, as the gauntlet measures it
            try:
                g = time_interleaved(iso_fns, opts.device, budget_ms=opts.budget_ms, use_graphs=True)
                record["isolated_graph_replay"] = {"stock_ms": g["stock"].median_ms, "kernel_ms": g["kernel"].median_ms,
                                                   "speedup": g["stock"].median_ms / g["kernel"].median_ms,
                                                   "methods": {k: v.method for k, v in g.items()}}
            except Exception as e:  # noqa: BLE001 - informative only; the eager numbers stand
                record["isolated_graph_replay"] = {"error": f"{type(e).__name__}: {str(e)[:300]}"}
        prof = op_share(stock, [m for _, m in rmsnorm_modules(stock)], fwd(stock), opts.device, opts.profile_iters)
        record["profile"] = prof
        f = prof["share"]
        record["prediction"] = {"op_share": f, "op_speedup": s, "amdahl_speedup": amdahl(f, s) if f is not None else None,
                                "formula": "1 / ((1 - op_share) + op_share / op_speedup)", "applies_to": "eager"}
        fns = {"eager": fwd(stock), "eager+kernel": fwd(patched)}
        record["compile"] = {"enabled": opts.compile}
        if opts.compile:
            for name, m in (("torch.compile", stock), ("torch.compile+kernel", patched)):
                fn, how = _compiled(m, ids, opts.compile_backend)
                record["compile"][name] = how
                if fn is not None:
                    fns[name] = fn
        pkg.reset_stats()
        lat = time_interleaved(fns, opts.device, budget_ms=opts.budget_ms, use_graphs=False)
        record["dispatch_during_timing"] = pkg.stats()
    record["latency_ms"] = {k: _timing_dict(v) for k, v in lat.items()}
    med = {k: v.median_ms for k, v in lat.items()}
    record["measured"] = {"eager_speedup": med["eager"] / med["eager+kernel"]}
    # A second estimate of the share that no profiler overhead distorts: the op's calls per forward
    # times its isolated stock latency, over the measured eager forward (see AGENTS.md: the CPU
    # profiler inflates a small model's time several-fold).
    pred = record["prediction"]
    calls = record["profile"]["op_calls_per_forward"]
    timed_share = min(1.0, calls * record["isolated"]["stock_ms"] / med["eager"])
    pred["timed_share"] = timed_share
    pred["amdahl_speedup_timed_share"] = amdahl(timed_share, pred["op_speedup"])
    if "torch.compile" in med and "torch.compile+kernel" in med:
        record["measured"]["compile_speedup"] = med["torch.compile"] / med["torch.compile+kernel"]
    if "torch.compile" in med:
        record["measured"]["kernel_eager_vs_compile"] = med["torch.compile"] / med["eager+kernel"]
    return record


def _compiled(model, ids, backend: str):
    """torch.compile(fullgraph=True), warmed up; falls back to fullgraph=False and says why."""
    for fullgraph in (True, False):
        cm = torch.compile(model, fullgraph=fullgraph, backend=backend)
        t0 = time.perf_counter()
        try:
            cm(input_ids=ids, use_cache=False)
            cm(input_ids=ids, use_cache=False)
        except Exception as e:  # noqa: BLE001 - a compile failure is a result to record, not a crash
            err = f"{type(e).__name__}: {str(e)[:500]}"
            if not fullgraph:
                return None, {"fullgraph": False, "error": err}
            first_error = err
            continue
        how = {"fullgraph": fullgraph, "backend": backend, "compile_s": time.perf_counter() - t0}
        if not fullgraph:
            how["fullgraph_error"] = first_error
        return (lambda cm=cm: cm(input_ids=ids, use_cache=False).logits), how
    return None, {"error": "unreachable"}
