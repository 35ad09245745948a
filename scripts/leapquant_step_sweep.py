"""Design sweep for the LeapQuant GDN decode step (KDA wishlist request conless-leapquant-gdn-step) on one GPU:
each variant (a candidate file and a CONFIG change) is checked against the request's reference on random inputs of
the definition's shapes, then timed with triton.testing.do_bench (L2 flushed, median) at the given batch sizes;
the figure beside it is the fraction of the memory bound (every input and output byte once, at --gbps).

A design tool, not a verdict: the record that counts comes from `kernelcraft eval` on the request's own
workloads and judge (scripts/h200_requests.sh). Writes one JSON with a row per (variant, batch).

    python3 scripts/leapquant_step_sweep.py --out sweep.json --batches 64,256,512 \\
        --variant 'persist:tests/fixtures/kda_request_candidates/gdn_step_persist.py:{"BV": 32}' ...
    python3 scripts/leapquant_step_sweep.py --ncu NAME ...   # one launch of that variant at the first batch only
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import time
from pathlib import Path

import torch

REQ = Path(".kernelcraft/requests/conless-leapquant-gdn-step")


def _reference():
    d = json.loads((REQ / "definition.json").read_text())
    ns: dict = {}
    exec(d["reference"], ns)  # the request's own reference (trusted: written by the request's author)
    return ns["run"], d


def _module(path: str, name: str, config: dict):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    if config:
        mod.CONFIG.update(config)
    return mod


DIMS = ("num_heads", "num_key_heads", "value_dim", "key_dim", "window", "rank")


def inputs(B: int, dims: tuple[int, ...], dev: str, seed: int = 0, ab_scale: float = 1.0) -> dict:
    """Random in-domain inputs of one step: dims = (H, HK, V, K, L, R) in DIMS' order (the definition's constants);
    ab_scale widens the gate and beta pre-activations. Also tests/test_leapquant_step.py's inputs."""
    H, HK, V, K, L, R = dims
    g = torch.Generator(device="cpu").manual_seed(seed)
    r = lambda *s: torch.randn(*s, generator=g)  # noqa: E731
    h = torch.randint(0, L, (B, H), generator=g, dtype=torch.int32)
    w = torch.rand(B, H, L, generator=g) * (torch.arange(L)[None, None] < h[..., None])
    x = dict(codes=torch.randint(-127, 128, (B, H, V, K), generator=g, dtype=torch.int8),
             s_k=torch.rand(B, H, K, generator=g) + 0.5, s_v=torch.rand(B, H, V, generator=g) * 0.02,
             u=r(B, H, R, K).half(), q=(r(B, H, R, V) * 0.1).half(), kbuf=r(B, H, L, K).bfloat16(),
             ubuf=(r(B, H, L, V) * 0.1).bfloat16(), w=w, p=torch.rand(B, H, generator=g), h=h,
             qx=r(B, HK, K).bfloat16(), kx=r(B, HK, K).bfloat16(), vx=r(B, H, V).bfloat16(),
             a=(r(B, H) * ab_scale).bfloat16(), b=(r(B, H) * ab_scale).bfloat16(), A_log=r(H) * 0.5,
             dt_bias=r(H) * 0.5)
    return {k: v.to(dev) for k, v in x.items()}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--variant", action="append", default=[], help="NAME:FILE:JSON-CONFIG")
    ap.add_argument("--batches", default="256")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--gbps", type=float, default=4243.0, help="copy bandwidth for the bound (calibrated H200)")
    ap.add_argument("--device", default="cuda", help="cpu: a smoke run under TRITON_INTERPRET=1, wall-clock timed")
    ap.add_argument("--ncu", default="", help="launch only this variant, once per batch (under Nsight Compute)")
    args = ap.parse_args()
    import triton
    import triton.testing

    ref, d = _reference()
    dev = args.device
    rows = []
    batches = [int(b) for b in args.batches.split(",")]
    variants = [v.split(":", 2) for v in args.variant]
    for B in batches:
        x = inputs(B, tuple(d["axes"][k]["value"] for k in DIMS), dev)
        want = ref(**x)
        nbytes = sum(t.numel() * t.element_size() for t in x.values()) + sum(
            t.numel() * t.element_size() for t in want)
        bound_ms = nbytes / (args.gbps * 1e9) * 1e3
        del want
        if dev == "cuda":
            torch.cuda.empty_cache()
        for name, path, cfg in variants:
            if args.ncu and name != args.ncu:
                continue
            row = {"variant": name, "file": path, "config": json.loads(cfg), "batch": B, "bound_ms": bound_ms}
            try:
                mod = _module(path, f"kc_sweep_{name}", json.loads(cfg))
                got = mod.run(**x)
                if dev == "cuda":
                    torch.cuda.synchronize()
                if args.ncu:
                    print(f"{name} B={B}: launched under ncu", flush=True)
                    continue
                want = ref(**x)
                row["max_err"] = [float((a.double() - b.double()).abs().max()) for a, b in zip(got, want, strict=True)]
                row["max_ref"] = [float(b.double().abs().max()) for b in want]
                del want
                t0 = time.time()
                if dev == "cuda":
                    ms = triton.testing.do_bench(lambda mod=mod, x=x: mod.run(**x), warmup=20, rep=150, return_mode="median")
                else:
                    t1 = time.perf_counter()
                    mod.run(**x)
                    ms = (time.perf_counter() - t1) * 1e3
                row.update(ms=ms, of_bound=bound_ms / ms, bench_s=round(time.time() - t0, 2))
            except Exception as e:  # noqa: BLE001 - a design sweep reports the failure and goes on
                row["error"] = f"{type(e).__name__}: {str(e)[:400]}"
            rows.append(row)
            print(json.dumps({k: (round(v, 5) if isinstance(v, float) else v) for k, v in row.items()
                              if k not in ("file", "max_ref")}), flush=True)
    if args.out:
        args.out.write_text(json.dumps({"device": torch.cuda.get_device_name() if dev == "cuda" else dev, "torch": torch.__version__,
                                        "triton": triton.__version__, "gbps": args.gbps, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
