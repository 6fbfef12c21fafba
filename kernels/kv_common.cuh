// Shared helpers of the kvbench variants: input checks every forward repeats, dtype conversions, 4-wide vector
// loads/stores, cp.async wrappers and the SIMT paths' cp.async ring, device attributes cached per device, a cuBLAS
// math-mode guard.
// Every TORCH_CHECK message is a literal: a formatted several-argument message crashed torch 2.11 on the H200.
#pragma once

// The tensor API the variants use, header by header, as PyTorch's own kernels include it: torch/extension.h (the
// whole C++ frontend) or torch/types.h (every ATen operator) would add ~100 s or ~25 s of one core to every build.
#include <ATen/core/Tensor.h>           // at::Tensor and its methods
#include <ATen/ops/empty.h>             // at::empty
#include <ATen/cuda/CUDAContextLight.h> // device properties, the cuBLAS handle
#include <c10/cuda/CUDAException.h>     // C10_CUDA_CHECK, C10_CUDA_KERNEL_LAUNCH_CHECK
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>        // at::cuda::getCurrentCUDAStream
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cstdint>
#include <climits>

namespace kv {

// ---------------------------------------------------------------- the problem, checked

// Sizes of one call: hidden (b, s, D), w_down (D, R), w_up_k and w_up_v (R, N), N = heads * head_dim, M = b * s.
struct Problem {
    int64_t b, s, D, R, N, heads, head_dim, M;
};

// The checks every forward makes; all sizes must fit in int32 (2N too: the stacked output row is 2N wide).
inline Problem check_inputs(const at::Tensor& hidden, const at::Tensor& w_down, const at::Tensor& w_up_k,
                            const at::Tensor& w_up_v, int64_t kv_heads) {
    TORCH_CHECK(hidden.is_cuda() && w_down.is_cuda() && w_up_k.is_cuda() && w_up_v.is_cuda(),
                "all inputs must be CUDA tensors");
    TORCH_CHECK(hidden.get_device() == w_down.get_device() && hidden.get_device() == w_up_k.get_device() &&
                    hidden.get_device() == w_up_v.get_device(),
                "all inputs must be on the same device");
    TORCH_CHECK(hidden.is_contiguous() && w_down.is_contiguous() && w_up_k.is_contiguous() && w_up_v.is_contiguous(),
                "all inputs must be contiguous");
    const auto dt = hidden.scalar_type();
    TORCH_CHECK(w_down.scalar_type() == dt && w_up_k.scalar_type() == dt && w_up_v.scalar_type() == dt,
                "all inputs must have one dtype");
    TORCH_CHECK(dt == at::kFloat || dt == at::kBFloat16 || dt == at::kHalf,
                "dtype must be float32, bfloat16 or float16");
    TORCH_CHECK(hidden.dim() == 3, "hidden must be 3-D (b, s, d)");
    TORCH_CHECK(w_down.dim() == 2 && w_down.size(0) == hidden.size(2), "w_down must be (d, rank) with d = hidden.size(2)");
    TORCH_CHECK(w_up_k.dim() == 2 && w_up_v.dim() == 2, "w_up_k and w_up_v must be 2-D (rank, N)");
    TORCH_CHECK(w_up_k.sizes() == w_up_v.sizes(), "w_up_k and w_up_v must have the same shape");
    TORCH_CHECK(w_up_k.size(0) == w_down.size(1), "w_up_k.size(0) must equal rank = w_down.size(1)");
    TORCH_CHECK(kv_heads > 0, "kv_heads must be positive");
    TORCH_CHECK(w_up_k.size(1) % kv_heads == 0, "N = w_up_k.size(1) must be divisible by kv_heads");
    Problem p;
    p.b = hidden.size(0);
    p.s = hidden.size(1);
    p.D = hidden.size(2);
    p.R = w_down.size(1);
    p.N = w_up_k.size(1);
    p.heads = kv_heads;
    p.head_dim = p.N / kv_heads;
    p.M = p.b * p.s;
    TORCH_CHECK(p.M <= INT_MAX && p.D <= INT_MAX && p.R <= INT_MAX && 2 * p.N <= INT_MAX,
                "sizes must fit in int32 (M, d, rank and 2N)");
    return p;
}

// The new contiguous (b, s, 2, heads, head_dim) output.
inline at::Tensor make_output(const at::Tensor& hidden, const Problem& p) {
    return at::empty({p.b, p.s, 2, p.heads, p.head_dim}, hidden.options());
}

// ---------------------------------------------------------------- device attributes, read once per device
// (cudaDeviceGetAttribute per call shows in call latency). Device capabilities only: never per-call state.
struct DevInfo {
    int optin;  // cudaDevAttrMaxSharedMemoryPerBlockOptin
    int sms;    // multiprocessors
    int major, minor;
};
// static: a function-local static of an inline function is one symbol across all loaded extensions
// (STB_GNU_UNIQUE); each variant keeps its own caches.
static inline DevInfo dev_info(int dev) {
    static DevInfo cache[64] = {};
    if (dev >= 0 && dev < 64 && cache[dev].sms > 0) return cache[dev];
    DevInfo d{};
    C10_CUDA_CHECK(cudaDeviceGetAttribute(&d.optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
    C10_CUDA_CHECK(cudaDeviceGetAttribute(&d.sms, cudaDevAttrMultiProcessorCount, dev));
    C10_CUDA_CHECK(cudaDeviceGetAttribute(&d.major, cudaDevAttrComputeCapabilityMajor, dev));
    C10_CUDA_CHECK(cudaDeviceGetAttribute(&d.minor, cudaDevAttrComputeCapabilityMinor, dev));
    if (dev >= 0 && dev < 64) cache[dev] = d;
    return d;
}

// Set attribute `Attr` of `Kernel` to `value` once per device: cudaFuncSetAttribute is a driver call (3-4 us of host
// time) that would otherwise sit on every launch. Keyed on the kernel and the attribute, so each keeps its own flag
// (and, being static, each loaded extension); `value` must be the same on every call for one kernel.
template <auto Kernel, cudaFuncAttribute Attr>
static inline void set_func_attr_once(int dev, int value) {
    static bool done[64] = {};
    if (dev >= 0 && dev < 64 && done[dev]) return;
    C10_CUDA_CHECK(cudaFuncSetAttribute(Kernel, Attr, value));
    if (dev >= 0 && dev < 64) done[dev] = true;
}
// The dynamic shared-memory limit of `Kernel` raised to `bytes`, once per device.
template <auto Kernel>
static inline void set_max_dynamic_smem_once(int dev, int bytes) {
    set_func_attr_once<Kernel, cudaFuncAttributeMaxDynamicSharedMemorySize>(dev, bytes);
}

inline bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

__host__ __device__ constexpr int cdiv(int a, int b) { return (a + b - 1) / b; }

// ---------------------------------------------------------------- cuBLAS: plain FP32 math for the calls, restored
struct MathModeGuard {
    cublasHandle_t h;
    cublasMath_t saved;
    MathModeGuard(cublasHandle_t handle, cublasMath_t mode) : h(handle) {
        TORCH_CHECK(cublasGetMathMode(h, &saved) == CUBLAS_STATUS_SUCCESS, "cublasGetMathMode failed");
        TORCH_CHECK(cublasSetMathMode(h, mode) == CUBLAS_STATUS_SUCCESS, "cublasSetMathMode failed");
    }
    ~MathModeGuard() { cublasSetMathMode(h, saved); }
    MathModeGuard(const MathModeGuard&) = delete;
    MathModeGuard& operator=(const MathModeGuard&) = delete;
};

// ---------------------------------------------------------------- element conversions
__device__ __forceinline__ float to_f(float x) { return x; }
__device__ __forceinline__ float to_f(__nv_bfloat16 x) { return __bfloat162float(x); }
__device__ __forceinline__ float to_f(__half x) { return __half2float(x); }

template <typename T> __device__ __forceinline__ T from_f(float x);
template <> __device__ __forceinline__ float from_f<float>(float x) { return x; }
template <> __device__ __forceinline__ __nv_bfloat16 from_f<__nv_bfloat16>(float x) { return __float2bfloat16_rn(x); }
template <> __device__ __forceinline__ __half from_f<__half>(float x) { return __float2half_rn(x); }

// Two floats -> one 32-bit word of two 16-bit elements (lo in the low half), round to nearest.
template <typename T> __device__ __forceinline__ uint32_t pack2(float lo, float hi);
template <> __device__ __forceinline__ uint32_t pack2<__nv_bfloat16>(float lo, float hi) {
    __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<uint32_t*>(&v);
}
template <> __device__ __forceinline__ uint32_t pack2<__half>(float lo, float hi) {
    __half2 v = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<uint32_t*>(&v);
}

// ---------------------------------------------------------------- 4 consecutive elements <-> float4
// p must be 16-byte aligned for float, 8-byte aligned for the 2-byte types.
__device__ __forceinline__ float4 ld4(const float* p) { return *reinterpret_cast<const float4*>(p); }
__device__ __forceinline__ float4 ld4(const __nv_bfloat16* p) {
    const uint2 u = *reinterpret_cast<const uint2*>(p);
    return make_float4(__uint_as_float(u.x << 16), __uint_as_float(u.x & 0xffff0000u),
                       __uint_as_float(u.y << 16), __uint_as_float(u.y & 0xffff0000u));
}
__device__ __forceinline__ float4 ld4(const __half* p) {
    const uint2 u = *reinterpret_cast<const uint2*>(p);
    __half2 h0, h1;
    *reinterpret_cast<uint32_t*>(&h0) = u.x;
    *reinterpret_cast<uint32_t*>(&h1) = u.y;
    const float2 a = __half22float2(h0), b = __half22float2(h1);
    return make_float4(a.x, a.y, b.x, b.y);
}

__device__ __forceinline__ void st4(float* p, float4 v) { *reinterpret_cast<float4*>(p) = v; }
__device__ __forceinline__ void st4(__nv_bfloat16* p, float4 v) {
    uint2 u;
    u.x = pack2<__nv_bfloat16>(v.x, v.y);
    u.y = pack2<__nv_bfloat16>(v.z, v.w);
    *reinterpret_cast<uint2*>(p) = u;
}
__device__ __forceinline__ void st4(__half* p, float4 v) {
    uint2 u;
    u.x = pack2<__half>(v.x, v.y);
    u.y = pack2<__half>(v.z, v.w);
    *reinterpret_cast<uint2*>(p) = u;
}

// ---------------------------------------------------------------- cp.async (16 bytes, zero-fill when !pred)
__device__ __forceinline__ void cp_async16(void* smem, const void* gmem, bool pred) {
    const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
    const int n = pred ? 16 : 0;  // src-size 0: nothing is read, 16 zero bytes are written
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(gmem), "r"(n) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory"); }

// ---------------------------------------------------------------- SIMT paths: a cp.async ring, STAGES deep
// Chunk c of `total` lives in stage c % STAGES; load(c, stage) issues this thread's copies of chunk c.
// ring_prologue: chunks 0 .. STAGES-2 in flight, one commit group each (empty ones too: the waits count groups).
template <int STAGES, typename Load>
__device__ __forceinline__ void ring_prologue(int total, Load&& load) {
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < total) load(s, s);
        cp_async_commit();
    }
}

// ring_next, at the top of step c: chunk c has landed (this thread's copies, then everyone's: the barrier), the
// stage read in step c - 1 is free, and chunk c + STAGES - 1 goes into it.
template <int STAGES, typename Load>
__device__ __forceinline__ void ring_next(int c, int total, Load&& load) {
    cp_async_wait<STAGES - 2>();
    __syncthreads();
    const int pc = c + STAGES - 1;
    if (pc < total) load(pc, pc % STAGES);
    cp_async_commit();
}

template <int TM, int TN>
__device__ __forceinline__ void zero_tile(float (&acc)[TM][TN]) {
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = 0.f;
}

// SIMT paths: stage the tile [w_up_k | w_up_v][k0 : k0+BK, n0 : n0+BN] into Bs[k][n] (row pitch BN), zeros outside
// R x 2N; NT threads, thread `tid` takes every NT-th element or 16-byte vector. `vec`: N and the pointers allow
// 16-byte vectors, so one never straddles the k|v boundary and cp.async copies it (the caller commits the group).
template <typename T, int BK, int BN, int NT>
__device__ __forceinline__ void stage_w_up_tile(T* Bs, const T* w_up_k, const T* w_up_v, int k0, int n0, int R, int N,
                                                bool vec, int tid) {
    constexpr int V = 16 / int(sizeof(T));
    const int N2 = 2 * N;
    if (vec) {
        constexpr int VPR = BN / V;
#pragma unroll
        for (int v = tid; v < BK * VPR; v += NT) {
            const int r = v / VPR, nv = (v - r * VPR) * V;
            const int kr = k0 + r, col = n0 + nv;
            const bool p = kr < R && col < N2;
            const T* src = w_up_k;
            if (p) src = (col < N) ? w_up_k + int64_t(kr) * N + col : w_up_v + int64_t(kr) * N + (col - N);
            cp_async16(Bs + r * BN + nv, src, p);
        }
    } else {
        for (int e = tid; e < BK * BN; e += NT) {
            const int r = e / BN, nn = e - r * BN;
            const int kr = k0 + r, col = n0 + nn;
            T val = from_f<T>(0.f);
            if (kr < R && col < N2) val = (col < N) ? w_up_k[int64_t(kr) * N + col] : w_up_v[int64_t(kr) * N + (col - N)];
            Bs[r * BN + nn] = val;
        }
    }
}

}  // namespace kv
