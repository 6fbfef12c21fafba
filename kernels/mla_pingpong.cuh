// Ping-pong GEMM2 schedule of the sm_90a engine (bf16 / fp16): out (M x 2N, the stacked rows) = latent @
// [w_up_k | w_up_v], persistent and warp-specialized like mla_tc_kernel, but the two consumer warpgroups work on
// DIFFERENT output tiles and take turns on the tensor cores: while one runs its main loop, the other runs the
// epilogue of its previous tile, so the tensor cores do not idle during epilogues. Used by two_stage_pp for
// M > 128 (GEMM1 stays mla_tc_kernel's split-k schedule); mla_tc_kernel itself is unchanged.
#pragma once

#include "mla_tc.cuh"

/*
 * Tile 128 x 128 per consumer warpgroup (K = rank in k-steps of 64), two wgmma m64n128k16 per k16 (rows 0-63 and
 *   64-127 of the tile, one B operand): 2 x 64 = 128 fp32 accumulators per thread, the same register budget as a
 *   64 x 256 tile (232 registers after setmaxnreg), but per tile 128 KB of latent + 128 KB of w_up from L2 instead
 *   of 64 KB + 256 KB (64 instead of 52 FLOP per byte) and a smaller ring stage (32 KB instead of 40 KB).
 * Shared memory (MLA_PP_STAGES, default 6): 6 stages x (A: one TMA box 64 k x 128 rows, 16 KB, K-major + B: two
 *   boxes 64 n x 64 k, 16 KB, N-major), 128-byte swizzle, = 192 KB; epilogue staging 2 x 16 KB (one per consumer:
 *   one 64-row half of its tile, two 64 x 64 boxes); barriers. 224 KB + 96 B (+ 1 KB alignment slack) <= the
 *   227 KB opt-in. MLA_PP_STAGES=5 stages the whole tile instead (2 x 32 KB) beside 5 stages (NOTES 2026-12-07, an
 *   H100: 6 measured 1.8 us faster at DeepSeek-V3 512, within noise elsewhere).
 * Threads: 384. Warpgroup 0 = producer (setmaxnreg 40, one thread issues every TMA); warpgroups 1, 2 = consumers
 *   (setmaxnreg 232).
 * Tiles: (row tile mt of 128, output column tile nt of 128) numbered M-major in groups of group_mu row units (a unit
 *   is one row tile, or a pair's two; as mla_tc's GEMM2 units); CTA c takes units c, c + grid, c + 2 grid, ...: its
 *   local tiles j = 0, 1, 2, ...
 *   Local tile j belongs to consumer j % 2. The producer loads local tiles in order j = 0, 1, ..., k-steps in
 *   order, into one ring: ring position it = j * ksteps + k, stage it % STAGES, phase (it / STAGES) & 1. Every
 *   position is consumed by exactly one warpgroup: full barriers count 1 arrival (the producer's expect_tx) plus the
 *   bytes, empty barriers 1 arrival (the consuming warpgroup's thread 0, once its wgmmas on the stage have retired).
 * Pairs (MLA_PP_CLUSTER=2, the default; 1 never pairs): clusters of 2 CTAs on row tiles (2u, 2u + 1) of one column
 *   tile when the row tiles pair up and w_up is large (make_params); each CTA loads one of a stage's two w_up boxes
 *   and multicasts it to both; empty barriers count both CTAs' consumers (the peer's arrival is remote, at CTA
 *   scope: a cluster-scope release compiled to a GPU-wide membar and cost 44-52 %); a cluster barrier after set-up
 *   and before exit.
 * Turns (named barriers ORDER + 0 / ORDER + 1, 256 threads: one warpgroup arrives, the other syncs): consumer w
 *   starts the main loop of local tile j > 0 only after the other consumer has ISSUED the whole main loop of tile
 *   j - 1 (it arrives right after its last commit, before waiting for its wgmmas: the next tile's MMAs queue
 *   behind). It arrives only when tile j + 1 exists, and a warpgroup syncs only for j > 0, so every arrival has
 *   exactly one matching sync and the turns strictly alternate.
 *   This order is also what makes the phase parity of a full-barrier wait unambiguous: when consumer w waits for
 *   position it of tile j, every position < j * ksteps has been waited for already (tile j - 1 by the other
 *   consumer, earlier tiles before it), and positions of tile j before it by w itself, so the stage's previous
 *   phase (position it - STAGES) is complete; and the producer cannot complete the next one (it + STAGES) before
 *   w releases position it. Without the order a consumer could test a stage two phases early and pass on parity.
 * Epilogue (per consumer, under the other's main loop), per 64-row half h of the tile (6 stages) or once for the
 *   whole tile (5): fragments -> bf16/fp16 -> the consumer's staging (box c = columns 64c.., 128-byte swizzle,
 *   conflict-free 4-byte stores) -> fence.proxy.async -> TMA stores into out viewed as (M, 2N) (boxes wholly below
 *   row M are skipped; TMA clips the rest). The staging is rewritten only after that consumer's previous stores
 *   have read it.
 * PDL: launched as the programmatic dependent of the GEMM1 launch; before griddepcontrol.wait the producer
 *   already loads the w_up (B) boxes of the first min(STAGES, ksteps) stages (each stage's barrier announces A + B
 *   bytes; the latent box follows after the wait).
 */

namespace mla_pp {

constexpr int TM = 128, TN = 128, BK = 64;  // tile rows, tile columns, k-step
constexpr int THREADS = 384;
#ifndef MLA_PP_STAGES
#define MLA_PP_STAGES 6
#endif
#ifndef MLA_PP_CLUSTER
#define MLA_PP_CLUSTER 2
#endif
constexpr int STAGES = MLA_PP_STAGES;
// 2: CTAs in pairs on row tiles (2u, 2u + 1) of one column tile, each w_up box loaded once and multicast to both.
constexpr int CLUSTER = MLA_PP_CLUSTER;
static_assert(STAGES == 5 || STAGES == 6, "5 stages beside whole-tile staging, 6 beside half-tile staging");
static_assert(CLUSTER == 1 || CLUSTER == 2, "pairs of CTAs or none");
// The staging a consumer converts its tile into: the whole 128 x 128 tile (one pass), or with 6 stages one 64-row
// half at a time (two passes, the second after the first's TMA stores have read the staging).
constexpr int EPI_PASSES = STAGES == 6 ? 2 : 1;
constexpr int A_BYTES = TM * BK * 2;                          // 16 KB: one box 64 k x 128 rows
constexpr int B_BOX_BYTES = 64 * BK * 2;                      // 8 KB: 64 columns x 64 k
constexpr int B_BYTES = (TN / 64) * B_BOX_BYTES;              // 16 KB
constexpr int C_BOX_BYTES = 64 * 64 * 2;                      // 8 KB: one 64 x 64 output box
constexpr int C_WG_BYTES = (TM / 64 / EPI_PASSES) * (TN / 64) * C_BOX_BYTES;  // 32 or 16 KB: one consumer's staging
constexpr int SMEM_A = 0;
constexpr int SMEM_B = SMEM_A + STAGES * A_BYTES;
constexpr int SMEM_C = SMEM_B + STAGES * B_BYTES;
constexpr int SMEM_BAR = SMEM_C + 2 * C_WG_BYTES;
constexpr int SMEM_BYTES = SMEM_BAR + 2 * STAGES * 8;
constexpr int SMEM_ALLOC = SMEM_BYTES + 1024;  // the dynamic base is aligned up to 1024 (swizzle atoms)
static_assert(SMEM_ALLOC <= 227 * 1024, "ping-pong tile exceeds the sm_90 opt-in shared memory");
static_assert(SMEM_C % 1024 == 0 && C_BOX_BYTES % 1024 == 0 && A_BYTES % 1024 == 0 && B_BYTES % 1024 == 0,
              "TMA boxes with 128-byte swizzle need 1024-byte aligned bases");
static_assert(TN == 2 * 64 && mla::BN % TN == 0, "two B boxes per stage; N % 256 == 0 implies N % 128 == 0");
constexpr int BAR_WG = 2;     // named barriers 2, 3: one consumer warpgroup's 128 threads
constexpr int BAR_ORDER = 4;  // named barriers 4, 5: consumer w may start its next main loop

struct Params {
    int M, R, N;
    int n_mt;      // row tiles: ceil(M / 128)
    int n_nt;      // output column tiles: 2N / 128
    int nt_v;      // first column tile read from w_up_v: N / 128
    int ksteps;    // ceil(R / 64)
    int tiles;     // n_mt * n_nt
    int cluster;   // CTAs a cluster: 1, or 2 (n_mt even): a unit is then row tiles (2u, 2u + 1) of one column tile
    int n_mu;      // row units: n_mt / cluster
    int units;     // n_mu * n_nt: what the clusters are dealt
    int group_mu;  // rasterization group (row units), row unit fastest inside a group
};

// Unit v -> (row unit, column tile): groups of group_mu row units, row unit fastest inside a group (the CTAs working
// at one time share a few w_up column tiles in L2). Same order as mla::decode_unit's GEMM2 units.
__host__ __device__ inline void unit_coords(int v, const Params& p, int& mu, int& nt) {
    const int per_group = p.group_mu * p.n_nt;
    const int g = v / per_group, in = v - g * per_group;
    const int left = p.n_mu - g * p.group_mu;
    const int rows = p.group_mu < left ? p.group_mu : left;
    mu = g * p.group_mu + in % rows;
    nt = in / rows;
}

// A stage's w_up boxes (64 columns x 64 k each, at column bx + 64 b, row k0): all loaded here, or in a pair each CTA
// loads box b == rank and multicasts it into both CTAs' stage (both full barriers expect the whole B bytes).
__device__ __forceinline__ void load_b(unsigned char* bs, const CUtensorMap* tb, int bx, int k0, uint64_t* full,
                                       bool pair, int rank) {
#pragma unroll
    for (int b = 0; b < TN / 64; ++b) {
        if (!pair) hop::tma_load_2d(bs + b * B_BOX_BYTES, tb, bx + 64 * b, k0, full);
        else if (b % 2 == rank) hop::tma_load_2d_multicast(bs + b * B_BOX_BYTES, tb, bx + 64 * b, k0, full, 0x3);
    }
}
// A consumer frees a stage (every thread calls it after the stage's wgmmas retired): thread 0 arrives here and, in a
// pair, thread 32 (another warp, so neither waits for the other) at the peer, whose producer multicasts into this
// CTA's stage too.
__device__ __forceinline__ void release(uint64_t* empty, bool pair, int rank, int t) {
    if (t == 0) hop::mbar_arrive(empty);
    if (pair && t == 32) hop::mbar_arrive_cluster(empty, uint32_t(rank ^ 1));
}

template <typename T>
__global__ void __launch_bounds__(THREADS, 1)
gemm2_pingpong_kernel(const __grid_constant__ CUtensorMap tm_latent, const __grid_constant__ CUtensorMap tm_wk,
                      const __grid_constant__ CUtensorMap tm_wv, const __grid_constant__ CUtensorMap tm_out,
                      const Params p) {
#if KV_SM90A
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    unsigned char* smem = reinterpret_cast<unsigned char*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));
    uint64_t* full = reinterpret_cast<uint64_t*>(smem + SMEM_BAR);
    uint64_t* empty = full + STAGES;

    const int tid = threadIdx.x;
    const int wg = hop::warpgroup_index();
    const bool pair = p.cluster == 2;
    const int rank = pair ? int(hop::cluster_ctarank()) : 0;
    const int cta = int(blockIdx.x) / p.cluster, grid = int(gridDim.x) / p.cluster;  // this CTA's cluster, clusters
    const int n_local = cta < p.units ? (p.units - cta + grid - 1) / grid : 0;  // units cta, cta + grid, ...
    const int ks = p.ksteps;

    if (tid == 0) {
        for (int s = 0; s < STAGES; ++s) {
            hop::mbar_init(&full[s], 1);
            hop::mbar_init(&empty[s], p.cluster);  // pairs: both CTAs' consumers free a stage the producers fill
        }
        hop::fence_barrier_init();
    }
    if (pair) hop::cluster_sync();  // the peer's barriers exist before a multicast reaches them
    else __syncthreads();

    if (wg == 0) {
        // ------------------------------------------------------------ producer
        hop::setmaxnreg_dec<40>();
        if (tid == 0 && n_local > 0) {
            hop::prefetch_tmap(&tm_latent);
            hop::prefetch_tmap(&tm_wk);
            hop::prefetch_tmap(&tm_wv);
            // The latent is not ready yet, w_up is: the first tile's first stages get their B boxes now.
            const int pre = min(STAGES, ks);
            {
                int mu, nt;
                unit_coords(cta, p, mu, nt);
                const CUtensorMap* tb = nt < p.nt_v ? &tm_wk : &tm_wv;
                const int bx = (nt < p.nt_v ? nt : nt - p.nt_v) * TN;
                for (int k = 0; k < pre; ++k) {  // positions 0 .. pre-1 = stages 0 .. pre-1, first use
                    hop::mbar_wait(&empty[k], 1);
                    hop::mbar_arrive_expect_tx(&full[k], A_BYTES + B_BYTES);
                    unsigned char* bs = smem + SMEM_B + k * B_BYTES;
                    load_b(bs, tb, bx, k * BK, &full[k], pair, rank);
                }
            }
            mla::pdl_wait();  // the latent is written by the previous grid (GEMM1)
            int it = 0;       // ring position
            for (int j = 0; j < n_local; ++j) {
                int mu, nt;
                unit_coords(cta + j * grid, p, mu, nt);
                const int mt = mu * p.cluster + rank;
                const CUtensorMap* tb = nt < p.nt_v ? &tm_wk : &tm_wv;
                const int bx = (nt < p.nt_v ? nt : nt - p.nt_v) * TN;
                for (int k = 0; k < ks; ++k, ++it) {
                    const int s = it % STAGES;
                    if (j > 0 || k >= pre) {
                        hop::mbar_wait(&empty[s], ((it / STAGES) & 1) ^ 1);
                        hop::mbar_arrive_expect_tx(&full[s], A_BYTES + B_BYTES);
                        unsigned char* bs = smem + SMEM_B + s * B_BYTES;
                        load_b(bs, tb, bx, k * BK, &full[s], pair, rank);
                    }
                    hop::tma_load_2d(smem + SMEM_A + s * A_BYTES, &tm_latent, k * BK, mt * TM, &full[s]);
                }
            }
        }
    } else {
        // ------------------------------------------------------------ consumers
        hop::setmaxnreg_inc<232>();
        const int cw = wg - 1;    // consumer warpgroup: local tiles cw, cw + 2, ...
        const int t = tid & 127;  // thread in the warpgroup
        const int warp = t >> 5, lane = t & 31;
        const int r_in = 16 * warp + (lane >> 2);  // fragment rows r_in and r_in + 8 of each 64-row half
        const int q = lane & 3;
        unsigned char* cstage = smem + SMEM_C + cw * C_WG_BYTES;
        float acc[2][64];  // [row half][fragment]: rows 64h .. 64h + 63 of the tile, all 128 columns
        for (int j = cw; j < n_local; j += 2) {
            int mu, nt;
            unit_coords(cta + j * grid, p, mu, nt);
            const int mt = mu * p.cluster + rank;
            if (j > 0) hop::named_barrier(BAR_ORDER + cw, 256);  // the other consumer has issued tile j - 1
            // ---- main loop
            int prev = -1;
            for (int k = 0; k < ks; ++k) {
                const int it = j * ks + k;
                const int s = it % STAGES;
                hop::mbar_wait(&full[s], (it / STAGES) & 1);
                const unsigned char* as = smem + SMEM_A + s * A_BYTES;
                const unsigned char* bs = smem + SMEM_B + s * B_BYTES;
                const uint64_t da0 = hop::make_desc_sw128(as, 16, 1024);             // rows 0 .. 63
                const uint64_t da1 = hop::make_desc_sw128(as + 64 * 128, 16, 1024);  // rows 64 .. 127
                const uint64_t db = hop::make_desc_sw128(bs, B_BOX_BYTES, 1024);
                hop::fence_acc(acc[0]);
                hop::fence_acc(acc[1]);
                hop::wgmma_fence();
#pragma unroll
                for (int kk = 0; kk < BK / 16; ++kk) {  // +32 bytes along k in A, +16 rows (2048 bytes) in B
                    const int acc_on = (k > 0 || kk > 0) ? 1 : 0;
                    hop::wgmma_ss<TN, T>(acc[0], da0 + uint64_t((kk * 32) >> 4), db + uint64_t((kk * 2048) >> 4), acc_on);
                    hop::wgmma_ss<TN, T>(acc[1], da1 + uint64_t((kk * 32) >> 4), db + uint64_t((kk * 2048) >> 4), acc_on);
                }
                hop::wgmma_commit();
                if (k == ks - 1 && j + 1 < n_local) hop::named_barrier_arrive(BAR_ORDER + (1 - cw), 256);
                hop::fence_acc(acc[0]);
                hop::fence_acc(acc[1]);
                hop::wgmma_wait<1>();
                hop::fence_acc(acc[0]);
                hop::fence_acc(acc[1]);
                if (prev >= 0) release(&empty[prev], pair, rank, t);
                prev = s;
            }
            hop::wgmma_wait<0>();
            hop::fence_acc(acc[0]);
            hop::fence_acc(acc[1]);
            release(&empty[prev], pair, rank, t);  // ks >= 1: prev is the tile's last stage

            // ---- epilogue: staging (64 x 64 boxes, 128-byte swizzle) -> TMA store; one pass (4 boxes: rows 64h..,
            // columns 64c.. at box 2h + c) or, with half-tile staging, one pass per row half h (boxes c = 0, 1)
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const bool opens = EPI_PASSES == 2 || h == 0, closes = EPI_PASSES == 2 || h == 1;
                if (opens) {
                    if (t == 0) hop::tma_store_wait_read<0>();  // this consumer's previous stores have read its staging
                    hop::named_barrier(BAR_WG + cw, 128);
                }
                const int box0 = EPI_PASSES == 2 ? 0 : 2 * h;
#pragma unroll
                for (int f = 0; f < TN / 8; ++f) {  // fragment column group: columns 8f + 2q, + 1
                    const int box = box0 + (f >> 3), chunk = f & 7;
                    // (r_in + 8) & 7 == r_in & 7: one swizzle for both rows
                    unsigned char* base = cstage + box * C_BOX_BYTES + ((chunk ^ (r_in & 7)) << 4) + 4 * q;
                    *reinterpret_cast<uint32_t*>(base + r_in * 128) = kv::pack2<T>(acc[h][4 * f], acc[h][4 * f + 1]);
                    *reinterpret_cast<uint32_t*>(base + (r_in + 8) * 128) =
                        kv::pack2<T>(acc[h][4 * f + 2], acc[h][4 * f + 3]);
                }
                if (closes) {
                    hop::fence_proxy_async_smem();
                    hop::named_barrier(BAR_WG + cw, 128);
                    if (t == 0) {
#pragma unroll
                        for (int b = 0; b < C_WG_BYTES / C_BOX_BYTES; ++b) {
                            const int hb = EPI_PASSES == 2 ? h : b >> 1;
                            const int y = mt * TM + 64 * hb;
                            if (y < p.M) hop::tma_store_2d(&tm_out, cstage + b * C_BOX_BYTES, nt * TN + 64 * (b & 1), y);
                        }
                        hop::tma_store_commit();
                    }
                }
            }
        }
        if (t == 0) hop::tma_store_wait<0>();  // the last stores complete before the CTA exits
    }
    if (pair) hop::cluster_sync();  // no CTA exits while its peer may still multicast into it or arrive on it
#endif
}

// ---------------------------------------------------------------- host

template <typename T>
static inline void set_smem_attr(int dev) {
    kv::set_max_dynamic_smem_once<gemm2_pingpong_kernel<T>>(dev, SMEM_ALLOC);
}

// Clusters of 2 the device holds at once (0: none), asked of the driver once per device.
template <typename T>
static inline int pair_clusters(int dev) {
    set_smem_attr<T>(dev);
    return hop::max_active_clusters_once<gemm2_pingpong_kernel<T>>(dev, 2, THREADS, SMEM_ALLOC);
}

// Pairs pay where w_up streams through the L2 and cost where it stays there (NOTES 2026-12-07 thirteenth, an H100:
// DeepSeek-V3's 33.5 MB, 6 % fewer GEMM2 cycles and 1-4 % faster; V2-Lite's 4.2 MB, 4-5 % slower). The bar sits at
// half the H100's / H200's 50 MB L2; kimi-k2's 16.8 MB, between the measured two, gets no pairs.
// MLA_PP_PAIR_MIN_MB (probe knob) moves the bar.
#ifndef MLA_PP_PAIR_MIN_MB
#define MLA_PP_PAIR_MIN_MB 25
#endif
constexpr double PAIR_MIN_WUP_BYTES = MLA_PP_PAIR_MIN_MB * 1e6;

// CLUSTER 2 pairs the CTAs when the row tiles pair up (n_mt even), w_up (R x 2N) is at least PAIR_MIN_WUP_BYTES and
// the device holds clusters of 2.
template <typename T>
inline Params make_params(int M, int R, int N, int dev) {
    Params p{};
    p.M = M; p.R = R; p.N = N;
    p.n_mt = kv::cdiv(M, TM);
    p.n_nt = 2 * N / TN;
    p.nt_v = N / TN;
    p.ksteps = kv::cdiv(R, BK);
    p.tiles = p.n_mt * p.n_nt;
    const bool big_wup = double(R) * 2 * N * sizeof(T) >= PAIR_MIN_WUP_BYTES;
    p.cluster = CLUSTER == 2 && p.n_mt % 2 == 0 && big_wup && pair_clusters<T>(dev) > 0 ? 2 : 1;
    p.n_mu = p.n_mt / p.cluster;
    p.units = p.n_mu * p.n_nt;
    p.group_mu = p.n_mu;
    return p;
}

// Persistent grid: one CTA a unit up to the SMs (pairs: up to the clusters of 2 the device holds at once).
template <typename T>
inline int grid_size(const Params& p, int sms, int dev) {
    if (p.cluster == 2) return 2 * std::min(p.units, pair_clusters<T>(dev));
    return std::min(p.tiles, sms);
}

// Launch on `grid` CTAs (clusters of p.cluster) as a programmatic dependent of the previous kernel (the GEMM1
// launch). The maps are mla::make_maps<T, BM1, 128>'s: latent boxes 64 k x 128 rows, w_up boxes 64 x 64, out boxes
// 64 x 64.
template <typename T>
inline void launch(const mla::Maps& m, const Params& p, int grid, cudaStream_t stream) {
    hop::LaunchShape shape;
    shape.grid = dim3(unsigned(grid));
    shape.block = dim3(THREADS);
    shape.smem_bytes = SMEM_ALLOC;
    shape.cluster = dim3(unsigned(p.cluster));
    shape.programmatic = true;
    hop::launch_ex(gemm2_pingpong_kernel<T>, shape, stream, m.latent, m.wk, m.wv, m.out, p);
}

}  // namespace mla_pp
