// summary: The latent never leaves the chip or L2 between the two products. bf16/fp16 on sm_90a: ONE launch. Decode (M <= 64): every CTA of a grid of 8-CTA clusters pulls its share of w_down and most of its w_up into shared memory at entry; GEMM1 split over d inside clusters (distributed shared memory), the latent published by a counter and copied by every CTA, then its w_up columns. Larger M: a persistent TMA + wgmma kernel whose GEMM1 units (split-k over all SMs, w_down read once) publish per-row-tile ready flags and whose GEMM2 units start as soon as their row tile's latent is done. float32 and other shapes: one SIMT kernel over row tiles that keeps each row tile's latent in shared memory (DIRECT small-M path first).
// dtypes: float32,bfloat16,float16

/*
 * Dispatch: bf16 / fp16, M <= 64, rank <= 512, D % 8 == 0, rank % 8 == 0, N % 128 == 0, 16-byte aligned tensors,
 * on a 9.0 device with this build's sm_90a kernels present -> the decode path (kernels/mla_decode.cuh has its tiling,
 * roles and shared-memory plan); else bf16 / fp16 with N % 256 == 0 -> the tensor-core path below; everything else ->
 * the SIMT paths (second block below).
 *
 * Tensor-core path (kernels/mla_tc.cuh has the tile, the thread roles and the epilogues): one launch, grid =
 *   min(#SMs, units), one CTA per SM (all resident: the waits below need it). Units in order: GEMM1 units
 *   (row tile, 256 latent columns, k-split; tiles x splits <= #SMs), then GEMM2 units (row tile, 256 output
 *   columns) in M-major order (row tile fastest: each w_up tile is read from DRAM once). A GEMM1 tile's S
 *   splits write fp32 partials, wait for each other, reduce one slice each into the latent (M x rank, the dtype,
 *   through L2), and the last bumps the row tile's ready flag; a GEMM2 unit's producer waits for its row
 *   tile's flag, then TMA-loads the latent.
 *   Flags and split counters reset themselves (the row tile's last reader / the tile's last split), so a CUDA-graph
 *   replay starts from zero; no host-side state is read per call.
 *   M <= 128 (what the decode path declines, or MLA_FUSED_DECODE=0): tiles 64 x 256; GEMM1 splits up to 64
 *   (DeepSeek-V3, M = 64: 2 tiles x 56 splits of 128 k, 112 CTAs read w_down once between them), and before waiting for the latent each CTA prefetches (TMA to L2)
 *   every w_up box of its GEMM2 tiles, so w_up streams from DRAM during GEMM1 and is read from DRAM once.
 *   Larger M: tiles 128 x 256, no prefetch (w_up is reused from L2 across row tiles).
 *
 * SIMT paths (float32, and shapes the tensor-core path declines).
 * Tiling (grid = ceil(M / BM) blocks over row tiles only; every block loops over all output columns):
 *
 *   The block works through one flat sequence of "chunks"; a chunk is one K-slice of width BK of one
 *   BM x BN output tile:
 *     phase 1: tiles of latent[BM, rank] (ceil(rank/BN) tiles), K = d     : A = hidden rows (smem chunk),
 *                                                                          B = w_down[k0:k0+BK, n0:n0+BN]
 *     phase 2: tiles of out[BM, 2N]      (ceil(2N/BN) tiles),   K = rank  : A = latent (smem, fp32),
 *                                                                          B = [w_up_k | w_up_v][k0:, n0:]
 *   Chunks are loaded by cp.async (16-byte, zero-filled outside the tensors; plain loads when a row is not
 *   16-byte aligned) into a STAGES-deep ring, so w_up chunks are already in flight while phase 1 finishes.
 *   One __syncthreads per chunk. The latent tile lives in shared memory as fp32, row pitch
 *   LP = round_up(rank, BN) + 4; its columns in [rank, LP-4) are exactly 0 (w_down columns are zero-filled).
 *
 *   Threads: NT = KS * (BM/TM) * (BN/TN). Thread tid is in k-group g = tid / GT (GT = NT/KS), which owns
 *   the k-slice [g*BK/KS, (g+1)*BK/KS) of every chunk; inside the group, thread (ty, tx) owns rows
 *   ty*TM .. ty*TM+TM-1 and columns tx*4 + h*(BN/(TN/4)) + {0..3}, h < TN/4 (column groups split so a
 *   warp's float4 shared-memory reads of B are contiguous: conflict-free). A fragments are read 4 k at a
 *   time (float4 / 8-byte loads) and are broadcasts inside a warp. With KS > 1 the groups' partial tiles
 *   are summed through shared memory (red) at the end of each tile.
 *
 *   Configurations (chosen at run time from M, rank and the opt-in shared-memory limit):
 *     LARGE: BM=32, BN=512, BK=16, TM=8, TN=8, KS=1,  NT=256, STAGES=4   (M >= ~SMs/2 * 32; rank <= 512)
 *     SMALL: BM=4,  BN=64,  BK=64, TM=4, TN=4, KS=16, NT=256, STAGES=8   (small M: many small blocks, the
 *            whole problem of a seed-sized block is in flight at once)
 *     DIRECT (tried first; separate kernel fused_direct_kernel, see below): ceil(M/BM) <= #SMs with BM=4, else
 *            BM=8; D, rank, N multiples of 4; all pointers 16-byte aligned; rank/4 <= 256; its shared memory
 *            (hidden rows + w_down + w_up + fp32 partials and latent) <= the opt-in limit. Else SMALL / LARGE.
 *   bf16 / fp16: operands stay in their dtype in shared memory and are widened to fp32 when read into
 *   registers; accumulation and the latent are fp32; conversion (round to nearest) at the store.
 *
 * DIRECT (small-M, latency-optimal; grid = ceil(M/BM) blocks of NT = FUSED_DIRECT_NT threads (BM 8: at most 512),
 *   <= 1 block per SM, one wave). Every index that takes a division (the k-group count, the reduction and phase-2
 *   splits, the smem offsets, each block's copy rotation) is computed on the host (DirectArgs), so the prologue
 *   every thread runs before its first copy is parameter loads and multiplies.
 *   Entry: every global load of the block is issued at once as 16-byte cp.async of flat contiguous ranges
 *   (hidden rows m0..m0+BM-1, all of w_down, all of w_up_k and w_up_v; each block starts its weight copies at
 *   a different offset), in two commit groups: {hidden, w_down} then {w_up}. Phase 1 starts when the first
 *   group has landed; w_up keeps arriving during phase 1. No ring.
 *   Phase 1 (latent[BM, R] = hidden rows @ w_down, K = D): thread tid < KG1*R/4 owns latent columns
 *     4cq..4cq+3 (cq = tid % (R/4)) for all BM rows over the k-quads kq = kg, kg+KG1, ... (kg = tid / (R/4));
 *     per k-quad: BM hidden float4 reads (near-broadcast) + 4 w_down float4 reads, 16*BM FMA. KG1 = the fewest
 *     k-groups giving the shortest loop, at most NT/8 (seed: 16 groups x 4 k-quads at 256 threads, 64 x 1 at
 *     1024). Partials -> smem (fp32, KG1 x BM x R), barrier; P = 2^red_shift neighbouring lanes (as many as the
 *     threads allow, <= 32) each sum every P-th partial of one latent element and combine by shuffles, in a fixed
 *     order (deterministic).
 *   Phase 2 (out[BM, 2N] = latent @ [w_up_k | w_up_v], K = R): items (column octet o of 32 output columns,
 *     k-slice ks < KS2), KS2 = the warps per octet the block has to spare (<= R/16); warp w takes items w,
 *     w + NT/32, ... Lane = kg*8 + cl owns column quad o*8+cl over k-quads kq = 4ks+kg, 4ks+kg+4*KS2, ... for
 *     all BM rows (a quarter-warp reads 128 contiguous bytes of a w_up row: conflict-free; latent float4 reads are
 *     4 distinct addresses). The 4 k-lanes are summed by two __shfl_xor rounds (16, 8) that also split the rows,
 *     so lane kg ends holding rows kg*BM/4.. of its quad. KS2 == 1: float4 / 8-byte stores from there, 128
 *     contiguous bytes per row per quarter-warp. KS2 > 1: the slices' partials go to smem (reusing the phase-1
 *     partials' space), and after a barrier thread t sums float4 t, t + NT, ... of the tile and stores it.
 */

#include "kv_common.cuh"
#include "mla_decode.cuh"
#include "mla_tc.cuh"

// 1: decode shapes (M <= 64) take mla_decode.cuh's one-launch path; 0: the mla_tc engine's fused launch (a probe axis).
#ifndef MLA_FUSED_DECODE
#define MLA_FUSED_DECODE 1
#endif

namespace {

using namespace kv;

template <typename T, int BM, int BN, int BK, int TM, int TN, int KS, int NT, int STAGES>
struct FusedCfg {
    static constexpr int V = 16 / int(sizeof(T));      // elements per 16-byte vector
    static constexpr int APITCH = BK + V;               // row pitch (elements) of the hidden chunk
    static constexpr int A_ELEMS = BM * APITCH;
    static constexpr int B_ELEMS = BK * BN;
    static constexpr int STAGE_ELEMS = A_ELEMS + B_ELEMS;
    static constexpr int TXN = BN / TN, TYN = BM / TM, GT = TXN * TYN, KSL = BK / KS;
    static constexpr int NH = TN / 4, HSTRIDE = BN / NH;
    static_assert(GT * KS == NT, "thread count must equal KS * (BM/TM) * (BN/TN)");
    static_assert(BM % TM == 0 && BN % TN == 0 && TN % 4 == 0, "tile shape");
    static_assert(BK % KS == 0 && KSL % 4 == 0, "each k-group must own a multiple of 4 k per chunk");
    static_assert(BN % BK == 0, "BN must be a multiple of BK (latent pitch covers the last K chunk)");
    static_assert(BK % V == 0 && BN % V == 0, "chunks must be whole 16-byte vectors");
    static_assert((APITCH * int(sizeof(T))) % 16 == 0 && (A_ELEMS * int(sizeof(T))) % 16 == 0 &&
                  (B_ELEMS * int(sizeof(T))) % 16 == 0, "16-byte aligned shared-memory regions");
    static_assert(STAGES >= 2, "at least double buffering");

    static size_t smem_bytes(int R) {
        const size_t LP = size_t(cdiv(R, BN)) * BN + 4;
        return size_t(STAGES) * STAGE_ELEMS * sizeof(T) + size_t(BM) * LP * sizeof(float) +
               (KS > 1 ? size_t(KS) * BM * BN * sizeof(float) : 0);
    }
};

// Load 4 (TM rows) x 4 (k) A values and accumulate 4 k-steps of the register tile.
template <typename T, typename TA, int BN, int TM, int TN, int KSL, int NH, int HSTRIDE>
__device__ __forceinline__ void mma_slice(const TA* __restrict__ A, int lda, const T* __restrict__ B,
                                          float (&acc)[TM][TN]) {
    // A: row 0 of this thread's rows, column = first k of this group's slice
    // B: row = first k of this group's slice, column = tx*4
#pragma unroll
    for (int kk = 0; kk < KSL; kk += 4) {
        float a[TM][4];
#pragma unroll
        for (int i = 0; i < TM; ++i) {
            const float4 t = ld4(A + i * lda + kk);
            a[i][0] = t.x; a[i][1] = t.y; a[i][2] = t.z; a[i][3] = t.w;
        }
#pragma unroll
        for (int q = 0; q < 4; ++q) {
            float b[TN];
#pragma unroll
            for (int h = 0; h < NH; ++h) {
                const float4 t = ld4(B + (kk + q) * BN + h * HSTRIDE);
                b[4 * h + 0] = t.x; b[4 * h + 1] = t.y; b[4 * h + 2] = t.z; b[4 * h + 3] = t.w;
            }
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(a[i][q], b[j], acc[i][j]);
        }
    }
}

// Store 4 consecutive output columns c..c+3 (c a multiple of 4) of one output row.
template <typename T>
__device__ __forceinline__ void store_out4(T* __restrict__ out, int64_t row, int64_t M, int c, int N2, bool vec_out,
                                           float4 v) {
    if (row >= M || c >= N2) return;
    T* o = out + row * int64_t(N2) + c;
    if (vec_out) {  // N2 % 4 == 0, so c + 3 < N2
        st4(o, v);
    } else {
        o[0] = from_f<T>(v.x);
        if (c + 1 < N2) o[1] = from_f<T>(v.y);
        if (c + 2 < N2) o[2] = from_f<T>(v.z);
        if (c + 3 < N2) o[3] = from_f<T>(v.w);
    }
}

template <typename T, int BM, int BN, int BK, int TM, int TN, int KS, int NT, int STAGES>
__global__ void __launch_bounds__(NT, 1)
fused_mla_kernel(const T* __restrict__ hidden, const T* __restrict__ w_down, const T* __restrict__ w_up_k,
                 const T* __restrict__ w_up_v, T* __restrict__ out, int M, int D, int R, int N, int LP,
                 int vec_h, int vec_down, int vec_up, int vec_out) {
    using C = FusedCfg<T, BM, BN, BK, TM, TN, KS, NT, STAGES>;
    constexpr int V = C::V, APITCH = C::APITCH, A_ELEMS = C::A_ELEMS, STAGE_ELEMS = C::STAGE_ELEMS;
    constexpr int TXN = C::TXN, GT = C::GT, KSL = C::KSL, NH = C::NH, HSTRIDE = C::HSTRIDE;

    extern __shared__ __align__(16) unsigned char smem_raw[];
    T* const ring = reinterpret_cast<T*>(smem_raw);
    float* const lat = reinterpret_cast<float*>(smem_raw + size_t(STAGES) * STAGE_ELEMS * sizeof(T));
    float* const red = lat + size_t(BM) * LP;  // only used when KS > 1

    const int tid = threadIdx.x;
    const int g = tid / GT;
    const int lt = tid - g * GT;
    const int ty = lt / TXN;
    const int tx = lt - ty * TXN;
    const int kbeg = g * KSL;
    const int64_t m0 = int64_t(blockIdx.x) * BM;
    const int64_t M64 = M;
    const int N2 = 2 * N;

    const int nK1 = cdiv(D, BK), nT1 = cdiv(R, BN);
    const int nK2 = cdiv(R, BK), nT2 = cdiv(N2, BN);
    const int c1 = nT1 * nK1;
    const int total = c1 + nT2 * nK2;

    // ---------------------------------------------------------------- producer: chunk c -> ring stage
    auto load_chunk = [&](int c, int stage) {
        T* const As = ring + size_t(stage) * STAGE_ELEMS;
        T* const Bs = As + A_ELEMS;
        if (c < c1) {
            const int jt = c / nK1, kc = c - jt * nK1;
            const int k0 = kc * BK, n0 = jt * BN;
            // A: hidden[m0 : m0+BM, k0 : k0+BK] -> As[r][k]
            if (vec_h) {
                constexpr int VPR = BK / V;
#pragma unroll
                for (int v = tid; v < BM * VPR; v += NT) {
                    const int r = v / VPR, kv = (v - r * VPR) * V;
                    const int64_t row = m0 + r;
                    const int col = k0 + kv;
                    const bool p = row < M64 && col < D;
                    const T* src = p ? hidden + row * int64_t(D) + col : hidden;
                    cp_async16(As + r * APITCH + kv, src, p);
                }
            } else {
                for (int e = tid; e < BM * BK; e += NT) {
                    const int r = e / BK, kk = e - r * BK;
                    const int64_t row = m0 + r;
                    const int col = k0 + kk;
                    As[r * APITCH + kk] = (row < M64 && col < D) ? hidden[row * int64_t(D) + col] : from_f<T>(0.f);
                }
            }
            // B: w_down[k0 : k0+BK, n0 : n0+BN] -> Bs[k][n]
            if (vec_down) {
                constexpr int VPR = BN / V;
#pragma unroll
                for (int v = tid; v < BK * VPR; v += NT) {
                    const int r = v / VPR, nv = (v - r * VPR) * V;
                    const int kr = k0 + r, col = n0 + nv;
                    const bool p = kr < D && col < R;
                    const T* src = p ? w_down + int64_t(kr) * R + col : w_down;
                    cp_async16(Bs + r * BN + nv, src, p);
                }
            } else {
                for (int e = tid; e < BK * BN; e += NT) {
                    const int r = e / BN, nn = e - r * BN;
                    const int kr = k0 + r, col = n0 + nn;
                    Bs[r * BN + nn] = (kr < D && col < R) ? w_down[int64_t(kr) * R + col] : from_f<T>(0.f);
                }
            }
        } else {
            const int cc = c - c1;
            const int jt = cc / nK2, kc = cc - jt * nK2;
            const int k0 = kc * BK, n0 = jt * BN;
            // B: [w_up_k | w_up_v][k0 : k0+BK, n0 : n0+BN] -> Bs[k][n]  (column c < N: k, else v)
            stage_w_up_tile<T, BK, BN, NT>(Bs, w_up_k, w_up_v, k0, n0, R, N, vec_up, tid);
        }
    };

    float acc[TM][TN];
    zero_tile(acc);
    ring_prologue<STAGES>(total, load_chunk);
    for (int c = 0; c < total; ++c) {
        ring_next<STAGES>(c, total, load_chunk);  // its barrier also makes the latent tile's last writes visible

        const int stage = c % STAGES;
        const T* const As = ring + size_t(stage) * STAGE_ELEMS;
        const T* const Bs = As + A_ELEMS;
        const bool ph1 = c < c1;
        int jt, kc, nK;
        if (ph1) { jt = c / nK1; kc = c - jt * nK1; nK = nK1; }
        else { const int cc = c - c1; jt = cc / nK2; kc = cc - jt * nK2; nK = nK2; }

        const T* const Bp = Bs + kbeg * BN + tx * 4;
        if (ph1)
            mma_slice<T, T, BN, TM, TN, KSL, NH, HSTRIDE>(As + (ty * TM) * APITCH + kbeg, APITCH, Bp, acc);
        else
            mma_slice<T, float, BN, TM, TN, KSL, NH, HSTRIDE>(lat + (ty * TM) * LP + kc * BK + kbeg, LP, Bp, acc);

        if (kc == nK - 1) {  // block-uniform: tile finished
            const int n0 = jt * BN;
            if constexpr (KS == 1) {
#pragma unroll
                for (int i = 0; i < TM; ++i) {
                    const int r = ty * TM + i;
#pragma unroll
                    for (int h = 0; h < NH; ++h) {
                        const float4 v = make_float4(acc[i][4 * h], acc[i][4 * h + 1], acc[i][4 * h + 2], acc[i][4 * h + 3]);
                        const int col = n0 + tx * 4 + h * HSTRIDE;
                        if (ph1) *reinterpret_cast<float4*>(lat + r * LP + col) = v;  // col + 3 < LP - 4
                        else store_out4(out, m0 + r, M64, col, N2, vec_out != 0, v);
                    }
                }
            } else {
                // partial tiles of the KS k-groups -> red[g][r][n], then sum
#pragma unroll
                for (int i = 0; i < TM; ++i) {
                    const int r = ty * TM + i;
#pragma unroll
                    for (int h = 0; h < NH; ++h)
                        *reinterpret_cast<float4*>(red + (size_t(g) * BM + r) * BN + tx * 4 + h * HSTRIDE) =
                            make_float4(acc[i][4 * h], acc[i][4 * h + 1], acc[i][4 * h + 2], acc[i][4 * h + 3]);
                }
                __syncthreads();
                constexpr int Q = BN / 4;
                for (int e = tid; e < BM * Q; e += NT) {
                    const int r = e / Q, cl = (e - r * Q) * 4;
                    float4 s = *reinterpret_cast<const float4*>(red + size_t(r) * BN + cl);
#pragma unroll
                    for (int gg = 1; gg < KS; ++gg) {
                        const float4 t = *reinterpret_cast<const float4*>(red + (size_t(gg) * BM + r) * BN + cl);
                        s.x += t.x; s.y += t.y; s.z += t.z; s.w += t.w;
                    }
                    if (ph1) *reinterpret_cast<float4*>(lat + r * LP + n0 + cl) = s;
                    else store_out4(out, m0 + r, M64, n0 + cl, N2, vec_out != 0, s);
                }
                // red is next written only after the next iteration's __syncthreads.
            }
            zero_tile(acc);
        }
    }
    cp_async_wait<0>();  // only empty groups can be pending here; keep the block alive until they retire
}

template <typename T, int BM, int BN, int BK, int TM, int TN, int KS, int NT, int STAGES>
struct FusedLauncher {
    using C = FusedCfg<T, BM, BN, BK, TM, TN, KS, NT, STAGES>;
    static size_t smem(int R) { return C::smem_bytes(R); }

    static void launch(const T* h, const T* wd, const T* wk, const T* wv, T* out, int M, int D, int R, int N,
                       bool vec_h, bool vec_down, bool vec_up, bool vec_out, int dev, int optin,
                       cudaStream_t stream) {
        auto kern = fused_mla_kernel<T, BM, BN, BK, TM, TN, KS, NT, STAGES>;
        kv::set_max_dynamic_smem_once<fused_mla_kernel<T, BM, BN, BK, TM, TN, KS, NT, STAGES>>(dev, optin);
        const int LP = cdiv(R, BN) * BN + 4;
        const size_t bytes = smem(R);
        const unsigned grid = unsigned(cdiv(M, BM));
        kern<<<grid, NT, bytes, stream>>>(h, wd, wk, wv, out, M, D, R, N, LP, vec_h, vec_down, vec_up, vec_out);
        C10_CUDA_KERNEL_LAUNCH_CHECK();
    }
};

// ================================================================ DIRECT: the small-M path
// Threads per DIRECT block (256, 512 or 1024; BM 8 blocks take at most 512, so that their 8-row accumulators fit the
// register budget of __launch_bounds__). A -D define picks it: scripts/probe_axis.sh measures one build per value.
#ifndef FUSED_DIRECT_NT
#define FUSED_DIRECT_NT 256
#endif
static_assert(FUSED_DIRECT_NT == 256 || FUSED_DIRECT_NT == 512 || FUSED_DIRECT_NT == 1024,
              "FUSED_DIRECT_NT: 256, 512 or 1024");

// Shared-memory layout (byte offsets, every region 16-byte aligned):
//   [0, wd)      hidden rows of the block      BM x D        (dtype; rows >= M zero-filled)
//   [wd, wu)     w_down                        D x R         (dtype, flat copy)
//   [wu, red)    w_up_k then w_up_v            2 x (R x N)   (dtype, flat copies)
//   [red, lat)   phase-1 partial sums          KG1 x BM x R  (fp32); phase 2's KS2 x BM x 2N partials reuse it
//   [lat, total) latent                        BM x R        (fp32)
__host__ __device__ __forceinline__ size_t al16(size_t x) { return (x + 15) & ~size_t(15); }

// Everything the block's index math needs that takes a division, computed once on the host: the kernel's prologue
// (which every thread runs before its first copy can start) is then loads of kernel parameters and multiplies.
struct DirectArgs {
    int M, D, R, N;
    int kg1;           // phase-1 k-groups: the fewest that reach the shortest k-quad loop
    int red_shift;     // log2 of the threads that sum one latent element's KG1 partials (shuffle-combined)
    int ks2;           // phase-2 k-slices: warps that share one column octet (partials summed through smem)
    int rot_d, rot_u;  // per-block step of the weight copies' start vector (block b starts at b * step)
    unsigned wd, wu, red, lat;
};

inline DirectArgs direct_args(int NT, int BM, int esize, int M, int D, int R, int N, size_t& total) {
    DirectArgs a{};
    a.M = M; a.D = D; a.R = R; a.N = N;
    const int RQ = R / 4, Q2 = (2 * N) / 4, NW = NT / 32;
    int kmax = NT / RQ;                      // >= 1: R/4 <= NT is checked by the caller
    kmax = std::min(kmax, NT / 8);           // partials grow with KG1: at most NT/8 groups (32 at 256 threads)
    const int iters = cdiv(D / 4, kmax);     // D >= 4
    a.kg1 = cdiv(D / 4, iters);              // <= kmax, <= D/4; seed at 256: 21 -> 4 iterations -> 16 groups
    const int BR = BM * R;
    a.red_shift = 0;
    while ((2 << a.red_shift) <= 32 && (2 << a.red_shift) * BR <= NT && (2 << a.red_shift) <= a.kg1) ++a.red_shift;
    const int n_oct = cdiv(Q2, 8);
    a.ks2 = std::max(1, std::min(NW / n_oct, cdiv(RQ, 4)));  // seed: 1 (256), 2 (512), 3 (1024)
    const size_t red_floats = std::max(size_t(a.kg1) * BR, a.ks2 > 1 ? size_t(a.ks2) * BM * 2 * N : size_t(0));
    a.wd = unsigned(al16(size_t(BM) * D * esize));
    a.wu = unsigned(a.wd + al16(size_t(D) * R * esize));
    a.red = unsigned(a.wu + al16(size_t(2) * R * N * esize));
    a.lat = unsigned(a.red + al16(red_floats * sizeof(float)));
    total = size_t(a.lat) + size_t(BM) * R * sizeof(float);
    const int grid = cdiv(M, BM), V = 16 / esize;  // grid <= #SMs (caller)
    a.rot_d = grid > 0 ? (D * R / V) / grid : 0;
    a.rot_u = grid > 0 ? (R * N / V) / grid : 0;
    return a;
}

// Copy the whole 16-byte vectors of g[0..n) -> s[0..n) (both 16-byte aligned) by cp.async, starting at vector
// `rot` (< the vector count) and wrapping (blocks start at different addresses, so they do not all hit the same
// L2 lines at once).
template <typename T, int NT>
__device__ __forceinline__ void copy_flat_vec(T* __restrict__ s, const T* __restrict__ g, int n, int rot, int tid) {
    constexpr int V = 16 / int(sizeof(T));
    const int nv = n / V;
#pragma unroll 2
    for (int i = tid; i < nv; i += NT) {
        int v = i + rot;
        v = v >= nv ? v - nv : v;
        cp_async16(s + v * V, g + v * V, true);
    }
}
// ... and the last n % V elements by plain loads (issued after all cp.async, so no copy waits behind them).
template <typename T>
__device__ __forceinline__ void copy_flat_tail(T* __restrict__ s, const T* __restrict__ g, int n, int tid) {
    constexpr int V = 16 / int(sizeof(T));
    const int n0 = (n / V) * V;
    if (tid < n - n0) s[n0 + tid] = g[n0 + tid];
}

// Requirements (host): D % 4 == 0, R % 4 == 0, N % 4 == 0, R / 4 <= NT, all five pointers 16-byte aligned,
// ceil(M / BM) <= #SMs, and `a` from direct_args with the same NT and BM.
template <typename T, int BM, int NT>
__global__ void __launch_bounds__(NT, 1)
fused_direct_kernel(const T* __restrict__ hidden, const T* __restrict__ w_down, const T* __restrict__ w_up_k,
                    const T* __restrict__ w_up_v, T* __restrict__ out, const DirectArgs a) {
    static_assert(BM % 4 == 0 && BM >= 4, "phase 2 splits the BM rows over the 4 k-lanes of a column quad");
    static_assert(NT % 32 == 0, "whole warps");
    extern __shared__ __align__(16) unsigned char smem_raw[];
    T* const hid_s = reinterpret_cast<T*>(smem_raw);
    T* const wd_s = reinterpret_cast<T*>(smem_raw + a.wd);
    T* const wu_s = reinterpret_cast<T*>(smem_raw + a.wu);
    float* const red = reinterpret_cast<float*>(smem_raw + a.red);
    float* const lat = reinterpret_cast<float*>(smem_raw + a.lat);

    const int M = a.M, D = a.D, R = a.R, N = a.N;
    const int tid = threadIdx.x;
    const int m0 = int(blockIdx.x) * BM;  // < M <= INT_MAX
    const int rows = min(BM, M - m0);
    const int N2 = 2 * N, RN = R * N;
    const int KG1 = a.kg1, Q1 = R >> 2, DQ = D >> 2, RQ = R >> 2, Q2 = N2 >> 2;

    // ------------------------------------------------ all global loads at entry: 2 commit groups
    {
        const int b = int(blockIdx.x);
        const T* const hsrc = hidden + int64_t(m0) * D;
        copy_flat_vec<T, NT>(hid_s, hsrc, rows * D, 0, tid);  // group 0: hidden rows, w_down
        copy_flat_vec<T, NT>(wd_s, w_down, D * R, b * a.rot_d, tid);
        cp_async_commit();
        copy_flat_vec<T, NT>(wu_s, w_up_k, RN, b * a.rot_u, tid);  // group 1: w_up_k, w_up_v
        copy_flat_vec<T, NT>(wu_s + RN, w_up_v, RN, b * a.rot_u, tid);
        cp_async_commit();
        // Tails (only 2-byte types: n % 8 == 4) and zero rows past M; plain stores, visible after the barrier.
        copy_flat_tail<T>(hid_s, hsrc, rows * D, tid);
        copy_flat_tail<T>(wd_s, w_down, D * R, tid);
        copy_flat_tail<T>(wu_s, w_up_k, RN, tid);
        copy_flat_tail<T>(wu_s + RN, w_up_v, RN, tid);
        for (int e = rows * D + tid; e < BM * D; e += NT) hid_s[e] = from_f<T>(0.f);
    }
    cp_async_wait<1>();  // this thread's hidden / w_down copies have landed
    __syncthreads();     // ... and everyone's

    // ------------------------------------------------ phase 1: partial latent sums
    // Thread tid < KG1*Q1 owns latent columns 4cq..4cq+3 for all BM rows over the k-quads kq = kg, kg+KG1, ...
    {
        const int kg = tid / Q1, cq = tid - kg * Q1;
        if (kg < KG1) {
            float acc[BM][4];
#pragma unroll
            for (int r = 0; r < BM; ++r)
#pragma unroll
                for (int j = 0; j < 4; ++j) acc[r][j] = 0.f;
            const T* const wcol = wd_s + 4 * cq;
#pragma unroll 1
            for (int kq = kg; kq < DQ; kq += KG1) {
                float h[BM][4];
#pragma unroll
                for (int r = 0; r < BM; ++r) {
                    const float4 t = ld4(hid_s + r * D + 4 * kq);
                    h[r][0] = t.x; h[r][1] = t.y; h[r][2] = t.z; h[r][3] = t.w;
                }
#pragma unroll
                for (int q = 0; q < 4; ++q) {
                    const float4 w = ld4(wcol + (4 * kq + q) * R);
#pragma unroll
                    for (int r = 0; r < BM; ++r) {
                        acc[r][0] = fmaf(h[r][q], w.x, acc[r][0]);
                        acc[r][1] = fmaf(h[r][q], w.y, acc[r][1]);
                        acc[r][2] = fmaf(h[r][q], w.z, acc[r][2]);
                        acc[r][3] = fmaf(h[r][q], w.w, acc[r][3]);
                    }
                }
            }
#pragma unroll
            for (int r = 0; r < BM; ++r)
                *reinterpret_cast<float4*>(red + (kg * BM + r) * R + 4 * cq) =
                    make_float4(acc[r][0], acc[r][1], acc[r][2], acc[r][3]);
        }
    }
    __syncthreads();  // all partials written
    // The KG1 partials of latent element e: P = 2^red_shift neighbouring lanes sum every P-th partial, then two
    // lanes at a time combine by shuffles (a fixed order: the latent is deterministic for a given NT).
    {
        const int BR = BM * R, P = 1 << a.red_shift, sub = tid & (P - 1);
#pragma unroll 1
        for (int base = 0; base < BR; base += NT >> a.red_shift) {  // block-uniform: every lane reaches the shuffles
            const int e = base + (tid >> a.red_shift);
            float s = 0.f;
            if (e < BR) {
#pragma unroll 4
                for (int g = sub; g < KG1; g += P) s += red[g * BR + e];
            }
            for (int o = P >> 1; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
            if (sub == 0 && e < BR) lat[e] = s;  // lat[r * R + j]
        }
    }
    cp_async_wait<0>();  // this thread's w_up copies have landed
    __syncthreads();     // ... and everyone's; latent complete (red is free again)

    // ------------------------------------------------ phase 2: out[BM, 2N] = latent @ [w_up_k | w_up_v]
    // Work items (column octet o, k-slice ks), o fastest; warp w takes items w, w + NT/32, ... An octet is 8 column
    // quads = 32 output columns. Lane: cl = lane & 7 (column quad o*8+cl), kg = lane >> 3 (k-quads kq = 4ks+kg,
    // 4ks+kg+4*KS2, ...). The 4 k-lanes of a quad are summed by two shuffle rounds that also split the rows, so lane
    // kg ends with rows kg*BM/4 .. kg*BM/4 + BM/4 - 1. KS2 == 1: stored from there; else the KS2 slices' partials
    // go to smem and, after a barrier, thread t sums float4 t, t + NT, ... of the BM x 2N tile and stores it.
    {
        const int lane = tid & 31, warp = tid >> 5;
        const int cl = lane & 7, kg = lane >> 3;
        const bool b4 = (lane & 16) != 0, b3 = (lane & 8) != 0;
        constexpr int H = BM / 2, H2 = BM / 4;
        const int rb = (b4 ? H : 0) + (b3 ? H2 : 0);
        const int n_oct = (Q2 + 7) >> 3, KS2 = a.ks2;
        const int items = n_oct * KS2;
#pragma unroll 1
        for (int it = warp; it < items; it += NT / 32) {  // warp-uniform: every lane reaches the shuffles
            const int ks = it / n_oct, o = it - ks * n_oct;
            const int cq = o * 8 + cl;
            const bool valid = cq < Q2;
            const int c = valid ? 4 * cq : 0;  // invalid lanes compute column 0 and store nothing
            const T* const wcol = (c < N) ? wu_s + c : wu_s + RN + (c - N);
            float acc[BM][4];
#pragma unroll
            for (int r = 0; r < BM; ++r)
#pragma unroll
                for (int j = 0; j < 4; ++j) acc[r][j] = 0.f;
#pragma unroll 1
            for (int kq = 4 * ks + kg; kq < RQ; kq += 4 * KS2) {
                float l[BM][4];
#pragma unroll
                for (int r = 0; r < BM; ++r) {
                    const float4 t = *reinterpret_cast<const float4*>(lat + r * R + 4 * kq);
                    l[r][0] = t.x; l[r][1] = t.y; l[r][2] = t.z; l[r][3] = t.w;
                }
#pragma unroll
                for (int q = 0; q < 4; ++q) {
                    const float4 w = ld4(wcol + (4 * kq + q) * N);
#pragma unroll
                    for (int r = 0; r < BM; ++r) {
                        acc[r][0] = fmaf(l[r][q], w.x, acc[r][0]);
                        acc[r][1] = fmaf(l[r][q], w.y, acc[r][1]);
                        acc[r][2] = fmaf(l[r][q], w.z, acc[r][2]);
                        acc[r][3] = fmaf(l[r][q], w.w, acc[r][3]);
                    }
                }
            }
            // round 1 (lanes ^16): keep rows [0,H) if !b4 else [H,BM), summed with the partner's same rows
#pragma unroll
            for (int r = 0; r < H; ++r)
#pragma unroll
                for (int j = 0; j < 4; ++j) {
                    const float mine = b4 ? acc[H + r][j] : acc[r][j];
                    const float other = b4 ? acc[r][j] : acc[H + r][j];
                    acc[r][j] = mine + __shfl_xor_sync(0xffffffffu, other, 16);
                }
            // round 2 (lanes ^8): of those H rows keep [0,H2) if !b3 else [H2,H)
#pragma unroll
            for (int r = 0; r < H2; ++r)
#pragma unroll
                for (int j = 0; j < 4; ++j) {
                    const float mine = b3 ? acc[H2 + r][j] : acc[r][j];
                    const float other = b3 ? acc[r][j] : acc[H2 + r][j];
                    acc[r][j] = mine + __shfl_xor_sync(0xffffffffu, other, 8);
                }
            if (valid) {
                if (KS2 == 1) {
#pragma unroll
                    for (int r = 0; r < H2; ++r)
                        if (rb + r < rows)
                            st4(out + int64_t(m0 + rb + r) * N2 + c,
                                make_float4(acc[r][0], acc[r][1], acc[r][2], acc[r][3]));
                } else {
#pragma unroll
                    for (int r = 0; r < H2; ++r)  // every row, those past M too (zeros, never stored)
                        *reinterpret_cast<float4*>(red + (ks * BM + rb + r) * N2 + c) =
                            make_float4(acc[r][0], acc[r][1], acc[r][2], acc[r][3]);
                }
            }
        }
        if (KS2 > 1) {  // block-uniform
            __syncthreads();
            const float4* const part = reinterpret_cast<const float4*>(red);
            const int plane = BM * Q2;  // float4s of one slice's BM x 2N partial; float4 e is row e / Q2
            T* const orow = out + int64_t(m0) * N2;
#pragma unroll 1
            for (int e = tid; e < rows * Q2; e += NT) {
                float4 s = part[e];
                for (int k = 1; k < KS2; ++k) {
                    const float4 t = part[k * plane + e];
                    s.x += t.x; s.y += t.y; s.z += t.z; s.w += t.w;
                }
                st4(orow + 4 * e, s);
            }
        }
    }
}

template <typename T, int BM, int NT>
struct DirectLauncher {
    static size_t smem(int M, int D, int R, int N) {
        size_t total = 0;
        (void)direct_args(NT, BM, int(sizeof(T)), M, D, R, N, total);
        return total;
    }

    static void launch(const T* h, const T* wd, const T* wk, const T* wv, T* out, int M, int D, int R, int N,
                       int dev, int optin, cudaStream_t stream) {
        auto kern = fused_direct_kernel<T, BM, NT>;
        kv::set_max_dynamic_smem_once<fused_direct_kernel<T, BM, NT>>(dev, optin);
        size_t bytes = 0;
        const DirectArgs a = direct_args(NT, BM, int(sizeof(T)), M, D, R, N, bytes);
        const unsigned grid = unsigned(cdiv(M, BM));
        kern<<<grid, NT, bytes, stream>>>(h, wd, wk, wv, out, a);
        C10_CUDA_KERNEL_LAUNCH_CHECK();
    }
};

template <typename T>
void run_fused(const at::Tensor& hidden, const at::Tensor& w_down, const at::Tensor& w_up_k,
               const at::Tensor& w_up_v, at::Tensor& out, int M, int D, int R, int N) {
    using Large = FusedLauncher<T, 32, 512, 16, 8, 8, 1, 256, 4>;
    using Small = FusedLauncher<T, 4, 64, 64, 4, 4, 16, 256, 8>;

    using Direct4 = DirectLauncher<T, 4, FUSED_DIRECT_NT>;
    using Direct8 = DirectLauncher<T, 8, (FUSED_DIRECT_NT < 512 ? FUSED_DIRECT_NT : 512)>;

    const int dev = hidden.get_device();
    const DevInfo info = dev_info(dev);
    const int optin = info.optin, sms = info.sms;
    cudaStream_t stream = at::cuda::getCurrentCUDAStream();

    const T* h = reinterpret_cast<const T*>(hidden.data_ptr());
    const T* wd = reinterpret_cast<const T*>(w_down.data_ptr());
    const T* wk = reinterpret_cast<const T*>(w_up_k.data_ptr());
    const T* wv = reinterpret_cast<const T*>(w_up_v.data_ptr());
    T* o = reinterpret_cast<T*>(out.data_ptr());

    constexpr int V = 16 / int(sizeof(T));
    const bool vec_h = (D % V == 0) && aligned16(h);
    const bool vec_down = (R % V == 0) && aligned16(wd);
    const bool vec_up = (N % V == 0) && aligned16(wk) && aligned16(wv);
    const bool vec_out = ((2 * N) % 4 == 0) && ((reinterpret_cast<uintptr_t>(o) & (4 * sizeof(T) - 1)) == 0);

    // DIRECT (small M): one block per BM rows holds its hidden rows, all of w_down and all of w_up in shared
    // memory; at most one block per SM (one wave). Only for 4-aligned sizes and 16-byte aligned pointers.
    const bool direct_shape = D % 4 == 0 && R % 4 == 0 && N % 4 == 0 && R / 4 <= 256 && aligned16(h) && aligned16(wd) &&
                              aligned16(wk) && aligned16(wv) && aligned16(o);
    if (direct_shape) {
        if (cdiv(M, 4) <= sms && Direct4::smem(M, D, R, N) <= size_t(optin)) {
            Direct4::launch(h, wd, wk, wv, o, M, D, R, N, dev, optin, stream);
            return;
        }
        if (cdiv(M, 8) <= sms && Direct8::smem(M, D, R, N) <= size_t(optin)) {
            Direct8::launch(h, wd, wk, wv, o, M, D, R, N, dev, optin, stream);
            return;
        }
    }

    const bool large_fits = Large::smem(R) <= size_t(optin);
    const bool small_fits = Small::smem(R) <= size_t(optin);
    const bool many_rows = cdiv(M, 32) >= (sms + 1) / 2;
    if (large_fits && (many_rows || !small_fits)) {
        Large::launch(h, wd, wk, wv, o, M, D, R, N, vec_h, vec_down, vec_up, vec_out, dev, optin, stream);
    } else {
        TORCH_CHECK(small_fits, "fused_tiled: rank needs more shared memory per block (latent tile + operand ring) "
                    "than this device's opt-in limit cudaDevAttrMaxSharedMemoryPerBlockOptin");
        Small::launch(h, wd, wk, wv, o, M, D, R, N, vec_h, vec_down, vec_up, vec_out, dev, optin, stream);
    }
}

// ================================================================ tensor-core path (sm_90a, bf16 / fp16)
// One launch of the mla_tc engine with both unit lists: GEMM1 units (split k over the SMs, w_down read once),
// then GEMM2 units that start as soon as their row tile's latent is complete (ready flags). Decode (M <= 128):
// BM 64 tiles, and every CTA prefetches its w_up tiles into L2 while GEMM1 runs, so each weight is read from DRAM
// once and the w_up stream overlaps GEMM1. The latent (M x R, the dtype) goes through L2 only.
template <typename T, int BM>
void launch_fused_tc(const at::Tensor& hidden, const at::Tensor& w_down, const at::Tensor& w_up_k,
                     const at::Tensor& w_up_v, at::Tensor& out, int M, int D, int R, int N, int dev, int sms,
                     cudaStream_t stream) {
    using C = mla::Cfg<BM>;
    mla::Params p = mla::make_params(BM, mla::BN, M, D, R, N, mla::pick_splits(BM, mla::BN, M, R, sms, 64));
    const int tiles1 = p.n_mt * p.n_nt1;
    auto latent = at::empty({int64_t(M), int64_t(R)}, hidden.options());
    at::Tensor ws;
    int* cnt = mla::counters(dev, size_t(tiles1 + 2 * p.n_mt), stream);
    if (p.splits > 1) {
        ws = at::empty({int64_t(tiles1) * p.splits * C::PART_F4 * 4}, hidden.options().dtype(at::kFloat));
        p.ws = reinterpret_cast<float4*>(ws.data_ptr());
    }
    p.split_cnt = cnt;
    p.ready = cnt + tiles1;
    p.consumed = cnt + tiles1 + p.n_mt;
    p.latent = latent.data_ptr();
    p.first = 0;
    p.last = p.units1 + p.units2;
    p.fused = 1;
    p.prefetch2 = BM == 64 ? 1 : 0;
    p.group_mt = p.n_mt;  // M-major over all row tiles: each w_up tile read from DRAM once (groups of 8 re-read it)
    const mla::Maps maps = mla::make_maps<T, BM, BM>(hidden.data_ptr(), w_down.data_ptr(), w_up_k.data_ptr(),
                                                     w_up_v.data_ptr(), latent.data_ptr(), out.data_ptr(), M, D, R, N);
    mla::set_smem_attr<T, BM>(dev);
    // One CTA per SM and grid <= #SMs: every CTA is resident at once, which the split-k and ready waits need.
    mla::launch<T, BM>(maps, p, std::min(sms, p.units1 + p.units2), false, stream);
}

// False when the shape, alignment, device or build does not allow the tensor-core path (then: the SIMT paths).
template <typename T>
bool run_fused_tc(const at::Tensor& hidden, const at::Tensor& w_down, const at::Tensor& w_up_k,
                  const at::Tensor& w_up_v, at::Tensor& out, int M, int D, int R, int N) {
    const int dev = hidden.get_device();
    cudaStream_t stream = at::cuda::getCurrentCUDAStream();
    const int bm = M <= 128 ? 64 : 128;
    const size_t need = size_t(kv::cdiv(M, bm)) * (kv::cdiv(R, mla::BN) + 2);  // split counters, ready and consumed flags
    kv::DevInfo info;
    if (!mla::tc_path_ready(hidden, w_down, w_up_k, w_up_v, out, D, R, N, need, 0, dev, stream, info)) return false;
    if (bm == 64)
        launch_fused_tc<T, 64>(hidden, w_down, w_up_k, w_up_v, out, M, D, R, N, dev, info.sms, stream);
    else
        launch_fused_tc<T, 128>(hidden, w_down, w_up_k, w_up_v, out, M, D, R, N, dev, info.sms, stream);
    return true;
}

}  // namespace

at::Tensor forward(at::Tensor hidden, at::Tensor w_down, at::Tensor w_up_k, at::Tensor w_up_v,
                   int64_t kv_heads) {
    const kv::Problem p = kv::check_inputs(hidden, w_down, w_up_k, w_up_v, kv_heads);
    const auto dt = hidden.scalar_type();
    const int M = int(p.M), D = int(p.D), R = int(p.R), N = int(p.N);

    c10::cuda::CUDAGuard guard(hidden.device());
    auto out = kv::make_output(hidden, p);
    if (M == 0 || N == 0) return out;
    if (D == 0 || R == 0) return out.zero_();

    switch (dt) {
        case at::kFloat: run_fused<float>(hidden, w_down, w_up_k, w_up_v, out, M, D, R, N); break;
        case at::kBFloat16:
            if (MLA_FUSED_DECODE && mla_dec::run<__nv_bfloat16>(hidden, w_down, w_up_k, w_up_v, out, M, D, R, N)) break;
            if (!run_fused_tc<__nv_bfloat16>(hidden, w_down, w_up_k, w_up_v, out, M, D, R, N))
                run_fused<__nv_bfloat16>(hidden, w_down, w_up_k, w_up_v, out, M, D, R, N);
            break;
        default:
            if (MLA_FUSED_DECODE && mla_dec::run<__half>(hidden, w_down, w_up_k, w_up_v, out, M, D, R, N)) break;
            if (!run_fused_tc<__half>(hidden, w_down, w_up_k, w_up_v, out, M, D, R, N))
                run_fused<__half>(hidden, w_down, w_up_k, w_up_v, out, M, D, R, N);
            break;
    }
    return out;
}
