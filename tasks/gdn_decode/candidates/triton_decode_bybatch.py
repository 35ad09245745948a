"""Gated delta rule, one decode step: solutions/triton_decode.py's kernel with its tile and warps chosen
per batch size.

The profile of triton_decode on the H200 (tasks/gdn_decode/README.md, "The profile") found two different
limits under one CONFIG: at batch 1 the grid is 32 programs for 132 SMs (BV = 32 gives 4 per value head);
at batch 256 the programs wait on their state loads with a third of the warps resident. No single (BV,
warps) serves both, so CONFIG["BY_BATCH"] is a list of [largest batch, BV, num_warps] rows, the first row
whose bound holds the launch's batch decides, past the last row CONFIG's BV and num_warps. The rows come
from a sweep of triton_decode's TUNABLES on the H200 (scripts/pick_by_batch.py writes them from the sweep's
record); the kernel, its numerics and its output are triton_decode's, bit for bit, whatever the row.
"""
import torch
import triton
import triton.language as tl

TUNABLES = {"BV": [8, 16, 32, 64], "num_warps": [1, 2, 4, 8]}
CONFIG = {'BV': 8, 'num_warps': 1, 'BY_BATCH': [[1, 8, 1], [8, 8, 1], [32, 16, 1], [64, 8, 1], [128, 8, 1], [256, 8, 1], [512, 8, 1]]}


@triton.jit
def _rne_bf16(x):
    # fp32 -> bf16 rounding to nearest even, done in fp32 bits: the Triton interpreter (CPU)
    # truncates in .to(tl.bfloat16), the GPU rounds; with this both give the same bf16 value.
    bits = x.to(tl.uint32, bitcast=True)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return bits.to(tl.float32, bitcast=True)


@triton.jit
def _softplus(x):
    # torch's softplus (threshold 20): log(1 + e^x) as max(x, 0) + log1p(e^-|x|); log1p by its
    # series where e^-|x| is tiny, so a very negative a + dt_bias keeps its relative precision.
    e = tl.exp(-tl.abs(x))
    lp = tl.where(e < 1e-4, e * (1.0 - 0.5 * e), tl.log(1.0 + e))
    return tl.where(x > 20.0, x, tl.maximum(x, 0.0) + lp)


@triton.jit
def _gdn_decode(q_ptr, k_ptr, v_ptr, s_ptr, alog_ptr, a_ptr, dtb_ptr, b_ptr, o_ptr, ns_ptr, scale,
                H: tl.constexpr, HV: tl.constexpr, K: tl.constexpr, V: tl.constexpr, BV: tl.constexpr,
                ROUND: tl.constexpr):
    pid_v = tl.program_id(0)
    pid_bh = tl.program_id(1)  # sequence * HV + value head
    seq = pid_bh // HV
    hv = pid_bh % HV
    h = hv // (HV // H)
    ok = tl.arange(0, K)
    ov = pid_v * BV + tl.arange(0, BV)

    qv = tl.load(q_ptr + (seq * H + h) * K + ok).to(tl.float32)
    kv = tl.load(k_ptr + (seq * H + h) * K + ok).to(tl.float32)
    qv = qv / tl.sqrt(tl.sum(qv * qv, axis=0) + 1e-6) * scale
    kv = kv / tl.sqrt(tl.sum(kv * kv, axis=0) + 1e-6)
    x = tl.load(a_ptr + pid_bh).to(tl.float32) + tl.load(dtb_ptr + hv)
    g = tl.exp(-tl.exp(tl.load(alog_ptr + hv)) * _softplus(x))
    beta = tl.sigmoid(tl.load(b_ptr + pid_bh).to(tl.float32))
    vv = tl.load(v_ptr + pid_bh * V + ov).to(tl.float32)

    offs = pid_bh.to(tl.int64) * V * K + ov[:, None] * K + ok[None, :]
    s = tl.load(s_ptr + offs, eviction_policy="evict_first") * g  # read once: keep it out of L2's way
    d = beta * (vv - tl.sum(s * kv[None, :], axis=1))
    s = s + d[:, None] * kv[None, :]
    o = tl.sum(s * qv[None, :], axis=1)
    if ROUND:
        o = _rne_bf16(o)
    tl.store(o_ptr + pid_bh * V + ov, o.to(tl.bfloat16))
    tl.store(ns_ptr + offs, s, eviction_policy="evict_first")


def _pick(batch):
    for bound, bv, warps in CONFIG["BY_BATCH"]:
        if batch <= bound:
            return bv, warps
    return CONFIG["BV"], CONFIG["num_warps"]


def run(q, k, v, state, A_log, a, dt_bias, b, scale):
    B, _, H, K = q.shape
    HV, V = v.shape[2], v.shape[3]
    out = torch.empty((B, 1, HV, V), dtype=torch.bfloat16, device=q.device)
    new_state = torch.empty_like(state)
    bv, warps = _pick(B)
    bv = min(bv, V)
    _gdn_decode[(triton.cdiv(V, bv), B * HV)](
        q, k, v, state, A_log, a, dt_bias, b, out, new_state, float(scale),
        H=H, HV=HV, K=K, V=V, BV=bv, ROUND=q.device.type == "cpu", num_warps=warps,
    )
    return out, new_state
