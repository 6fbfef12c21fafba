// Hopper (sm_90a) building blocks shared by the tensor-core variants: TMA tensor maps (host; the driver's
// cuTensorMapEncodeTiled reached through cudaGetDriverEntryPointByVersion, so no -lcuda), kernel launches with
// cluster / programmatic attributes (host), mbarriers, TMA loads / stores / L2 prefetches, programmatic dependent
// launch, wgmma shared-memory descriptors and wrappers, fences, setmaxnreg, named barriers.
//
// Every device helper compiles to nothing unless the target is sm_90a (__CUDA_ARCH_FEAT_SM90_ALL): a build for
// another target still compiles, and the host asks sm90a_kernels_built() before it dispatches to these paths.
#pragma once

#include "kv_common.cuh"

#include <cuda.h>
#include <cudaTypedefs.h>

#include <utility>

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define KV_SM90A 1
#else
#define KV_SM90A 0
#endif

namespace hop {

// ================================================================ host: tensor maps

static inline PFN_cuTensorMapEncodeTiled_v12000 encode_tiled_fn() {
    static PFN_cuTensorMapEncodeTiled_v12000 fn = nullptr;
    if (fn == nullptr) {
        void* p = nullptr;
        cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
        C10_CUDA_CHECK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &q));
        TORCH_CHECK(q == cudaDriverEntryPointSuccess && p != nullptr, "cuTensorMapEncodeTiled not found in the driver");
        fn = reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(p);
    }
    return fn;
}

template <typename T> inline CUtensorMapDataType tmap_dtype();
template <> inline CUtensorMapDataType tmap_dtype<__nv_bfloat16>() { return CU_TENSOR_MAP_DATA_TYPE_BFLOAT16; }
template <> inline CUtensorMapDataType tmap_dtype<__half>() { return CU_TENSOR_MAP_DATA_TYPE_FLOAT16; }
template <> inline CUtensorMapDataType tmap_dtype<float>() { return CU_TENSOR_MAP_DATA_TYPE_FLOAT32; }

// TMA's L2 promotion: the L2 request size a box row is widened to (CU_TENSOR_MAP_L2_PROMOTION_*); CUTLASS's TMA
// descriptors use 128. A probe axis: measured 128 against 256 on an H100 (results/NOTES.md, 2026-12-06 tenth), no
// timing moved beyond noise and GEMM1's L2 sector reads stayed put, so 256 (the code the GPU suite passed) stays.
#ifndef KV_TMA_L2_PROMO
#define KV_TMA_L2_PROMO 256
#endif
static_assert(KV_TMA_L2_PROMO == 0 || KV_TMA_L2_PROMO == 64 || KV_TMA_L2_PROMO == 128 || KV_TMA_L2_PROMO == 256,
              "KV_TMA_L2_PROMO: 0, 64, 128 or 256");
constexpr CUtensorMapL2promotion kTmaL2Promotion = KV_TMA_L2_PROMO == 256   ? CU_TENSOR_MAP_L2_PROMOTION_L2_256B
                                                   : KV_TMA_L2_PROMO == 128 ? CU_TENSOR_MAP_L2_PROMOTION_L2_128B
                                                   : KV_TMA_L2_PROMO == 64  ? CU_TENSOR_MAP_L2_PROMOTION_L2_64B
                                                                            : CU_TENSOR_MAP_L2_PROMOTION_NONE;

// A row-major 2-D tensor rows x cols (row pitch `pitch` elements) of T; box = box_cols x box_rows elements.
// 128-byte swizzle (box_cols * sizeof(T) == 128) is the layout the wgmma descriptors below describe. Out-of-bounds
// box elements read as zero and are not written by stores. Needs: base 16-byte aligned, pitch * sizeof(T) % 16 == 0.
template <typename T>
inline CUtensorMap make_tmap_2d(const void* base, uint64_t rows, uint64_t cols, uint64_t pitch, uint32_t box_rows,
                                uint32_t box_cols, CUtensorMapSwizzle swizzle = CU_TENSOR_MAP_SWIZZLE_128B) {
    CUtensorMap m;
    const cuuint64_t dims[2] = {cols, rows};
    const cuuint64_t strides[1] = {pitch * sizeof(T)};
    const cuuint32_t box[2] = {box_cols, box_rows};
    const cuuint32_t elem_strides[2] = {1, 1};
    const CUresult r = encode_tiled_fn()(&m, tmap_dtype<T>(), 2, const_cast<void*>(base), dims, strides, box,
                                         elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle,
                                         kTmaL2Promotion, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    TORCH_CHECK(r == CUDA_SUCCESS, "cuTensorMapEncodeTiled failed");
    return m;
}

// ================================================================ host: launches

// How a kernel of these variants is launched: grid, block, dynamic shared memory, CTAs per cluster (1 = no cluster
// attribute) and whether it is the programmatic dependent of the previous grid in the stream (it may start while
// that grid runs; its threads pdl_wait() before they read what that grid writes).
struct LaunchShape {
    dim3 grid, block;
    int smem_bytes = 0;
    dim3 cluster = dim3(1, 1, 1);
    bool programmatic = false;
};

// Clusters of `cluster` CTAs of `kernel` (`threads` a CTA, `smem_bytes` of dynamic shared memory) the device can hold
// at once: 0 when none, or when it refuses that size (not an error of the caller's). The caller has set the
// kernel's shared-memory (and, above 8, non-portable cluster) attributes.
template <typename... KernelParams>
inline int max_active_clusters(void (*kernel)(KernelParams...), int cluster, int threads, int smem_bytes) {
    cudaLaunchAttribute attr;
    attr.id = cudaLaunchAttributeClusterDimension;
    attr.val.clusterDim.x = unsigned(cluster);
    attr.val.clusterDim.y = 1;
    attr.val.clusterDim.z = 1;
    cudaLaunchConfig_t config = {};
    config.gridDim = dim3(unsigned(cluster));
    config.blockDim = dim3(unsigned(threads));
    config.dynamicSmemBytes = size_t(smem_bytes);
    config.attrs = &attr;
    config.numAttrs = 1;
    int n = 0;
    if (cudaOccupancyMaxActiveClusters(&n, kernel, &config) != cudaSuccess) {
        (void)cudaGetLastError();
        n = 0;
    }
    return n;
}

// max_active_clusters of `Kernel` asked of the driver once per device and cluster size (2..16; 0 outside them), so
// a launch path may ask on every call. The caller has set the kernel's attributes before its first call.
template <auto Kernel>
inline int max_active_clusters_once(int dev, int cluster, int threads, int smem_bytes) {
    static int n[64][17] = {};  // 0 = not asked yet, else clusters + 1
    if (cluster < 2 || cluster > 16 || dev < 0 || dev >= 64) return 0;
    if (n[dev][cluster] == 0) n[dev][cluster] = 1 + max_active_clusters(Kernel, cluster, threads, smem_bytes);
    return n[dev][cluster] - 1;
}

// One cudaLaunchKernelEx with the attributes `shape` asks for; the arguments are converted to the kernel's
// parameter types as in a <<<>>> launch.
template <typename... KernelParams, typename... Args>
inline void launch_ex(void (*kernel)(KernelParams...), const LaunchShape& shape, cudaStream_t stream,
                      Args&&... args) {
    cudaLaunchAttribute attrs[2];
    unsigned n_attrs = 0;
    if (shape.cluster.x * shape.cluster.y * shape.cluster.z > 1) {
        attrs[n_attrs].id = cudaLaunchAttributeClusterDimension;
        attrs[n_attrs].val.clusterDim.x = shape.cluster.x;
        attrs[n_attrs].val.clusterDim.y = shape.cluster.y;
        attrs[n_attrs].val.clusterDim.z = shape.cluster.z;
        ++n_attrs;
    }
    if (shape.programmatic) {
        attrs[n_attrs].id = cudaLaunchAttributeProgrammaticStreamSerialization;
        attrs[n_attrs].val.programmaticStreamSerializationAllowed = 1;
        ++n_attrs;
    }
    cudaLaunchConfig_t config = {};
    config.gridDim = shape.grid;
    config.blockDim = shape.block;
    config.dynamicSmemBytes = size_t(shape.smem_bytes);
    config.stream = stream;
    config.attrs = attrs;
    config.numAttrs = n_attrs;
    C10_CUDA_CHECK(cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...));
}

// ================================================================ device: addresses, barriers, fences

// This thread's warpgroup (threadIdx.x / 128), broadcast from lane 0 so the compiler can prove it warp-uniform: what
// derives from it (tile and ring indices, stages, wgmma descriptors) then stays in uniform registers, and the
// descriptors reach each HGMMA without an R2UR copy and a 64-bit add in vector registers between the HGMMAs.
// (NOTES 2026-12-07 thirteenth: 28 % fewer instructions and 2 % fewer cycles in the ping-pong GEMM2.)
__device__ __forceinline__ int warpgroup_index() {
    return __shfl_sync(0xffffffffu, int(threadIdx.x) / 128, 0);
}
__device__ __forceinline__ uint32_t smem_u32(const void* p) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void mbar_init(uint64_t* bar, uint32_t count) {
#if KV_SM90A
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_u32(bar)), "r"(count) : "memory");
#endif
}
// Make the barrier initialisations visible to the async proxy (TMA) and the other threads (then __syncthreads).
__device__ __forceinline__ void fence_barrier_init() {
#if KV_SM90A
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
#endif
}
// One arrival that also announces `bytes` of TMA transactions to come on this barrier.
__device__ __forceinline__ void mbar_arrive_expect_tx(uint64_t* bar, uint32_t bytes) {
#if KV_SM90A
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_u32(bar)), "r"(bytes)
                 : "memory");
#endif
}
__device__ __forceinline__ void mbar_arrive(uint64_t* bar) {
#if KV_SM90A
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(smem_u32(bar)) : "memory");
#endif
}
// Whether the barrier's phase with this parity has completed (no wait).
__device__ __forceinline__ bool mbar_test(uint64_t* bar, uint32_t parity) {
    uint32_t done = 0;
#if KV_SM90A
    asm volatile(
        "{\n.reg .pred p;\nmbarrier.test_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(smem_u32(bar)), "r"(parity)
        : "memory");
#endif
    return done != 0;
}
// Wait until the barrier's phase with this parity has completed.
__device__ __forceinline__ void mbar_wait(uint64_t* bar, uint32_t parity) {
#if KV_SM90A
    const uint32_t a = smem_u32(bar);
    uint32_t done = 0;
    do {
        asm volatile(
            "{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
            : "=r"(done)
            : "r"(a), "r"(parity)
            : "memory");
    } while (!done);
#endif
}

// Ordinary shared-memory stores -> visible to the async proxy (a TMA store or wgmma reading them next).
__device__ __forceinline__ void fence_proxy_async_smem() {
#if KV_SM90A
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#endif
}
// Global memory written by ordinary stores in this grid -> visible to TMA loads of other CTAs (with release/acquire).
__device__ __forceinline__ void fence_proxy_async_global() {
#if KV_SM90A
    asm volatile("fence.proxy.async.global;\n" ::: "memory");
#endif
}

// Barrier `id` (1..15; 0 is __syncthreads) over `count` threads (a multiple of 32).
__device__ __forceinline__ void named_barrier(int id, int count) {
    asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(count) : "memory");
}
// Arrive on barrier `id` without waiting: the barrier completes when `count` threads have arrived or synced on it
// (a signal from one group of warps to another that waits with named_barrier(id, count)).
__device__ __forceinline__ void named_barrier_arrive(int id, int count) {
    asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(count) : "memory");
}

template <int REGS>
__device__ __forceinline__ void setmaxnreg_inc() {
#if KV_SM90A
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(REGS));
#endif
}
template <int REGS>
__device__ __forceinline__ void setmaxnreg_dec() {
#if KV_SM90A
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(REGS));
#endif
}

// ================================================================ device: TMA

// Box at (col x, row y) of the map -> smem; completion counted on `bar` (bytes announced by arrive_expect_tx).
__device__ __forceinline__ void tma_load_2d(void* dst, const CUtensorMap* map, int x, int y, uint64_t* bar) {
#if KV_SM90A
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];\n"
        ::"r"(smem_u32(dst)), "l"(reinterpret_cast<uint64_t>(map)), "r"(smem_u32(bar)), "r"(x), "r"(y)
        : "memory");
#endif
}
// The same with an L2 eviction-priority policy (from l2_policy_*).
__device__ __forceinline__ void tma_load_2d_hint(void* dst, const CUtensorMap* map, int x, int y, uint64_t* bar,
                                                 uint64_t policy) {
#if KV_SM90A
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.L2::cache_hint"
        " [%0], [%1, {%3, %4}], [%2], %5;\n"
        ::"r"(smem_u32(dst)), "l"(reinterpret_cast<uint64_t>(map)), "r"(smem_u32(bar)), "r"(x), "r"(y), "l"(policy)
        : "memory");
#endif
}
// The same box into the same smem offset of every CTA of this cluster named in `mask` (bit i = rank i); each
// destination CTA's barrier at `bar`'s offset counts the bytes it receives.
__device__ __forceinline__ void tma_load_2d_multicast(void* dst, const CUtensorMap* map, int x, int y, uint64_t* bar,
                                                      uint16_t mask) {
#if KV_SM90A
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster"
        " [%0], [%1, {%3, %4}], [%2], %5;\n"
        ::"r"(smem_u32(dst)), "l"(reinterpret_cast<uint64_t>(map)), "r"(smem_u32(bar)), "r"(x), "r"(y), "h"(mask)
        : "memory");
#endif
}
__device__ __forceinline__ uint64_t l2_policy_evict_first() {
    uint64_t p = 0;
#if KV_SM90A
    asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(p));
#endif
    return p;
}
__device__ __forceinline__ uint64_t l2_policy_evict_last() {
    uint64_t p = 0;
#if KV_SM90A
    asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;\n" : "=l"(p));
#endif
    return p;
}
// Box at (x, y) -> L2 only (no shared memory, no barrier).
__device__ __forceinline__ void tma_prefetch_2d(const CUtensorMap* map, int x, int y) {
#if KV_SM90A
    asm volatile("cp.async.bulk.prefetch.tensor.2d.L2.global.tile [%0, {%1, %2}];\n"
                 ::"l"(reinterpret_cast<uint64_t>(map)), "r"(x), "r"(y) : "memory");
#endif
}
// smem box -> global at (x, y); rows / columns outside the tensor are not written.
__device__ __forceinline__ void tma_store_2d(const CUtensorMap* map, const void* src, int x, int y) {
#if KV_SM90A
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];\n"
                 ::"l"(reinterpret_cast<uint64_t>(map)), "r"(smem_u32(src)), "r"(x), "r"(y) : "memory");
#endif
}
__device__ __forceinline__ void tma_store_commit() {
#if KV_SM90A
    asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
#endif
}
// At most N committed store groups still reading their shared memory (the buffers of the others may be reused).
template <int N>
__device__ __forceinline__ void tma_store_wait_read() {
#if KV_SM90A
    asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(N) : "memory");
#endif
}
// At most N committed store groups not yet complete (their writes visible in global memory).
template <int N>
__device__ __forceinline__ void tma_store_wait() {
#if KV_SM90A
    asm volatile("cp.async.bulk.wait_group %0;\n" ::"n"(N) : "memory");
#endif
}
__device__ __forceinline__ void prefetch_tmap(const CUtensorMap* map) {
#if KV_SM90A
    asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<uint64_t>(map)) : "memory");
#endif
}

// ================================================================ device: clusters (distributed shared memory)

// Every thread of every CTA of the cluster arrives, then waits for all of them (not warp-aligned: a role may
// reach it from diverged code). The arrive releases and the wait acquires at cluster scope.
__device__ __forceinline__ void cluster_sync() {
#if KV_SM90A
    asm volatile("barrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;\n" ::: "memory");
#endif
}
// The two halves of cluster_sync, for a role that must arrive early and wait late (an arrival never blocks).
__device__ __forceinline__ void cluster_arrive() {
#if KV_SM90A
    asm volatile("barrier.cluster.arrive.release;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void cluster_wait() {
#if KV_SM90A
    asm volatile("barrier.cluster.wait.acquire;\n" ::: "memory");
#endif
}
// One arrival on the barrier at `bar`'s offset in the smem of CTA `rank` of the cluster. Release at CTA scope (the
// default): a consumer that frees a stage has retired its wgmmas on it already, and .release.cluster costs a
// cluster-wide memory barrier on every arrival (ncu: the arriving warp stalled on it, delaying its next wgmmas).
__device__ __forceinline__ void mbar_arrive_cluster(uint64_t* bar, uint32_t rank) {
#if KV_SM90A
    uint32_t a;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(a) : "r"(smem_u32(bar)), "r"(rank));
    asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];\n" ::"r"(a) : "memory");
#endif
}
// This CTA's rank in its cluster.
__device__ __forceinline__ uint32_t cluster_ctarank() {
    uint32_t r = 0;
#if KV_SM90A
    asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
#endif
    return r;
}
// 16 bytes at `p` (a shared::cta address of this CTA's smem, 16-byte aligned) in the smem of CTA `rank` of the cluster.
__device__ __forceinline__ float4 ld_shared_cluster_f4(const void* p, uint32_t rank) {
    float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
#if KV_SM90A
    uint32_t a;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(a) : "r"(smem_u32(p)), "r"(rank));
    asm volatile("ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [%4];\n"
                 : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
                 : "r"(a)
                 : "memory");
#endif
    return v;
}

// ================================================================ device: programmatic dependent launch
// A grid launched with cudaLaunchAttributeProgrammaticStreamSerialization may start before the previous grid in its
// stream has finished: its threads must pdl_wait() before they touch what that grid writes (the wait returns once
// the previous grid has completed and its writes are visible; without the attribute it returns at once).
__device__ __forceinline__ void pdl_wait() {
#if KV_SM90A
    asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}
// Lets the next grid in the stream, if launched as a programmatic dependent, start now (its pdl_wait still waits).
__device__ __forceinline__ void pdl_launch_dependents() {
#if KV_SM90A
    asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}

// ================================================================ device: wgmma
//
// Shared-memory operand layouts (what TMA with 128-byte swizzle writes, tile bases 1024-byte aligned):
//   K-major (A = latent / hidden rows, box 64 k x R rows): row r of the box at r*128 bytes, its 16-byte chunks
//     XOR-swizzled by (r % 8). Descriptor: SBO = 1024 (next 8-row group), LBO unused; the k16 step s of a 64-wide
//     box starts s*32 bytes in (the hardware applies the swizzle to the address).
//   MN-major (B = w_down / w_up rows, boxes 64 n x 64 k, stored one after another along n): k row r at r*128
//     bytes of its box. Descriptor: LBO = box bytes (next 64 columns), SBO = 1024 (next 8 k rows); the k16 step s
//     starts s*16*128 bytes in. Used with imm-trans-b = 1.
__device__ __forceinline__ uint64_t make_desc_sw128(const void* smem, uint32_t lbo_bytes, uint32_t sbo_bytes) {
    const uint32_t a = smem_u32(smem);
    uint64_t d = 0;
    d |= uint64_t((a & 0x3FFFF) >> 4);
    d |= uint64_t((lbo_bytes >> 4) & 0x3FFF) << 16;
    d |= uint64_t((sbo_bytes >> 4) & 0x3FFF) << 32;
    d |= uint64_t(1) << 62;  // 128-byte swizzle
    return d;
}

__device__ __forceinline__ void wgmma_fence() {
#if KV_SM90A
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void wgmma_commit() {
#if KV_SM90A
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
#endif
}
template <int N>
__device__ __forceinline__ void wgmma_wait() {
#if KV_SM90A
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
#endif
}
// Keep the compiler from moving accumulator reads / writes across the asynchronous MMAs.
template <int R>
__device__ __forceinline__ void fence_acc(float (&d)[R]) {
#pragma unroll
    for (int i = 0; i < R; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

// D(64 x N, fp32) (+)= A(64 x 16, K-major smem) * B(16 x N, N-major smem); scale_d = 0 overwrites D.
// Accumulator fragment: thread t of the warpgroup holds d[i] at row 16*(t/32) + (t%32)/4 + 8*((i/2)%2),
// column 8*(i/4) + 2*(t%4) + i%2.
template <int N, typename T>
__device__ __forceinline__ void wgmma_ss(float (&d)[N / 2], uint64_t da, uint64_t db, int scale_d);

// One wgmma_ss specialization per (N, element type): the PTX names both, and the accumulator operand list
// (N / 2 floats a thread) is spelled out register by register; the macros below write each list once.
#define KV_ACC8(d, i) \
    "+f"(d[(i)]), "+f"(d[(i) + 1]), "+f"(d[(i) + 2]), "+f"(d[(i) + 3]), "+f"(d[(i) + 4]), "+f"(d[(i) + 5]), \
    "+f"(d[(i) + 6]), "+f"(d[(i) + 7])
#define KV_ACC32(d, i) KV_ACC8(d, (i)), KV_ACC8(d, (i) + 8), KV_ACC8(d, (i) + 16), KV_ACC8(d, (i) + 24)
#define KV_ACC_N64(d) KV_ACC32(d, 0)
#define KV_ACC_N128(d) KV_ACC32(d, 0), KV_ACC32(d, 32)
#define KV_ACC_N256(d) KV_ACC32(d, 0), KV_ACC32(d, 32), KV_ACC32(d, 64), KV_ACC32(d, 96)
#define KV_REGS_N64 \
    "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15" \
    ", %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
#define KV_REGS_N128 KV_REGS_N64 \
    ", %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47" \
    ", %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
#define KV_REGS_N256 KV_REGS_N128 \
    ", %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79" \
    ", %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95" \
    ", %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111" \
    ", %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
// IA, IB, IS: operand numbers of the two descriptors and of scale_d (right after the N / 2 accumulators).
#if KV_SM90A
#define KV_WGMMA_SS_ASM(N, PTX_T, IA, IB, IS)                                                              \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %" #IS ", 0;\n"                                         \
                 "wgmma.mma_async.sync.aligned.m64n" #N "k16.f32." PTX_T "." PTX_T " {" KV_REGS_N##N      \
                 "}, %" #IA ", %" #IB ", p, 1, 1, 0, 1;\n}\n"                                                \
                 : KV_ACC_N##N(d)                                                                          \
                 : "l"(da), "l"(db), "r"(scale_d))
#else
#define KV_WGMMA_SS_ASM(N, PTX_T, IA, IB, IS)
#endif
#define KV_WGMMA_SS(N, T, PTX_T, IA, IB, IS)                                                                  \
    template <>                                                                                                \
    __device__ __forceinline__ void wgmma_ss<N, T>(float(&d)[N / 2], uint64_t da, uint64_t db, int scale_d) { \
        KV_WGMMA_SS_ASM(N, PTX_T, IA, IB, IS);                                                                 \
    }
KV_WGMMA_SS(64, __nv_bfloat16, "bf16", 32, 33, 34)
KV_WGMMA_SS(64, __half, "f16", 32, 33, 34)
KV_WGMMA_SS(128, __nv_bfloat16, "bf16", 64, 65, 66)
KV_WGMMA_SS(128, __half, "f16", 64, 65, 66)
KV_WGMMA_SS(256, __nv_bfloat16, "bf16", 128, 129, 130)
KV_WGMMA_SS(256, __half, "f16", 128, 129, 130)
#undef KV_WGMMA_SS
#undef KV_WGMMA_SS_ASM

// D(64 x 64, fp32) (+)= A(64 x 16, M-major smem) * B(16 x 64, K-major smem): the operand majors of wgmma_ss
// swapped (imm-trans-a = 1, imm-trans-b = 0), for a swapped product D^T = B^T A^T whose weight is the M-major A
// (mla_decode.cuh's GEMM1: latent^T tile = w_down^T (64 latent columns, N-major in memory) x hidden^T (tokens)).
// Descriptors as above: the M-major A box is laid out like an MN-major B box (SBO = 1024, k16 step 2048 bytes),
// the K-major B box like a K-major A box (k16 step 32 bytes). Fragment: as wgmma_ss, row = M (A's columns).
template <typename T>
__device__ __forceinline__ void wgmma_ss_mk64(float (&d)[32], uint64_t da, uint64_t db, int scale_d);
#if KV_SM90A
#define KV_WGMMA_MK64_ASM(PTX_T)                                                                          \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"                                            \
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32." PTX_T "." PTX_T " {" KV_REGS_N64         \
                 "}, %32, %33, p, 1, 1, 1, 0;\n}\n"                                                         \
                 : KV_ACC_N64(d)                                                                        \
                 : "l"(da), "l"(db), "r"(scale_d))
#else
#define KV_WGMMA_MK64_ASM(PTX_T)
#endif
template <>
__device__ __forceinline__ void wgmma_ss_mk64<__nv_bfloat16>(float (&d)[32], uint64_t da, uint64_t db, int scale_d) {
    KV_WGMMA_MK64_ASM("bf16");
}
template <>
__device__ __forceinline__ void wgmma_ss_mk64<__half>(float (&d)[32], uint64_t da, uint64_t db, int scale_d) {
    KV_WGMMA_MK64_ASM("f16");
}
#undef KV_WGMMA_MK64_ASM
// ================================================================ host: is the sm_90a code in this build?

namespace detail {
__global__ void probe_sm90a_kernel(int* flag) {
#if KV_SM90A
    *flag = 1;
#else
    *flag = 0;
#endif
}
}  // namespace detail

// True when the running device is compute capability 9.0 and this extension's kernels were compiled for sm_90a
// (a build for sm_90 or for another chip leaves the wgmma paths empty). Asked once per device: one tiny launch
// and a synchronous copy, never while the stream is being captured (then: false, the caller falls back).
static inline bool sm90a_kernels_built(int dev, cudaStream_t stream) {
    static int cache[64];  // 0 unknown, 1 yes, 2 no
    if (dev >= 0 && dev < 64 && cache[dev] != 0) return cache[dev] == 1;
    const kv::DevInfo info = kv::dev_info(dev);
    bool ok = false;
    if (info.major == 9 && info.minor == 0) {
        cudaStreamCaptureStatus cap = cudaStreamCaptureStatusNone;
        C10_CUDA_CHECK(cudaStreamIsCapturing(stream, &cap));
        if (cap != cudaStreamCaptureStatusNone) return false;  // not cached: ask again outside the capture
        int* flag = nullptr;
        C10_CUDA_CHECK(cudaMalloc(&flag, sizeof(int)));
        C10_CUDA_CHECK(cudaMemsetAsync(flag, 0, sizeof(int), stream));
        detail::probe_sm90a_kernel<<<1, 1, 0, stream>>>(flag);
        C10_CUDA_KERNEL_LAUNCH_CHECK();
        int host = 0;
        C10_CUDA_CHECK(cudaMemcpyAsync(&host, flag, sizeof(int), cudaMemcpyDeviceToHost, stream));
        C10_CUDA_CHECK(cudaStreamSynchronize(stream));
        C10_CUDA_CHECK(cudaFree(flag));
        ok = host == 1;
    }
    if (dev >= 0 && dev < 64) cache[dev] = ok ? 1 : 2;
    return ok;
}

}  // namespace hop
