"""Derive the prefill tasks' tolerances: the error a bf16 tensor-core chunked kernel makes.

For each stress scenario (the contract's input distributions; no decay over 8k tokens; decay to
~0 every token; beta ~1 and ~0; nearly parallel keys) the task's float64 token-by-token reference
is compared with the float64 chunked formulation of tests/linear_attention_chunked.py with every
operand that FLA's chunk kernels round to bf16 rounded to bf16 (q/k after the norm, W, U, the state
before each product, the new values, the scores), and the output rounded to bf16 as a kernel
stores it. Prints, per output, the largest absolute error and the atol needed at a few rtols.

    python scripts/linear_attention_tolerances.py gdn_prefill [--tokens 8192]
    python scripts/linear_attention_tolerances.py kda_prefill [--tokens 2048]

CPU only, float64 (about a minute for gdn_prefill at 8192 tokens on this 2-core machine).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from linear_attention_chunked import bf16_round, chunked  # noqa: E402

RTOLS = (4e-3, 8e-3, 1.6e-2)


def scenario_inputs(task: str, name: str, lens: list[int], gen: torch.Generator):
    per_channel = task == "kda_prefill"
    H, HV, K = (4, 8, 128) if not per_channel else (32, 32, 128)
    T, N = sum(lens), len(lens)
    cu = torch.tensor([0] + torch.tensor(lens).cumsum(0).tolist(), dtype=torch.int64)

    def randn(*shape, std=1.0):
        return torch.randn(*shape, generator=gen) * std

    q, k, v = randn(T, H, K), randn(T, H, K), randn(T, HV, K)
    state = randn(N, HV, K, K)
    A_log = torch.rand(HV, generator=gen) * math.log(16)
    gate_shape = (T, HV, K) if per_channel else (T, HV)
    bias_shape = (HV, K) if per_channel else (HV,)
    dt_bias = -6.9 + torch.rand(*bias_shape, generator=gen) * 4.65
    a, b = randn(*gate_shape), randn(T, HV, std=2.0)
    if name == "no_decay":
        A_log = torch.full((HV,), -12.0)  # g = exp(-6e-6 * softplus(.)): no forgetting over 8k tokens
    elif name == "fast_decay":
        A_log, dt_bias = torch.full((HV,), math.log(16)), torch.full(bias_shape, 3.0)  # g ~ exp(-49)
    elif name == "beta_one":
        b = torch.full((T, HV), 12.0)
    elif name == "beta_zero":
        b = torch.full((T, HV), -12.0)
    elif name == "parallel_keys":
        k = 3.0 * randn(1, H, K) + randn(T, H, K)  # cosine ~0.9 between any two keys
    args = [q.bfloat16(), k.bfloat16(), v.bfloat16(), state, A_log, a.bfloat16(), dt_bias, b.bfloat16(), cu,
            1 / math.sqrt(K)]
    return args


def needed_atol(err: torch.Tensor, ref: torch.Tensor, rtol: float) -> float:
    over = err > rtol * ref.abs()
    return float(err[over].max()) if over.any() else 0.0


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("task", choices=["gdn_prefill", "kda_prefill"])
    p.add_argument("--tokens", type=int, default=None, help="length of the long sequence (default 8192 GDN, 2048 KDA)")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    task = args.task
    long = args.tokens or (8192 if task == "gdn_prefill" else 2048)
    d = json.loads((ROOT / "tasks" / task / "definition.json").read_text())
    ns: dict = {}
    exec(compile(d["reference"], "<reference>", "exec"), ns)  # noqa: S102 - the task's own reference
    per_channel = task == "kda_prefill"
    gen = torch.Generator().manual_seed(args.seed)
    scenarios = [("contract", [long]), ("contract", [1, 63, 64, 65, 200, 7, 0, 130]), ("no_decay", [long]),
                 ("fast_decay", [256]), ("beta_one", [long // 4]), ("beta_zero", [256]),
                 ("parallel_keys", [long // 4])]
    worst = {"output": [0.0] * (1 + len(RTOLS)), "new_state": [0.0] * (1 + len(RTOLS))}
    for name, lens in scenarios:
        inputs = scenario_inputs(task, name, lens, gen)
        up = [x.double() if isinstance(x, torch.Tensor) and x.is_floating_point() else x for x in inputs]
        ref = ns["run"](*up)
        emu = chunked(*inputs, rnd=bf16_round, per_channel=per_channel)
        emu = (bf16_round(emu[0]), emu[1].float().double())  # stored as the kernel stores them
        cols = []
        for out_name, r, e in zip(("output", "new_state"), ref, emu, strict=True):
            err = (e - r).abs()
            row = [float(err.max())] + [needed_atol(err, r, rt) for rt in RTOLS]
            worst[out_name] = [max(a, b) for a, b in zip(worst[out_name], row, strict=True)]
            cols.append(f"{out_name}: max|err| {row[0]:.3g} (|ref| max {float(r.abs().max()):.3g}); atol needed at "
                        + ", ".join(f"rtol {rt:g}: {x:.3g}" for rt, x in zip(RTOLS, row[1:], strict=True)))
        print(f"{name:14s} lens={lens if len(lens) < 9 else str(len(lens)) + ' seqs'}\n    " + "\n    ".join(cols),
              flush=True)
    for out_name, row in worst.items():
        print(f"WORST {out_name}: max|err| {row[0]:.3g}; atol needed at "
              + ", ".join(f"rtol {rt:g}: {x:.3g}" for rt, x in zip(RTOLS, row[1:], strict=True)))


if __name__ == "__main__":
    main()
