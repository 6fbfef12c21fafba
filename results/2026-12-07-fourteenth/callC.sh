#!/usr/bin/env bash
# Session 2026-12-07 (fourteenth), call C, for a session with under 500 s of device time left (callA never started):
# the GPU suite's correctness tests of the three variants on the tensor-core engine (two_stage, two_stage_pp with the
# CTA-pair rule and its test shape, fused_tiled; the suite's plan builds every variant first), then the issue-9
# targets of two_stage_pp and cutlass_2gemm if CALL_S leaves time.
#   CALL_S=<s> KVBENCH_COMMIT=$(git rev-parse --short HEAD) KVBENCH_CUTLASS_DIR=third_party/cutlass-subset \
#     bash results/2026-12-07-fourteenth/callC.sh      (third_party/cutlass-subset carried)
. scripts/device_call_lib.sh callC
gpu_info
gpu_tests gpu-tests-tc.log $(( ${CALL_S:-450} - 20 )) tests/test_gpu.py \
  -k "test_variant_correct_everywhere and (two_stage or fused_tiled) and not triton"
pack
left=$(( ${CALL_S:-450} - ($(date +%s) - t0) ))
[ "$left" -gt 75 ] && targets_run two_stage_pp,cutlass_2gemm
stamp done
