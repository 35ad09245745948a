"""Cross-entropy forward in Triton: a single pass of online logsumexp over column chunks.

Stage 1, grid (rows, chunks): each program reads CHUNK columns of one row once, in BLOCK-wide
steps, keeping a running max m and a rescaled sum l = sum exp(x - m) (one exp per element; the
rescale is one scalar exp per step), and writes (m, l). Splitting a row over chunks keeps every SM
busy when there are few rows (8 x 128k) as well as many (4096 x 128k: 32768 programs).
Stage 2, one program per block of rows: combine the chunks (M = max m, L = sum l exp(m - M)),
loss = M + log L - x[target]. Stage 3, one program: the mean, summed in a fixed order
(deterministic: no atomics). Logits are read once; everything else is O(rows).
"""
import torch
import triton
import triton.language as tl

LOG2E = 1.4426950408889634
LN2 = 0.6931471805599453


@triton.jit
def _partial_lse(x_ptr, m_ptr, l_ptr, V, n_chunks, CHUNK: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    chunk = tl.program_id(1)
    base = x_ptr + row.to(tl.int64) * V
    start = chunk * CHUNK
    m = -float("inf")
    s = 0.0
    for off in tl.range(0, CHUNK, BLOCK):
        cols = start + off + tl.arange(0, BLOCK)
        x = tl.load(base + cols, mask=cols < V, other=-float("inf")).to(tl.float32) * 1.4426950408889634
        m_new = tl.maximum(m, tl.max(x, axis=0))
        # m_new is -inf only when this block and everything before it was padding
        safe = tl.where(m_new == -float("inf"), 0.0, m_new)
        s = s * tl.exp2(m - safe) + tl.sum(tl.exp2(x - safe), axis=0)
        m = m_new
    tl.store(m_ptr + row * n_chunks + chunk, m)
    tl.store(l_ptr + row * n_chunks + chunk, s)


@triton.jit
def _combine(x_ptr, t_ptr, m_ptr, l_ptr, loss_ptr, N, V, n_chunks,
             ROWS: tl.constexpr, CHUNKS: tl.constexpr):
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    rmask = rows < N
    ch = tl.arange(0, CHUNKS)
    mask = rmask[:, None] & (ch[None, :] < n_chunks)
    offs = rows[:, None] * n_chunks + ch[None, :]
    m = tl.load(m_ptr + offs, mask=mask, other=-float("inf"))
    s = tl.load(l_ptr + offs, mask=mask, other=0.0)
    mx = tl.max(m, axis=1)
    w = tl.where(mask & (m > -float("inf")), tl.exp2(m - mx[:, None]), 0.0)
    total = tl.sum(s * w, axis=1)
    lse = (mx + tl.log2(total)) * 0.6931471805599453
    tgt = tl.load(t_ptr + rows, mask=rmask, other=0)
    xt = tl.load(x_ptr + rows.to(tl.int64) * V + tgt, mask=rmask, other=0.0).to(tl.float32)
    tl.store(loss_ptr + rows, lse - xt, mask=rmask)


@triton.jit
def _mean(loss_ptr, out_ptr, N, BLOCK: tl.constexpr):
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for off in tl.range(0, N, BLOCK):
        idx = off + tl.arange(0, BLOCK)
        acc += tl.load(loss_ptr + idx, mask=idx < N, other=0.0)
    tl.store(out_ptr, tl.sum(acc, axis=0) / N)


def run(logits, targets):
    n, v = logits.shape
    block = min(4096, triton.next_power_of_2(v))
    chunk = block * max(1, min(4, triton.cdiv(v, block)))
    n_chunks = triton.cdiv(v, chunk)
    m = torch.empty((n, n_chunks), dtype=torch.float32, device=logits.device)
    s = torch.empty((n, n_chunks), dtype=torch.float32, device=logits.device)
    _partial_lse[(n, n_chunks)](logits, m, s, v, n_chunks, CHUNK=chunk, BLOCK=block, num_warps=8)
    loss = torch.empty(n, dtype=torch.float32, device=logits.device)
    rows = 16
    _combine[(triton.cdiv(n, rows),)](logits, targets, m, s, loss, n, v, n_chunks, ROWS=rows,
                                      CHUNKS=triton.next_power_of_2(n_chunks), num_warps=4)
    mean = torch.empty((), dtype=torch.float32, device=logits.device)
    _mean[(1,)](loss, mean, n, BLOCK=1024, num_warps=4)
    return loss, mean
