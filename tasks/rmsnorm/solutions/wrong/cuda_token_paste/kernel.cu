// RMSNorm, bf16 in / bf16 out, fp32 math: one block of 256 threads per row, a plain strided loop.
// The defect of this fixture is in binding.cpp; the kernel is a short correct RMSNorm.
#include <cuda_runtime.h>
#include <cuda_bf16.h>

namespace {

__global__ void rmsnorm_simple_kernel(const __nv_bfloat16* __restrict__ x, const __nv_bfloat16* __restrict__ w,
                                      __nv_bfloat16* __restrict__ y, int cols, float eps) {
  __shared__ float partial[256];
  const long long row = blockIdx.x;
  const __nv_bfloat16* xr = x + row * cols;
  float sum = 0.f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) {
    const float v = __bfloat162float(xr[c]);
    sum += v * v;
  }
  partial[threadIdx.x] = sum;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) partial[threadIdx.x] += partial[threadIdx.x + s];
    __syncthreads();
  }
  const float rstd = rsqrtf(partial[0] / cols + eps);
  for (int c = threadIdx.x; c < cols; c += blockDim.x) {
    y[row * cols + c] = __float2bfloat16(__bfloat162float(xr[c]) * rstd * __bfloat162float(w[c]));
  }
}

}  // namespace

void rmsnorm_launch(const __nv_bfloat16* x, const __nv_bfloat16* w, __nv_bfloat16* y,
                    int rows, int cols, float eps, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return;
  rmsnorm_simple_kernel<<<rows, 256, 0, stream>>>(x, w, y, cols, eps);
}
