// summary: Stage one: latent = hidden @ w_down; stage two: latent @ [w_up_k | w_up_v] written straight into the stacked (b, s, 2, heads, head_dim) rows, no k/v intermediate. bf16/fp16 on sm_90a: two launches of a persistent TMA + wgmma warp-specialized kernel (GEMM1 split-k, GEMM2 as its programmatic dependent); float32 and shapes that path does not take: cuBLAS then a tiled SIMT kernel.
// dtypes: float32,bfloat16,float16

/*
 * Dispatch: bf16 / fp16 with D % 8 == 0, rank % 8 == 0, N % 256 == 0, 16-byte aligned tensors, on a 9.0 device with
 * this build's sm_90a kernels present -> tensor-core path (mla_tc.cuh); everything else -> the SIMT path
 * (both in two_stage.cuh, shared with two_stage_pp.cu).
 *
 * Tensor-core path (kernels/mla_tc.cuh has the tiling, the thread roles and the epilogues):
 *   launch 1, GEMM1: latent (M x rank, in the dtype, like eager) = hidden @ w_down; tiles 64 x 256 for M <= 128,
 *     else 128 x 128 (MLA_GEMM1_BN: twice the tiles of 128 x 256, so prefill needs no k-split), or 64 x 128 where
 *     the 128 x 128 tiles number fewer than half the SMs (MLA_GEMM1_BM64; two_stage.cuh's gemm1_rows64), split
 *     along d so that tiles x splits fill the SMs once (split-k partials reduced by the splits themselves, slice
 *     by slice); triggers its dependents at entry. At decode the k-splits of a tile run as one cluster of 8 or 16
 *     CTAs and are summed through distributed shared memory instead (two_stage.cuh's g1_cluster_size).
 *   launch 2, GEMM2: out (M x 2N) = latent @ [w_up_k | w_up_v], persistent grid of min(tiles, #SMs) CTAs, tiles
 *     BM x 256 in M-major order (the CTAs working at one time share a few w_up column tiles through L2); B tiles
 *     from w_up_k or w_up_v by tile column; epilogue TMA-stores the stacked rows, overlapped with the next tile.
 *     Launched with programmatic stream serialization: its prologue (barrier setup, tensor-map and first w_up
 *     tile prefetch) overlaps GEMM1's tail; its producer waits (griddepcontrol.wait) before reading the latent.
 *
 * SIMT path, stage one (cuBLAS, PyTorch's handle on the current stream): latent(M, rank) in fp32.
 *   float32 : cublasSgemm with CUBLAS_DEFAULT_MATH forced for the call (no TF32), handle mode restored.
 *   bf16/f16: cublasGemmEx, A/B in the dtype, C = CUDA_R_32F, CUBLAS_COMPUTE_32F.
 * SIMT path, stage two (one kernel): out viewed as (M, 2N) = latent (M x rank) @ B (rank x 2N), B = [w_up_k | w_up_v]
 *   (column c < N reads w_up_k[:, c], else w_up_v[:, c - N]).
 *   Grid: x = row tiles of BM, y = column tiles of BN (consecutive blocks share one B column stripe -> L2).
 *   K loop over rank in chunks of BK; A chunk (BM x BK fp32) and B chunk (BK x BN, dtype) are copied with
 *   16-byte cp.async (zero-fill outside the tensors; plain loads when rows are not 16-byte aligned) into a
 *   STAGES-deep shared-memory ring, one __syncthreads per chunk.
 *   Thread (ty, tx) owns rows ty*TM .. ty*TM+TM-1 and columns tx*4 + h*(BN/(TN/4)) + {0..3}, h < TN/4:
 *   per k it reads TM A values (float4 over 4 k, broadcast in the warp) and TN B values (float4 / 8-byte,
 *   a warp's reads contiguous: conflict-free) and does TM*TN FMAs. Output stores are float4 (fp32) or
 *   8-byte (4 x bf16/f16) when 2N % 4 == 0, scalar with bounds otherwise.
 *   Configurations: BIG   BM=128, BN=128, BK=16, TM=8, TN=8, 256 threads, 3 stages (~167 regs: 1 block/SM)
 *                   SMALL BM=32,  BN=64,  BK=16, TM=4, TN=4, 128 threads, 3 stages (when BIG gives < #SMs blocks)
 */

#include "two_stage.cuh"

at::Tensor forward(at::Tensor hidden, at::Tensor w_down, at::Tensor w_up_k, at::Tensor w_up_v,
                   int64_t kv_heads) {
    return two_stage_forward<false>(hidden, w_down, w_up_k, w_up_v, kv_heads);
}
