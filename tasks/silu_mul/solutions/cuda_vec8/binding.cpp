// PyTorch binding for the pure-CUDA SwiGLU (silu_and_mul) launcher in kernel.cu.
#include <torch/extension.h>
#include <c10/cuda/CUDAStream.h>
#include <c10/cuda/CUDAGuard.h>
#include <cuda_runtime.h>
#include <cuda_bf16.h>

void silu_mul_launch(const __nv_bfloat16* x, __nv_bfloat16* out, int tokens, int inter,
                     cudaStream_t stream);

torch::Tensor run(torch::Tensor x) {
  TORCH_CHECK(x.is_cuda(), "x must be a CUDA tensor");
  TORCH_CHECK(x.scalar_type() == torch::kBFloat16, "x must be bfloat16");
  TORCH_CHECK(x.dim() == 2, "x must be 2-D [num_tokens, 2 * intermediate_size]");
  TORCH_CHECK(x.is_contiguous(), "x must be contiguous");
  TORCH_CHECK(x.size(1) % 2 == 0, "last dim of x must be even");
  TORCH_CHECK(x.size(0) <= INT32_MAX && x.size(1) <= INT32_MAX, "shape too large");

  const c10::cuda::OptionalCUDAGuard guard(x.device());
  const int64_t tokens = x.size(0);
  const int64_t inter = x.size(1) / 2;
  auto out = torch::empty({tokens, inter}, x.options());
  if (tokens == 0 || inter == 0) return out;
  silu_mul_launch(reinterpret_cast<const __nv_bfloat16*>(x.data_ptr<at::BFloat16>()),
                  reinterpret_cast<__nv_bfloat16*>(out.data_ptr<at::BFloat16>()),
                  static_cast<int>(tokens), static_cast<int>(inter),
                  c10::cuda::getCurrentCUDAStream());
  const cudaError_t err = cudaGetLastError();
  TORCH_CHECK(err == cudaSuccess, "silu_mul kernel launch failed: ", cudaGetErrorString(err));
  return out;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("run", &run, "silu(x[:, :I]) * x[:, I:] (bf16, fp32 math)");
}
