#!/usr/bin/env bash
# Session 2026-12-07 (fifteenth), call F (a fresh machine): CUTLASS's two producer differences in GEMM1's SASS
# (callE), probed in mla_tc's producer: MLA_TMA_HINT 1 (the TMA loads carry CUTLASS's L2 cache-hint operand,
# EVICT_NORMAL) and MLA_A_FIRST 1 (a stage's A box issued before its B boxes), two_stage_pp (bf16, 3 rounds) at
# DeepSeek-V3 and V2-Lite, 512 and 4096 tokens, cutlass_2gemm beside; then ncu of GEMM1 at V2-Lite 4096 for the
# build with both on, if the call has time.
#   KVBENCH_COMMIT=$(git rev-parse --short HEAD) KVBENCH_CUTLASS_DIR=third_party/cutlass-subset \
#     bash results/2026-12-07-fifteenth/callF.sh      (third_party/cutlass-subset carried)
. scripts/device_call_lib.sh callF
gpu_info
AX="MLA_TMA_HINT=0,1; MLA_A_FIRST=0,1"
probe_build feed two_stage_pp "$AX"
pack
probe_run feed 150 two_stage_pp "$AX" --shape deepseek-v3,deepseek-v2-lite --tokens 4096,512 \
  --baselines torch-2gemm
pack
# GEMM1's device us of every row (the breakdown's first kernel)
grep "two_stage_pp" "$w/feed-summary.txt" | cut -c1-130
stamp done
