// summary: adversarial: correct kernel, but launched on its own non-blocking stream with no synchronisation with the caller's current stream (expect other-stream)

#include "rowwise_kernel.cuh"

at::Tensor forward(at::Tensor hidden, at::Tensor w_down, at::Tensor w_up_k, at::Tensor w_up_v,
                   int64_t kv_heads) {
  TORCH_CHECK(hidden.is_cuda() && hidden.is_contiguous() && hidden.scalar_type() == at::kFloat,
              "hidden must be a contiguous float32 CUDA tensor");
  const int64_t b = hidden.size(0), s = hidden.size(1), d = hidden.size(2);
  const int64_t rank = w_down.size(1), n = w_up_k.size(1);
  auto out = at::empty({b, s, 2, kv_heads, n / kv_heads}, hidden.options());
  // Created once, never ordered against at::cuda::getCurrentCUDAStream(): the bug under test.
  static cudaStream_t side = [] {
    cudaStream_t st;
    C10_CUDA_CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    return st;
  }();
  rowwise<<<b * s, 128, rank * sizeof(float), side>>>(
      hidden.data_ptr<float>(), w_down.data_ptr<float>(), w_up_k.data_ptr<float>(), w_up_v.data_ptr<float>(),
      out.data_ptr<float>(), d, rank, n);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return out;
}
