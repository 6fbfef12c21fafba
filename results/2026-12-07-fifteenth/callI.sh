#!/usr/bin/env bash
# For the next session, call I (after callH on the same warm machine, whose builds it finds cached): on an H200 the
# bf16 / fp16 preset sweep (target 5's V2-Lite 4096 and kimi-k2 4096 groups, level with torch-2gemm on the H100);
# then, while CALL_S allows, ncu of GEMM1 at V2-Lite and V3 4096 for two_stage_pp and cutlass_2gemm: the epilogue's
# samples and L2 writes after the TMA stores, and the main-loop feed gap.
#   CALL_S=<seconds> KVBENCH_COMMIT=$(git rev-parse --short HEAD) KVBENCH_CUTLASS_DIR=third_party/cutlass-subset \
#     bash results/2026-12-07-fifteenth/callI.sh      (third_party/cutlass-subset carried)
. scripts/device_call_lib.sh callI
gpu_info
if grep -q H200 "$w/gpu.txt"; then preset_sweep sweep-16bit bfloat16,float16 200; pack; fi
for v in two_stage_pp cutlass_2gemm; do  # the builds (cached after callH), no GPU
  PYTHONPATH=. nb $py scripts/profile_variant.py "$v" seed bfloat16 1 > "$w/build-$v.log" 2>&1
done
for spec in "two_stage_pp deepseek-v2-lite:4096" "cutlass_2gemm deepseek-v2-lite:4096" "two_stage_pp deepseek-v3:4096" \
    "cutlass_2gemm deepseek-v3:4096"; do
  [ $(( $(date +%s) - t0 )) -gt $(( ${CALL_S:-585} - 25 )) ] && { stamp "no time for ncu $spec"; break; }
  ncu_gemm1 $spec
done
stamp done
