// summary: adversarial: correct output, then a kernel that spins forever on a flag that stays 0 (expect timed-out)

#include "rowwise_kernel.cuh"

// The bug under test: waits for a flag nobody sets. The volatile load keeps the compiler from deleting
// the loop (an empty infinite loop without side effects may be assumed to terminate).
__global__ void spin_forever(volatile const int* flag) {
  while (*flag == 0) {
  }
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
  auto flag = at::zeros({1}, hidden.options().dtype(at::kInt));
  spin_forever<<<1, 1, 0, at::cuda::getCurrentCUDAStream()>>>(flag.data_ptr<int>());
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return out;
}
