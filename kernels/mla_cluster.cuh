// fused_tiled's prefill kernel (bf16 / fp16, sm_90a): C CTAs per 128-row tile compute the row tile's latent in
// slices and exchange them on chip (distributed shared memory inside a thread-block cluster; through L2 between
// the clusters of a row tile when clusters of C CTAs do not fit the GPU at once).
#pragma once

#include "hopper.cuh"

#include <algorithm>

/*
 * Group of C = ceil(rank / 128) <= 4 CTAs per 128-row tile mt, made of C / CL clusters of CL CTAs (grid: ceil(M / 128)
 *   * C CTAs, one per SM; CL = C when that many clusters of C fit the GPU, else the largest divisor of C that does).
 * Phase 1 (GEMM1): CTA c of the group computes latent[mt rows, 128c .. 128c + 127] = hidden rows @ w_down[:, 128c ..],
 *   K = d in 64-deep k-steps. A: one box 64 k x 128 rows (16 KB); with CL = 2 or 4 each CTA loads 128 / CL of its
 *   rows and multicasts them to its cluster, so a cluster reads its hidden rows from L2 once, not CL times.
 *   B: two boxes 64 n x 64 k of w_down (16 KB). Consumer warpgroup g owns rows 64g .. 64g + 63 and all 128
 *   columns (wgmma m64n128k16, 64 fp32 accumulators a thread). STAGES stages of 32 KB: all of shared memory, the
 *   latent's space included (the latent is written only once phase 1 is done).
 * Exchange: each CTA rounds its 128 x 128 slice to the dtype and writes it into its own shared memory in the
 *   K-major, 128-byte-swizzled layout that TMA would have written (slice c = the latent's k-steps 2c and 2c + 1 at
 *   offset 32 KB * c). After a cluster barrier (every CTA is through phase 1, so its latent space is free) one
 *   thread bulk-copies the slice to the same offset in every other CTA of the cluster (counted on the receiver's
 *   latent barrier). With C / CL > 1 clusters per row tile, each CTA also bulk-stores its slice (32 KB, as laid
 *   out in smem) to a scratch buffer and bumps the row tile's ready counter; once it reads C, a CTA bulk-loads the
 *   other clusters' slices (these waits need every CTA resident: the host takes this form only when the whole grid
 *   fits at once). Each CTA then holds the row tile's whole latent (128 x 128C) as phase 2's A operand.
 * Phase 2 (GEMM2): CTA c computes the output column tiles nt = c, c + C, ... (256 columns of the 2N; from w_up_k
 *   when nt < N / 256, else from w_up_v), K = rank: B four boxes 64 n x 64 k (32 KB) through the STAGES - C stages
 *   above the latent. Consumer g owns rows 64g .., all 256 columns (m64n256k16, 128 accumulators). Epilogue:
 *   fragments -> dtype -> 4-byte stores straight into the stacked (b, s, 2, heads, head_dim) rows (no shared
 *   memory is left for a staging buffer); rows >= M are not stored.
 * Threads: 384 = a producer warpgroup (one thread issues every TMA) and two consumer warpgroups, as mla_tc.cuh.
 * Barriers: full / empty per stage for phase 1 (with multicast, empty counts the consumer warpgroups of the whole
 *   cluster: a stage is refilled only once every CTA has read it); full2 / empty2 per ring stage for phase 2
 *   (local); one latent barrier. A ring stage's first phase-2 fill waits for its last phase-1 release.
 *   The ready / consumed counters (per row tile) return to zero at the end of each launch (the row tile's last
 *   reader resets them), so a CUDA-graph replay starts from zero.
 */

namespace mla_cl {

constexpr int THREADS = 384;
constexpr int BM = 128, BK = 64;     // row tile, k-step
constexpr int SLICE = 128;           // latent columns per CTA
constexpr int MAX_C = 4;             // rank <= 512: the whole latent of a row tile in 128 KB
#ifndef MLA_CLUSTER_MAX
#define MLA_CLUSTER_MAX 4            // the largest cluster the host may choose (a probe axis)
#endif
constexpr int STAGE_BYTES = 32768;   // phase 1: A 16 KB + B 16 KB; phase 2: B 32 KB; one latent slice
constexpr int STAGES = 7;
constexpr int B_BOX_BYTES = 64 * BK * 2;
constexpr int SMEM_BAR = STAGES * STAGE_BYTES;
constexpr int SMEM_BYTES = SMEM_BAR + (4 * STAGES + 1) * 8;
constexpr int SMEM_ALLOC = SMEM_BYTES + 1024;  // the dynamic base is aligned up to 1024 (swizzle atoms)
static_assert(SMEM_ALLOC <= 232448, "the H100/H200 opt-in shared memory per block");
static_assert(STAGES > MAX_C, "phase 2 needs a ring stage above the latent");

struct Params {
    int M, D, R, N;
    int C;          // CTAs per row tile = latent slices
    int CL;         // CTAs per cluster (a divisor of C)
    int multicast;  // the A boxes of phase 1 are multicast in the cluster (CL = 2 or 4)
    int ksteps1;    // ceil(D / BK)
    int ksteps2;    // ceil(R / BK)
    int n_nt2;      // output column tiles: 2N / 256
    int nt2_v;      // first tile read from w_up_v: N / 256
    void* out;
    void* scratch;  // C / CL > 1: the slices, [row tile][slice][32 KB]
    int* ready;     // per row tile: slices in scratch (self-resetting)
    int* consumed;  // per row tile: CTAs that have loaded the slices (self-resetting)
};

template <typename T>
__global__ void __launch_bounds__(THREADS, 1)
fused_cluster_kernel(const __grid_constant__ CUtensorMap tm_hidden, const __grid_constant__ CUtensorMap tm_wdown,
                     const __grid_constant__ CUtensorMap tm_wk, const __grid_constant__ CUtensorMap tm_wv,
                     const Params p) {
#if KV_SM90A
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    // Same offset in every CTA of the cluster (same kernel, same static smem): multicast and mapa rely on it.
    unsigned char* smem = reinterpret_cast<unsigned char*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));
    uint64_t* full = reinterpret_cast<uint64_t*>(smem + SMEM_BAR);
    uint64_t* empty = full + STAGES;
    uint64_t* full2 = empty + STAGES;   // ring stage r = stage C + r
    uint64_t* empty2 = full2 + STAGES;
    uint64_t* latent_bar = empty2 + STAGES;

    const int C = p.C, CL = p.CL, NR = STAGES - p.C;
    const uint32_t rank = hop::cluster_ctarank();
    const int cid = int(hop::cluster_id_x());
    const int mt = cid / (C / CL);
    const int c = (cid % (C / CL)) * CL + int(rank);  // this CTA's slice of the row tile
    const int tid = threadIdx.x;
    const int wg = tid / 128;

    if (tid == 0) {
        for (int s = 0; s < STAGES; ++s) {
            hop::mbar_init(&full[s], 1);
            hop::mbar_init(&empty[s], p.multicast ? 2 * CL : 2);
            hop::mbar_init(&full2[s], 1);
            hop::mbar_init(&empty2[s], 2);
        }
        hop::mbar_init(latent_bar, 1);
        hop::fence_barrier_init();
    }
    hop::cluster_sync();  // every CTA's barriers exist before a peer's multicast or arrival reaches them

    if (wg == 0) {
        // ------------------------------------------------------------ producer
        hop::setmaxnreg_dec<40>();
        if (tid == 0) {
            hop::prefetch_tmap(&tm_hidden);
            hop::prefetch_tmap(&tm_wdown);
            hop::prefetch_tmap(&tm_wk);
            hop::prefetch_tmap(&tm_wv);
            const int a_rows = p.multicast ? BM / CL : BM;  // this CTA's rows of each A box
            const uint16_t mask = uint16_t((1u << CL) - 1);
            uint32_t ph1 = 0;  // bit s: parity of stage s's next phase-1 fill
            for (int k = 0; k < p.ksteps1; ++k) {
                const int s = k % STAGES;
                hop::mbar_wait(&empty[s], ((ph1 >> s) & 1) ^ 1);
                ph1 ^= 1u << s;
                hop::mbar_arrive_expect_tx(&full[s], STAGE_BYTES);  // A (all C pieces) + B
                unsigned char* st = smem + s * STAGE_BYTES;
                if (p.multicast)
                    hop::tma_load_2d_multicast(st + rank * a_rows * 128, &tm_hidden, k * BK, mt * BM + int(rank) * a_rows,
                                               &full[s], mask);
                else
                    hop::tma_load_2d(st, &tm_hidden, k * BK, mt * BM, &full[s]);
#pragma unroll
                for (int b = 0; b < 2; ++b)
                    hop::tma_load_2d(st + 16384 + b * B_BOX_BYTES, &tm_wdown, c * SLICE + 64 * b, k * BK, &full[s]);
            }
            // Phase 2's first NR fills only wait for phase 1's releases; the exchange barrier comes after them, so
            // w_up streams in while the cluster exchanges the latent.
            uint32_t ph2 = 0, first_done = 0;
            bool synced = false;
            int j = 0;
            for (int nt = c; nt < p.n_nt2; nt += C) {
                const CUtensorMap* tb = nt < p.nt2_v ? &tm_wk : &tm_wv;
                const int bx = (nt < p.nt2_v ? nt : nt - p.nt2_v) * 256;
                for (int k = 0; k < p.ksteps2; ++k, ++j) {
                    if (j == NR && !synced) {
                        hop::cluster_sync();
                        synced = true;
                    }
                    const int r = j % NR, s = C + r;
                    if (!((first_done >> r) & 1)) {
                        hop::mbar_wait(&empty[s], ((ph1 >> s) & 1) ^ 1);
                        first_done |= 1u << r;
                    }
                    hop::mbar_wait(&empty2[r], ((ph2 >> r) & 1) ^ 1);
                    ph2 ^= 1u << r;
                    hop::mbar_arrive_expect_tx(&full2[r], STAGE_BYTES);
                    unsigned char* st = smem + s * STAGE_BYTES;
#pragma unroll
                    for (int b = 0; b < 4; ++b) hop::tma_load_2d(st + b * B_BOX_BYTES, tb, bx + 64 * b, k * BK, &full2[r]);
                }
            }
            if (!synced) hop::cluster_sync();
        } else {
            hop::cluster_sync();  // the exchange barrier
        }
        hop::cluster_sync();  // the exit barrier
    } else {
        // ------------------------------------------------------------ consumers
        hop::setmaxnreg_inc<232>();
        const int g = wg - 1;
        const int t = tid & 127;
        const int warp = t >> 5, lane = t & 31;
        const int r_in = 16 * warp + (lane >> 2);  // fragment row inside the warpgroup's 64 rows (and +8)
        const int q = lane & 3;
        const int r = 64 * g + r_in;               // fragment row inside the tile
        auto release1 = [&](int s) {
            if (p.multicast) {
                for (int cr = 0; cr < CL; ++cr) hop::mbar_arrive_cluster(&empty[s], uint32_t(cr));
            } else {
                hop::mbar_arrive(&empty[s]);
            }
        };
        unsigned char* slice = smem + c * STAGE_BYTES;
        {
            // ---- phase 1: this CTA's latent slice
            float acc[64];
            uint32_t ph1 = 0;
            int prev = -1;
            for (int k = 0; k < p.ksteps1; ++k) {
                const int s = k % STAGES;
                hop::mbar_wait(&full[s], (ph1 >> s) & 1);
                ph1 ^= 1u << s;
                const unsigned char* st = smem + s * STAGE_BYTES;
                const uint64_t da = hop::make_desc_sw128(st + g * 64 * 128, 16, 1024);
                const uint64_t db = hop::make_desc_sw128(st + 16384, B_BOX_BYTES, 1024);
                hop::wgmma_kstep64<128, T>(acc, da, db, k > 0);
                if (prev >= 0 && t == 0) release1(prev);
                prev = s;
            }
            hop::wgmma_wait<0>();
            hop::fence_acc(acc);
            if (t == 0) release1(prev);
            // The slice's space may hold the last k-steps' stage, which the other warpgroup's wgmmas may still read.
            hop::named_barrier(1, 256);
            // ---- the slice -> this CTA's latent space, swizzled as a TMA box (k-steps 2c, 2c + 1: 16 KB each)
#pragma unroll
            for (int j = 0; j < SLICE / 8; ++j) {
                const int sub = j >> 3, chunk = j & 7;  // (r + 8) & 7 == r & 7: one swizzle for both rows
                unsigned char* base = slice + sub * 16384 + ((chunk ^ (r & 7)) << 4) + 4 * q;
                *reinterpret_cast<uint32_t*>(base + r * 128) = kv::pack2<T>(acc[4 * j], acc[4 * j + 1]);
                *reinterpret_cast<uint32_t*>(base + (r + 8) * 128) = kv::pack2<T>(acc[4 * j + 2], acc[4 * j + 3]);
            }
            hop::fence_proxy_async_smem();  // the slice -> the async proxy (bulk copies and wgmma read it)
        }
        const bool via_l2 = C > CL;
        unsigned char* const scratch = reinterpret_cast<unsigned char*>(p.scratch) + size_t(mt) * C * STAGE_BYTES;
        if (via_l2) {
            hop::named_barrier(1, 256);  // both warpgroups' parts of the slice are written and fenced
            if (tid == 128) {
                hop::bulk_store_global(scratch + size_t(c) * STAGE_BYTES, slice, STAGE_BYTES);
                hop::tma_store_commit();
                hop::tma_store_wait<0>();           // the bytes are in global memory
                hop::fence_proxy_async_global();    // async-proxy writes, then the generic release below
                hop::red_release(&p.ready[mt], 1);
            }
        }
        // Announced before the barrier, so no peer's copy can reach this barrier before its byte count is set.
        if (tid == 128) hop::mbar_arrive_expect_tx(latent_bar, uint32_t((C - 1) * STAGE_BYTES));
        hop::cluster_sync();  // every CTA is through phase 1 (its latent space free) and has written its slice
        if (tid == 128) {
            const int c0 = c - int(rank);  // the cluster's first slice
            for (int cr = 0; cr < CL; ++cr)
                if (cr != int(rank)) hop::bulk_copy_to_cta(slice, STAGE_BYTES, latent_bar, uint32_t(cr));
            if (via_l2) {
                while (hop::ld_acquire(&p.ready[mt]) < C) __nanosleep(64);
                hop::fence_proxy_async_global();  // the generic acquire, then async-proxy reads
                for (int o = 0; o < C; ++o)
                    if (o < c0 || o >= c0 + CL)
                        hop::bulk_load_global(smem + o * STAGE_BYTES, scratch + size_t(o) * STAGE_BYTES, STAGE_BYTES,
                                              latent_bar);
            }
        }
        hop::mbar_wait(latent_bar, 0);
        if (via_l2 && tid == 128) {
            if (atomicAdd(&p.consumed[mt], 1) == C - 1) {  // the row tile's last reader: reset for the next launch
                p.consumed[mt] = 0;
                p.ready[mt] = 0;
            }
        }

        // ---- phase 2: the output column tiles of this CTA
        T* const out = reinterpret_cast<T*>(p.out);
        const size_t ld = 2 * size_t(p.N);
        const int row0 = mt * BM + r;
        uint32_t ph2 = 0;
        int j = 0;
        for (int nt = c; nt < p.n_nt2; nt += C) {
            float acc[128];
            int prev = -1;
            for (int k = 0; k < p.ksteps2; ++k, ++j) {
                const int rr = j % NR;
                hop::mbar_wait(&full2[rr], (ph2 >> rr) & 1);
                ph2 ^= 1u << rr;
                const uint64_t da = hop::make_desc_sw128(smem + k * 16384 + g * 64 * 128, 16, 1024);
                const uint64_t db = hop::make_desc_sw128(smem + (C + rr) * STAGE_BYTES, B_BOX_BYTES, 1024);
                hop::wgmma_kstep64<256, T>(acc, da, db, k > 0);
                if (prev >= 0 && t == 0) hop::mbar_arrive(&empty2[prev]);
                prev = rr;
            }
            hop::wgmma_wait<0>();
            hop::fence_acc(acc);
            if (t == 0) hop::mbar_arrive(&empty2[prev]);
            T* const o = out + size_t(nt) * 256 + 2 * q;
#pragma unroll
            for (int jj = 0; jj < 32; ++jj) {
                if (row0 < p.M)
                    *reinterpret_cast<uint32_t*>(o + size_t(row0) * ld + 8 * jj) = kv::pack2<T>(acc[4 * jj], acc[4 * jj + 1]);
                if (row0 + 8 < p.M)
                    *reinterpret_cast<uint32_t*>(o + size_t(row0 + 8) * ld + 8 * jj) =
                        kv::pack2<T>(acc[4 * jj + 2], acc[4 * jj + 3]);
            }
        }
        hop::cluster_sync();  // exit: no peer still copies from this CTA's smem or arrives on its barriers
    }
#endif
}

// ---------------------------------------------------------------- host

// Largest number of co-resident clusters of C CTAs of this kernel on device `dev` (0: it cannot run), asked once.
template <typename T>
static inline int max_active_clusters(int dev, int C) {
    static int cache[64][MAX_C + 1] = {};  // 0 unknown, else value + 1
    if (dev >= 0 && dev < 64 && cache[dev][C] != 0) return cache[dev][C] - 1;
    C10_CUDA_CHECK(cudaFuncSetAttribute(fused_cluster_kernel<T>, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM_ALLOC));
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(unsigned(C));
    cfg.blockDim = dim3(THREADS);
    cfg.dynamicSmemBytes = SMEM_ALLOC;
    cudaLaunchAttribute attr;
    attr.id = cudaLaunchAttributeClusterDimension;
    attr.val.clusterDim.x = unsigned(C);
    attr.val.clusterDim.y = 1;
    attr.val.clusterDim.z = 1;
    cfg.attrs = &attr;
    cfg.numAttrs = 1;
    int n = 0;
    if (cudaOccupancyMaxActiveClusters(&n, fused_cluster_kernel<T>, &cfg) != cudaSuccess) {
        (void)cudaGetLastError();  // not an error of the call: the path is just not taken
        n = 0;
    }
    if (dev >= 0 && dev < 64) cache[dev][C] = n + 1;
    return n;
}

// Launches the kernel when it fits the shape and fills the GPU; false: the caller takes another path. Needs what
// mla::shape_ok checks (D, R multiples of 8, N % 256 == 0, 16-byte aligned tensors, an sm_90a build on a 9.0 device)
// and rank <= 512; `counters`: 2 * ceil(M / 128) zeroed ints (self-resetting). Taken when the row tiles' CTAs fill
// >= 90 % of the SMs: a CTA's work is fixed (one slice, a C-th of the row tile's output columns), so a partial wave
// costs a whole CTA time. Cluster size: C when whole waves of clusters of C fill >= 90 % of the SMs, else the
// largest divisor of C whose clusters all fit at once (the exchange through L2 waits on other clusters).
template <typename T>
inline bool launch_if_it_fills(const torch::Tensor& hidden, const torch::Tensor& w_down, const torch::Tensor& w_up_k,
                               const torch::Tensor& w_up_v, torch::Tensor& out, int M, int D, int R, int N, int dev,
                               int sms, int* counters, cudaStream_t stream) {
    const int C = kv::cdiv(R, SLICE);
    if (C > MAX_C || M <= BM) return false;
    const int n_mt = kv::cdiv(M, BM);
    if (10 * n_mt * C < 9 * sms) return false;
    int CL = 0;
    for (int cl = std::min(C, MLA_CLUSTER_MAX); cl >= 1 && CL == 0; --cl) {
        if (C % cl != 0) continue;
        const int per_wave = max_active_clusters<T>(dev, cl);
        const int clusters = n_mt * (C / cl);
        if (per_wave <= 0) continue;
        if (clusters <= per_wave) CL = cl;  // one wave: every CTA resident
        else if (cl == C && 10 * per_wave * cl >= 9 * sms &&
                 10 * clusters >= 9 * kv::cdiv(clusters, per_wave) * per_wave)
            CL = cl;  // whole waves of independent clusters
    }
    if (CL == 0) return false;

    Params p{};
    p.M = M; p.D = D; p.R = R; p.N = N;
    p.C = C;
    p.CL = CL;
    p.multicast = (CL == 2 || CL == 4) ? 1 : 0;
    p.ksteps1 = kv::cdiv(D, BK);
    p.ksteps2 = kv::cdiv(R, BK);
    p.n_nt2 = 2 * N / 256;
    p.nt2_v = N / 256;
    p.out = out.data_ptr();
    torch::Tensor scratch;
    if (C > CL) {
        scratch = torch::empty({int64_t(n_mt) * C * STAGE_BYTES}, hidden.options().dtype(torch::kUInt8));
        p.scratch = scratch.data_ptr();
        p.ready = counters;
        p.consumed = counters + n_mt;
    }
    const int a_rows = p.multicast ? BM / CL : BM;
    const CUtensorMap tm_hidden = hop::make_tmap_2d<T>(hidden.data_ptr(), M, D, D, a_rows, BK);
    const CUtensorMap tm_wdown = hop::make_tmap_2d<T>(w_down.data_ptr(), D, R, R, BK, 64);
    const CUtensorMap tm_wk = hop::make_tmap_2d<T>(w_up_k.data_ptr(), R, N, N, BK, 64);
    const CUtensorMap tm_wv = hop::make_tmap_2d<T>(w_up_v.data_ptr(), R, N, N, BK, 64);
    hop::LaunchShape shape;
    shape.grid = dim3(unsigned(n_mt * C));
    shape.block = dim3(THREADS);
    shape.smem_bytes = SMEM_ALLOC;
    shape.cluster = dim3(unsigned(CL), 1, 1);
    hop::launch_ex(fused_cluster_kernel<T>, shape, stream, tm_hidden, tm_wdown, tm_wk, tm_wv, p);
    return true;
}

}  // namespace mla_cl
