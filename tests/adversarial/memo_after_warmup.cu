// summary: adversarial: caches its output by the address of hidden, honest for the first 30 calls on an address and under graph capture: passes the trials, caught after timing (expect stale-output)

#include <map>
#include <utility>

#include "rowwise_kernel.cuh"

static at::Tensor compute(at::Tensor hidden, at::Tensor w_down, at::Tensor w_up_k,
                          at::Tensor w_up_v, int64_t kv_heads) {
  const int64_t b = hidden.size(0), s = hidden.size(1), d = hidden.size(2);
  const int64_t rank = w_down.size(1), n = w_up_k.size(1);
  auto out = at::empty({b, s, 2, kv_heads, n / kv_heads}, hidden.options());
  rowwise<<<b * s, 128, rank * sizeof(float), at::cuda::getCurrentCUDAStream()>>>(
      hidden.data_ptr<float>(), w_down.data_ptr<float>(), w_up_k.data_ptr<float>(), w_up_v.data_ptr<float>(),
      out.data_ptr<float>(), d, rank, n);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return out;
}

at::Tensor forward(at::Tensor hidden, at::Tensor w_down, at::Tensor w_up_k, at::Tensor w_up_v,
                   int64_t kv_heads) {
  TORCH_CHECK(hidden.is_cuda() && hidden.is_contiguous() && hidden.scalar_type() == at::kFloat,
              "hidden must be a contiguous float32 CUDA tensor");
  cudaStreamCaptureStatus capturing;
  C10_CUDA_CHECK(cudaStreamIsCapturing(at::cuda::getCurrentCUDAStream(), &capturing));
  if (capturing != cudaStreamCaptureStatusNone) return compute(hidden, w_down, w_up_k, w_up_v, kv_heads);
  // The bug under test: an output cache keyed by the input's address, which a harness that rotates a few
  // fixed input sets would time as a 1 us call.
  static std::map<const void*, std::pair<int, at::Tensor>> cache;
  auto& entry = cache[hidden.data_ptr()];
  if (entry.first < 30) entry.second = compute(hidden, w_down, w_up_k, w_up_v, kv_heads);
  entry.first += 1;
  return entry.second;
}
