"""CPU probe of the Triton interpreter's numerics traps, written as a record for knowledge/.

What the interpreter (TRITON_INTERPRET=1) does differently from an NVIDIA GPU, measured on this
machine's Triton, so the knowledge pages can cite numbers rather than memories:

- fp32 -> float8e4nv: values whose rounding carries into the exponent, a tie, and one past the
  e4m3 maximum, converted by a kernel and by torch (torch rounds to nearest even and saturates,
  as the GPU's cvt.rn.satfinite does);
- tl.dot on fp32 with input_precision tf32 / tf32x3 / ieee: the error against float64;
- tl.dot on bf16 operands: the error against float64 of the same bf16 values;
- fp32 -> bf16: a value halfway up a bf16 ulp, converted by a kernel and by torch.

    python scripts/interpreter_probe.py --out results/cpu/interpreter_probe.json

Runs in ~20 s on 2 cores. The interpreter must be on before triton is first imported (AGENTS.md),
hence the environment line before the imports.
"""

import os

os.environ["TRITON_INTERPRET"] = "1"

import argparse  # noqa: E402
import datetime as dt  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
from pathlib import Path  # noqa: E402

import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

FP8_INPUTS = [1.97, 7.9, 127.7, 500.0, 1.0625, 3.0, 0.0, -1.97]


@triton.jit
def _to_fp8(x_ptr, y_ptr, N: tl.constexpr):
    o = tl.arange(0, N)
    tl.store(y_ptr + o, tl.load(x_ptr + o).to(tl.float8e4nv))


@triton.jit
def _to_bf16(x_ptr, y_ptr, N: tl.constexpr):
    o = tl.arange(0, N)
    tl.store(y_ptr + o, tl.load(x_ptr + o).to(tl.bfloat16))


@triton.jit
def _dot(a_ptr, b_ptr, c_ptr, PREC: tl.constexpr):
    i = tl.arange(0, 16)
    a = tl.load(a_ptr + i[:, None] * 16 + i[None, :])
    b = tl.load(b_ptr + i[:, None] * 16 + i[None, :])
    tl.store(c_ptr + i[:, None] * 16 + i[None, :], tl.dot(a, b, input_precision=PREC))


def probe() -> dict:
    x = torch.tensor(FP8_INPUTS, dtype=torch.float32)
    y = torch.empty(len(FP8_INPUTS), dtype=torch.float8_e4m3fn)
    _to_fp8[(1,)](x, y, N=len(FP8_INPUTS))
    fp8 = {"inputs": FP8_INPUTS, "interpreter": y.float().tolist(),
           "torch_rne_satfinite": x.to(torch.float8_e4m3fn).float().tolist()}

    torch.manual_seed(0)
    a, b = torch.randn(16, 16), torch.randn(16, 16)
    ref = a.double() @ b.double()
    dots = {}
    for prec in ("tf32", "tf32x3", "ieee"):
        c = torch.empty(16, 16)
        _dot[(1,)](a, b, c, PREC=prec)
        dots[prec] = float((c.double() - ref).abs().max())
    ab, bb = a.bfloat16(), b.bfloat16()
    c = torch.empty(16, 16)
    _dot[(1,)](ab, bb, c, PREC="ieee")
    bf16_dot = float((c.double() - ab.double() @ bb.double()).abs().max())

    # 1 + 3 * 2^-9 is 0.75 of a bf16 ulp (2^-7) above 1: rounding to nearest gives 1 + 2^-7,
    # truncation gives 1.
    half = torch.tensor([1.0 + 3 * 2.0**-9] * 4, dtype=torch.float32)
    out = torch.empty(4, dtype=torch.bfloat16)
    _to_bf16[(1,)](half, out, N=4)
    bf16 = {"input": float(half[0]), "interpreter": float(out[0].float()),
            "torch_round_to_nearest": float(half[0].to(torch.bfloat16).float())}

    return {
        "format": "kc-interpreter-probe/1",
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "command": "python scripts/interpreter_probe.py",
        "environment": {"triton": triton.__version__, "torch": torch.__version__,
                        "python": platform.python_version(), "machine": platform.machine()},
        "fp8_e4m3_conversion": fp8,
        "fp32_dot_max_abs_error_vs_float64": dots,
        "bf16_dot_max_abs_error_vs_float64": bf16_dot,
        "bf16_conversion": bf16,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, help="write the record here (default: print it)")
    args = ap.parse_args()
    rec = probe()
    text = json.dumps(rec, indent=2) + "\n"
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text)
    print(text, end="")


if __name__ == "__main__":
    main()
