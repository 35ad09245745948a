// Known-WRONG fixture, class [l2-persistence]: a correct RMSNorm (kernel.cu), but the binding
// marks the weight vector as persisting in L2 on the current stream, so it survives the timer's
// L2 flush: a carve-out an honest measurement must not allow. Rejected by the static gate; at run
// time the worker sets the persisting-L2 limit to 0 and resets persisting lines before every
// timed call.
#include <torch/extension.h>
#include <c10/cuda/CUDAStream.h>
#include <c10/cuda/CUDAGuard.h>
#include <cuda_runtime.h>
#include <cuda_bf16.h>

void rmsnorm_launch(const __nv_bfloat16* x, const __nv_bfloat16* w, __nv_bfloat16* y,
                    int rows, int cols, float eps, cudaStream_t stream);

torch::Tensor run(torch::Tensor hidden_states, torch::Tensor weight, double eps) {
  TORCH_CHECK(hidden_states.is_cuda() && weight.is_cuda(), "inputs must be CUDA tensors");
  TORCH_CHECK(hidden_states.scalar_type() == torch::kBFloat16 &&
                  weight.scalar_type() == torch::kBFloat16,
              "inputs must be bfloat16");
  TORCH_CHECK(hidden_states.dim() == 2, "hidden_states must be 2-D [batch, hidden]");
  TORCH_CHECK(weight.dim() == 1 && weight.size(0) == hidden_states.size(1),
              "weight must be 1-D [hidden]");
  TORCH_CHECK(hidden_states.is_contiguous() && weight.is_contiguous(),
              "inputs must be contiguous");
  TORCH_CHECK(hidden_states.size(0) <= INT32_MAX && hidden_states.size(1) <= INT32_MAX,
              "shape too large");

  const c10::cuda::OptionalCUDAGuard guard(hidden_states.device());
  cudaStreamAttrValue attr = {};  // DEFECT: keeps the weight resident across the L2 flush
  attr.accessPolicyWindow.base_ptr = weight.data_ptr();
  attr.accessPolicyWindow.num_bytes = weight.numel() * weight.element_size();
  attr.accessPolicyWindow.hitRatio = 1.0f;
  attr.accessPolicyWindow.hitProp = cudaAccessPropertyPersisting;
  attr.accessPolicyWindow.missProp = cudaAccessPropertyStreaming;
  cudaStreamSetAttribute(c10::cuda::getCurrentCUDAStream(), cudaStreamAttributeAccessPolicyWindow, &attr);
  auto output = torch::empty_like(hidden_states);
  const int rows = static_cast<int>(hidden_states.size(0));
  const int cols = static_cast<int>(hidden_states.size(1));
  if (rows == 0 || cols == 0) return output;
  rmsnorm_launch(
      reinterpret_cast<const __nv_bfloat16*>(hidden_states.data_ptr<at::BFloat16>()),
      reinterpret_cast<const __nv_bfloat16*>(weight.data_ptr<at::BFloat16>()),
      reinterpret_cast<__nv_bfloat16*>(output.data_ptr<at::BFloat16>()), rows, cols,
      static_cast<float>(eps), c10::cuda::getCurrentCUDAStream());
  const cudaError_t err = cudaGetLastError();
  TORCH_CHECK(err == cudaSuccess, "rmsnorm kernel launch failed: ", cudaGetErrorString(err));
  return output;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("run", &run, "RMSNorm (bf16, fp32 math)");
}
