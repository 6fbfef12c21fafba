// The sm_90a tensor-core engine of two_stage and fused_tiled (bf16 / fp16): one persistent, warp-specialized
// TMA + wgmma kernel that runs a list of work units of the two products
//   GEMM1 unit (row tile mt, latent column tile nt, k-split ks):  latent[mt, nt] (+)= hidden[mt, ks] @ w_down[ks, nt]
//   GEMM2 unit (row tile mt, output column tile nt):               out[mt, nt] = latent[mt, :] @ [w_up_k | w_up_v][:, nt]
// two_stage launches it twice (GEMM1 units, then GEMM2 units with programmatic dependent launch); fused_tiled
// launches it once with both lists, GEMM2 units waiting on per-row-tile ready flags.
#pragma once

#include "hopper.cuh"

#include <algorithm>

/*
 * Tile BM x BN x BK = (128 or 64) x 256 x 64, or a GEMM1-only launch of 128 x 128 x 64 (twice the tiles of 128 x 256,
 * so prefill fills the SMs without a k-split) or 64 x 128 x 64 (twice those again, for prefill shapes whose 128 x 128
 * tiles leave half the SMs idle); STAGES shared-memory stages (3 for 128 x 256, 4 for 64 x 256, 6 for 128 x 128,
 * 8 for 64 x 128: the 128-wide tiles keep 192 KB of operands in flight per SM) of
 *   A: one TMA box 64 k x BM rows (128-byte swizzle, K-major): hidden (GEMM1) or latent (GEMM2)
 *   B: BN / 64 TMA boxes 64 n x 64 k (8 KB each, 128-byte swizzle, N-major), from w_down (GEMM1), or from w_up_k
 *      when the tile's first column is < N and from w_up_v otherwise (GEMM2; N % 256 == 0 so a tile never straddles).
 * Threads: 384 = 3 warpgroups. Warpgroup 0 = producer (setmaxnreg 40; one thread issues every TMA load);
 *   warpgroups 1 and 2 = consumers (setmaxnreg 232). BM 128: consumer g owns rows 64g .. 64g+63 and all BN
 *   columns (wgmma m64n256k16 / m64n128k16, 128 / 64 fp32 accumulators per thread); BM 64: both own the 64 rows,
 *   consumer g the columns WN*g .. WN*g+WN-1 of WN = BN / 2 (64 x 256: m64n128k16, 64 accumulators; 64 x 128:
 *   m64n64k16, 32 accumulators), i.e. B box g (64 x 256: boxes 2g, 2g+1). A stage is released (empty barrier,
 *   one arrival per consumer warpgroup) once the next stage's wgmmas are issued and the previous group retired
 *   (wait_group 1).
 * Epilogues (per consumer warpgroup):
 *   GEMM2: accumulators -> bf16/fp16 -> the warpgroup's staging buffer (64 x 64 boxes, 128-byte swizzle,
 *     conflict-free 4-byte stores) -> fence.proxy.async -> TMA stores into out viewed as (M, 2N): the stacked
 *     (b, s, 2, heads, head_dim) rows directly. The store runs while the next tile's main loop does; the staging
 *     buffer is rewritten only after cp.async.bulk.wait_group.read 0.
 *   GEMM1, no split: the same staging and TMA stores into the latent (two_stage; fused: latent rows stored from
 *     the fragments, which ready[mt] publishes to the GEMM2 units' TMA loads).
 *   GEMM1, S splits: fp32 partial fragments -> workspace (float4, coalesced), arrive on the tile's counter, wait
 *     until all S partials are written (the S units of a tile are co-resident: GEMM1 units <= grid <= #SMs, one
 *     CTA per SM), then split ks sums its 1/S slice of the tile over the S partials and stores those latent
 *     elements; the last of the 2S arrivals resets the counter (self-resetting: a CUDA-graph replay starts from
 *     zero again) and, when fused, bumps ready[mt].
 *   GEMM1, S splits in one cluster (cl_red; two_stage at decode): one unit per CTA, the S CTAs of a cluster are one
 *     tile's splits (cluster rank = split). Each writes its fp32 partial to the base of its own shared memory, one
 *     cluster barrier, then split ks reads slice ks (1/S of the tile) of all S partials by ld.shared::cluster, sums
 *     and stores those latent elements; a second cluster barrier before any CTA exits.
 * Unit order: GEMM1 units first (ks fastest), then GEMM2 units in groups of `group_mt` row tiles, row tile
 *   fastest inside a group (M-major: the CTAs working at one time share a few w_up column tiles in L2).
 *   CTA c runs units first + c, first + c + grid, ...; producer and consumers walk the same list.
 * Fused (one launch): a GEMM2 unit's producer waits (acquire) until ready[mt] == n_nt1, then fence.proxy.async
 *   (the latent was written by ordinary stores, TMA reads it); the row tile's last reader resets ready/consumed.
 *   prefetch2 (decode): before that wait the producer prefetches every B box of its GEMM2 units into L2, so
 *   w_up streams from DRAM while GEMM1 runs.
 */

namespace mla {

constexpr int BN = 256, BK = 64;  // BN: the GEMM2 tile's width (and GEMM1's, but for the 128-wide launches)
constexpr int SPLIT_LOADS = 24;   // split-k partial loads a consumer thread keeps in flight while it reduces
constexpr int THREADS = 384;
constexpr int B_BOX_BYTES = 64 * BK * 2;          // 8 KB: 64 columns x 64 k

// Tile shape BM x BN_: 128 x 256 (prefill: consumer warpgroup g owns rows 64g.., all 256 columns), 64 x 256
// (decode: both consumer warpgroups own the 64 rows, warpgroup g the columns 128g .. 128g+127), and the GEMM1-only
// (GEMM2 units are refused) 128 x 128 (consumer g owns rows 64g.., all 128 columns) and 64 x 128 (both own the 64
// rows, consumer g the columns 64g .. 64g+63).
template <int BM_, int BN_ = BN>
struct Cfg {
    static constexpr int BM = BM_, TBN = BN_;
    static_assert((BM == 64 || BM == 128) && (TBN == 256 || TBN == 128), "tile shape");
    static constexpr bool GEMM2 = TBN == BN;          // GEMM2 units need the 256-wide tiles of Params::n_nt2
    static constexpr int MWG = BM / 64;              // consumer warpgroups along M
    static constexpr int WN = TBN / (2 / MWG);        // columns per consumer warpgroup: 256, 128 or 64
    // 64 x 128: 24 KB a stage, so 8 stages hold the 192 KB in flight of 128 x 128's 6 (9 would not fit in 227 KB).
    static constexpr int STAGES = TBN == 128 ? (BM == 128 ? 6 : 8) : BM == 128 ? 3 : 4;
    static constexpr int A_BYTES = BM * BK * 2;
    static constexpr int B_BYTES = (TBN / 64) * B_BOX_BYTES;  // 32 KB or 16 KB
    // One warpgroup's staging: (WN / 64) boxes of 64 x 64 (GEMM2, whole-K GEMM1); a split GEMM1 uses the two as its
    // reduction's scratch (<= 4 KB).
    static constexpr int C_WG_BYTES = 64 * WN * 2;
    static constexpr int SMEM_A = 0;
    static constexpr int SMEM_B = SMEM_A + STAGES * A_BYTES;
    static constexpr int SMEM_C = SMEM_B + STAGES * B_BYTES;
    static constexpr int SMEM_BAR = SMEM_C + 2 * C_WG_BYTES;
    static constexpr int SMEM_BYTES = SMEM_BAR + 2 * STAGES * 8;
    static constexpr int SMEM_ALLOC = SMEM_BYTES + 1024;  // the dynamic base is aligned up to 1024 (swizzle atoms)
    static constexpr int PART_F4 = (WN / 8) * 256;        // float4s of one fp32 partial tile (WN/8 per thread)
    static_assert(2 * C_WG_BYTES >= 256 * 16, "the split-k reduction's scratch: up to 256 float4s");
    static_assert(SMEM_ALLOC <= 232448, "the H100/H200 opt-in shared memory per block");
};

struct Params {
    int M, D, R, N;
    int n_mt;         // row tiles: ceil(M / BM)
    int n_nt1;        // latent column tiles: ceil(R / GEMM1's tile width)
    int splits;       // GEMM1 k-splits (each non-empty)
    int kps1;         // GEMM1 k-steps per split
    int ksteps1;      // ceil(D / BK)
    int ksteps2;      // ceil(R / BK)
    int n_nt2;        // output column tiles: 2N / BN
    int nt2_v;        // first output column tile read from w_up_v: N / BN
    int units1, units2;
    int first, last;  // this launch runs units [first, last) of the combined list
    int group_mt;     // GEMM2 rasterization group (row tiles)
    int fused;        // GEMM2 units wait for ready[mt] == n_nt1; GEMM1 tiles bump it
    int prefetch2;    // fused: before its first GEMM2 unit a producer prefetches all its GEMM2 B tiles into L2
    int pdl_wait;     // GEMM2 producer waits for the previous grid (programmatic dependent launch)
    int cl_red;       // GEMM1: the `splits` CTAs of a cluster are one tile's k-splits, one unit each, reduced
                      // through distributed shared memory (no workspace, no counters)
    float4* ws;       // GEMM1 partials: [tile][split][PART_F4]
    int* split_cnt;   // per GEMM1 tile (n_mt * n_nt1), self-resetting
    int* ready;       // per row tile, self-resetting (fused)
    int* consumed;    // per row tile: GEMM2 units that passed the ready wait (fused)
    void* latent;     // (M, R), row-major, written by GEMM1 units
};

struct Unit {
    int gemm;  // 1 or 2
    int mt, nt, ks;
};

__device__ __forceinline__ Unit decode_unit(int u, const Params& p) {
    Unit w;
    if (u < p.units1) {
        w.gemm = 1;
        w.ks = u % p.splits;
        const int t = u / p.splits;
        w.mt = t % p.n_mt;
        w.nt = t / p.n_mt;
    } else {
        w.gemm = 2;
        w.ks = 0;
        const int v = u - p.units1;
        const int per_group = p.group_mt * p.n_nt2;
        const int g = v / per_group, in = v - g * per_group;
        const int rows = min(p.group_mt, p.n_mt - g * p.group_mt);
        w.mt = g * p.group_mt + in % rows;
        w.nt = in / rows;
    }
    return w;
}

__device__ __forceinline__ void unit_ksteps(const Unit& w, const Params& p, int& k0, int& k1) {
    if (w.gemm == 1) {
        k0 = w.ks * p.kps1;
        k1 = min(k0 + p.kps1, p.ksteps1);
    } else {
        k0 = 0;
        k1 = p.ksteps2;
    }
}

__device__ __forceinline__ int ld_acquire(const int* p) {
    int v;
    asm volatile("ld.acquire.gpu.global.s32 %0, [%1];\n" : "=r"(v) : "l"(p) : "memory");
    return v;
}
// The split-k and ready counters are published by ONE thread after a barrier of the threads whose stores it
// publishes: a release at gpu scope is cumulative over what the barrier ordered before it (the pattern of CUTLASS's
// generic barrier). Cheaper than a fence.sc.gpu (__threadfence) in every consumer thread, which the profile found on
// the decode critical path (the form of before: b4afe6f's MLA_SPLIT_SYNC=0; results/NOTES.md has the probe).
__device__ __forceinline__ void red_release(int* p, int v) {
    asm volatile("red.release.gpu.global.add.s32 [%0], %1;\n" ::"l"(p), "r"(v) : "memory");
}
__device__ __forceinline__ int atom_add_acq_rel(int* p, int v) {
    int old;
    asm volatile("atom.acq_rel.gpu.global.add.s32 %0, [%1], %2;\n" : "=r"(old) : "l"(p), "r"(v) : "memory");
    return old;
}

// Timeline probe (scripts/trace_tc.py builds with -DMLA_TRACE): one thread per role stamps %globaltimer at each
// phase boundary into trace_buf[launch][CTA][event] (launch 1: a launch whose units start after GEMM1's, i.e.
// two_stage's GEMM2). Compiled out otherwise: the measured kernels have no trace code.
enum TraceEvent {
    EV_ENTRY, EV_P_G1_ISSUED, EV_P_G2_PRE, EV_P_G2_READY, EV_P_G2_ISSUED,
    EV_C_G1_FIRST, EV_C_G1_MAIN, EV_C_G1_PART, EV_C_G1_WAIT, EV_C_G1_RED,
    EV_C_G2_FIRST, EV_C_G2_MAIN, EV_C_G2_STORE, EV_EXIT,
    EV_P_SETUP, EV_P_TMAP, EV_P_FIRST_TMA, EV_C_START, EV_SMID, TRACE_EVENTS
};
#ifdef MLA_TRACE
constexpr int TRACE_CTAS = 160;
__device__ unsigned long long trace_buf[2][TRACE_CTAS][TRACE_EVENTS];
__device__ __forceinline__ void trace_mark(const Params& p, int ev) {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;\n" : "=l"(t) :: "memory");
    if (ev == EV_SMID) asm volatile("{ .reg .u32 s; mov.u32 s, %%smid; cvt.u64.u32 %0, s; }\n" : "=l"(t));
    if (blockIdx.x < TRACE_CTAS) trace_buf[p.first > 0 && !p.fused][blockIdx.x][ev] = t;
}
#define MLA_MARK(ev) ::mla::trace_mark(p, ::mla::ev)
#else
#define MLA_MARK(ev) ((void)0)
#endif

using hop::pdl_launch_dependents;
using hop::pdl_wait;

// GEMM1's whole-K latent tile by TMA stores (1) or straight from the fragments (0: 4-byte stores, half-sector writes;
// CUTLASS's GEMM1 stages and TMA-stores its tile, NOTES 2026-12-07 fifteenth). Probe knob.
#ifndef MLA_G1_TMA_STORE
#define MLA_G1_TMA_STORE 1
#endif

// A consumer warpgroup's accumulator tile (64 rows x WN columns) -> its staging (WN / 64 boxes of 64 x 64, 128-byte
// swizzle, conflict-free 4-byte stores) -> fence.proxy.async -> TMA stores of box b at (x0 + 64 b, y0) of `map`
// (TMA clips rows and columns outside the map). The staging is rewritten only after the warpgroup's previous stores
// have read it (t: thread in the warpgroup, cw: consumer warpgroup, r_in / q: the fragment's row / column pair).
template <typename T, int WN>
__device__ __forceinline__ void store_tile_tma(const float* acc, unsigned char* cstage, const CUtensorMap* map, int x0,
                                               int y0, int t, int cw, int r_in, int q) {
    if (t == 0) hop::tma_store_wait_read<0>();
    hop::named_barrier(2 + cw, 128);
#pragma unroll
    for (int j = 0; j < WN / 8; ++j) {
        const int box = j >> 3, chunk = j & 7;
        const int r = r_in;  // (r_in + 8) & 7 == r_in & 7: one swizzle for both rows
        unsigned char* base = cstage + box * (64 * 128) + ((chunk ^ (r & 7)) << 4) + 4 * q;
        *reinterpret_cast<uint32_t*>(base + r * 128) = kv::pack2<T>(acc[4 * j], acc[4 * j + 1]);
        *reinterpret_cast<uint32_t*>(base + (r + 8) * 128) = kv::pack2<T>(acc[4 * j + 2], acc[4 * j + 3]);
    }
    hop::fence_proxy_async_smem();
    hop::named_barrier(2 + cw, 128);
    if (t == 0) {
#pragma unroll
        for (int b = 0; b < WN / 64; ++b) hop::tma_store_2d(map, cstage + b * (64 * 128), x0 + 64 * b, y0);
        hop::tma_store_commit();
    }
}

// Store one fp32 fragment pair (row, col), (row, col+1) of the latent as two 16-bit elements (R even, col even).
template <typename T>
__device__ __forceinline__ void store_latent2(T* lat, const Params& p, int row, int col, float a, float b) {
    if (row < p.M && col < p.R)
        *reinterpret_cast<uint32_t*>(lat + size_t(row) * p.R + col) = kv::pack2<T>(a, b);
}

// Store element e (= j * 256 + c: consumer thread c's fragment group j) of a GEMM1 tile's fp32 partial layout: the
// float4 (row, col), (row, col+1), (row+8, col), (row+8, col+1) of the tile (mt, nt).
template <typename T, class C>
__device__ __forceinline__ void store_latent_elem(T* lat, const Params& p, int mt, int nt, int e, float4 v) {
    const int j = e >> 8, c = e & 255;
    const int cl = c & 31, ct_w = (c & 127) >> 5, cg = c >> 7;
    const int rr = mt * C::BM + (C::MWG == 2 ? 64 * cg : 0) + 16 * ct_w + (cl >> 2);
    const int col = nt * C::TBN + (C::MWG == 2 ? 0 : C::WN * cg) + 8 * j + 2 * (cl & 3);
    store_latent2<T>(lat, p, rr, col, v.x, v.y);
    store_latent2<T>(lat, p, rr + 8, col, v.z, v.w);
}

// The split-k reduction of one slice, elements [e0, e1) of a GEMM1 tile's partial layout: each element summed over
// the S partials (`load(e, s)` reads partial s; LOADS loads in flight a round, the tail predicated) and stored as
// latent elements. Few elements and many partials: thread (g, e) sums every G-th partial, then a G-way sum in `red`
// (shared memory of this CTA, 256 float4s). Called by the 256 consumer threads.
template <typename T, class C, int LOADS, class Load>
__device__ __forceinline__ void reduce_slice_store(const Params& p, const Unit& w, int S, int e0, int e1, int ct,
                                                   float4* red, Load load) {
    T* const lat = reinterpret_cast<T*>(p.latent);
    auto sum_parts = [&](int e, int s0, int ds) {
        float4 sum = make_float4(0.f, 0.f, 0.f, 0.f);
        for (int s = s0; s < S; s += LOADS * ds) {
            float4 v[LOADS];
#pragma unroll
            for (int i = 0; i < LOADS; ++i) {
                const int si = s + i * ds;
                v[i] = si < S ? load(e, si) : make_float4(0.f, 0.f, 0.f, 0.f);
            }
#pragma unroll
            for (int i = 0; i < LOADS; ++i) {
                sum.x += v[i].x; sum.y += v[i].y; sum.z += v[i].z; sum.w += v[i].w;
            }
        }
        return sum;
    };
    const int E = e1 - e0;
    const int G = E > 0 ? min(S, 256 / E) : 1;  // thread groups per element
    if (G <= 1) {
        for (int e = e0 + ct; e < e1; e += 256) store_latent_elem<T, C>(lat, p, w.mt, w.nt, e, sum_parts(e, 0, 1));
        return;
    }
    const int g = ct / E, el = ct - g * E;
    if (g < G) red[g * E + el] = sum_parts(e0 + el, g, G);
    hop::named_barrier(1, 256);
    if (ct < E) {
        float4 sum = red[ct];
        for (int gg = 1; gg < G; ++gg) {
            const float4 v = red[gg * E + ct];
            sum.x += v.x; sum.y += v.y; sum.z += v.z; sum.w += v.w;
        }
        store_latent_elem<T, C>(lat, p, w.mt, w.nt, e0 + ct, sum);
    }
}

// GEMM1 split-k inside a cluster (p.cl_red): split ks (the CTA of cluster rank ks) sums slice ks of the tile over
// the S partials that the cluster's CTAs left at the base of their shared memory (eight remote loads in flight),
// and stores those latent elements. Called by the 256 consumer threads between two cluster barriers (partials
// written / peers done reading).
template <typename T, class C>
__device__ __forceinline__ void cluster_reduce_slice(unsigned char* smem, const Params& p, const Unit& w, int ct) {
    const float4* part = reinterpret_cast<const float4*>(smem + C::SMEM_A);
    const int S = p.splits;
    float4* red = reinterpret_cast<float4*>(smem + C::SMEM_C);  // not the partial: peers read that
    reduce_slice_store<T, C, 8>(p, w, S, w.ks * C::PART_F4 / S, (w.ks + 1) * C::PART_F4 / S, ct, red,
                                [&](int e, int s) { return hop::ld_shared_cluster_f4(part + e, uint32_t(s)); });
}

template <typename T, int BM_, int BN_ = BN>
__global__ void __launch_bounds__(THREADS, 1)
mla_tc_kernel(const __grid_constant__ CUtensorMap tm_hidden, const __grid_constant__ CUtensorMap tm_wdown,
              const __grid_constant__ CUtensorMap tm_latent, const __grid_constant__ CUtensorMap tm_wk,
              const __grid_constant__ CUtensorMap tm_wv, const __grid_constant__ CUtensorMap tm_out,
              const __grid_constant__ CUtensorMap tm_lat_st, const Params p) {
#if KV_SM90A
    using C = Cfg<BM_, BN_>;
    constexpr int BM = C::BM, STAGES = C::STAGES, A_BYTES = C::A_BYTES, WN = C::WN, PART_F4 = C::PART_F4;
    constexpr int TBN = C::TBN, B_BYTES = C::B_BYTES;
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    unsigned char* smem = reinterpret_cast<unsigned char*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));
    uint64_t* full = reinterpret_cast<uint64_t*>(smem + C::SMEM_BAR);
    uint64_t* empty = full + STAGES;

    const int tid = threadIdx.x;
    const int wg = hop::warpgroup_index();

    if (tid == 0) {
        MLA_MARK(EV_ENTRY);
        MLA_MARK(EV_SMID);
        for (int s = 0; s < STAGES; ++s) {
            hop::mbar_init(&full[s], 1);
            hop::mbar_init(&empty[s], 2);
        }
        hop::fence_barrier_init();
    }
    __syncthreads();
    if (tid == 0) MLA_MARK(EV_P_SETUP);
    if (p.first == 0 && p.units1 > 0 && !p.fused) pdl_launch_dependents();  // two_stage: let GEMM2 launch early

    if (wg == 0) {
        // ------------------------------------------------------------ producer
        hop::setmaxnreg_dec<40>();
        if (tid == 0) {
            hop::prefetch_tmap(&tm_hidden);
            hop::prefetch_tmap(&tm_wdown);
            hop::prefetch_tmap(&tm_latent);
            hop::prefetch_tmap(&tm_wk);
            hop::prefetch_tmap(&tm_wv);
            MLA_MARK(EV_P_TMAP);
            bool waited = false, prefetched = false;
            int it = 0;  // k-steps issued by this CTA so far (stage = it % STAGES)
            for (int u = p.first + blockIdx.x; u < p.last; u += gridDim.x) {
                const Unit w = decode_unit(u, p);
                if constexpr (!C::GEMM2) {
                    if (w.gemm != 1) __trap();  // a 128-wide launch runs GEMM1 units only (make_params's n_nt2)
                }
                int k0, k1;
                unit_ksteps(w, p, k0, k1);
                const CUtensorMap* ta = w.gemm == 1 ? &tm_hidden : &tm_latent;
                int pre = 0;  // leading k-steps whose B boxes were issued before the latent was ready
                const CUtensorMap* tb;
                int bx;
                if (w.gemm == 1) {
                    tb = &tm_wdown;
                    bx = w.nt * TBN;
                } else {
                    tb = w.nt < p.nt2_v ? &tm_wk : &tm_wv;
                    bx = (w.nt < p.nt2_v ? w.nt : w.nt - p.nt2_v) * BN;
                    if (p.prefetch2 && !prefetched) {  // all of this CTA's GEMM2 B tiles -> L2 while GEMM1 runs
                        for (int u2 = u; u2 < p.last; u2 += gridDim.x) {
                            const Unit w2 = decode_unit(u2, p);
                            const CUtensorMap* tb2 = w2.nt < p.nt2_v ? &tm_wk : &tm_wv;
                            const int bx2 = (w2.nt < p.nt2_v ? w2.nt : w2.nt - p.nt2_v) * BN;
                            for (int k = 0; k < p.ksteps2; ++k)
                                for (int b = 0; b < BN / 64; ++b) hop::tma_prefetch_2d(tb2, bx2 + 64 * b, k * BK);
                        }
                        prefetched = true;
                    }
                    if ((p.pdl_wait && !waited) || p.fused) {
                        // The latent is not ready yet, w_up is: fill the first stages' B halves now (each stage's
                        // barrier announces A + B; the A box follows once the latent is there).
                        pre = min(STAGES, k1 - k0);
                        for (int j = 0; j < pre; ++j) {
                            const int s = (it + j) % STAGES;
                            hop::mbar_wait(&empty[s], (((it + j) / STAGES) & 1) ^ 1);
                            hop::mbar_arrive_expect_tx(&full[s], A_BYTES + B_BYTES);
                            unsigned char* bs = smem + C::SMEM_B + s * B_BYTES;
#pragma unroll
                            for (int b = 0; b < TBN / 64; ++b)
                                hop::tma_load_2d(bs + b * B_BOX_BYTES, tb, bx + 64 * b, (k0 + j) * BK, &full[s]);
                        }
                    }
                    MLA_MARK(EV_P_G2_PRE);
                    if (p.pdl_wait && !waited) {
                        pdl_wait();  // the latent is written by the previous grid
                        waited = true;
                    }
                    if (p.fused) {
                        while (ld_acquire(&p.ready[w.mt]) < p.n_nt1) __nanosleep(64);
                        hop::fence_proxy_async_global();  // the latent (ordinary stores) -> TMA reads
                        const int old = atomicAdd(&p.consumed[w.mt], 1);
                        if (old == p.n_nt2 - 1) {  // the row tile's last reader: reset for the next launch
                            p.consumed[w.mt] = 0;
                            p.ready[w.mt] = 0;
                        }
                    }
                    MLA_MARK(EV_P_G2_READY);
                }
                for (int k = k0; k < k1; ++k, ++it) {
                    const int s = it % STAGES;
                    if (k - k0 >= pre) {
                        hop::mbar_wait(&empty[s], ((it / STAGES) & 1) ^ 1);
                        hop::mbar_arrive_expect_tx(&full[s], A_BYTES + B_BYTES);
                        unsigned char* bs = smem + C::SMEM_B + s * B_BYTES;
#pragma unroll
                        for (int b = 0; b < TBN / 64; ++b)
                            hop::tma_load_2d(bs + b * B_BOX_BYTES, tb, bx + 64 * b, k * BK, &full[s]);
                    }
                    hop::tma_load_2d(smem + C::SMEM_A + s * A_BYTES, ta, k * BK, w.mt * BM, &full[s]);
                    if (it == 0) MLA_MARK(EV_P_FIRST_TMA);
                }
                if (w.gemm == 1) MLA_MARK(EV_P_G1_ISSUED); else MLA_MARK(EV_P_G2_ISSUED);
            }
        }
    } else {
        // ------------------------------------------------------------ consumers
        hop::setmaxnreg_inc<232>();
        const int cw = wg - 1;           // consumer warpgroup
        const int ct = tid - 128;        // 0..255 over both consumer warpgroups
        if (ct == 0) MLA_MARK(EV_C_START);
        const int t = tid & 127;         // thread in the warpgroup
        const int warp = t >> 5, lane = t & 31;
        const int r_in = 16 * warp + (lane >> 2);  // fragment row inside the warpgroup's 64 rows (and +8)
        const int q = lane & 3;
        const int wrow = C::MWG == 2 ? 64 * cw : 0;  // the warpgroup's first row / column inside the tile
        const int wcol = C::MWG == 2 ? 0 : WN * cw;
        unsigned char* cstage = smem + C::SMEM_C + cw * C::C_WG_BYTES;
        T* const lat = reinterpret_cast<T*>(p.latent);
        float acc[WN / 2];
        int it = 0;
        for (int u = p.first + blockIdx.x; u < p.last; u += gridDim.x) {
            const Unit w = decode_unit(u, p);
            int k0, k1;
            unit_ksteps(w, p, k0, k1);
            // ---- main loop
            int prev = -1;
            for (int k = k0; k < k1; ++k, ++it) {
                const int s = it % STAGES;
                hop::mbar_wait(&full[s], (it / STAGES) & 1);
                if (ct == 0 && k == k0) { if (w.gemm == 1) MLA_MARK(EV_C_G1_FIRST); else MLA_MARK(EV_C_G2_FIRST); }
                const unsigned char* as = smem + C::SMEM_A + s * A_BYTES + wrow * 128;
                const unsigned char* bs = smem + C::SMEM_B + s * B_BYTES + (wcol / 64) * B_BOX_BYTES;
                const uint64_t da = hop::make_desc_sw128(as, 16, 1024);
                const uint64_t db = hop::make_desc_sw128(bs, B_BOX_BYTES, 1024);
                hop::fence_acc(acc);
                hop::wgmma_fence();
#pragma unroll
                for (int kk = 0; kk < BK / 16; ++kk)  // +32 bytes along k in A, +16 rows (2048 bytes) in B
                    hop::wgmma_ss<WN, T>(acc, da + uint64_t((kk * 32) >> 4), db + uint64_t((kk * 2048) >> 4),
                                         (k > k0 || kk > 0) ? 1 : 0);
                hop::wgmma_commit();
                hop::fence_acc(acc);
                hop::wgmma_wait<1>();
                hop::fence_acc(acc);
                if (prev >= 0 && t == 0) hop::mbar_arrive(&empty[prev]);
                prev = s;
            }
            hop::wgmma_wait<0>();
            hop::fence_acc(acc);
            if (prev >= 0 && t == 0) hop::mbar_arrive(&empty[prev]);
            if (k1 <= k0) {  // an empty k-split (p.cl_red: S splits of d / BK k-steps, some may get none)
#pragma unroll
                for (int i = 0; i < WN / 2; ++i) acc[i] = 0.f;
            }
            if (ct == 0) { if (w.gemm == 1) MLA_MARK(EV_C_G1_MAIN); else MLA_MARK(EV_C_G2_MAIN); }
            const int row0 = w.mt * BM + wrow + r_in;  // fragment rows row0 and row0 + 8
            const int col0 = w.nt * TBN + wcol + 2 * q;  // fragment columns col0 + 8j, + 1

            if (w.gemm == 2) {
                // ---- GEMM2 epilogue: staging -> TMA stores into out viewed as (M, 2N)
                store_tile_tma<T, WN>(acc, cstage, &tm_out, w.nt * BN + wcol, w.mt * BM + wrow, t, cw, r_in, q);
                if (ct == 0) MLA_MARK(EV_C_G2_STORE);
            } else if (p.splits == 1 && !p.fused && MLA_G1_TMA_STORE) {
                // ---- GEMM1 epilogue, whole K, two_stage: the latent by TMA stores, as GEMM2's tiles
                store_tile_tma<T, WN>(acc, cstage, &tm_lat_st, w.nt * TBN + wcol, w.mt * BM + wrow, t, cw, r_in, q);
            } else if (p.splits == 1) {
                // ---- GEMM1 epilogue, whole K (fused: ordinary stores, published by ready[mt]): from the fragments
#pragma unroll
                for (int j = 0; j < WN / 8; ++j) {
                    const int col = col0 + 8 * j;
                    store_latent2<T>(lat, p, row0, col, acc[4 * j], acc[4 * j + 1]);
                    store_latent2<T>(lat, p, row0 + 8, col, acc[4 * j + 2], acc[4 * j + 3]);
                }
                if (p.fused) {
                    hop::named_barrier(1, 256);  // both consumer warpgroups' latent stores, then one release
                    if (ct == 0) red_release(&p.ready[w.mt], 1);
                }
            } else if (p.cl_red) {
                // ---- GEMM1 epilogue, split k in a cluster: the partial -> the base of this CTA's shared memory
                // (every stage is consumed: one unit per CTA); the cluster reduces it below, after the role branches
                float4* part = reinterpret_cast<float4*>(smem + C::SMEM_A);
#pragma unroll
                for (int j = 0; j < WN / 8; ++j)
                    part[j * 256 + ct] = make_float4(acc[4 * j], acc[4 * j + 1], acc[4 * j + 2], acc[4 * j + 3]);
            } else {
                // ---- GEMM1 epilogue, split k: partial -> workspace; wait for the tile's S partials; reduce a slice
                const int tile = w.nt * p.n_mt + w.mt;
                float4* part = p.ws + (size_t(tile) * p.splits + w.ks) * PART_F4;
#pragma unroll
                for (int j = 0; j < WN / 8; ++j)
                    __stcg(part + j * 256 + ct, make_float4(acc[4 * j], acc[4 * j + 1], acc[4 * j + 2], acc[4 * j + 3]));
                hop::named_barrier(1, 256);  // this CTA's partial is stored (ordered before thread 0's release)
                if (ct == 0) {
                    MLA_MARK(EV_C_G1_PART);
                    red_release(&p.split_cnt[tile], 1);
                    while (ld_acquire(&p.split_cnt[tile]) < p.splits) __nanosleep(64);
                    MLA_MARK(EV_C_G1_WAIT);
                }
                hop::named_barrier(1, 256);  // thread 0 acquired every split's partial: the whole CTA may read them
                const float4* tp = p.ws + size_t(tile) * p.splits * PART_F4;
                const int e0 = int((long long)w.ks * PART_F4 / p.splits);
                const int e1 = int((long long)(w.ks + 1) * PART_F4 / p.splits);
                // Sum of the S partials of each slice element: SPLIT_LOADS loads in flight a round, so a thread's
                // 16-20 partials at decode (DeepSeek sizes) take one L2 round trip (6e904ab..6843075: 8 a round,
                // then the tail one load per round trip; results/NOTES.md). No TMA store is pending in GEMM1, so
                // the staging area holds the group sums.
                reduce_slice_store<T, C, SPLIT_LOADS>(
                    p, w, p.splits, e0, e1, ct, reinterpret_cast<float4*>(smem + C::SMEM_C),
                    [&](int e, int s) { return __ldcg(tp + size_t(s) * PART_F4 + e); });
                hop::named_barrier(1, 256);  // this CTA's latent slice is stored
                if (ct == 0) {
                    MLA_MARK(EV_C_G1_RED);
                    // acq_rel: the last arrival acquires every slice's release before publishing the row tile
                    const int old = atom_add_acq_rel(&p.split_cnt[tile], 1);
                    if (old == 2 * p.splits - 1) {  // every slice of the tile is stored
                        p.split_cnt[tile] = 0;
                        if (p.fused) red_release(&p.ready[w.mt], 1);
                    }
                }
            }
        }
        if (t == 0) hop::tma_store_wait<0>();  // the last stores complete before the CTA exits
        if (ct == 0 && !p.cl_red) MLA_MARK(EV_EXIT);
    }
    if (p.cl_red) {  // every thread of every CTA of the cluster takes part in both barriers
        hop::cluster_sync();  // each CTA's partial is in its shared memory
        if (tid == 128) MLA_MARK(EV_C_G1_WAIT);
        if (wg != 0) {
            cluster_reduce_slice<T, C>(smem, p, decode_unit(p.first + int(blockIdx.x), p), tid - 128);
            if (tid == 128) MLA_MARK(EV_C_G1_RED);
        }
        hop::cluster_sync();  // no CTA exits while a peer still reads its partial
        if (tid == 128) MLA_MARK(EV_EXIT);
    }
#endif
}

// ---------------------------------------------------------------- host

// Which shapes the engine takes: 2-byte dtype, N % 256 == 0 (a GEMM2 tile never straddles k|v), R and D multiples
// of 8 (16-byte TMA row pitches), 16-byte aligned base pointers, an sm_90a build on a 9.0 device.
inline bool shape_ok(int D, int R, int N, const void* h, const void* wd, const void* wk, const void* wv,
                     const void* out) {
    return D % 8 == 0 && R % 8 == 0 && N % BN == 0 && D > 0 && R > 0 && kv::aligned16(h) && kv::aligned16(wd) &&
           kv::aligned16(wk) && kv::aligned16(wv) && kv::aligned16(out);
}

struct Maps {
    CUtensorMap hidden, wdown, latent, wk, wv, out;
    CUtensorMap latent_st;  // the latent in 64 x 64 boxes: GEMM1's TMA stores
};

// BM1: GEMM1's tile height (the hidden box), BM2: GEMM2's (the latent box); two_stage's GEMM1 may use 64-row
// tiles under 128-row GEMM2 tiles. latent_stores: encode latent_st too (a launch whose whole-K GEMM1 TMA-stores the
// latent: two_stage's); otherwise it stays zero, never read.
template <typename T, int BM1, int BM2>
inline Maps make_maps(const void* h, const void* wd, const void* wk, const void* wv, const void* lat, void* out, int M,
                      int D, int R, int N, bool latent_stores = false) {
    Maps m{};
    m.hidden = hop::make_tmap_2d<T>(h, M, D, D, BM1, BK);
    m.wdown = hop::make_tmap_2d<T>(wd, D, R, R, BK, 64);
    m.latent = hop::make_tmap_2d<T>(lat, M, R, R, BM2, BK);
    m.wk = hop::make_tmap_2d<T>(wk, R, N, N, BK, 64);
    m.wv = hop::make_tmap_2d<T>(wv, R, N, N, BK, 64);
    m.out = hop::make_tmap_2d<T>(out, M, 2 * int64_t(N), 2 * int64_t(N), 64, 64);
    if (latent_stores) m.latent_st = hop::make_tmap_2d<T>(lat, M, R, R, 64, 64);
    return m;
}

// Base parameters of a problem (units counted, no unit range chosen yet). BM: GEMM1's and GEMM2's tile height (the
// GEMM2 fields of a GEMM1-only launch are unused); bn1: GEMM1's tile width (BN, or 128 for a GEMM1-only launch of
// Cfg<128 or 64, 128>); splits: GEMM1 k-splits asked for.
inline Params make_params(int BM, int bn1, int M, int D, int R, int N, int splits_wanted) {
    Params p{};
    p.M = M; p.D = D; p.R = R; p.N = N;
    p.n_mt = kv::cdiv(M, BM);
    p.n_nt1 = kv::cdiv(R, bn1);
    p.ksteps1 = kv::cdiv(D, BK);
    p.ksteps2 = kv::cdiv(R, BK);
    int s = std::max(1, std::min(splits_wanted, p.ksteps1));
    p.kps1 = kv::cdiv(p.ksteps1, s);
    p.splits = kv::cdiv(p.ksteps1, p.kps1);  // every split non-empty
    p.n_nt2 = 2 * N / BN;
    p.nt2_v = N / BN;
    p.units1 = p.n_mt * p.n_nt1 * p.splits;
    p.units2 = p.n_mt * p.n_nt2;
    p.group_mt = p.n_mt;
    return p;
}

// GEMM1 k-splits so that the units fill the SMs once (the split-k wait needs every unit of a tile resident).
inline int pick_splits(int BM, int bn1, int M, int R, int sms, int cap) {
    const int tiles = kv::cdiv(M, BM) * kv::cdiv(R, bn1);
    return std::max(1, std::min(cap, sms / std::max(1, tiles)));
}

// Self-resetting counters (split_cnt per GEMM1 tile, ready and consumed per row tile), zeroed once when allocated
// and returned to zero by the kernels; one buffer per device, grown outside stream capture only.
struct CounterCache {
    int* buf[64] = {};
    size_t cap[64] = {};
};
static inline CounterCache& counter_cache() {  // static: per extension, not one process-wide symbol
    static CounterCache c;
    return c;
}
static inline int* counters_if_ready(int dev, size_t n) {
    CounterCache& c = counter_cache();
    return (dev >= 0 && dev < 64 && c.cap[dev] >= n) ? c.buf[dev] : nullptr;
}
static inline int* counters(int dev, size_t n, cudaStream_t stream) {
    CounterCache& c = counter_cache();
    TORCH_CHECK(dev >= 0 && dev < 64, "device index out of range for the counter cache");
    if (c.cap[dev] < n) {
        cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
        C10_CUDA_CHECK(cudaStreamIsCapturing(stream, &st));
        TORCH_CHECK(st == cudaStreamCaptureStatusNone, "counter buffer must be allocated before stream capture");
        const size_t want = std::max<size_t>(n, 4096);
        C10_CUDA_CHECK(cudaStreamSynchronize(stream));  // no running kernel still uses the old buffer
        if (c.buf[dev] != nullptr) C10_CUDA_CHECK(cudaFree(c.buf[dev]));
        int* p = nullptr;
        C10_CUDA_CHECK(cudaMalloc(&p, want * sizeof(int)));
        C10_CUDA_CHECK(cudaMemset(p, 0, want * sizeof(int)));
        c.buf[dev] = p;
        c.cap[dev] = want;
    }
    return c.buf[dev];
}

// The checks of every tensor-core entry before it launches: shape_ok, sm_90a code in this build and on this device,
// shared memory for every tile shape and for `extra_smem` (a caller's own schedule), and `need` counters allocated,
// now if need be (a buffer cannot grow inside a stream capture, so a capture falls back). False: the SIMT path.
inline bool tc_path_ready(const at::Tensor& hidden, const at::Tensor& w_down, const at::Tensor& w_up_k,
                          const at::Tensor& w_up_v, const at::Tensor& out, int D, int R, int N, size_t need,
                          int extra_smem, int dev, cudaStream_t stream, kv::DevInfo& info) {
    if (!shape_ok(D, R, N, hidden.data_ptr(), w_down.data_ptr(), w_up_k.data_ptr(), w_up_v.data_ptr(), out.data_ptr()))
        return false;
    if (!hop::sm90a_kernels_built(dev, stream)) return false;
    info = kv::dev_info(dev);
    if (info.optin < Cfg<128>::SMEM_ALLOC || info.optin < Cfg<64>::SMEM_ALLOC || info.optin < Cfg<128, 128>::SMEM_ALLOC ||
        info.optin < Cfg<64, 128>::SMEM_ALLOC || info.optin < extra_smem)
        return false;
    if (counters_if_ready(dev, need) == nullptr) {
        cudaStreamCaptureStatus cap = cudaStreamCaptureStatusNone;
        C10_CUDA_CHECK(cudaStreamIsCapturing(stream, &cap));
        if (cap != cudaStreamCaptureStatusNone) return false;
        counters(dev, need, stream);
    }
    return true;
}

template <typename T, int BM, int BN_ = BN>
static inline void set_smem_attr(int dev) {
    kv::set_max_dynamic_smem_once<mla_tc_kernel<T, BM, BN_>>(dev, Cfg<BM, BN_>::SMEM_ALLOC);
}

// Whether clusters of `cl` CTAs of this kernel (2..16; above 8 needs the non-portable attribute) can be resident on
// device `dev` at all: asked of the driver once per device and size. A p.cl_red launch needs no more than one
// resident cluster (its clusters never wait on each other).
template <typename T, int BM, int BN_ = BN>
static inline bool cluster_fits(int dev, int cl) {
    if (cl < 2 || cl > 16 || dev < 0 || dev >= 64) return false;
    set_smem_attr<T, BM, BN_>(dev);
    if (cl > 8) kv::set_func_attr_once<mla_tc_kernel<T, BM, BN_>, cudaFuncAttributeNonPortableClusterSizeAllowed>(dev, 1);
    return hop::max_active_clusters_once<mla_tc_kernel<T, BM, BN_>>(dev, cl, THREADS, Cfg<BM, BN_>::SMEM_ALLOC) >= 1;
}

// Launch units [first, last) on `grid` CTAs, in clusters of `cluster` (p.cl_red: = p.splits, grid = p.units1);
// pdl: launched as a programmatic dependent of the previous kernel.
template <typename T, int BM, int BN_ = BN>
inline void launch(const Maps& m, const Params& p, int grid, bool pdl, cudaStream_t stream, int cluster = 1) {
    hop::LaunchShape shape;
    shape.grid = dim3(unsigned(grid));
    shape.block = dim3(THREADS);
    shape.smem_bytes = Cfg<BM, BN_>::SMEM_ALLOC;
    shape.cluster = dim3(unsigned(cluster));
    shape.programmatic = pdl;
    hop::launch_ex(mla_tc_kernel<T, BM, BN_>, shape, stream, m.hidden, m.wdown, m.latent, m.wk, m.wv, m.out,
                   m.latent_st, p);
}

}  // namespace mla
