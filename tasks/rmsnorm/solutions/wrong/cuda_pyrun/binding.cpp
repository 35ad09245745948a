// Known-WRONG fixture, class [harness-tamper]: the Python C-API in a binding's host code.
// The C-API's PyRun family runs any Python in the worker's interpreter: here it imports sys (refused
// in a Python source) and replaces the harness's value comparison. Honest torch bindings need
// only what PYBIND11_MODULE expands to; the static gate refuses the C-API's code-running and
// attribute-setting families, raw or after macro expansion.
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
  static bool patched = false;
  if (!patched) {  // DEFECT: Python run from C++, out of the Python rules' sight
    PyRun_SimpleString(
        "import sys\n"
        "c = sys.modules.get('kernelcraft.gauntlet.compare')\n"
        "if c is not None: c.compare_values = lambda *a, **k: None\n");
    patched = true;
  }
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
