// RMSNorm, bf16 in / bf16 out, fp32 math: the algorithm of ../cuda_vec8/kernel.cu, built as a
// cubin and launched from launch.py through the kernelcraft binding. Pure CUDA: no torch headers,
// no host code. Every kernel is extern "C" so launch.py finds it by name.
//
// One thread block per row. Fast path (cols % 8 == 0, 16-byte aligned pointers, row fits in
// kCache 16-byte vectors per thread): each thread loads its uint4 vectors (8 bf16) of the row once
// into registers, accumulates the sum of squares in fp32, the block reduces it (warp shuffles +
// shared memory), and the same registers are scaled and stored: one read and one write of the
// activations. Otherwise a generic kernel (16-byte vectors if aligned, else scalar) reads the row
// twice; the second read hits L1/L2.
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cstdint>

// 16-byte vectors cached per thread in the fast path. launch.py sizes the block with the same
// number (K_CACHE): the two must agree.
#define KC_CACHE 4

namespace {

__device__ __forceinline__ float warp_reduce_sum(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1)
    v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

// blockDim.x must be a multiple of 32 (<= 1024). Result is broadcast to all threads. Call at most
// once per kernel (the shared buffers are not reused).
__device__ __forceinline__ float block_reduce_sum(float v) {
  __shared__ float warp_sums[32];
  __shared__ float total;
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  v = warp_reduce_sum(v);
  if (lane == 0) warp_sums[warp] = v;
  __syncthreads();
  if (warp == 0) {
    const int num_warps = blockDim.x >> 5;
    float t = lane < num_warps ? warp_sums[lane] : 0.f;
    t = warp_reduce_sum(t);
    if (lane == 0) total = t;
  }
  __syncthreads();
  return total;
}

__device__ __forceinline__ float sum_sq8(const uint4& v) {
  const __nv_bfloat162* h = reinterpret_cast<const __nv_bfloat162*>(&v);
  float s = 0.f;
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    const float2 f = __bfloat1622float2(h[k]);
    s = fmaf(f.x, f.x, s);
    s = fmaf(f.y, f.y, s);
  }
  return s;
}

__device__ __forceinline__ uint4 scale8(const uint4& xv, const uint4& wv, float rstd) {
  const __nv_bfloat162* xh = reinterpret_cast<const __nv_bfloat162*>(&xv);
  const __nv_bfloat162* wh = reinterpret_cast<const __nv_bfloat162*>(&wv);
  uint4 out;
  __nv_bfloat162* oh = reinterpret_cast<__nv_bfloat162*>(&out);
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    const float2 xf = __bfloat1622float2(xh[k]);
    const float2 wf = __bfloat1622float2(wh[k]);
    oh[k] = __floats2bfloat162_rn(xf.x * rstd * wf.x, xf.y * rstd * wf.y);
  }
  return out;
}

// Any row length. kVec: cols % 8 == 0 and 16-byte aligned pointers.
template <bool kVec>
__device__ __forceinline__ void rmsnorm_generic(const __nv_bfloat16* __restrict__ x,
                                                const __nv_bfloat16* __restrict__ w,
                                                __nv_bfloat16* __restrict__ y, int cols, float eps) {
  const int64_t row = blockIdx.x;
  const __nv_bfloat16* xr = x + row * cols;
  __nv_bfloat16* yr = y + row * cols;
  float ss = 0.f;
  if (kVec) {
    const int nvec = cols >> 3;
    const uint4* xv = reinterpret_cast<const uint4*>(xr);
    for (int i = threadIdx.x; i < nvec; i += blockDim.x) ss += sum_sq8(xv[i]);
  } else {
    for (int i = threadIdx.x; i < cols; i += blockDim.x) {
      const float v = __bfloat162float(xr[i]);
      ss = fmaf(v, v, ss);
    }
  }
  const float total = block_reduce_sum(ss);
  const float rstd = rsqrtf(total / static_cast<float>(cols) + eps);
  if (kVec) {
    const int nvec = cols >> 3;
    const uint4* xv = reinterpret_cast<const uint4*>(xr);
    const uint4* wv = reinterpret_cast<const uint4*>(w);
    uint4* yv = reinterpret_cast<uint4*>(yr);
    for (int i = threadIdx.x; i < nvec; i += blockDim.x) yv[i] = scale8(xv[i], wv[i], rstd);
  } else {
    for (int i = threadIdx.x; i < cols; i += blockDim.x) {
      const float v = __bfloat162float(xr[i]);
      yr[i] = __float2bfloat16_rn(v * rstd * __bfloat162float(w[i]));
    }
  }
}

}  // namespace

// x, y: [rows, cols] row-major contiguous; w: [cols]. Grid: one block per row.
// Requires cols % 8 == 0, 16-byte aligned pointers and cols / 8 <= KC_CACHE * blockDim.x.
extern "C" __global__ void rmsnorm_cached(const __nv_bfloat16* __restrict__ x,
                                          const __nv_bfloat16* __restrict__ w,
                                          __nv_bfloat16* __restrict__ y, int cols, float eps) {
  const int64_t row = blockIdx.x;
  const int nvec = cols >> 3;
  const uint4* xv = reinterpret_cast<const uint4*>(x + row * cols);
  const uint4* wv = reinterpret_cast<const uint4*>(w);
  uint4* yv = reinterpret_cast<uint4*>(y + row * cols);

  uint4 cache[KC_CACHE];
  float ss = 0.f;
#pragma unroll
  for (int j = 0; j < KC_CACHE; ++j) {
    const int i = threadIdx.x + j * blockDim.x;
    if (i < nvec) {
      cache[j] = xv[i];
      ss += sum_sq8(cache[j]);
    }
  }
  const float total = block_reduce_sum(ss);
  const float rstd = rsqrtf(total / static_cast<float>(cols) + eps);
#pragma unroll
  for (int j = 0; j < KC_CACHE; ++j) {
    const int i = threadIdx.x + j * blockDim.x;
    if (i < nvec) yv[i] = scale8(cache[j], wv[i], rstd);
  }
}

// Rows too long for rmsnorm_cached; cols % 8 == 0 and 16-byte aligned pointers.
extern "C" __global__ void rmsnorm_generic_vec(const __nv_bfloat16* __restrict__ x,
                                               const __nv_bfloat16* __restrict__ w,
                                               __nv_bfloat16* __restrict__ y, int cols, float eps) {
  rmsnorm_generic<true>(x, w, y, cols, eps);
}

// Any width and alignment.
extern "C" __global__ void rmsnorm_generic_scalar(const __nv_bfloat16* __restrict__ x,
                                                  const __nv_bfloat16* __restrict__ w,
                                                  __nv_bfloat16* __restrict__ y, int cols, float eps) {
  rmsnorm_generic<false>(x, w, y, cols, eps);
}
