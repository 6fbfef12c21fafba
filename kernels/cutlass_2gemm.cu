// summary: CUTLASS reference: SM90 CollectiveBuilder GEMMs (TMA, warp-specialized, persistent): latent = hidden @ w_down by a cooperative stream-K kernel, then k and v by one batched ping-pong launch (a programmatic dependent at decode sizes), stored straight into the stacked (b, s, 2, heads, head_dim) output; shapes TMA cannot take go to cuBLAS through torch.
// dtypes: bfloat16,float16
// nvcc-flags: -DNDEBUG
// includes: cutlass

/*
 * Both GEMMs are row-major, fp32 accumulation, output rounded to the dtype (the latent too, like eager):
 *   GEMM1  latent(M, rank) = hidden(M, d) @ w_down(d, rank)           long K = d, narrow N = rank
 *   GEMM2  out[:, 0, :] = latent @ w_up_k, out[:, 1, :] = latent @ w_up_v, i.e. two GEMMs of N = heads*head_dim
 *          whose D is the output viewed as (M, 2N): D = out (k) and out + N (v), row stride 2N. No weight
 *          concatenation, no k/v temporaries, no stack pass. Both run as one launch, a batch of 2: A (the
 *          latent) has a batch stride of static zero, which CuTe leaves out of A's TMA descriptor; B's batch
 *          stride is w_up_v's address minus w_up_k's and D's is N. TMA strides are unsigned, so a w_up_v that
 *          lies below w_up_k in memory gets two launches instead (each launch boundary costs about an empty
 *          kernel's time: 4-7 us at 64 and 512 tokens, NOTES 2026-12-02 second).
 * Kernels (3 per dtype; every CTA is persistent, one warpgroup producer issuing TMA loads into a smem
 * pipeline whose depth the builder fills to the smem left after the epilogue, consumer warpgroups on wgmma):
 *   G1        cooperative (2 consumer warpgroups share a 128x128x64 tile, 64 rows each), cluster 1x1,
 *             stream-K scheduler with its heuristic decomposition: full waves of output tiles run
 *             data-parallel, the tiles of a last partial wave (or all of them, when there are fewer tiles
 *             than SMs) have their K loop (d / 64 = 112 k-tiles at DeepSeek) spread over the SMs, partial
 *             tiles reduced through a workspace (from torch's allocator). At M = 4096 the latent has only
 *             32 x 4 = 128 tiles (< 132 SMs) and at M = 64 only 4: without stream-K, 4 SMs would stream
 *             all of w_down.
 *   G2 large  M > 128: ping-pong (2 consumer warpgroups on alternate 128x128x64 tiles: one runs its
 *             mainloop while the other stores its previous tile; with K = rank = 512 a tile has only
 *             8 k-tiles, so a cooperative kernel would leave the epilogue exposed on every tile),
 *             cluster 2x1 (the two CTAs of a cluster share the w_up tile: TMA multicast halves its L2
 *             reads), tiles rasterized along M so consecutive CTAs reuse one w_up column panel from L2.
 *   G2 small  M <= 128: ping-pong 64x128x64, cluster 1x1: at decode sizes the w_up stream is the cost;
 *             N / 128 = 128 tiles per GEMM spread it over the SMs and a 64-row tile wastes no MMA on padding.
 * GEMM1's reduction: with fewer output tiles than SMs (4 at DeepSeek decode, 16 at 512 tokens) stream-K splits
 * every tile's K over several CTAs (14 splits of 8 k-tiles at decode). CUTLASS's default reduction is a
 * turnstile: split s adds its 64 KB fp32 partial only after split s-1 did, a chain of L2 round trips after the
 * main loops. CUTLASS_G1_ATOMIC=1 (the default) lets the splits add their partials at once (atomic adds in the
 * workspace; the summation order is not fixed, so the latent can differ in its last bit between runs).
 * TMA needs 16-byte aligned rows and bases: d, rank and N multiples of 8 and the tensors 16-byte aligned.
 * Anything else (e.g. head_dim 13, rank 1) runs torch's cuBLAS matmuls instead, writing into the output's
 * k and v views (row stride 2N) directly: correct everywhere, not fast.
 * Launch: each CUTLASS kernel runs inside chained_gemm_kernel (a griddepcontrol wait, then a trigger, then the
 * kernel body), launched here with cudaLaunchKernelEx. At M <= 128 the up-projection is GEMM1's programmatic
 * dependent: its CTAs take the SMs GEMM1's split-K schedule leaves idle and set up while GEMM1 finishes. At larger M
 * the same launch measured slower (NOTES 2026-12-02 third), so it stays in plain stream order there.
 * Hopper only: a forward on another GPU, or from an image not built for sm_90a, is rejected by TORCH_CHECK.
 */

#ifndef CUTLASS_G1_ATOMIC
#define CUTLASS_G1_ATOMIC 1
#endif
#include "hopper.cuh"
#include "kv_common.cuh"

#include <ATen/ops/mm.h>  // the fallback below
#include "cute/tensor.hpp"
#include "cutlass/cutlass.h"
#include "cutlass/numeric_types.h"
#include "cutlass/epilogue/collective/collective_builder.hpp"
#include "cutlass/epilogue/fusion/operations.hpp"
#include "cutlass/gemm/collective/collective_builder.hpp"
#include "cutlass/device_kernel.h"
#include "cutlass/gemm/dispatch_policy.hpp"
#include "cutlass/gemm/kernel/gemm_universal.hpp"
#include "cutlass/gemm/kernel/tile_scheduler.hpp"

namespace {

using cute::_1;  // using-declarations: `using namespace cute` would make the anonymous namespace ambiguous
using cute::_2;
using cute::_64;
using cute::_128;

// The static shared memory of this kernel tells the host which image the device would run: none when the
// image was compiled for sm_90a (TMA, wgmma, setmaxnreg), 16 bytes otherwise. Never launched.
__global__ void sm90a_probe_kernel(int* out) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    if (out) *out = 0;
#else
    __shared__ int marker[4];
    marker[threadIdx.x & 3] = int(threadIdx.x);
    if (out) *out = marker[0];
#endif
}

// One row-major GEMM D(M, N) = A(M, K) @ B(K, N), fp32 accumulation, D in the element type, no C operand.
template <class Element, class TileShape, class ClusterShape, class KernelSchedule, class EpilogueSchedule,
          class Scheduler, class StrideA = cute::Stride<int64_t, _1, int64_t>>
struct RowMajorGemm {
    using Layout = cutlass::layout::RowMajor;
    static constexpr int kAlign = 16 / sizeof(Element);  // TMA: 16-byte rows
    using Epilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
        cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, TileShape, ClusterShape,
        cutlass::epilogue::collective::EpilogueTileAuto, float, float, void, Layout, kAlign, Element, Layout, kAlign,
        EpilogueSchedule, cutlass::epilogue::fusion::LinearCombination<Element, float, void, float>>::CollectiveOp;
    using Mainloop = typename cutlass::gemm::collective::CollectiveBuilder<
        cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, Element, StrideA, kAlign, Element, Layout, kAlign, float,
        TileShape, ClusterShape,
        cutlass::gemm::collective::StageCountAutoCarveout<int(sizeof(typename Epilogue::SharedStorage))>,
        KernelSchedule>::CollectiveOp;
    using Kernel = cutlass::gemm::kernel::GemmUniversal<cute::Shape<int, int, int, int>, Mainloop, Epilogue, Scheduler>;
};

template <class Element>
using LatentGemm = RowMajorGemm<Element, cute::Shape<_128, _128, _64>, cute::Shape<_1, _1, _1>,
                                cutlass::gemm::KernelTmaWarpSpecializedCooperative,
                                cutlass::epilogue::TmaWarpSpecializedCooperative, cutlass::gemm::StreamKScheduler>;
// The up-projection's A (the latent) has a batch stride of static zero: k and v, run as a batch of 2, read one latent.
using LatentStride = cute::Stride<int64_t, _1, cute::Int<0>>;
template <class Element>
using UpGemmLarge = RowMajorGemm<Element, cute::Shape<_128, _128, _64>, cute::Shape<_2, _1, _1>,
                                 cutlass::gemm::KernelTmaWarpSpecializedPingpong, cutlass::epilogue::TmaWarpSpecialized,
                                 cutlass::gemm::PersistentScheduler, LatentStride>;
template <class Element>
using UpGemmSmall = RowMajorGemm<Element, cute::Shape<_64, _128, _64>, cute::Shape<_1, _1, _1>,
                                 cutlass::gemm::KernelTmaWarpSpecializedPingpong, cutlass::epilogue::TmaWarpSpecialized,
                                 cutlass::gemm::PersistentScheduler, LatentStride>;

constexpr int64_t kSmallM = 128;  // up to here the up-projection uses 64-row tiles and no cluster

struct Device {
    int index;
    int sms;  // CUTLASS sizes its persistent grid with it
};

// The Hopper checks. The probe's attributes come from the host (no launch, no synchronization), so this is
// safe inside a CUDA graph capture; cudaFuncGetAttributes is cheap enough to ask on every call.
Device hopper_device(int index) {
    const kv::DevInfo info = kv::dev_info(index);
    TORCH_CHECK(info.major == 9 && info.minor == 0,
                "cutlass_2gemm: needs a Hopper GPU (compute capability 9.0: TMA and wgmma)");
    cudaFuncAttributes attr;
    const cudaError_t err = cudaFuncGetAttributes(&attr, sm90a_probe_kernel);
    if (err != cudaSuccess) (void)cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess && attr.sharedSizeBytes == 0,
                "cutlass_2gemm: this build has no sm_90a code for this GPU; build with TORCH_CUDA_ARCH_LIST=9.0a");
    return {index, info.sms};
}

// How one GEMM is scheduled and launched.
struct Launch {
    cutlass::gemm::kernel::detail::RasterOrderOptions raster;
    bool atomic_reduction;  // stream-K: partial tiles added by atomics as they come (else in split order)
    bool programmatic;      // a programmatic dependent of the previous grid in the stream
};

template <class SchedulerArgs>
auto set_reduction(SchedulerArgs& sched, bool atomic, int) -> decltype(sched.reduction_mode, void()) {
    using Mode = cutlass::gemm::kernel::detail::ReductionMode;
    sched.reduction_mode = atomic ? Mode::Nondeterministic : Mode::Deterministic;
}
template <class SchedulerArgs>
void set_reduction(SchedulerArgs&, bool, long) {}  // a data-parallel scheduler: nothing to reduce

// Every CUTLASS kernel of this file runs inside this wrapper rather than cutlass::device_kernel, so that the
// up-projection can be GEMM1's programmatic dependent (CUTLASS 4.2's own path for that does not compile with its
// stream-K scheduler): the wait holds a dependent until the previous grid has finished and its writes are visible
// (at once otherwise); the trigger after it lets the next grid launch, whose CTAs take SMs as this grid's leave.
template <class Kernel>
__global__ void __launch_bounds__(Kernel::MaxThreadsPerBlock, Kernel::MinBlocksPerMultiprocessor)
    chained_gemm_kernel(CUTLASS_GRID_CONSTANT typename Kernel::Params const params) {
    hop::pdl_wait();
    hop::pdl_launch_dependents();
    extern __shared__ char smem[];
    Kernel op;
    op(params, smem);
}

template <class Kernel>
void launch_kernel(const typename Kernel::Params& params, cudaStream_t stream, const Launch& launch,
                 int device) {
    auto* kernel = chained_gemm_kernel<Kernel>;
    const int smem_bytes = Kernel::SharedStorageSize;
    kv::set_max_dynamic_smem_once<chained_gemm_kernel<Kernel>>(device, smem_bytes);
    using Cluster = typename Kernel::DispatchPolicy::ClusterShape;
    hop::LaunchShape shape;
    shape.grid = Kernel::get_grid_shape(params);
    shape.block = Kernel::get_block_shape();
    shape.smem_bytes = smem_bytes;
    shape.cluster = dim3(cute::size<0>(Cluster{}), cute::size<1>(Cluster{}), cute::size<2>(Cluster{}));
    shape.programmatic = launch.programmatic;
    hop::launch_ex(kernel, shape, stream, params);
}

// A batch of GEMMs sharing A: batch l reads B + l * batch_b and writes D + l * batch_d (element strides).
struct Batch {
    int count;
    int64_t stride_b, stride_d;
};

// Returns the GEMM's workspace (if any): the caller keeps it until the kernels after it are enqueued, since a
// programmatic dependent may start while this GEMM still runs.
template <class Config>
at::Tensor run_gemm(int M, int N, int K, const void* A, int64_t lda, const void* B, int64_t ldb, void* D,
                    int64_t ldd, const Device& dev, const at::TensorOptions& options, cudaStream_t stream,
                    const Launch& launch, const Batch& batch = {1, 0, 0}) {
    using Kernel = typename Config::Kernel;
    using Element = typename Kernel::ElementA;
    typename Kernel::StrideA dA{};
    cute::get<0>(dA) = lda;
    typename Kernel::StrideB dB = cute::make_stride(cute::Int<1>{}, ldb, batch.stride_b);  // B (K, N): N-contiguous
    typename Kernel::StrideD dD = cute::make_stride(ldd, cute::Int<1>{}, batch.stride_d);

    typename Kernel::Arguments args{};
    args.mode = batch.count > 1 ? cutlass::gemm::GemmUniversalMode::kBatched : cutlass::gemm::GemmUniversalMode::kGemm;
    args.problem_shape = {M, N, K, batch.count};
    args.mainloop.ptr_A = static_cast<const Element*>(A);
    args.mainloop.dA = dA;
    args.mainloop.ptr_B = static_cast<const Element*>(B);
    args.mainloop.dB = dB;
    args.epilogue.thread.alpha = 1.f;
    args.epilogue.thread.beta = 0.f;
    args.epilogue.ptr_C = nullptr;
    args.epilogue.dC = dD;
    args.epilogue.ptr_D = static_cast<Element*>(D);
    args.epilogue.dD = dD;
    args.hw_info.device_id = dev.index;
    args.hw_info.sm_count = dev.sms;
    args.scheduler.raster_order = launch.raster;
    set_reduction(args.scheduler, launch.atomic_reduction, 0);

    TORCH_CHECK(Kernel::can_implement(args), "cutlass_2gemm: CUTLASS cannot implement this GEMM (alignment or size)");
    const size_t workspace_bytes = Kernel::get_workspace_size(args);
    at::Tensor workspace;
    if (workspace_bytes > 0) workspace = at::empty({int64_t(workspace_bytes)}, options.dtype(at::kByte));
    void* const workspace_ptr = workspace_bytes ? workspace.data_ptr() : nullptr;
    TORCH_CHECK(Kernel::initialize_workspace(args, workspace_ptr, stream, nullptr) == cutlass::Status::kSuccess,
                "cutlass_2gemm: CUTLASS GEMM initialization failed");
    launch_kernel<Kernel>(Kernel::to_underlying_arguments(args, workspace_ptr), stream, launch, dev.index);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return workspace;
}

template <class Element>
void forward_cutlass(const at::Tensor& hidden, const at::Tensor& w_down, const at::Tensor& w_up_k,
                     const at::Tensor& w_up_v, at::Tensor& out, int64_t M, int64_t D, int64_t R, int64_t N,
                     const Device& dev) {
    using RasterOrder = cutlass::gemm::kernel::detail::RasterOrderOptions;
    cudaStream_t stream = at::cuda::getCurrentCUDAStream();
    auto latent = at::empty({M, R}, hidden.options());
    // Kept until the up-projection is enqueued: a programmatic dependent may start while GEMM1 still runs.
    const at::Tensor down_workspace = run_gemm<LatentGemm<Element>>(
        int(M), int(R), int(D), hidden.data_ptr(), D, w_down.data_ptr(), R, latent.data_ptr(), R, dev,
        hidden.options(), stream, {RasterOrder::Heuristic, CUTLASS_G1_ATOMIC != 0, false});
    char* out_k = static_cast<char*>(out.data_ptr());
    char* out_v = out_k + N * int64_t(sizeof(Element));
    // Programmatic at decode sizes only: -0.6 to -0.9 us at DeepSeek-V2/V3 64 tokens, within 0.2 us elsewhere;
    // +1.4 to +4 us at 512 and 4096 tokens behind the stream-K GEMM1 (NOTES 2026-12-02 third).
    const Launch up{RasterOrder::AlongM, false, M <= kSmallM};
    // One launch for k and v when w_up_v lies above w_up_k: TMA strides are unsigned (and under 2^40 bytes).
    const int64_t v_offset = reinterpret_cast<intptr_t>(w_up_v.data_ptr()) - reinterpret_cast<intptr_t>(w_up_k.data_ptr());
    const bool batched = v_offset > 0 && v_offset < (int64_t(1) << 40);
    const Batch kv_batch{2, v_offset / int64_t(sizeof(Element)), N};
    auto up_gemm = [&](auto config) {
        using Config = decltype(config);
        if (batched) {
            run_gemm<Config>(int(M), int(N), int(R), latent.data_ptr(), R, w_up_k.data_ptr(), N, out_k, 2 * N, dev,
                             hidden.options(), stream, up, kv_batch);
            return;
        }
        run_gemm<Config>(int(M), int(N), int(R), latent.data_ptr(), R, w_up_k.data_ptr(), N, out_k, 2 * N, dev,
                         hidden.options(), stream, up);
        run_gemm<Config>(int(M), int(N), int(R), latent.data_ptr(), R, w_up_v.data_ptr(), N, out_v, 2 * N, dev,
                         hidden.options(), stream, up);
    };
    if (M <= kSmallM) {
        up_gemm(UpGemmSmall<Element>{});
    } else {
        up_gemm(UpGemmLarge<Element>{});
    }
}

// cuBLAS through torch, for shapes TMA cannot take: the k and v GEMMs write the output's strided views.
void forward_torch(const at::Tensor& hidden, const at::Tensor& w_down, const at::Tensor& w_up_k,
                   const at::Tensor& w_up_v, at::Tensor& out, int64_t M, int64_t D, int64_t N) {
    const auto latent = at::mm(hidden.view({M, D}), w_down);
    auto kv = out.view({M, 2, N});
    auto k = kv.select(1, 0), v = kv.select(1, 1);
    at::mm_out(k, latent, w_up_k);
    at::mm_out(v, latent, w_up_v);
}

}  // namespace

at::Tensor forward(at::Tensor hidden, at::Tensor w_down, at::Tensor w_up_k, at::Tensor w_up_v,
                   int64_t kv_heads) {
    const kv::Problem p = kv::check_inputs(hidden, w_down, w_up_k, w_up_v, kv_heads);
    TORCH_CHECK(hidden.scalar_type() == at::kBFloat16 || hidden.scalar_type() == at::kHalf,
                "cutlass_2gemm: bfloat16 and float16 only");
    const int64_t M = p.M, D = p.D, R = p.R, N = p.N;
    c10::cuda::CUDAGuard guard(hidden.device());
    const Device dev = hopper_device(hidden.get_device());
    auto out = kv::make_output(hidden, p);
    if (M == 0 || N == 0) return out;
    if (D == 0 || R == 0) return out.zero_();

    // TMA: every row stride and base 16-byte aligned (sizes checked to fit in int32 above).
    const bool tma_ok = D % 8 == 0 && R % 8 == 0 && N % 8 == 0 && kv::aligned16(hidden.data_ptr()) &&
                        kv::aligned16(w_down.data_ptr()) && kv::aligned16(w_up_k.data_ptr()) &&
                        kv::aligned16(w_up_v.data_ptr()) && kv::aligned16(out.data_ptr());
    if (!tma_ok) {
        forward_torch(hidden, w_down, w_up_k, w_up_v, out, M, D, N);
    } else if (hidden.scalar_type() == at::kBFloat16) {
        forward_cutlass<cutlass::bfloat16_t>(hidden, w_down, w_up_k, w_up_v, out, M, D, R, N, dev);
    } else {
        forward_cutlass<cutlass::half_t>(hidden, w_down, w_up_k, w_up_v, out, M, D, R, N, dev);
    }
    return out;
}
