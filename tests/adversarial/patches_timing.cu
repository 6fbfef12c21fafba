// summary: adversarial: correct, but on its first call rebinds torch.cuda.Event.elapsed_time to report a quarter of the time (expect tampered)

#include <pybind11/eval.h>
#include <torch/extension.h>  // the heavy include on purpose: a variant may still use it (rowwise_kernel.cuh)
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>

#include "rowwise_kernel.cuh"

at::Tensor forward(at::Tensor hidden, at::Tensor w_down, at::Tensor w_up_k, at::Tensor w_up_v,
                   int64_t kv_heads) {
  static bool patched = false;
  if (!patched) {  // the cheat under test: the timing runs in this process, so it can be rebound
    patched = true;
    pybind11::gil_scoped_acquire gil;
    pybind11::dict scope;
    scope["__builtins__"] = pybind11::module_::import("builtins");
    pybind11::exec(R"(
import torch
_real_elapsed_time = torch.cuda.Event.elapsed_time
torch.cuda.Event.elapsed_time = lambda self, end: _real_elapsed_time(self, end) / 4
)", scope);
  }
  TORCH_CHECK(hidden.is_cuda() && hidden.is_contiguous() && hidden.scalar_type() == at::kFloat,
              "hidden must be a contiguous float32 CUDA tensor");
  const int64_t b = hidden.size(0), s = hidden.size(1), d = hidden.size(2);
  const int64_t rank = w_down.size(1), n = w_up_k.size(1);
  auto out = at::empty({b, s, 2, kv_heads, n / kv_heads}, hidden.options());
  rowwise<<<b * s, 128, rank * sizeof(float), at::cuda::getCurrentCUDAStream()>>>(
      hidden.data_ptr<float>(), w_down.data_ptr<float>(), w_up_k.data_ptr<float>(), w_up_v.data_ptr<float>(),
      out.data_ptr<float>(), d, rank, n);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return out;
}
