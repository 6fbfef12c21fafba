#!/usr/bin/env bash
# Session 2026-12-06 (ninth), run on an H100 in the tenth (results/2026-12-06-tenth/callF-h100/): the final tree's call (kernels/ build
# 1764445's code). Every variant built with no GPU visible, the seed float32 row and the issue-9 targets run (3 rounds, with the breakdown) with scripts/targets.py, the whole
# GPU suite, then README's bf16 / fp16 preset sweep (1 round) with what is left of CALL_S (on an H200; on any other
# GPU the sweep is skipped: README's results section is the H200's).
#   KVBENCH_COMMIT=<sha> CALL_S=<the call's seconds> bash results/2026-12-06-ninth/callF.sh     (third_party/cutlass carried)
. scripts/device_call_lib.sh callF
gpu_info
build_everything
targets_run two_stage,two_stage_pp,cutlass_2gemm,fused_tiled
pack
gpu_tests gpu-tests.log 240
pack
grep -q H200 "$w/gpu.txt" || { stamp "not an H200: no sweep"; exit 0; }
left=$(( ${CALL_S:-580} - $(date +%s) + t0 ))
preset_sweep sweep-16bit bfloat16,float16 $(( left > 20 ? left : 20 ))
stamp done
