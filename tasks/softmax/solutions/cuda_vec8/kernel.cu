// Row softmax, bf16 in / bf16 out, fp32 math. Pure CUDA: no torch headers.
//
// * Narrow rows (cols % 8 == 0, aligned, cols <= 1024): one warp per row,
//   the row in registers (up to 4 16-byte vectors per lane), warp-shuffle
//   reductions only; 4 rows per 128-thread block.
// Wider rows: one thread block per row.
// * Cached path (cols % 8 == 0, 16-byte aligned pointers, row fits in
//   kCache 16-byte vectors per thread, i.e. cols <= 32768, unless there are
//   >= 1024 rows wider than 16384, see softmax_launch): the row is read
//   once into registers as fp32, block max, exp and block sum from
//   registers, one 16-byte store per vector: one read + one write of HBM.
// * Online path (any width / alignment): each thread streams its elements
//   (16-byte vectors when aligned, else scalars) keeping a running
//   (max, rescaled sum) pair, the block merges the pairs, and a second pass
//   over the row (L2-resident) writes exp(x - max) / sum.
// Block reductions use warp shuffles plus shared memory. A row that is all
// -inf yields NaN, like torch.softmax.
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cstdint>
#include <math_constants.h>

namespace {

constexpr int kCache = 4;  // 16-byte vectors (8 bf16 each) held per thread

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// blockDim.x multiple of 32. `buf` (32 floats) and `out` are shared and used
// only by this call; the result is broadcast to every thread.
template <bool kMax>
__device__ __forceinline__ float block_reduce(float v, float* buf, float* out) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  v = kMax ? warp_max(v) : warp_sum(v);
  if (lane == 0) buf[warp] = v;
  __syncthreads();
  if (warp == 0) {
    const int nw = blockDim.x >> 5;
    float t = lane < nw ? buf[lane] : (kMax ? -CUDART_INF_F : 0.f);
    t = kMax ? warp_max(t) : warp_sum(t);
    if (lane == 0) *out = t;
  }
  __syncthreads();
  return *out;
}

// Merge running (max, sum-of-exp relative to max) pairs.
__device__ __forceinline__ void ms_merge(float& m, float& s, float m2, float s2) {
  const float mn = fmaxf(m, m2);
  if (mn == -CUDART_INF_F) {  // both sides saw only -inf
    m = mn;
    s = 0.f;
    return;
  }
  s = s * __expf(m - mn) + s2 * __expf(m2 - mn);
  m = mn;
}

__device__ __forceinline__ void unpack8(const uint4& v, float* f) {
  const __nv_bfloat162* h = reinterpret_cast<const __nv_bfloat162*>(&v);
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    const float2 p = __bfloat1622float2(h[k]);
    f[2 * k] = p.x;
    f[2 * k + 1] = p.y;
  }
}

__device__ __forceinline__ uint4 pack8(const float* f) {
  uint4 v;
  __nv_bfloat162* h = reinterpret_cast<__nv_bfloat162*>(&v);
#pragma unroll
  for (int k = 0; k < 4; ++k) h[k] = __floats2bfloat162_rn(f[2 * k], f[2 * k + 1]);
  return v;
}

// Requires cols % 8 == 0, aligned pointers, cols / 8 <= kCache * blockDim.x.
__global__ void softmax_cached_kernel(const __nv_bfloat16* __restrict__ x,
                                      __nv_bfloat16* __restrict__ y, int cols) {
  __shared__ float red_buf[2][32];
  __shared__ float red_out[2];
  const int64_t row = blockIdx.x;
  const int nvec = cols >> 3;
  const uint4* xv = reinterpret_cast<const uint4*>(x + row * cols);
  uint4* yv = reinterpret_cast<uint4*>(y + row * cols);

  float v[kCache][8];
  float m = -CUDART_INF_F;
#pragma unroll
  for (int j = 0; j < kCache; ++j) {
    const int i = threadIdx.x + j * blockDim.x;
    if (i < nvec) {
      unpack8(__ldcs(xv + i), v[j]);
#pragma unroll
      for (int k = 0; k < 8; ++k) m = fmaxf(m, v[j][k]);
    }
  }
  m = block_reduce<true>(m, red_buf[0], &red_out[0]);
  const float m_safe = (m == -CUDART_INF_F) ? 0.f : m;

  float s = 0.f;
#pragma unroll
  for (int j = 0; j < kCache; ++j) {
    const int i = threadIdx.x + j * blockDim.x;
    if (i < nvec) {
#pragma unroll
      for (int k = 0; k < 8; ++k) {
        v[j][k] = __expf(v[j][k] - m_safe);
        s += v[j][k];
      }
    }
  }
  s = block_reduce<false>(s, red_buf[1], &red_out[1]);
  const float inv = 1.f / s;

#pragma unroll
  for (int j = 0; j < kCache; ++j) {
    const int i = threadIdx.x + j * blockDim.x;
    if (i < nvec) {
#pragma unroll
      for (int k = 0; k < 8; ++k) v[j][k] *= inv;
      __stcs(yv + i, pack8(v[j]));
    }
  }
}

// One warp per row. Requires cols % 8 == 0, aligned pointers and
// cols / 8 <= kVecs * 32.
template <int kVecs>
__global__ void softmax_warp_kernel(const __nv_bfloat16* __restrict__ x,
                                    __nv_bfloat16* __restrict__ y, int rows, int cols) {
  const int64_t row = static_cast<int64_t>(blockIdx.x) * (blockDim.x >> 5) + (threadIdx.x >> 5);
  if (row >= rows) return;  // whole warp leaves; no block-level barriers below
  const int lane = threadIdx.x & 31;
  const int nvec = cols >> 3;
  const uint4* xv = reinterpret_cast<const uint4*>(x + row * cols);
  uint4* yv = reinterpret_cast<uint4*>(y + row * cols);

  float v[kVecs][8];
  float m = -CUDART_INF_F;
#pragma unroll
  for (int j = 0; j < kVecs; ++j) {
    const int i = lane + j * 32;
    if (i < nvec) {
      unpack8(xv[i], v[j]);
#pragma unroll
      for (int k = 0; k < 8; ++k) m = fmaxf(m, v[j][k]);
    }
  }
  m = warp_max(m);
  const float m_safe = (m == -CUDART_INF_F) ? 0.f : m;
  float s = 0.f;
#pragma unroll
  for (int j = 0; j < kVecs; ++j) {
    const int i = lane + j * 32;
    if (i < nvec) {
#pragma unroll
      for (int k = 0; k < 8; ++k) {
        v[j][k] = __expf(v[j][k] - m_safe);
        s += v[j][k];
      }
    }
  }
  const float inv = 1.f / warp_sum(s);
#pragma unroll
  for (int j = 0; j < kVecs; ++j) {
    const int i = lane + j * 32;
    if (i < nvec) {
#pragma unroll
      for (int k = 0; k < 8; ++k) v[j][k] *= inv;
      yv[i] = pack8(v[j]);
    }
  }
}

// Any width. kVec: cols % 8 == 0 and 16-byte aligned pointers.
template <bool kVec>
__global__ void softmax_online_kernel(const __nv_bfloat16* __restrict__ x,
                                      __nv_bfloat16* __restrict__ y, int cols) {
  __shared__ float m_buf[32], s_buf[32];
  __shared__ float m_out, s_out;
  const int64_t row = blockIdx.x;
  const __nv_bfloat16* xr = x + row * cols;
  __nv_bfloat16* yr = y + row * cols;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;

  // Pass 1: per-thread running (max, sum).
  float m = -CUDART_INF_F, s = 0.f;
  if (kVec) {
    const int nvec = cols >> 3;
    const uint4* xv = reinterpret_cast<const uint4*>(xr);
    for (int i = threadIdx.x; i < nvec; i += blockDim.x) {
      float f[8];
      unpack8(xv[i], f);
      float vmax = f[0];
#pragma unroll
      for (int k = 1; k < 8; ++k) vmax = fmaxf(vmax, f[k]);
      const float mn = fmaxf(m, vmax);
      if (mn == -CUDART_INF_F) continue;
      float acc = 0.f;
#pragma unroll
      for (int k = 0; k < 8; ++k) acc += __expf(f[k] - mn);
      s = (mn > m ? s * __expf(m - mn) : s) + acc;
      m = mn;
    }
  } else {
    for (int i = threadIdx.x; i < cols; i += blockDim.x) {
      const float f = __bfloat162float(xr[i]);
      const float mn = fmaxf(m, f);
      if (mn == -CUDART_INF_F) continue;
      s = (mn > m ? s * __expf(m - mn) : s) + __expf(f - mn);
      m = mn;
    }
  }

  // Block merge of the (max, sum) pairs.
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const float m2 = __shfl_xor_sync(0xffffffffu, m, o);
    const float s2 = __shfl_xor_sync(0xffffffffu, s, o);
    ms_merge(m, s, m2, s2);
  }
  if (lane == 0) {
    m_buf[warp] = m;
    s_buf[warp] = s;
  }
  __syncthreads();
  if (warp == 0) {
    const int nw = blockDim.x >> 5;
    float mm = lane < nw ? m_buf[lane] : -CUDART_INF_F;
    float ss = lane < nw ? s_buf[lane] : 0.f;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
      const float m2 = __shfl_xor_sync(0xffffffffu, mm, o);
      const float s2 = __shfl_xor_sync(0xffffffffu, ss, o);
      ms_merge(mm, ss, m2, s2);
    }
    if (lane == 0) {
      m_out = mm;
      s_out = ss;
    }
  }
  __syncthreads();
  const float m_safe = (m_out == -CUDART_INF_F) ? 0.f : m_out;
  const float inv = 1.f / s_out;

  // Pass 2: write exp(x - max) / sum.
  if (kVec) {
    const int nvec = cols >> 3;
    const uint4* xv = reinterpret_cast<const uint4*>(xr);
    uint4* yv = reinterpret_cast<uint4*>(yr);
    for (int i = threadIdx.x; i < nvec; i += blockDim.x) {
      float f[8];
      unpack8(xv[i], f);
#pragma unroll
      for (int k = 0; k < 8; ++k) f[k] = __expf(f[k] - m_safe) * inv;
      yv[i] = pack8(f);
    }
  } else {
    for (int i = threadIdx.x; i < cols; i += blockDim.x)
      yr[i] = __float2bfloat16_rn(__expf(__bfloat162float(xr[i]) - m_safe) * inv);
  }
}

inline bool aligned16(const void* p) {
  return (reinterpret_cast<uintptr_t>(p) & 15u) == 0;
}

inline int clamp_threads(int n) {
  n = (n + 31) / 32 * 32;
  return n < 32 ? 32 : (n > 1024 ? 1024 : n);
}

}  // namespace

// x, y: [rows, cols] row-major contiguous. Launches on `stream`.
void softmax_launch(const __nv_bfloat16* x, __nv_bfloat16* y, int rows, int cols,
                    cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return;
  const bool vec = (cols % 8 == 0) && aligned16(x) && aligned16(y);
  if (vec) {
    const int nvec = cols / 8;
    if (nvec <= 128) {  // cols <= 1024: one warp per row, 4 rows per block
      constexpr int kRowsPerBlock = 4;
      const int blocks = (rows + kRowsPerBlock - 1) / kRowsPerBlock;
      if (nvec <= 32) {
        softmax_warp_kernel<1><<<blocks, 32 * kRowsPerBlock, 0, stream>>>(x, y, rows, cols);
      } else if (nvec <= 64) {
        softmax_warp_kernel<2><<<blocks, 32 * kRowsPerBlock, 0, stream>>>(x, y, rows, cols);
      } else {
        softmax_warp_kernel<4><<<blocks, 32 * kRowsPerBlock, 0, stream>>>(x, y, rows, cols);
      }
      return;
    }
    const int threads = clamp_threads((nvec + kCache - 1) / kCache);
    // Many long rows: the streaming two-pass kernel overlaps memory traffic
    // better than 1024-thread register-cached blocks (H200: 4096 x 32768 ran
    // in 169 us vs 206 us); few rows favour the single-read cached kernel.
    const bool many_long_rows = cols > 16384 && rows >= 1024;
    if (nvec <= kCache * threads && !many_long_rows) {
      softmax_cached_kernel<<<rows, threads, 0, stream>>>(x, y, cols);
    } else {
      softmax_online_kernel<true><<<rows, 1024, 0, stream>>>(x, y, cols);
    }
  } else {
    const int threads = clamp_threads((cols + 7) / 8);
    softmax_online_kernel<false><<<rows, threads, 0, stream>>>(x, y, cols);
  }
}
