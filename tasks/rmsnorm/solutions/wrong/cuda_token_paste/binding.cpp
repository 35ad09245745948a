// Known-WRONG fixture, class [escaped-timer]: a side stream created through token pasting.
// KC_JOIN(cudaStream, Create) names the stream-creating runtime call once the preprocessor has
// run, but that name is never written, so a regex over the raw text (the old static gate) saw
// nothing. The kernel runs on that stream, which the timer's events on the current stream do not
// wait for. The static gate now also scans the preprocessor's expansion of the solution's lines.
#include <torch/extension.h>
#include <c10/cuda/CUDAStream.h>
#include <c10/cuda/CUDAGuard.h>
#include <cuda_runtime.h>
#include <cuda_bf16.h>

#define KC_JOIN(a, b) a##b

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
  auto output = torch::empty_like(hidden_states);
  const int rows = static_cast<int>(hidden_states.size(0));
  const int cols = static_cast<int>(hidden_states.size(1));
  if (rows == 0 || cols == 0) return output;
  // DEFECT: the launch goes to a stream of its own, created by a name never written out
  static cudaStream_t side = nullptr;
  if (side == nullptr) KC_JOIN(cudaStream, Create)(&side);
  rmsnorm_launch(
      reinterpret_cast<const __nv_bfloat16*>(hidden_states.data_ptr<at::BFloat16>()),
      reinterpret_cast<const __nv_bfloat16*>(weight.data_ptr<at::BFloat16>()),
      reinterpret_cast<__nv_bfloat16*>(output.data_ptr<at::BFloat16>()), rows, cols,
      static_cast<float>(eps), side);
  const cudaError_t err = cudaGetLastError();
  TORCH_CHECK(err == cudaSuccess, "rmsnorm kernel launch failed: ", cudaGetErrorString(err));
  return output;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("run", &run, "RMSNorm (bf16, fp32 math)");
}
