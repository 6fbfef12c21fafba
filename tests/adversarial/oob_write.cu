// summary: adversarial: correct output, then a kernel that stores 2^40 elements past it (illegal address; expect crashed)

#include "rowwise_kernel.cuh"

// The bug under test: every thread also stores 2^40 elements past its output element.
__global__ void scribble_far(float* out, int64_t count) {
  const int64_t idx = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (idx < count) out[idx + (1LL << 40)] = 1.f;
}

at::Tensor forward(at::Tensor hidden, at::Tensor w_down, at::Tensor w_up_k, at::Tensor w_up_v,
                   int64_t kv_heads) {
  TORCH_CHECK(hidden.is_cuda() && hidden.is_contiguous() && hidden.scalar_type() == at::kFloat,
              "hidden must be a contiguous float32 CUDA tensor");
  const int64_t b = hidden.size(0), s = hidden.size(1), d = hidden.size(2);
  const int64_t rank = w_down.size(1), n = w_up_k.size(1);
  auto out = at::empty({b, s, 2, kv_heads, n / kv_heads}, hidden.options());
  rowwise<<<b * s, 128, rank * sizeof(float), at::cuda::getCurrentCUDAStream()>>>(
      hidden.data_ptr<float>(), w_down.data_ptr<float>(), w_up_k.data_ptr<float>(), w_up_v.data_ptr<float>(),
      out.data_ptr<float>(), d, rank, n);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  const int64_t count = out.numel();
  scribble_far<<<(count + 255) / 256, 256, 0, at::cuda::getCurrentCUDAStream()>>>(out.data_ptr<float>(), count);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return out;
}
