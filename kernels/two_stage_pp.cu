// summary: two_stage with a ping-pong GEMM2: bf16/fp16 on sm_90a at M > 128, the GEMM2 launch is a persistent TMA + wgmma kernel whose two consumer warpgroups own different 128 x 128 output tiles and take turns on the tensor cores (one's epilogue under the other's main loop, 6-stage ring); GEMM1, decode sizes, float32 and declined shapes are exactly two_stage's paths.
// dtypes: float32,bfloat16,float16

/*
 * Same as two_stage.cu (dispatch, GEMM1 split-k launch, PDL, cuBLAS + SIMT fallback: all in two_stage.cuh) except
 * the tensor-core GEMM2 at M > 128: mla_pingpong.cuh's gemm2_pingpong_kernel instead of mla_tc_kernel's
 * cooperative GEMM2 units.
 *   Tiles 128 x 128 x 64 (K = rank), one tile per consumer warpgroup (two m64n128k16 wgmmas per k16, 128 fp32
 *   accumulators per thread), 6 stages of 32 KB + 2 x 16 KB epilogue staging (a 64-row half at a time); tiles in M-major order over a
 *   persistent grid of min(tiles, #SMs) CTAs; a CTA's local tiles alternate between the two consumers, whose main
 *   loops take strict turns (named barriers) while the other consumer's epilogue TMA-stores the stacked rows.
 *   Takes the same shapes as the engine (N % 256 == 0 etc., see two_stage.cu) and needs 225 KB of shared memory.
 * M <= 128 (decode): two_stage's BM 64 path unchanged (a 128-row tile would be at least half empty).
 */

#include "two_stage.cuh"

at::Tensor forward(at::Tensor hidden, at::Tensor w_down, at::Tensor w_up_k, at::Tensor w_up_v,
                   int64_t kv_heads) {
    return two_stage_forward<true>(hidden, w_down, w_up_k, w_up_v, kv_heads);
}
