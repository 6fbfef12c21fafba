// A simple, known-correct float32 kernel shared by the adversarial variants (the harness puts a
// variant's own folder on the include path): block m computes token row m.
#pragma once
// The tensor API these variants use, header by header: torch/extension.h would add ~100 s to each build
// (patches_timing.cu includes it anyway, the one build that shows a variant still may).
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/zeros.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAStream.h>
#include <cstdint>

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
