// summary: Baseline: latent, k and v by three cuBLAS GEMMs (plain FP32 math, fp32 accumulation for bf16/fp16), then one vectorized grid-stride kernel writes the stacked (b, s, 2, heads, head_dim) layout.
// dtypes: float32,bfloat16,float16

/*
 * GEMMs (PyTorch's cuBLAS handle on the current stream, row-major via column-major C^T = B^T A^T):
 *   latent(M, rank) = hidden(M, d) @ w_down;  k(M, N) = latent @ w_up_k;  v(M, N) = latent @ w_up_v.
 *   float32 : cublasSgemm with CUBLAS_DEFAULT_MATH forced for the calls (no TF32), handle mode restored.
 *   bf16/f16: cublasGemmEx in the dtype with CUBLAS_COMPUTE_32F (latent rounded to the dtype, like eager).
 * Stack kernel: out viewed as (M, 2N); row m = [k row m | v row m]. One thread per group of 4 consecutive
 *   output elements, grid-stride over all 2*M*N/4 groups. Vector path (N % 4 == 0 and k, v, out aligned to
 *   4 elements): one float4 (fp32) or 8-byte (bf16/f16) load and store per group; a group never straddles
 *   the k|v boundary. Scalar path otherwise: the same 4 elements one by one, each with its own row/column.
 */

#include "kv_common.cuh"

#include <algorithm>

namespace {

template <int BYTES> struct VecOf;
template <> struct VecOf<16> { using type = float4; };
template <> struct VecOf<8> { using type = uint2; };

// out (M, 2N) <- [k (M, N) | v (M, N)]; T-sized elements moved as raw bits.
template <typename T>
__global__ void __launch_bounds__(256)
stack_kv_kernel(const T* __restrict__ k, const T* __restrict__ v, T* __restrict__ out, int64_t M, int64_t N,
                int vec) {
    const int64_t N2 = 2 * N;
    const int64_t total = M * N2;
    const int64_t groups = (total + 3) / 4;
    const int64_t stride = int64_t(gridDim.x) * blockDim.x;
    if (vec) {
        using VT = typename VecOf<4 * sizeof(T)>::type;
        // N % 4 == 0: group g covers out elements 4g..4g+3, all in one row and one half.
        for (int64_t g = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; g < groups; g += stride) {
            const int64_t e = g * 4;
            const int64_t row = e / N2;
            const int64_t col = e - row * N2;
            const T* src = (col < N) ? k + row * N + col : v + row * N + (col - N);
            *reinterpret_cast<VT*>(out + e) = __ldg(reinterpret_cast<const VT*>(src));
        }
    } else {
        for (int64_t g = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; g < groups; g += stride) {
#pragma unroll
            for (int q = 0; q < 4; ++q) {
                const int64_t e = g * 4 + q;
                if (e >= total) break;
                const int64_t row = e / N2;
                const int64_t col = e - row * N2;
                out[e] = (col < N) ? k[row * N + col] : v[row * N + (col - N)];
            }
        }
    }
}

// Row-major C(m, n) = A(m, kk) @ B(kk, n), all contiguous, dtype dt, fp32 compute.
void gemm_rm(cublasHandle_t handle, at::ScalarType dt, int m, int n, int kk, const void* A, const void* B, void* C) {
    const float one = 1.f, zero = 0.f;
    cublasStatus_t st;
    if (dt == at::kFloat) {
        st = cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, m, kk, &one, static_cast<const float*>(B), n,
                         static_cast<const float*>(A), kk, &zero, static_cast<float*>(C), n);
    } else {
        const cudaDataType_t ty = dt == at::kHalf ? CUDA_R_16F : CUDA_R_16BF;
        st = cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, m, kk, &one, B, ty, n, A, ty, kk, &zero, C, ty, n,
                          CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    }
    TORCH_CHECK(st == CUBLAS_STATUS_SUCCESS, "cublas_stack: cuBLAS GEMM failed");
}

template <typename T>
void launch_stack(const at::Tensor& k, const at::Tensor& v, at::Tensor& out, int64_t M, int64_t N,
                  cudaStream_t stream) {
    const T* kp = reinterpret_cast<const T*>(k.data_ptr());
    const T* vp = reinterpret_cast<const T*>(v.data_ptr());
    T* op = reinterpret_cast<T*>(out.data_ptr());
    const uintptr_t mask = 4 * sizeof(T) - 1;
    const bool vec = (N % 4 == 0) && ((reinterpret_cast<uintptr_t>(kp) & mask) == 0) &&
                     ((reinterpret_cast<uintptr_t>(vp) & mask) == 0) && ((reinterpret_cast<uintptr_t>(op) & mask) == 0);
    const int64_t groups = (2 * M * N + 3) / 4;
    const int sms = at::cuda::getCurrentDeviceProperties()->multiProcessorCount;
    const int64_t blocks = std::max<int64_t>(1, std::min<int64_t>((groups + 255) / 256, int64_t(sms) * 16));
    stack_kv_kernel<T><<<unsigned(blocks), 256, 0, stream>>>(kp, vp, op, M, N, vec ? 1 : 0);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
}

}  // namespace

at::Tensor forward(at::Tensor hidden, at::Tensor w_down, at::Tensor w_up_k, at::Tensor w_up_v,
                   int64_t kv_heads) {
    const kv::Problem p = kv::check_inputs(hidden, w_down, w_up_k, w_up_v, kv_heads);
    const auto dt = hidden.scalar_type();
    const int64_t M = p.M, D = p.D, R = p.R, N = p.N;

    c10::cuda::CUDAGuard guard(hidden.device());
    auto out = kv::make_output(hidden, p);
    if (M == 0 || N == 0) return out;
    if (D == 0 || R == 0) return out.zero_();

    cudaStream_t stream = at::cuda::getCurrentCUDAStream();
    auto latent = at::empty({M, R}, hidden.options());
    auto k = at::empty({M, N}, hidden.options());
    auto v = at::empty({M, N}, hidden.options());
    {
        cublasHandle_t handle = at::cuda::getCurrentCUDABlasHandle();
        TORCH_CHECK(cublasSetStream(handle, stream) == CUBLAS_STATUS_SUCCESS, "cublas_stack: cublasSetStream failed");
        kv::MathModeGuard mg(handle, CUBLAS_DEFAULT_MATH);  // plain FP32 (no TF32) for float32
        gemm_rm(handle, dt, int(M), int(R), int(D), hidden.data_ptr(), w_down.data_ptr(), latent.data_ptr());
        gemm_rm(handle, dt, int(M), int(N), int(R), latent.data_ptr(), w_up_k.data_ptr(), k.data_ptr());
        gemm_rm(handle, dt, int(M), int(N), int(R), latent.data_ptr(), w_up_v.data_ptr(), v.data_ptr());
    }
    switch (dt) {
        case at::kFloat: launch_stack<float>(k, v, out, M, N, stream); break;
        case at::kBFloat16: launch_stack<__nv_bfloat16>(k, v, out, M, N, stream); break;
        default: launch_stack<__half>(k, v, out, M, N, stream); break;
    }
    return out;
}
