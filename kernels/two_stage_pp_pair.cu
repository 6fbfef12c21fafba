// summary: two_stage_pp with GEMM1 (latent = hidden @ w_down) at M > 128 launched in clusters of 2 CTAs that work on neighbouring row tiles of one latent column tile and k range: each CTA TMA-loads one of a stage's two w_down boxes and multicasts it to both, so the pair reads w_down once from L2 and shares a GPC's request coalescer. GEMM2, decode sizes, float32 and declined shapes are exactly two_stage_pp's paths.
// dtypes: float32,bfloat16,float16

/*
 * Same as two_stage_pp.cu (ping-pong GEMM2, two_stage.cuh's dispatch) with two settings of GEMM1 at M > 128:
 *   MLA_G1_ORDER 1 (mla_tc.cuh): GEMM1 units in row-tile-fastest order, so CTAs 2i and 2i + 1 of the persistent
 *     grid take row tiles mt, mt + 1 of the same column tile and k-split on every pass.
 *   MLA_G1_PAIR 2 (two_stage.cuh): that grid launched in clusters of 2 when it is even and every pair is resident at
 *     once; where the row-tile count is even too (a pair's two units then always share their w_down boxes), CTA rank
 *     r issues box r of each stage's two 64-column w_down boxes with multicast to both CTAs (Params::mcast). A stage
 *     is free again when the consumers of both CTAs have read it (4 arrivals on its empty barrier, 2 remote).
 * Why: ncu on the H100 (results/NOTES.md, 2026-12-06 seventh) found CUTLASS's latent GEMM merged 2.28 of its SM
 * reads per L2 read against our 1.46, our GEMM1 reading the L2 slices 1.9x as often.
 */

#define MLA_G1_ORDER 1
#define MLA_G1_PAIR 2
#include "two_stage.cuh"

torch::Tensor forward(torch::Tensor hidden, torch::Tensor w_down, torch::Tensor w_up_k, torch::Tensor w_up_v,
                      int64_t kv_heads) {
    return two_stage_forward<true>(hidden, w_down, w_up_k, w_up_v, kv_heads);
}
