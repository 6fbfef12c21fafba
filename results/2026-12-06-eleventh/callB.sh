#!/usr/bin/env bash
# Session 2026-12-06 (eleventh), call B, on callA's warm machine (its builds are cached under build/): the seed
# float32 row and the issue-9 targets (3 rounds, the breakdown, each row's clock and now its power and power-cap
# share), then on an H200 README's bf16 / fp16 preset sweep with what is left of CALL_S.
#   KVBENCH_COMMIT=<sha> CALL_S=<the call's seconds> bash results/2026-12-06-eleventh/callB.sh
. scripts/device_call_lib.sh callB
gpu_info
targets_run two_stage,two_stage_pp,cutlass_2gemm,fused_tiled
pack
grep -q H200 "$w/gpu.txt" || { stamp "not an H200: no sweep"; exit 0; }
left=$(( ${CALL_S:-580} - $(date +%s) + t0 ))
preset_sweep sweep-16bit bfloat16,float16 $(( left > 20 ? left : 20 ))
stamp done
