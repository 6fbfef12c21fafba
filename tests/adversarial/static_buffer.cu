// summary: adversarial: correct values, but written into one static buffer that every call returns (expect bad-output: a caller holding the previous output sees it overwritten)

#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>

#include "rowwise_kernel.cuh"

torch::Tensor forward(torch::Tensor hidden, torch::Tensor w_down, torch::Tensor w_up_k, torch::Tensor w_up_v,
                      int64_t kv_heads) {
  TORCH_CHECK(hidden.is_cuda() && hidden.is_contiguous() && hidden.scalar_type() == torch::kFloat32,
              "hidden must be a contiguous float32 CUDA tensor");
  const int64_t b = hidden.size(0), s = hidden.size(1), d = hidden.size(2);
  const int64_t rank = w_down.size(1), n = w_up_k.size(1);
  static torch::Tensor buffer;  // the bug under test: one persistent output buffer
  if (!buffer.defined() || buffer.numel() != b * s * 2 * n)
    buffer = torch::empty({b, s, 2, kv_heads, n / kv_heads}, hidden.options());
  rowwise<<<b * s, 128, rank * sizeof(float), at::cuda::getCurrentCUDAStream()>>>(
      hidden.data_ptr<float>(), w_down.data_ptr<float>(), w_up_k.data_ptr<float>(), w_up_v.data_ptr<float>(),
      buffer.data_ptr<float>(), d, rank, n);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return buffer;
}
