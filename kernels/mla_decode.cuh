// fused_tiled's decode path (bf16 / fp16, sm_90a, M <= 64 tokens): ONE launch in which every CTA pulls its share of
// the weights into shared memory at once, so DRAM streams w_down and most of w_up before the latent exists
// (MLA_DEC_SPARE_SMS=1 adds a second, cluster-free launch on the SMs the clusters leave idle).
#pragma once

#include "mla_tc.cuh"

/*
 * Grid: C clusters of 8 CTAs (C <= the clusters the device can hold at once: every CTA is resident, which the
 * latent wait below needs), one CTA per SM, 384 threads = producer warpgroup (one thread issues every TMA) + two
 * consumer warpgroups.
 *
 * GEMM1, clusters c < H x ceil(R / 64) (H = 1; with MLA_DEC_HALVES=2, 2 halves of d when that many clusters fit):
 *   cluster c computes the latent columns 64t .. 64t+63 (t = c % tiles) for the (<= 64) tokens over half h = c / tiles
 *   of d, swapped (latent^T tile = w_down^T x hidden^T, wgmma m64n64k16, A = a w_down box M-major, B = a hidden box
 *   K-major), its 8 CTAs splitting the half: split (h, rank) takes k-steps [(8h + rank) kpr, ... + kpr) of 64 (some
 *   may be empty). All of a CTA's k-steps are issued at entry (ring of up to 13 stages of 16 KB: w_down box 64 k x
 *   64 columns + hidden box 64 tokens x 64 k), before any w_up box, so w_down is first in the DRAM queues. Consumer
 *   warpgroup g takes the k-steps of parity g; their fp32 partials (64 x 64, fragment order) are summed into a 16 KB
 *   partial in this CTA's shared memory; one cluster barrier; then CTA rank r sums float4s [128r, 128r + 128) of the
 *   8 partials through distributed shared memory (128 threads, one float4 each). Half 1 stores that fp32 slice to
 *   `hand` and releases `handed[t][r]`; half 0 (after acquiring it, if H = 2) adds it, stores those latent elements
 *   (M x R, the dtype, rounded once like eager's latent) and one thread publishes them: red.release on `ready`.
 * w_up, every CTA: GEMM2 works on 64-column boxes of out viewed as (M, 2N) (box h < N / 64 reads w_up_k, else
 *   w_up_v), dealt to the CTAs by box_of (MLA_DEC_SPREAD) and run in pairs, one box a consumer warpgroup. The
 *   producer streams a pair's k-steps (two boxes of 64 k x 64 columns, 16 KB; one in a CTA's last step when its
 *   count is odd) into a ring of 9 stages in [64 KB, 208 KB) (stage2_off). A CTA without GEMM1 work fills its ring
 *   at entry (MLA_DEC_EARLY_FILL stages, the rest once every GEMM1 CTA has its k-steps in); a GEMM1 CTA once its
 *   latent slice is released (MLA_DEC_FILL_AFTER_RELEASE), so neither competes with the latent's critical path.
 *   9 of a CTA's (V3 64: 16) stages are in shared memory by the time the latent is, the rest stream as the consumers
 *   free stages.
 * Latent wait: consumer thread 0 spins (ld.acquire) until `ready` == 8 x the GEMM1 clusters, then loads the latent
 *   by TMA (after fence.proxy.async.global) into [0, 64 KB) as 8 K-major 128-byte-swizzled A boxes of 64 tokens x
 *   64 k (rows >= M and k >= R zero-filled). Then it counts the CTA's pass; the last CTA to pass resets `ready`,
 *   `consumed` and `landed` (self-resetting: a graph replay starts from zero).
 * GEMM2 per pair step: consumer g owns box g of the pair (wgmma m64n64k16, 32 fp32 accumulators a
 *   thread: token rows 16 * warp + lane / 4 (+8), columns 8j + 2 (lane % 4) (+1)); a stage is released (two
 *   arrivals) once the next one's wgmmas are issued. Epilogue, M >= 32: the warpgroup's 64 x 64 tile into a
 *   128-byte-swizzled staging box (in the GEMM1 partial's memory, free by then), TMA-stored into out viewed as
 *   (M, 2N) (rows >= M clipped) while the next unit runs; smaller M: each fragment pair as one 4-byte store.
 * Shared memory: [0, 208 KB) GEMM1 ring (its first n1 stages), latent [0, 64 KB) once GEMM1 is done, w_up ring
 *   [64 KB, 208 KB); partial 16 KB; mbarriers. 225 KB.
 */

namespace mla_dec {

constexpr int THREADS = 384;
constexpr int CLUSTER = 8;                                   // CTAs splitting one GEMM1 tile's k
constexpr int BK = 64;
constexpr int BOX_BYTES = 64 * BK * 2;                       // one 64 x 64 box of 16-bit elements
constexpr int STAGE_BYTES = 2 * BOX_BYTES;                   // GEMM1: w_down + hidden boxes; GEMM2: two w_up boxes
constexpr int UNIT_N = 128;                                  // GEMM2 unit width (output columns)
constexpr int MAX_M = 64, MAX_R = 512;
constexpr int LAT_BYTES = MAX_M * MAX_R * 2;                 // 64 KB: the latent as 8 A boxes
constexpr int DATA_BYTES = 13 * STAGE_BYTES;                 // 208 KB
constexpr int G1_STAGES = DATA_BYTES / STAGE_BYTES;          // 13
constexpr int G2_STAGES = (DATA_BYTES - LAT_BYTES) / STAGE_BYTES;  // 9
constexpr int SMEM_PART = DATA_BYTES;
constexpr int PART_BYTES = 64 * 64 * 4;                      // one GEMM1 tile's fp32 partial
constexpr int SMEM_BAR = SMEM_PART + PART_BYTES;
constexpr int N_BARS = 2 * G1_STAGES + 2 * G2_STAGES + 4;
constexpr int SMEM_ALLOC = SMEM_BAR + N_BARS * 8 + 1024;     // + the alignment of the base to 1024
static_assert(SMEM_ALLOC <= 232448, "the H100/H200 opt-in shared memory per block");
static_assert(LAT_BYTES % STAGE_BYTES == 0, "the w_up ring starts on a stage boundary");

// Where w_up stage s lives: stages 0-5 in [112 KB, 208 KB), 6-8 in [64 KB, 112 KB). A GEMM1 ring of n1 stages
// covers [0, n1 * 16 KB), so with n1 <= 7 (DeepSeek-V3 with d in halves: 7 k-steps a CTA) the first six w_up
// stages are free at entry and their boxes are issued right behind GEMM1's; the others wait for GEMM1's last stage.
__host__ __device__ constexpr int stage2_off(int s) {
    return s < 6 ? LAT_BYTES + 3 * STAGE_BYTES + s * STAGE_BYTES : LAT_BYTES + (s - 6) * STAGE_BYTES;
}
static_assert(G2_STAGES == 9 && stage2_off(5) + STAGE_BYTES == DATA_BYTES, "the w_up ring's placement");

// 2: d in two halves when twice the latent tiles fit in clusters (every CTA then has GEMM1 work at DeepSeek-V3);
// 1: one cluster a latent tile. A probe axis, default 1: checked correct at 2 (tc_check, 2026-12-06), but its speed
// at DeepSeek-V3 is not measured (the H100 that ran it held 15 clusters of 8, too few for 2 x 8 tiles).
#ifndef MLA_DEC_HALVES
#define MLA_DEC_HALVES 1
#endif

// When a GEMM1 CTA issues its w_up boxes: 0, once its GEMM1 stages are consumed (into the freed ring); 1, once its
// latent slice is released. The trace (results/NOTES.md, 2026-12-06) has the release taking 3.4 us while those fills
// (64 CTAs x 144 KB at V3 64) are queued; 1 keeps them off the release's path at the cost of starting them later.
// A probe axis.
#ifndef MLA_DEC_FILL_AFTER_RELEASE
#define MLA_DEC_FILL_AFTER_RELEASE 1
#endif

// w_up stages a CTA issues before the latent is published (then its producer waits for the CTA's consumers to see
// it): fewer fills queued in L2 while the latent's release, acquire and copy cross it. G2_STAGES = no cap (the
// ring's own wait for a consumed stage implies it). A probe axis, not measured yet.
#ifndef MLA_DEC_PREFILL
#define MLA_DEC_PREFILL 9
#endif

// w_up stages a CTA without GEMM1 work issues at entry; the rest of its prefill waits until every GEMM1 CTA has its
// k-steps in (a counter), so that w_down has DRAM to itself. The trace with every stage issued at entry (V3 64, H100,
// 2026-12-06) had GEMM1's 228 KB a CTA taking 5 us while 56 CTAs filled 144 KB each: DRAM at its peak and GEMM1 (the
// latent's critical path) sharing it. G2_STAGES = no wait. 3 was 0.8-1.1 us faster than 9 at V3 and
// kimi-k2, 1 and 64 tokens (H100, results/NOTES.md 2026-12-06 second). A probe axis.
#ifndef MLA_DEC_EARLY_FILL
#define MLA_DEC_EARLY_FILL 3
#endif

// How GEMM2's 64-column output boxes are dealt: 1, one at a time over the CTAs in reverse order (box h to CTA
// grid - 1 - h % grid), a CTA's consecutive pair running on its two consumer warpgroups at once, so counts differ
// by at most one box and the extra ones go to the CTAs without GEMM1 work (DeepSeek-V3 64 on 120 CTAs: 4 or 5
// boxes); 0, in adjacent pairs (128-column units) in CTA order (16 of 120 CTAs take 3 units,
// 104 take 2). The two were within 0.3 us of each other at V3 and kimi-k2 (H100, 2026-12-06 second). A probe axis.
#ifndef MLA_DEC_SPREAD
#define MLA_DEC_SPREAD 1
#endif

// 1: the SMs the clusters leave free (the H100 holds 15 clusters of 8 at this kernel's shared memory: 12 of 132
// SMs idle) get a second launch of this kernel, without clusters and without GEMM1 work, as the first one's
// programmatic dependent (it can start once every CTA of the first has, at its entry); both launches deal GEMM2's
// boxes over one virtual grid and count their CTAs into one `consumed`. On 120 CTAs, DeepSeek-V3 64's 512 boxes
// left 32 CTAs a fifth box and the call's end was theirs; on 132 none has more than 4. H100, 3 rounds: -1.6 to
// -1.8 us at V3 and kimi-k2, 1 and 64 tokens, correct on 24 shape x dtype groups and under graph replay. Default 0:
// issue 9's decode target asks for one launch. (Its "invalid argument" under the harness's profiler was not the
// pair's: max_clusters' cache was shared with the other build of this file in that process; see there.) Without
// the overlap (no PDL) the second launch runs after the first: correct, slower.
#ifndef MLA_DEC_SPARE_SMS
#define MLA_DEC_SPARE_SMS 0
#endif

struct Params {
    int M, D, R, N;
    int ksteps1;   // ceil(D / 64)
    int kpr;       // GEMM1 k-steps per CTA (a split: cluster rank within a half of d)
    int tiles1;    // ceil(R / 64) latent tiles: clusters [0, halves * tiles1) run GEMM1
    int halves;    // 1, or 2: d in two halves, the clusters of half 1 hand their sums to half 0's through L2
    int ksteps2;   // ceil(R / 64)
    int units2;    // 2N / 128
    int units_k;   // N / 128: units below read w_up_k
    int tma_store; // M >= MLA_DEC_TMA_STORE_MIN_M: the output through staging boxes and TMA stores
    int* ready;    // GEMM1 CTAs whose latent slice is stored (self-resetting)
    int* handed;   // halves == 2: per (tile, rank), half 1's slice is in `hand` (self-resetting)
    float4* hand;  // halves == 2: [tile][rank][128] fp32 slices of half 1
    int* consumed; // CTAs past the latent wait (self-resetting)
    int* landed;   // GEMM1 CTAs whose k-steps are all in (self-resetting; a hint for MLA_DEC_EARLY_FILL)
    void* latent;  // M x R
    void* out;     // M x 2N
    int vbase;     // MLA_DEC_SPARE_SMS: this launch's first CTA in the virtual grid (0: the clusters' launch)
    int vgrid;     // MLA_DEC_SPARE_SMS: CTAs of both launches
};

// The output goes through a swizzled staging box (the GEMM1 partial's memory, free once the latent is there) and one
// TMA store per consumer warpgroup and unit when M >= this, else as 4-byte stores straight from the fragments: on an
// H100 the TMA store was 0.9-1.0 us faster at 64 tokens and 1.0-1.2 us slower at 1 token (results/NOTES.md,
// 2026-12-06); the crossover between is not measured. A probe axis (1: always, 65: never).
#ifndef MLA_DEC_TMA_STORE_MIN_M
#define MLA_DEC_TMA_STORE_MIN_M 32
#endif

// This CTA's index in the grid that GEMM2's boxes are dealt over, and that grid's size: the launch's own, or with
// MLA_DEC_SPARE_SMS both launches'.
// (Macros, not ternaries on the knob: the default build's SASS stays that of the build measured without the knob.)
#if MLA_DEC_SPARE_SMS
#define MLA_DEC_VCTA(p) ((p).vbase + int(blockIdx.x))
#define MLA_DEC_VGRID(p) ((p).vgrid)
#else
#define MLA_DEC_VCTA(p) int(blockIdx.x)
#define MLA_DEC_VGRID(p) int(gridDim.x)
#endif

// The 64-column box of out viewed as (M, 2N) that consumer warpgroup w of this CTA computes in its pair step ps,
// or -1 (none: the grid's boxes are dealt, MLA_DEC_SPREAD). Boxes below N / 64 read w_up_k.
__device__ __forceinline__ int box_of(const Params& p, int ps, int w) {
#if MLA_DEC_SPREAD
    const int h = (MLA_DEC_VGRID(p) - 1 - MLA_DEC_VCTA(p)) + (2 * ps + w) * MLA_DEC_VGRID(p);
    return h < 2 * p.units2 ? h : -1;
#else
    const int u = MLA_DEC_VCTA(p) + ps * MLA_DEC_VGRID(p);
    return u < p.units2 ? 2 * u + w : -1;
#endif
}

// Timeline probe (scripts/trace_tc.py, -DMLA_TRACE): the engine's trace buffer and event names, launch slot 0 for
// the CTAs that store latent elements (GEMM1, half 0 of d) and 1 for the others. "C start" here stamps the latent copied into shared memory and
// "P g2 latent ready" the latent wait passed (consumer thread 0). Compiled out otherwise.
#ifdef MLA_TRACE
__device__ __forceinline__ void dec_mark(const Params& p, bool stores_latent, int ev) {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;\n" : "=l"(t) :: "memory");
    if (ev == mla::EV_SMID) asm volatile("{ .reg .u32 s; mov.u32 s, %%smid; cvt.u64.u32 %0, s; }\n" : "=l"(t));
    if (MLA_DEC_VCTA(p) < mla::TRACE_CTAS) mla::trace_buf[stores_latent ? 0 : 1][MLA_DEC_VCTA(p)][ev] = t;
}
#define DEC_MARK(ev) dec_mark(p, g1 && half == 0, ::mla::ev)
#else
#define DEC_MARK(ev) ((void)0)
#endif

template <typename T>
__global__ void __launch_bounds__(THREADS, 1)
mla_decode_kernel(const __grid_constant__ CUtensorMap tm_hidden, const __grid_constant__ CUtensorMap tm_wdown,
                  const __grid_constant__ CUtensorMap tm_wk, const __grid_constant__ CUtensorMap tm_wv,
                  const __grid_constant__ CUtensorMap tm_out, const __grid_constant__ CUtensorMap tm_lat,
                  const Params p) {
#if KV_SM90A
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    unsigned char* smem = reinterpret_cast<unsigned char*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));
    uint64_t* full1 = reinterpret_cast<uint64_t*>(smem + SMEM_BAR);
    uint64_t* empty1 = full1 + G1_STAGES;
    uint64_t* full2 = empty1 + G1_STAGES;
    uint64_t* empty2 = full2 + G2_STAGES;
    uint64_t* g1_done = empty2 + G2_STAGES;
    uint64_t* released = g1_done + 1;  // this CTA's latent slice is released (GEMM1 CTAs)
    uint64_t* lat_seen = g1_done + 2;  // the latent wait passed
    uint64_t* lat_full = g1_done + 3;  // the latent's boxes landed

    const int tid = threadIdx.x;
    const int wg = hop::warpgroup_index();
    const int cl = int(blockIdx.x) / CLUSTER;           // 1-D grid, clusters of 8 consecutive CTAs
    const int krank = int(hop::cluster_ctarank());
    const bool g1 = (!MLA_DEC_SPARE_SMS || p.vbase == 0) && cl < p.halves * p.tiles1;  // uniform over the cluster
    const int tile1 = cl % p.tiles1, half = cl / p.tiles1;
    const int k0 = (half * CLUSTER + krank) * p.kpr;
    const int nk1 = g1 ? max(0, min(k0 + p.kpr, p.ksteps1) - k0) : 0;
    const int n1 = min(nk1, G1_STAGES);                 // GEMM1 ring stages in use: [0, n1 * 16 KB)

    if (tid == 0) {
        for (int s = 0; s < G1_STAGES; ++s) {
            hop::mbar_init(&full1[s], 1);
            hop::mbar_init(&empty1[s], 1);  // a GEMM1 stage is read by one consumer warpgroup
        }
        for (int s = 0; s < G2_STAGES; ++s) {
            hop::mbar_init(&full2[s], 1);
            hop::mbar_init(&empty2[s], 2);  // a GEMM2 stage by both (one box each)
        }
        hop::mbar_init(g1_done, 2);
        hop::mbar_init(released, 1);
        hop::mbar_init(lat_seen, 1);
        hop::mbar_init(lat_full, 1);
        hop::fence_barrier_init();
        DEC_MARK(EV_ENTRY);
        DEC_MARK(EV_SMID);
    }
    __syncthreads();
    if (MLA_DEC_SPARE_SMS && p.vbase == 0) hop::pdl_launch_dependents();  // the spare SMs' launch may start

    if (wg == 0) {
        // ------------------------------------------------------------ producer
        if (tid == 0) {
            hop::prefetch_tmap(&tm_hidden);
            hop::prefetch_tmap(&tm_wdown);
            hop::prefetch_tmap(&tm_wk);
            hop::prefetch_tmap(&tm_wv);
            hop::prefetch_tmap(&tm_lat);
            DEC_MARK(EV_P_TMAP);
            for (int j = 0; j < nk1; ++j) {
                const int s = j % G1_STAGES;
                if (j >= G1_STAGES) hop::mbar_wait(&empty1[s], ((j / G1_STAGES) & 1) ^ 1);
                hop::mbar_arrive_expect_tx(&full1[s], STAGE_BYTES);
                unsigned char* st = smem + s * STAGE_BYTES;
                hop::tma_load_2d(st, &tm_wdown, tile1 * 64, (k0 + j) * BK, &full1[s]);
                hop::tma_load_2d(st + BOX_BYTES, &tm_hidden, (k0 + j) * BK, 0, &full1[s]);
            }
            if (g1) DEC_MARK(EV_P_G1_ISSUED);
        }
        if (g1) hop::cluster_arrive();  // this role's arrivals on the partials' cluster barrier; waited at the end
        if (tid == 0) {
            bool g1_waited = !g1;
            bool lat_waited = false;
            int j = 0;
            const int nbk = 2 * p.units_k;  // boxes of w_up_k
            for (int ps = 0; box_of(p, ps, 0) >= 0; ++ps) {
                const int h0 = box_of(p, ps, 0), h1 = box_of(p, ps, 1);
                const CUtensorMap* tb0 = h0 < nbk ? &tm_wk : &tm_wv;
                const CUtensorMap* tb1 = h1 < nbk ? &tm_wk : &tm_wv;
                const int x0 = (h0 < nbk ? h0 : h0 - nbk) * 64, x1 = (h1 < nbk ? h1 : h1 - nbk) * 64;
                for (int kb = 0; kb < p.ksteps2; ++kb, ++j) {
                    const int s = j % G2_STAGES;
                    if (j >= G2_STAGES) hop::mbar_wait(&empty2[s], ((j / G2_STAGES) & 1) ^ 1);
                    if (!g1_waited && (MLA_DEC_FILL_AFTER_RELEASE || stage2_off(s) < n1 * STAGE_BYTES)) {
                        // every GEMM1 stage consumed: the ring's memory is free (the release comes after that)
                        hop::mbar_wait(MLA_DEC_FILL_AFTER_RELEASE ? released : g1_done, 0);
                        g1_waited = true;
                    }
                    if (!g1 && j == MLA_DEC_EARLY_FILL && j < MLA_DEC_PREFILL) {
                        // the reset of `landed` comes after this CTA's latent wait, hence the second way out
                        const int want = CLUSTER * p.tiles1 * p.halves;
                        while (*reinterpret_cast<volatile int*>(p.landed) < want && !hop::mbar_test(lat_seen, 0))
                            __nanosleep(64);
                    }
                    if (!lat_waited && j >= MLA_DEC_PREFILL) {
                        hop::mbar_wait(lat_seen, 0);
                        lat_waited = true;
                    }
                    hop::mbar_arrive_expect_tx(&full2[s], h1 >= 0 ? STAGE_BYTES : BOX_BYTES);
                    unsigned char* st = smem + stage2_off(s);
                    hop::tma_load_2d(st, tb0, x0, kb * BK, &full2[s]);
                    if (h1 >= 0) hop::tma_load_2d(st + BOX_BYTES, tb1, x1, kb * BK, &full2[s]);
                    if (j == G2_STAGES - 1) DEC_MARK(EV_P_G2_PRE);
                }
            }
            DEC_MARK(EV_P_G2_ISSUED);
        }
        if (g1) hop::cluster_wait();
        return;
    }

    // ---------------------------------------------------------------- consumers
    const int cw = wg - 1;      // consumer warpgroup
    const int ct = tid - 128;   // 0..255
    const int t = tid & 127;
    const int r_in = 16 * (t >> 5) + ((t & 31) >> 2);  // fragment row (and +8)
    const int q = t & 3;
    T* const lat = reinterpret_cast<T*>(p.latent);

    if (g1) {
        float acc[32];
#pragma unroll
        for (int i = 0; i < 32; ++i) acc[i] = 0.f;
        int prev = -1;
        for (int j = cw; j < nk1; j += 2) {
            const int s = j % G1_STAGES;
            hop::mbar_wait(&full1[s], (j / G1_STAGES) & 1);
            if (ct == 0 && j == 0) DEC_MARK(EV_C_G1_FIRST);
            const unsigned char* st = smem + s * STAGE_BYTES;
            const uint64_t da = hop::make_desc_sw128(st, BOX_BYTES, 1024);       // w_down box, M-major
            const uint64_t db = hop::make_desc_sw128(st + BOX_BYTES, 16, 1024);  // hidden box, K-major
            hop::fence_acc(acc);
            hop::wgmma_fence();
#pragma unroll
            for (int kk = 0; kk < BK / 16; ++kk)
                hop::wgmma_ss_mk64<T>(acc, da + uint64_t((kk * 2048) >> 4), db + uint64_t((kk * 32) >> 4), 1);
            hop::wgmma_commit();
            hop::fence_acc(acc);
            hop::wgmma_wait<1>();
            hop::fence_acc(acc);
            if (prev >= 0 && t == 0) hop::mbar_arrive(&empty1[prev]);
            prev = s;
        }
        hop::wgmma_wait<0>();
        hop::fence_acc(acc);
        if (prev >= 0 && t == 0) hop::mbar_arrive(&empty1[prev]);
        if (t == 0) hop::mbar_arrive(g1_done);
        if (ct == 0 && MLA_DEC_EARLY_FILL < G2_STAGES) atomicAdd(p.landed, 1);
        if (ct == 0) DEC_MARK(EV_C_G1_MAIN);
        // the two warpgroups' partials -> one, in fragment order (float4 j * 128 + t: acc[4j .. 4j + 3])
        float4* part = reinterpret_cast<float4*>(smem + SMEM_PART);
        if (cw == 0) {
#pragma unroll
            for (int j = 0; j < 8; ++j) part[j * 128 + t] = make_float4(acc[4 * j], acc[4 * j + 1], acc[4 * j + 2], acc[4 * j + 3]);
        }
        hop::named_barrier(1, 256);
        if (cw == 1) {
#pragma unroll
            for (int j = 0; j < 8; ++j) {
                float4 v = part[j * 128 + t];
                v.x += acc[4 * j]; v.y += acc[4 * j + 1]; v.z += acc[4 * j + 2]; v.w += acc[4 * j + 3];
                part[j * 128 + t] = v;
            }
        }
        if (ct == 128) DEC_MARK(EV_C_G1_PART);
        hop::cluster_sync();  // every partial of the cluster is in its CTA's shared memory
        if (ct == 0) DEC_MARK(EV_C_G1_WAIT);
        if (ct < 128) {
            // float4 (krank * 128 + ct) of the 8 partials: fragment group j = krank of thread ct
            float4 v[CLUSTER];
#pragma unroll
            for (int s = 0; s < CLUSTER; ++s) v[s] = hop::ld_shared_cluster_f4(part + krank * 128 + ct, uint32_t(s));
            float4 sum = v[0];
#pragma unroll
            for (int s = 1; s < CLUSTER; ++s) { sum.x += v[s].x; sum.y += v[s].y; sum.z += v[s].z; sum.w += v[s].w; }
            const int slot = tile1 * CLUSTER + krank;
            if (half == 1) {
                __stcg(p.hand + size_t(slot) * 128 + ct, sum);  // to half 0's CTA of the same tile and rank
            } else {
                if (p.halves == 2) {
                    if (ct == 0) {
                        while (mla::ld_acquire(p.handed + slot) < 1) __nanosleep(32);
                        p.handed[slot] = 0;  // its only reader: reset for the next call
                    }
                    hop::named_barrier(2, 128);
                    const float4 o = __ldcg(p.hand + size_t(slot) * 128 + ct);
                    sum.x += o.x; sum.y += o.y; sum.z += o.z; sum.w += o.w;
                }
                const int lc = tile1 * 64 + r_in;       // latent column (and + 8): the swapped product's row
                const int tok = 8 * krank + 2 * q;      // token (and + 1): its column
                auto put = [&](int row, int col, float x) {
                    if (row < p.M && col < p.R) lat[size_t(row) * p.R + col] = kv::from_f<T>(x);
                };
                put(tok, lc, sum.x);
                put(tok + 1, lc, sum.y);
                put(tok, lc + 8, sum.z);
                put(tok + 1, lc + 8, sum.w);
            }
        }
        hop::named_barrier(1, 256);  // this CTA's slice is stored (ordered before the release)
        if (ct == 0) {
            if (half == 1) mla::red_release(p.handed + tile1 * CLUSTER + krank, 1);
            else mla::red_release(p.ready, 1);
            hop::mbar_arrive(released);
            DEC_MARK(EV_C_G1_RED);
        }
    }

    // ---- the latent: wait for every GEMM1 CTA, then copy it into the A boxes
    if (ct == 0) {
        const int want = CLUSTER * p.tiles1;
        while (mla::ld_acquire(p.ready) < want) __nanosleep(32);
        DEC_MARK(EV_P_G2_READY);
        // boxes of 64 tokens x 64 k, rows >= M and k >= R zero-filled by the TMA unit, into [0, 64 KB): free in a
        // GEMM1 CTA, whose stages are consumed before it releases. Threads' ld.global.cg copies were 1.2-1.5 us
        // slower at 64 tokens, a multicast from one CTA of the cluster 0.3-0.6 us (results/NOTES.md, 2026-12-06).
        hop::fence_proxy_async_global();  // the latent (ordinary stores, acquired above) -> TMA reads
        hop::mbar_arrive_expect_tx(lat_full, uint32_t(p.ksteps2 * BOX_BYTES));
        for (int kb = 0; kb < p.ksteps2; ++kb) hop::tma_load_2d(smem + kb * BOX_BYTES, &tm_lat, kb * BK, 0, lat_full);
        // then the pass is counted: its atomic's L2 round trip runs beside the copy, not before it (0.1-0.6 us,
        // H100, results/NOTES.md 2026-12-06 third). The last CTA to pass resets the counters for the next call; the
        // arrival on lat_seen comes first, so a producer still polling `landed` leaves by it.
        hop::mbar_arrive(lat_seen);
        if (atomicAdd(p.consumed, 1) == MLA_DEC_VGRID(p) - 1) {
            *p.consumed = 0;
            *p.ready = 0;
            *p.landed = 0;
        }
    }
    hop::mbar_wait(lat_full, 0);
    if (ct == 0) DEC_MARK(EV_C_START);

    // ---- GEMM2
    T* const out = reinterpret_cast<T*>(p.out);
    const size_t ldo = 2 * size_t(p.N);
    float acc[32];
    int j = 0;
    for (int ps = 0; box_of(p, ps, 0) >= 0; ++ps) {
        const int h = box_of(p, ps, cw);
        int prev = -1;
        for (int kb = 0; kb < p.ksteps2; ++kb, ++j) {
            const int s = j % G2_STAGES;
            hop::mbar_wait(&full2[s], (j / G2_STAGES) & 1);
            if (ct == 0 && j == 0) DEC_MARK(EV_C_G2_FIRST);
            if (h < 0) {  // this warpgroup has no box in the CTA's last pair step: the stage holds one box
                if (t == 0) hop::mbar_arrive(&empty2[s]);
                continue;
            }
            const uint64_t da = hop::make_desc_sw128(smem + kb * BOX_BYTES, 16, 1024);
            const uint64_t db = hop::make_desc_sw128(smem + stage2_off(s) + cw * BOX_BYTES, BOX_BYTES, 1024);
            hop::fence_acc(acc);
            hop::wgmma_fence();
#pragma unroll
            for (int kk = 0; kk < BK / 16; ++kk)
                hop::wgmma_ss<64, T>(acc, da + uint64_t((kk * 32) >> 4), db + uint64_t((kk * 2048) >> 4),
                                     (kb > 0 || kk > 0) ? 1 : 0);
            hop::wgmma_commit();
            hop::fence_acc(acc);
            hop::wgmma_wait<1>();
            hop::fence_acc(acc);
            if (prev >= 0 && t == 0) hop::mbar_arrive(&empty2[prev]);
            prev = s;
        }
        if (h < 0) continue;
        hop::wgmma_wait<0>();
        hop::fence_acc(acc);
        if (prev >= 0 && t == 0) hop::mbar_arrive(&empty2[prev]);
        if (ct == 0) DEC_MARK(EV_C_G2_MAIN);
        if (p.tma_store) {
            // staging: one 64 x 64 box a warpgroup in the partial's memory (every peer has read it: the latent is ready)
            unsigned char* cst = smem + SMEM_PART + cw * BOX_BYTES;
            if (t == 0) hop::tma_store_wait_read<0>();  // the previous unit's store has read the box
            hop::named_barrier(3 + cw, 128);
#pragma unroll
            for (int jj = 0; jj < 8; ++jj) {  // column 8jj + 2q: chunk jj of the row, swizzled by row % 8 (and r_in + 8)
                unsigned char* b = cst + ((jj ^ (r_in & 7)) << 4) + 4 * q;
                *reinterpret_cast<uint32_t*>(b + r_in * 128) = kv::pack2<T>(acc[4 * jj], acc[4 * jj + 1]);
                *reinterpret_cast<uint32_t*>(b + (r_in + 8) * 128) = kv::pack2<T>(acc[4 * jj + 2], acc[4 * jj + 3]);
            }
            hop::fence_proxy_async_smem();
            hop::named_barrier(3 + cw, 128);
            if (t == 0) {
                hop::tma_store_2d(&tm_out, cst, h * 64, 0);  // rows >= M are not written
                hop::tma_store_commit();
            }
        } else {
            const int col0 = h * 64 + 2 * q;
#pragma unroll
            for (int jj = 0; jj < 8; ++jj) {
                const int col = col0 + 8 * jj;
                if (r_in < p.M)
                    *reinterpret_cast<uint32_t*>(out + size_t(r_in) * ldo + col) =
                        kv::pack2<T>(acc[4 * jj], acc[4 * jj + 1]);
                if (r_in + 8 < p.M)
                    *reinterpret_cast<uint32_t*>(out + size_t(r_in + 8) * ldo + col) =
                        kv::pack2<T>(acc[4 * jj + 2], acc[4 * jj + 3]);
            }
        }
        if (ct == 0) DEC_MARK(EV_C_G2_STORE);
    }
    if (p.tma_store && t == 0) hop::tma_store_wait<0>();  // the stores complete before the CTA exits
    if (ct == 0) DEC_MARK(EV_EXIT);
#endif
}

// ---------------------------------------------------------------- host

// Clusters of 8 CTAs of this kernel the device can hold at once (0: none), asked of the driver once per device.
// static: the cache must be this extension's own. A function-local static of an inline function with external
// linkage is one object across every extension in the process (a GNU unique symbol), so when the harness's profile
// process loaded two builds of fused_tiled, the second found the first's cache, skipped setting its own kernel's
// shared-memory attribute, and its launch was refused ("invalid argument"; results/NOTES.md 2026-12-06 fifth).
template <typename T>
static inline int max_clusters(int dev) {
    static int cache[64];  // 0 = not asked yet; else clusters + 1
    if (dev < 0 || dev >= 64) return 0;
    if (cache[dev] != 0) return cache[dev] - 1;
    kv::set_max_dynamic_smem_once<mla_decode_kernel<T>>(dev, SMEM_ALLOC);
    const int n = hop::max_active_clusters(mla_decode_kernel<T>, CLUSTER, THREADS, SMEM_ALLOC);
    cache[dev] = n + 1;
    return n;
}

// Runs the decode path and returns true, or returns false (nothing launched) when the shape, alignment, device or
// build does not take it: M <= 64, R <= 512, R and D multiples of 8 (16-byte TMA pitches), N % 128 == 0 (a unit never
// straddles k | v), 16-byte aligned tensors, an sm_90a build on a 9.0 device, clusters of 8 for every GEMM1 tile.
template <typename T>
static inline bool run(const at::Tensor& hidden, const at::Tensor& w_down, const at::Tensor& w_up_k,
                       const at::Tensor& w_up_v, at::Tensor& out, int M, int D, int R, int N) {
    if (M > MAX_M || R > MAX_R || R % 8 != 0 || D % 8 != 0 || N % UNIT_N != 0) return false;
    if (!kv::aligned16(hidden.data_ptr()) || !kv::aligned16(w_down.data_ptr()) || !kv::aligned16(w_up_k.data_ptr()) ||
        !kv::aligned16(w_up_v.data_ptr()) || !kv::aligned16(out.data_ptr()))
        return false;
    const int dev = hidden.get_device();
    cudaStream_t stream = at::cuda::getCurrentCUDAStream();
    if (!hop::sm90a_kernels_built(dev, stream)) return false;
    if (kv::dev_info(dev).optin < SMEM_ALLOC) return false;
    Params p{};
    p.M = M; p.D = D; p.R = R; p.N = N;
    p.ksteps1 = kv::cdiv(D, BK);
    p.tiles1 = kv::cdiv(R, 64);
    const int max_cl = max_clusters<T>(dev);
    p.halves = (MLA_DEC_HALVES == 2 && 2 * p.tiles1 <= max_cl && p.ksteps1 >= 2 * CLUSTER) ? 2 : 1;
    p.kpr = kv::cdiv(p.ksteps1, CLUSTER * p.halves);
    p.ksteps2 = kv::cdiv(R, BK);
    p.units2 = 2 * N / UNIT_N;
    p.units_k = N / UNIT_N;
    p.tma_store = M >= MLA_DEC_TMA_STORE_MIN_M ? 1 : 0;
    const int boxes_ctas = MLA_DEC_SPREAD ? 2 * p.units2 : p.units2;  // CTAs that GEMM2 can keep busy
    const int clusters = std::min(max_cl, std::max(p.halves * p.tiles1, kv::cdiv(boxes_ctas, CLUSTER)));
    if (clusters < p.halves * p.tiles1) return false;
    // the spare SMs' launch (MLA_DEC_SPARE_SMS): the SMs the clusters leave, at most the boxes left over
    const int a_grid = clusters * CLUSTER;
    const int b_grid = MLA_DEC_SPARE_SMS ? std::max(0, std::min(kv::dev_info(dev).sms, boxes_ctas) - a_grid) : 0;
    p.vbase = 0;
    p.vgrid = a_grid + b_grid;
    const size_t n_cnt = 3 + size_t(p.tiles1) * CLUSTER;  // ready, consumed, handed per (tile, rank), landed
    int* cnt = mla::counters_if_ready(dev, n_cnt);
    if (cnt == nullptr) {
        cudaStreamCaptureStatus cap = cudaStreamCaptureStatusNone;
        C10_CUDA_CHECK(cudaStreamIsCapturing(stream, &cap));
        if (cap != cudaStreamCaptureStatusNone) return false;
        cnt = mla::counters(dev, n_cnt, stream);
    }
    at::Tensor hand;
    if (p.halves == 2) {
        hand = at::empty({int64_t(p.tiles1) * CLUSTER * 128 * 4}, hidden.options().dtype(at::kFloat));
        p.hand = reinterpret_cast<float4*>(hand.data_ptr());
    }
    p.handed = cnt + 2;
    auto latent = at::empty({int64_t(M), int64_t(R)}, hidden.options());
    p.ready = cnt;
    p.consumed = cnt + 1;
    p.landed = cnt + 2 + size_t(p.tiles1) * CLUSTER;
    p.latent = latent.data_ptr();
    p.out = out.data_ptr();
    const mla::Maps maps = mla::make_maps<T, 64, 64>(hidden.data_ptr(), w_down.data_ptr(), w_up_k.data_ptr(),
                                                     w_up_v.data_ptr(), latent.data_ptr(), out.data_ptr(), M, D, R, N);
    hop::LaunchShape shape;
    shape.grid = dim3(unsigned(a_grid));
    shape.block = dim3(THREADS);
    shape.smem_bytes = SMEM_ALLOC;
    shape.cluster = dim3(CLUSTER);
    hop::launch_ex(mla_decode_kernel<T>, shape, stream, maps.hidden, maps.wdown, maps.wk, maps.wv, maps.out, maps.latent, p);
    if (b_grid > 0) {
        Params pb = p;
        pb.vbase = a_grid;
        hop::LaunchShape spare;
        spare.grid = dim3(unsigned(b_grid));
        spare.block = dim3(THREADS);
        spare.smem_bytes = SMEM_ALLOC;
        spare.programmatic = true;
        hop::launch_ex(mla_decode_kernel<T>, spare, stream, maps.hidden, maps.wdown, maps.wk, maps.wv, maps.out,
                       maps.latent, pb);
    }
    return true;
}

}  // namespace mla_dec
