"""CPU simulation of the split-bf16 ("bf16x3") distances of the *_bf16x3 k-means solutions.

x.c is computed in float64 from the bf16 pieces the kernels use (x_hi = bf16(x), x_lo = bf16(x - x_hi),
same for c; the x_lo c_lo product dropped), with round-to-nearest (GPU) or truncating (Triton
interpreter) conversions. Prints the worst argmin excess over |x|^2 + max |c|^2 (kmeans_assign allows
2e-3; the docstring's worst-case bound is 5.4e-4 at d = 128) and the balanced objective relative to the
exact run (balanced_kmeans_step allows 1e-3), next to plain tf32 for comparison. ~20 s on 2 cores.
"""
import torch
from kmeans_tf32_sim import balanced, objective, rnd


def bf16_round(t):
    return t.to(torch.bfloat16).to(torch.float32)


def bf16_trunc(t):
    return (t.view(torch.int32) & ~0xFFFF).view(torch.float32)


def split_dot(x, c, conv):
    xh, ch = conv(x), conv(c)
    xl, cl = conv(x - xh), conv(c - ch)
    xh, xl, ch, cl = xh.double(), xl.double(), ch.double(), cl.double()
    return xl @ ch.T + xh @ cl.T + xh @ ch.T


def main():
    torch.manual_seed(0)
    for n, d, k in [(65536, 128, 256), (32768, 128, 1024), (16384, 512, 256)]:
        x, c = torch.randn(n, d), torch.randn(k, d)
        exact = x.double() @ c.double().T
        cn = (c.double() ** 2).sum(1)
        dist = cn - 2 * exact
        scale = (x.double() ** 2).sum(1) + cn.max()
        ref = objective(x, c, balanced(x, c, exact)) if d == 128 else None
        for name, xc in [("bf16x3-round", split_dot(x, c, bf16_round)), ("bf16x3-trunc", split_dot(x, c, bf16_trunc)),
                         ("tf32-round", rnd(x).double() @ rnd(c).double().T)]:
            err = float(((xc - exact).abs() / (x.double().norm(dim=1)[:, None] * c.double().norm(dim=1))).max())
            chosen = (cn - 2 * xc).argmin(1)
            excess = dist.gather(1, chosen[:, None]).squeeze(1) - dist.min(1).values
            line = (f"n={n} d={d} k={k} {name}: max |x.c error| / (|x||c|) {err:.2e}, argmin worst excess "
                    f"{float((excess / scale).max()):.2e} of |x|^2 + max |c|^2")
            if ref is not None:
                line += f", balanced objective {objective(x, c, balanced(x, c, xc)) / ref - 1:+.2e} vs exact"
            print(line, flush=True)


if __name__ == "__main__":
    main()
