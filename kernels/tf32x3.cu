// summary: float32 at float32 accuracy on TF32 tensor cores (3xTF32): every operand split into TF32 hi + lo parts by small split kernels, lo*hi + hi*lo + hi*hi summed by cuBLAS TF32 GEMMs over K slices of <= 1024, the up-projection writing the stacked output directly; small problems run cuBLAS SGEMM instead.
// dtypes: float32

/*
 * Split: x = hi + lo, hi = x with its low 13 mantissa bits cleared (exactly TF32), lo = the nearest TF32 to
 *   x - hi (x - hi is exact in fp32). hi*hi + hi*lo + lo*hi misses lo*lo (~2^-22 relative) and lo's own
 *   rounding (~2^-22); every value the tensor core sees is already TF32, so the result does not depend on how
 *   the hardware converts fp32 operands.
 * GEMM operands (written by the split kernels, fp32 in memory, both K-major = cuBLAS "TN", the native TF32
 *   wgmma layout): K is cut into S slices of Ks <= 1024 (zero-padded to S*Ks); slice s holds 3*Ks columns,
 *     A side [lo | hi | hi],  B side [hi | lo | hi]   -> per slice: lo*hi + hi*lo + hi*hi, small terms first.
 *   Why slices: a tensor-core accumulator that truncates (round toward zero, as measured on earlier NVIDIA
 *   tensor cores) shrinks a long sum by ~2^-24 per accumulation step, coherently; over DeepSeek's d = 7168
 *   (2688 TF32 k-steps) that is ~1e-4, five times the float32 tolerance. Slices bound each truncating chain;
 *   the partial sums are added by SIMT fp32 (round to nearest). tests/test_tf32x3_numerics.py models this.
 * Kernels (all on the current stream, buffers from PyTorch's allocator):
 *   split_rows_kernel  A side: dst(rows, 3*S*Ks) from src(rows, K) or from the sum of `parts` partial
 *                      matrices (GEMM1's slice partials: the reduction is fused into the latent's split).
 *                      One thread per 4 consecutive k of one row (float4 in and out when aligned).
 *   split_cols_kernel  B side, transposed: dst(cols, 3*S*Ks) from W(K, cols) row-major; a 32x32 tile through
 *                      shared memory (reads coalesced along cols, writes along k); blockIdx.z picks the
 *                      source (w_up_k -> dst rows [0, N), w_up_v -> [N, 2N)), so [w_up_k | w_up_v] is never
 *                      concatenated in its own copy.
 * GEMM1: partials(S1, M, rank) = strided-batched TF32 GEMM over the S1 slices of d (one launch; S1 times
 *   more tiles than M x rank alone, which also fills the SMs). split_rows sums the S1 partials in a fixed order
 *   and splits the latent. GEMM2: out viewed as (M, 2N) = latent' @ [w_up_k | w_up_v]' in one TF32 GEMM
 *   (ldc = 2N: the stacked layout), accumulated over rank slices with beta = 1 when rank > 1024.
 * Small problems (fewer FLOPs than the split traffic and launches cost): latent by cublasSgemm, then two SGEMMs
 *   straight into out and out + N (ldc = 2N); CUBLAS_DEFAULT_MATH forced for those calls (no TF32), the handle's
 *   math mode restored.
 */

#include "kv_common.cuh"

#include <algorithm>

namespace {

constexpr int kSliceK = 1024;              // original k per slice (see the block comment; the CPU test reads it)
constexpr uint32_t kTf32Mask = 0xFFFFE000u;  // TF32 keeps 10 of fp32's 23 mantissa bits

__device__ __forceinline__ void split_tf32(float x, float& hi, float& lo) {
    hi = __uint_as_float(__float_as_uint(x) & kTf32Mask);
    const float rest = x - hi;                                                  // exact
    lo = __uint_as_float((__float_as_uint(rest) + 0x1000u) & kTf32Mask);        // nearest TF32, ties away
}

struct SliceLayout {
    int64_t k;       // original K
    int64_t slices;  // S
    int64_t ks;      // k per slice (multiple of 4); S * ks >= k, the rest zero-padded
    int64_t width() const { return 3 * slices * ks; }
};

SliceLayout slice_layout(int64_t k) {
    const int64_t s = (k + kSliceK - 1) / kSliceK;
    const int64_t per = (k + s - 1) / s;
    return {k, s, (per + 3) / 4 * 4};
}

// Column of term `term` (0, 1, 2) of original k `kk` in a split operand.
__device__ __forceinline__ int64_t split_col(int64_t kk, int64_t ks, int term) {
    const int64_t s = kk / ks;
    return 3 * s * ks + term * ks + (kk - s * ks);
}

// A side. dst row r, slice terms [lo | hi | hi]. src(rows, k) with row stride ld; `parts` matrices part_stride
// apart are summed first (fp32, fixed order). One thread per group of 4 consecutive k (k padded to S*ks).
template <bool VEC>
__global__ void __launch_bounds__(256)
split_rows_kernel(const float* __restrict__ src, int64_t part_stride, int parts, int64_t rows, int64_t k,
                  int64_t ld, int64_t ks, int64_t padded_k, float* __restrict__ dst) {
    const int64_t groups_per_row = padded_k / 4;
    const int64_t total = rows * groups_per_row;
    const int64_t width = 3 * padded_k;
    for (int64_t g = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; g < total;
         g += int64_t(gridDim.x) * blockDim.x) {
        const int64_t r = g / groups_per_row;
        const int64_t k0 = (g - r * groups_per_row) * 4;
        float x[4] = {0.f, 0.f, 0.f, 0.f};
        for (int p = 0; p < parts; ++p) {
            const float* row = src + p * part_stride + r * ld;
            if (VEC && k0 < k) {  // k % 4 == 0: the group is all in or all out
                const float4 v = __ldg(reinterpret_cast<const float4*>(row + k0));
                x[0] += v.x; x[1] += v.y; x[2] += v.z; x[3] += v.w;
            } else if (!VEC) {
#pragma unroll
                for (int q = 0; q < 4; ++q)
                    if (k0 + q < k) x[q] += row[k0 + q];
            }
        }
        float hi[4], lo[4];
#pragma unroll
        for (int q = 0; q < 4; ++q) split_tf32(x[q], hi[q], lo[q]);
        float* out = dst + r * width + split_col(k0, ks, 0);  // ks % 4 == 0: the group stays in one slice
        *reinterpret_cast<float4*>(out) = make_float4(lo[0], lo[1], lo[2], lo[3]);
        *reinterpret_cast<float4*>(out + ks) = make_float4(hi[0], hi[1], hi[2], hi[3]);
        *reinterpret_cast<float4*>(out + 2 * ks) = make_float4(hi[0], hi[1], hi[2], hi[3]);
    }
}

// B side, transposed. Source z (w_down; or w_up_k, w_up_v) is W(k, cols) row-major; dst row z*cols + c holds
// column c of W split along k as [hi | lo | hi] per slice. Block: 32 k x 32 cols tile, 32 x 8 threads.
__global__ void __launch_bounds__(256)
split_cols_kernel(const float* __restrict__ src0, const float* __restrict__ src1, int64_t k, int64_t cols,
                  int64_t ks, int64_t padded_k, float* __restrict__ dst) {
    __shared__ float tile[32][33];
    const float* src = blockIdx.z == 0 ? src0 : src1;
    const int64_t c0 = int64_t(blockIdx.x) * 32, k0 = int64_t(blockIdx.y) * 32;
    const int tx = threadIdx.x, ty = threadIdx.y;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        const int64_t kk = k0 + ty + 8 * i, c = c0 + tx;
        tile[ty + 8 * i][tx] = (kk < k && c < cols) ? __ldg(src + kk * cols + c) : 0.f;
    }
    __syncthreads();
    const int64_t width = 3 * padded_k;
    const int64_t kk = k0 + tx;
    if (kk >= padded_k) return;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        const int64_t c = c0 + ty + 8 * i;
        if (c >= cols) continue;
        float hi, lo;
        split_tf32(tile[tx][ty + 8 * i], hi, lo);
        float* out = dst + (int64_t(blockIdx.z) * cols + c) * width + split_col(kk, ks, 0);
        out[0] = hi;
        out[ks] = lo;
        out[2 * ks] = hi;
    }
}

void split_rows(const float* src, int64_t part_stride, int parts, int64_t rows, int64_t ld, const SliceLayout& L,
                float* dst, cudaStream_t stream) {
    const int64_t padded_k = L.slices * L.ks;
    const int64_t total = rows * (padded_k / 4);
    const int sms = kv::dev_info(c10::cuda::current_device()).sms;
    const int64_t blocks = std::max<int64_t>(1, std::min<int64_t>((total + 255) / 256, int64_t(sms) * 16));
    const bool vec = L.k % 4 == 0 && ld % 4 == 0 && part_stride % 4 == 0 &&
                     (reinterpret_cast<uintptr_t>(src) & 15) == 0;
    if (vec)
        split_rows_kernel<true><<<unsigned(blocks), 256, 0, stream>>>(src, part_stride, parts, rows, L.k, ld, L.ks,
                                                                      padded_k, dst);
    else
        split_rows_kernel<false><<<unsigned(blocks), 256, 0, stream>>>(src, part_stride, parts, rows, L.k, ld,
                                                                       L.ks, padded_k, dst);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
}

void split_cols(const float* src0, const float* src1, int sources, int64_t cols, const SliceLayout& L, float* dst,
                cudaStream_t stream) {
    const int64_t padded_k = L.slices * L.ks;
    const dim3 grid(unsigned((cols + 31) / 32), unsigned((padded_k + 31) / 32), unsigned(sources));
    split_cols_kernel<<<grid, dim3(32, 8), 0, stream>>>(src0, src1, L.k, cols, L.ks, padded_k, dst);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
}

// Row-major C(m, n) (row stride ldc) = sum over `batch` slices of A'_s(m, kk) @ B'_s(n, kk)^T, both operands
// K-major with row stride ld and slice stride `slice` elements; C_s `c_stride` apart. TF32 tensor cores.
void tf32_gemm_tn(cublasHandle_t handle, int m, int n, int kk, const float* A, const float* B, int64_t ld,
                  int64_t slice, float* C, int64_t ldc, int64_t c_stride, int batch, float beta) {
    const float one = 1.f;
    // cuBLAS is column-major: C^T(n, m) = op_T(B' seen as kk x n) @ op_N(A' seen as kk x m), i.e. "TN".
    const cublasStatus_t st = cublasGemmStridedBatchedEx(
        handle, CUBLAS_OP_T, CUBLAS_OP_N, n, m, kk, &one, B, CUDA_R_32F, int(ld), slice, A, CUDA_R_32F, int(ld),
        slice, &beta, C, CUDA_R_32F, int(ldc), c_stride, batch, CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_GEMM_DEFAULT);
    TORCH_CHECK(st == CUBLAS_STATUS_SUCCESS, "tf32x3: cuBLAS TF32 GEMM failed");
}

// Row-major C(m, n) (row stride ldc) = A(m, kk) @ B(kk, n), contiguous fp32, plain FP32 math.
void sgemm_nn(cublasHandle_t handle, int m, int n, int kk, const float* A, const float* B, float* C, int64_t ldc) {
    const float one = 1.f, zero = 0.f;
    const cublasStatus_t st = cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, m, kk, &one, B, n, A, kk, &zero, C,
                                          int(ldc));
    TORCH_CHECK(st == CUBLAS_STATUS_SUCCESS, "tf32x3: cuBLAS SGEMM failed");
}

// Tensor cores pay off once the FLOPs saved exceed the split traffic and extra launches. H200 rates: SIMT FP32
// ~45 TFLOP/s (cuBLAS SGEMM), 3xTF32 ~100 TFLOP/s of useful work, ~3 TB/s for the split passes; each split
// operand element is read once, written 3 times and read 3 times by the GEMM (7 x 4 bytes).
bool use_tensor_cores(int64_t M, int64_t D, int64_t R, int64_t N, int64_t slices1) {
    const double flops = 2.0 * M * D * R + 4.0 * M * R * N;
    const double split_bytes = 28.0 * (M * D + D * R + M * R + 2.0 * R * N) + 8.0 * slices1 * M * R;
    const double simt_s = flops / 45e12;
    const double split_s = flops / 100e12 + split_bytes / 3e12 + 15e-6;
    return split_s < simt_s;
}

}  // namespace

at::Tensor forward(at::Tensor hidden, at::Tensor w_down, at::Tensor w_up_k, at::Tensor w_up_v,
                   int64_t kv_heads) {
    const kv::Problem p = kv::check_inputs(hidden, w_down, w_up_k, w_up_v, kv_heads);
    TORCH_CHECK(hidden.scalar_type() == at::kFloat, "tf32x3: float32 only");
    const int64_t M = p.M, D = p.D, R = p.R, N = p.N;
    const SliceLayout L1 = slice_layout(D), L2 = slice_layout(R);
    TORCH_CHECK(L1.width() <= INT_MAX && L2.width() <= INT_MAX && (L1.slices * L1.ks + 31) / 32 <= 65535 &&
                    (L2.slices * L2.ks + 31) / 32 <= 65535,
                "tf32x3: d or rank exceeds the int32 / grid limits of the split buffers");

    c10::cuda::CUDAGuard guard(hidden.device());
    auto out = kv::make_output(hidden, p);
    if (M == 0 || N == 0) return out;
    if (D == 0 || R == 0) return out.zero_();

    cudaStream_t stream = at::cuda::getCurrentCUDAStream();
    cublasHandle_t handle = at::cuda::getCurrentCUDABlasHandle();
    TORCH_CHECK(cublasSetStream(handle, stream) == CUBLAS_STATUS_SUCCESS, "tf32x3: cublasSetStream failed");
    kv::MathModeGuard math(handle, CUBLAS_DEFAULT_MATH);  // SGEMM without TF32; the TF32 GEMMs ask by compute type
    float* out_p = out.data_ptr<float>();

    if (!use_tensor_cores(M, D, R, N, L1.slices)) {
        auto latent = at::empty({M, R}, hidden.options());
        sgemm_nn(handle, int(M), int(R), int(D), hidden.data_ptr<float>(), w_down.data_ptr<float>(),
                 latent.data_ptr<float>(), R);
        sgemm_nn(handle, int(M), int(N), int(R), latent.data_ptr<float>(), w_up_k.data_ptr<float>(), out_p, 2 * N);
        sgemm_nn(handle, int(M), int(N), int(R), latent.data_ptr<float>(), w_up_v.data_ptr<float>(), out_p + N,
                 2 * N);
        return out;
    }

    // GEMM1: partials(S1, M, R) over the slices of d.
    auto hidden3 = at::empty({M, L1.width()}, hidden.options());
    auto w_down3 = at::empty({R, L1.width()}, hidden.options());
    split_rows(hidden.data_ptr<float>(), 0, 1, M, D, L1, hidden3.data_ptr<float>(), stream);
    split_cols(w_down.data_ptr<float>(), nullptr, 1, R, L1, w_down3.data_ptr<float>(), stream);
    auto partials = at::empty({L1.slices, M, R}, hidden.options());
    tf32_gemm_tn(handle, int(M), int(R), int(3 * L1.ks), hidden3.data_ptr<float>(), w_down3.data_ptr<float>(),
                 L1.width(), 3 * L1.ks, partials.data_ptr<float>(), R, M * R, int(L1.slices), 0.f);

    // Latent: the partials summed (fp32, fixed order) and split in one pass; [w_up_k | w_up_v] split.
    auto latent3 = at::empty({M, L2.width()}, hidden.options());
    split_rows(partials.data_ptr<float>(), M * R, int(L1.slices), M, R, L2, latent3.data_ptr<float>(), stream);
    auto w_up3 = at::empty({2 * N, L2.width()}, hidden.options());
    split_cols(w_up_k.data_ptr<float>(), w_up_v.data_ptr<float>(), 2, N, L2, w_up3.data_ptr<float>(), stream);

    // GEMM2: out (M, 2N) row-major = the stacked (b, s, 2, heads, head_dim) layout; rank slices accumulate.
    for (int64_t sl = 0; sl < L2.slices; ++sl) {
        const int64_t off = sl * 3 * L2.ks;
        tf32_gemm_tn(handle, int(M), int(2 * N), int(3 * L2.ks), latent3.data_ptr<float>() + off,
                     w_up3.data_ptr<float>() + off, L2.width(), 0, out_p, 2 * N, 0, 1, sl == 0 ? 0.f : 1.f);
    }
    return out;
}
