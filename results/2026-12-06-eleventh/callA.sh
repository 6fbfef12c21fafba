#!/usr/bin/env bash
# Session 2026-12-06 (eleventh), call A: every variant built with no GPU visible; the seed float32 row and the
# issue-9 targets (3 rounds, the breakdown, each row's clock and now its power and power-cap share); then the whole
# GPU suite with what is left of CALL_S (callF's 240 s cut it after 55 of 64 tests; this tree adds the NVML test).
#   KVBENCH_COMMIT=<sha> CALL_S=<the call's seconds> bash results/2026-12-06-eleventh/callA.sh  (third_party carried)
. scripts/device_call_lib.sh callA
gpu_info
build_everything
pack
targets_run two_stage,two_stage_pp,cutlass_2gemm,fused_tiled
pack
left=$(( ${CALL_S:-585} - $(date +%s) + t0 ))
gpu_tests gpu-tests.log $(( left > 30 ? left : 30 ))
stamp done
