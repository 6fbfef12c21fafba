// summary: adversarial: refuses ranks above 32 with a TORCH_CHECK, as a design with a fixed latent tile would (expect rejected at the seed's rank 48)

#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>

// The known-correct kernel of tests/variants/naive_rowwise.cu: block m computes token row m.
__global__ void rowwise(const float* hidden, const float* w_down, const float* w_up_k, const float* w_up_v,
                        float* out, int64_t d, int64_t rank, int64_t n) {
  extern __shared__ float latent[];
  const int64_t m = blockIdx.x;
  for (int64_t r = threadIdx.x; r < rank; r += blockDim.x) {
    float acc = 0.f;
    for (int64_t i = 0; i < d; ++i) acc += hidden[m * d + i] * w_down[i * rank + r];
    latent[r] = acc;
  }
  __syncthreads();
  for (int64_t j = threadIdx.x; j < 2 * n; j += blockDim.x) {
    const float* w = j < n ? w_up_k : w_up_v;
    const int64_t col = j < n ? j : j - n;
    float acc = 0.f;
    for (int64_t r = 0; r < rank; ++r) acc += latent[r] * w[r * n + col];
    out[m * 2 * n + j] = acc;
  }
}

torch::Tensor forward(torch::Tensor hidden, torch::Tensor w_down, torch::Tensor w_up_k, torch::Tensor w_up_v,
                      int64_t kv_heads) {
  TORCH_CHECK(hidden.is_cuda() && hidden.is_contiguous() && hidden.scalar_type() == torch::kFloat32,
              "hidden must be a contiguous float32 CUDA tensor");
  const int64_t b = hidden.size(0), s = hidden.size(1), d = hidden.size(2);
  const int64_t rank = w_down.size(1), n = w_up_k.size(1);
  // A literal message: under the H200 image's torch 2.11 wheel a formatted TORCH_CHECK message
  // (several arguments) segfaulted in the throw (results/NOTES.md); the harness then says `crashed`.
  TORCH_CHECK(rank <= 32, "rank exceeds this design's limit of 32");
  auto out = torch::empty({b, s, 2, kv_heads, n / kv_heads}, hidden.options());
  rowwise<<<b * s, 128, rank * sizeof(float), at::cuda::getCurrentCUDAStream()>>>(
      hidden.data_ptr<float>(), w_down.data_ptr<float>(), w_up_k.data_ptr<float>(), w_up_v.data_ptr<float>(),
      out.data_ptr<float>(), d, rank, n);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return out;
}
