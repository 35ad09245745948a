"""CPU simulation: how far can tf32 operand precision move kmeans_assign / balanced_kmeans_step?

Runs the argmin and the balanced reference algorithm on float64 x.c computed from tf32-rounded or
tf32-truncated (low 13 mantissa bits dropped) float32 operands, |x|^2 and |c|^2 exact, and prints
the balanced objective relative to the exact run and the worst argmin excess over
|x|^2 + max |c|^2 (the kmeans_assign contract allows 2e-3). ~10 s on 2 cores.
"""
import torch


def trunc(t):
    return (t.view(torch.int32) & ~0x1FFF).view(torch.float32)


def rnd(t):
    return ((t.view(torch.int32) + 0x1000) & ~0x1FFF).view(torch.float32)


def balanced(x, c, xc):
    n, k = x.shape[0], c.shape[0]
    cap = (n + k - 1) // k
    dist = (c.double() ** 2).sum(1) + (x.double() ** 2).sum(1, keepdim=True) - 2 * xc
    assign = torch.full((n,), -1, dtype=torch.int64)
    count = torch.zeros(k, dtype=torch.int64)
    active = torch.arange(n)
    while active.numel():
        d = dist[active]
        d[:, count >= cap] = float("inf")
        best, prop = d.min(1)
        order = torch.argsort(best, stable=True)
        order = order[torch.argsort(prop[order], stable=True)]
        g = prop[order]
        rank = torch.arange(g.numel()) - torch.searchsorted(g, g)
        take = order[rank < (cap - count)[g]]
        assign[active[take]] = prop[take]
        count += torch.bincount(prop[take], minlength=k)
        keep = torch.ones(active.numel(), dtype=torch.bool)
        keep[take] = False
        active = active[keep]
    return assign


def objective(x, c, a):
    return float(((x.double() - c.double()[a]) ** 2).sum())


def main():
    torch.manual_seed(0)
    for n, d, k in [(65536, 128, 256), (32768, 128, 1024)]:
        x, c = torch.randn(n, d), torch.randn(k, d)
        exact = x.double() @ c.double().T
        ref = objective(x, c, balanced(x, c, exact))
        cn = (c.double() ** 2).sum(1)
        dist = cn - 2 * exact
        scale = (x.double() ** 2).sum(1) + cn.max()
        for name, f in [("tf32-round", rnd), ("tf32-trunc", trunc)]:
            xc = f(x).double() @ f(c).double().T
            rel = objective(x, c, balanced(x, c, xc)) / ref - 1
            chosen = (cn - 2 * xc).argmin(1)
            excess = dist.gather(1, chosen[:, None]).squeeze(1) - dist.min(1).values
            print(f"n={n} d={d} k={k} {name}: balanced objective {rel:+.2e} vs exact, "
                  f"argmin worst excess {float((excess / scale).max()):.2e} of |x|^2 + max |c|^2", flush=True)


if __name__ == "__main__":
    main()
