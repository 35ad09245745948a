"""The LeapQuant GDN decode-step candidates (tests/fixtures/kda_request_candidates/gdn_step_*.py, judged on the H200
against the KDA wishlist request conless-leapquant-gdn-step, whose folder is not in this repository) on CPU under the
Triton interpreter, against our own float64 statement of the step: the state is materialised (pn (q^T u + codes
s_k s_v / 127) + sum_j wd_j ubuf_j kbuf_j^T), then one gated delta rule step with l2-normalised q / k. Each of
gdn_step_split's paths (FMA, DOT, DOT with the row loop, FUSED) must agree with it as closely as the H200's PASSED
records did: the bf16 outputs within two bf16 ulps of their magnitude, the float32 ones to 1e-6."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

C = Path(__file__).resolve().parent / "fixtures" / "kda_request_candidates"
H, HK, V, K, L, R = 32, 16, 128, 128, 16, 4


def _inputs(B: int, seed: int) -> dict:
    g = torch.Generator().manual_seed(seed)
    r = lambda *s: torch.randn(*s, generator=g)  # noqa: E731
    h = torch.randint(0, L, (B, H), generator=g, dtype=torch.int32)
    w = torch.rand(B, H, L, generator=g) * (torch.arange(L)[None, None] < h[..., None])
    return dict(codes=torch.randint(-127, 128, (B, H, V, K), generator=g, dtype=torch.int8),
                s_k=torch.rand(B, H, K, generator=g) + 0.5, s_v=torch.rand(B, H, V, generator=g) * 0.02,
                u=r(B, H, R, K).half(), q=(r(B, H, R, V) * 0.1).half(), kbuf=r(B, H, L, K).bfloat16(),
                ubuf=(r(B, H, L, V) * 0.1).bfloat16(), w=w, p=torch.rand(B, H, generator=g), h=h,
                qx=r(B, HK, K).bfloat16(), kx=r(B, HK, K).bfloat16(), vx=r(B, H, V).bfloat16(),
                a=(r(B, H) * 2).bfloat16(), b=(r(B, H) * 2).bfloat16(), A_log=r(H) * 0.5, dt_bias=r(H) * 0.5)


def _step64(x: dict) -> list[torch.Tensor]:
    d = {k: (v.double() if v.is_floating_point() else v) for k, v in x.items()}
    rep = H // HK
    kf, qf = d["kx"].repeat_interleave(rep, 1), d["qx"].repeat_interleave(rep, 1)
    kn = kf / torch.sqrt((kf * kf).sum(-1, keepdim=True) + 1e-6)
    qn = qf / torch.sqrt((qf * qf).sum(-1, keepdim=True) + 1e-6) / K ** 0.5
    at = torch.exp(-torch.exp(d["A_log"]) * torch.nn.functional.softplus(d["a"] + d["dt_bias"]))
    beta = torch.sigmoid(d["b"]).to(torch.bfloat16).double()  # the model carries beta in bf16
    pn = d["p"] * at
    live = torch.arange(L)[None, None] < d["h"][..., None]
    wd = d["w"] * torch.where(live, at[..., None], torch.ones_like(d["w"]))
    state = (d["q"].transpose(-1, -2) @ d["u"]) + d["codes"].double() * (d["s_k"] / 127)[..., None, :] * d["s_v"][..., None]
    state = pn[..., None, None] * state + (d["ubuf"] * wd[..., None]).transpose(-1, -2) @ d["kbuf"]
    upd = beta[..., None] * (d["vx"] - (state @ kn[..., None])[..., 0])
    y = (state @ qn[..., None])[..., 0] + (kn * qn).sum(-1, keepdim=True) * upd
    w_new = torch.where(torch.arange(L)[None, None] == d["h"][..., None], torch.ones_like(wd), wd)
    return [y, kn, upd, w_new, pn]


def _load(name: str, config: dict):
    spec = importlib.util.spec_from_file_location(f"kc_lq_{name}", C / name)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    mod.CONFIG.update(config)
    return mod


CASES = [("gdn_step_split.py", {}),  # the default: DOT + row loop (the H200's 59% record)
         ("gdn_step_split.py", {"DOT": 0, "RB": 0, "BV": 32, "num_warps": 2}),  # FMA
         ("gdn_step_split.py", {"DOT": 1, "RB": 0}),
         ("gdn_step_split.py", {"FUSED": 1}),  # key side and rows in one program per pair
         ("gdn_step_vsplit.py", {})]


def _check(name: str, config: dict) -> str:
    """"" when the candidate's outputs agree with the float64 statement, else what differs."""
    x = _inputs(1, seed=11)
    got = _load(name, config).run(**x)
    for i, (g, ww) in enumerate(zip(got, _step64(x), strict=True)):
        if g.dtype == torch.bfloat16:  # rounded once from float32: two bf16 ulps of the row's magnitude
            tol = 2 * 2.0 ** -8 * ww.abs().amax(-1, keepdim=True) + 1e-6
        else:
            tol = torch.full_like(ww, 1e-6)
        err = (g.double() - ww).abs()
        if not bool((err <= tol).all()):
            return f"output {i}: max error {float(err.max()):.3e}, worst excess over the tolerance {float((err - tol).max()):.3e}"
    return ""


@pytest.fixture(scope="module")
def verdicts() -> dict:
    # The interpreter is chosen when a module's @triton.jit runs and cannot be switched inside a pytest worker that
    # already compiled kernels: every case runs in one child process with TRITON_INTERPRET=1.
    env = {**os.environ, "TRITON_INTERPRET": "1",
           "PYTHONPATH": os.pathsep.join([str(Path(__file__).parent), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, __file__], env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("name,config", CASES, ids=[f"{n[:-3]}{c or ''}" for n, c in CASES])
def test_step_matches_the_float64_statement(name, config, verdicts):
    assert verdicts[f"{name} {json.dumps(config)}"] == "", verdicts


if __name__ == "__main__":  # the child of `verdicts`
    print(json.dumps({f"{n} {json.dumps(c)}": _check(n, c) for n, c in CASES}))
