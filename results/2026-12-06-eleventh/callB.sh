#!/usr/bin/env bash
# Session 2026-12-06 (eleventh), call B, on callA's warm machine (its builds are cached under build/): on an H200,
# README's bf16 / fp16 preset sweep with what is left of CALL_S; on any GPU, first the GPU tests callA's cut left
# out when RERUN names them (pytest -k).
#   KVBENCH_COMMIT=<sha> CALL_S=<the call's seconds> [RERUN="<-k expression>"] bash results/2026-12-06-eleventh/callB.sh
. scripts/device_call_lib.sh callB
gpu_info
[ -n "${RERUN:-}" ] && { gpu_tests gpu-tests-rest.log ${RERUN_S:-200} -k "$RERUN"; pack; }
grep -q H200 "$w/gpu.txt" || { stamp "not an H200: no sweep"; exit 0; }
left=$(( ${CALL_S:-580} - $(date +%s) + t0 ))
preset_sweep sweep-16bit bfloat16,float16 $(( left > 20 ? left : 20 ))
stamp done
