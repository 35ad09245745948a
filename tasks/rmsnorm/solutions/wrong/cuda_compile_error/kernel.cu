// Known-WRONG fixture: must fail with COMPILE_ERROR.
//
// A plausible vectorized CUDA RMSNorm (one block per row, 16-byte loads, fp32
// accumulation, warp-shuffle + shared-memory reduction) with one defect: in
// sum_sq8 a packed __nv_bfloat162 is assigned to a float2 without the
// __bfloat1622float2 conversion. There is no implicit conversion between the
// two types, so nvcc rejects the file and the extension never builds.
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cstdint>

namespace {

__device__ __forceinline__ float warp_reduce_sum(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1)
    v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

__device__ __forceinline__ float block_reduce_sum(float v) {
  __shared__ float warp_sums[32];
  __shared__ float total;
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  v = warp_reduce_sum(v);
  if (lane == 0) warp_sums[warp] = v;
  __syncthreads();
  if (warp == 0) {
    float t = lane < (int)(blockDim.x >> 5) ? warp_sums[lane] : 0.f;
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
    const float2 f = h[k];  // DEFECT: needs __bfloat1622float2(h[k])
    s = fmaf(f.x, f.x, s);
    s = fmaf(f.y, f.y, s);
  }
  return s;
}

// Requires cols % 8 == 0 and 16-byte aligned pointers.
__global__ void rmsnorm_vec8_kernel(const __nv_bfloat16* __restrict__ x,
                                    const __nv_bfloat16* __restrict__ w,
                                    __nv_bfloat16* __restrict__ y, int cols, float eps) {
  const int64_t row = blockIdx.x;
  const int nvec = cols >> 3;
  const uint4* xv = reinterpret_cast<const uint4*>(x + row * cols);
  const uint4* wv = reinterpret_cast<const uint4*>(w);
  uint4* yv = reinterpret_cast<uint4*>(y + row * cols);
  float ss = 0.f;
  for (int i = threadIdx.x; i < nvec; i += blockDim.x) ss += sum_sq8(xv[i]);
  const float rstd = rsqrtf(block_reduce_sum(ss) / static_cast<float>(cols) + eps);
  for (int i = threadIdx.x; i < nvec; i += blockDim.x) {
    const uint4 xq = xv[i], wq = wv[i];
    const __nv_bfloat162* xh = reinterpret_cast<const __nv_bfloat162*>(&xq);
    const __nv_bfloat162* wh = reinterpret_cast<const __nv_bfloat162*>(&wq);
    uint4 out;
    __nv_bfloat162* oh = reinterpret_cast<__nv_bfloat162*>(&out);
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const float2 xf = __bfloat1622float2(xh[k]);
      const float2 wf = __bfloat1622float2(wh[k]);
      oh[k] = __floats2bfloat162_rn(xf.x * rstd * wf.x, xf.y * rstd * wf.y);
    }
    yv[i] = out;
  }
}

}  // namespace

void rmsnorm_launch(const __nv_bfloat16* x, const __nv_bfloat16* w, __nv_bfloat16* y,
                    int rows, int cols, float eps, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return;
  rmsnorm_vec8_kernel<<<rows, 256, 0, stream>>>(x, w, y, cols, eps);
}
