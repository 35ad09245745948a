"""The smallest kernel with session 26's Triton pipeline race (sm_90), run or only compiled.

Each program forms the 64 x 64 Gram of its own [64, 128] bf16 tile in a loop of two 64-column pieces,
`acc += tl.dot(x, tl.trans(x))`, and with SQ also sums x * x in registers (gdn_prefill's `_kkt` needs both:
the Gram and the keys' norms). With SQ and the loop pipelined (num_stages 3, Triton's default), Triton 3.6 and 3.9
give the load TWO shared buffers, keep the wgmma asynchronous with `pendings = 1` and, past the loop's end, zero-fill
the buffer the wgmma in flight still reads (scripts/triton_pipeline_lint.py says RACE); without SQ the load gets
three buffers (SAFE); with num_stages 1 nothing is pipelined (SAFE).
On an H100 (session 26, 4096 programs, 50 calls) the racy form gave identical, right results every time: the lint
reads a window that this small kernel's timing does not hit; gdn_prefill's `_kkt`, with more work between the
wgmma's issue and the zero-fill's arrival, hit it in 10^4-10^5 output elements a call. Keep it as the compile-only
case the lint is tested on, not as a GPU demonstration.

    python3 scripts/triton_race_repro.py --compile-only DIR   # TTGIR of the four (STAGES, SQ) kernels, any machine
    python3 scripts/triton_race_repro.py --programs 4096 --calls 50   # on a GPU: per kernel, how many of the calls
                                                                    # differ from the first and the worst error
                                                                    # against torch's float32 x @ x^T
"""

from __future__ import annotations

import argparse
from pathlib import Path

import triton
import triton.language as tl


@triton.jit
def gram(x_ptr, y_ptr, s_ptr, K: tl.constexpr, BK: tl.constexpr, STAGES: tl.constexpr, SQ: tl.constexpr):
    p = tl.program_id(0).to(tl.int64)
    r = tl.arange(0, 64)
    acc = tl.zeros([64, 64], tl.float32)
    ss = tl.zeros([64], tl.float32)
    for kc in tl.range(0, K, BK, num_stages=STAGES):
        x = tl.load(x_ptr + p * 64 * K + r[:, None] * K + kc + tl.arange(0, BK)[None, :])
        if SQ:
            xf = x.to(tl.float32)
            ss += tl.sum(xf * xf, 1)
        acc += tl.dot(x, tl.trans(x))
    tl.store(y_ptr + p * 4096 + r[:, None] * 64 + r[None, :], acc)
    tl.store(s_ptr + p * 64 + r, ss)


CASES = [(3, 1), (3, 0), (1, 1)]  # (STAGES, SQ): the race, and two safe forms


def compile_only(dest: Path) -> list[Path]:
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    dest.mkdir(parents=True, exist_ok=True)
    sig = {"x_ptr": "*bf16", "y_ptr": "*fp32", "s_ptr": "*fp32", "K": "constexpr", "BK": "constexpr",
           "STAGES": "constexpr", "SQ": "constexpr"}
    out = []
    for stages, sq in CASES:
        src = ASTSource(fn=gram, signature=sig, constexprs={"K": 128, "BK": 64, "STAGES": stages, "SQ": sq},
                        attrs={(i,): [["tt.divisibility", 16]] for i in range(3)})
        k = triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": 4})
        path = dest / f"gram_stages{stages}_sq{sq}.ttgir"
        path.write_text(k.asm["ttgir"])
        out.append(path)
    return out


def run(programs: int, calls: int) -> None:
    import torch

    g = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn(programs, 64, 128, device="cuda", generator=g).to(torch.bfloat16)
    want = (x.float() @ x.float().transpose(1, 2))
    for stages, sq in CASES:
        y = torch.empty(programs, 64, 64, device="cuda")
        s = torch.empty(programs, 64, device="cuda")
        first, differ, worst = None, 0, 0.0
        for _ in range(calls):
            y.fill_(float("nan"))
            gram[(programs,)](x, y, s, K=128, BK=64, STAGES=stages, SQ=sq, num_warps=4)
            torch.cuda.synchronize()
            if first is None:
                first = y.clone()
            elif not torch.equal(first, y):
                differ += 1
            worst = max(worst, float((y - want).abs().max()))
        print(f"STAGES {stages} SQ {sq}: {differ} of {calls - 1} calls differ from the first; worst |y - x x^T| "
              f"{worst:.3g}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--compile-only", type=Path, metavar="DIR")
    ap.add_argument("--programs", type=int, default=4096)
    ap.add_argument("--calls", type=int, default=50)
    args = ap.parse_args()
    if args.compile_only:
        for p in compile_only(args.compile_only):
            print(p)
    else:
        run(args.programs, args.calls)


if __name__ == "__main__":
    main()
