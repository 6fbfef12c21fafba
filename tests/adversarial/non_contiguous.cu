// summary: adversarial: correct values, returned as a transposed (non-contiguous) view of a (b, s, heads, 2, head_dim) buffer (expect bad-output)

#include "rowwise_kernel.cuh"

// Output laid out (b, s, heads, 2, head_dim): row m, element j = (kv, head, e) goes to (head, kv, e).
__global__ void rowwise_heads_first(const float* hidden, const float* w_down, const float* w_up_k,
                                    const float* w_up_v, float* out, int64_t d, int64_t rank, int64_t n,
                                    int64_t head_dim) {
  extern __shared__ float latent[];
  const int64_t m = blockIdx.x;
  for (int64_t r = threadIdx.x; r < rank; r += blockDim.x) {
    float acc = 0.f;
    for (int64_t i = 0; i < d; ++i) acc += hidden[m * d + i] * w_down[i * rank + r];
    latent[r] = acc;
  }
  __syncthreads();
  for (int64_t j = threadIdx.x; j < 2 * n; j += blockDim.x) {
    const int64_t kv = j < n ? 0 : 1;
    const float* w = kv == 0 ? w_up_k : w_up_v;
    const int64_t col = j - kv * n, head = col / head_dim, e = col % head_dim;
    float acc = 0.f;
    for (int64_t r = 0; r < rank; ++r) acc += latent[r] * w[r * n + col];
    out[m * 2 * n + (head * 2 + kv) * head_dim + e] = acc;
  }
}

at::Tensor forward(at::Tensor hidden, at::Tensor w_down, at::Tensor w_up_k, at::Tensor w_up_v,
                   int64_t kv_heads) {
  TORCH_CHECK(hidden.is_cuda() && hidden.is_contiguous() && hidden.scalar_type() == at::kFloat,
              "hidden must be a contiguous float32 CUDA tensor");
  const int64_t b = hidden.size(0), s = hidden.size(1), d = hidden.size(2);
  const int64_t rank = w_down.size(1), n = w_up_k.size(1);
  const int64_t hd = n / kv_heads;
  auto buf = at::empty({b, s, kv_heads, 2, hd}, hidden.options());
  rowwise_heads_first<<<b * s, 128, rank * sizeof(float), at::cuda::getCurrentCUDAStream()>>>(
      hidden.data_ptr<float>(), w_down.data_ptr<float>(), w_up_k.data_ptr<float>(), w_up_v.data_ptr<float>(),
      buf.data_ptr<float>(), d, rank, n, hd);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return buf.transpose(2, 3);  // shape (b, s, 2, heads, hd), strides of the heads-first buffer
}
