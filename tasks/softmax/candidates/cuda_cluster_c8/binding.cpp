// PyTorch binding for the cluster row-softmax launcher in kernel.cu.
#include <torch/extension.h>
#include <c10/cuda/CUDAStream.h>
#include <c10/cuda/CUDAGuard.h>
#include <cuda_runtime.h>
#include <cuda_bf16.h>

cudaError_t softmax_launch(const __nv_bfloat16* x, __nv_bfloat16* y, int rows, int cols, int device,
                           cudaStream_t stream);

torch::Tensor run(torch::Tensor x) {
  TORCH_CHECK(x.is_cuda(), "x must be a CUDA tensor");
  TORCH_CHECK(x.scalar_type() == torch::kBFloat16, "x must be bfloat16");
  TORCH_CHECK(x.dim() == 2, "x must be 2-D [num_rows, width]");
  TORCH_CHECK(x.is_contiguous(), "x must be contiguous");
  TORCH_CHECK(x.size(0) <= (int64_t{1} << 28) && x.size(1) <= 131072, "shape outside this kernel's range: ", x.sizes());

  const c10::cuda::OptionalCUDAGuard guard(x.device());
  auto y = torch::empty_like(x);
  const int rows = static_cast<int>(x.size(0));
  const int cols = static_cast<int>(x.size(1));
  if (rows == 0 || cols == 0) return y;
  const cudaError_t err =
      softmax_launch(reinterpret_cast<const __nv_bfloat16*>(x.data_ptr<at::BFloat16>()),
                     reinterpret_cast<__nv_bfloat16*>(y.data_ptr<at::BFloat16>()), rows, cols, x.device().index(),
                     c10::cuda::getCurrentCUDAStream());
  TORCH_CHECK(err == cudaSuccess, "softmax kernel launch failed: ", cudaGetErrorString(err));
  return y;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("run", &run, "softmax(x, dim=-1) (bf16, fp32 math; rows split over a thread-block cluster)");
}
