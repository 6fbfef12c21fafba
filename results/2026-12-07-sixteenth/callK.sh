#!/usr/bin/env bash
# Call K of 2026-12-07 (sixteenth), the lean fallback of the fifteenth's callH.sh when little device time is left
# (≈ 300 s on a fresh machine; the targets only while CALL_S leaves room): only the variants built on the code changed since the last green suite (caf761b:
# mla_tc.cuh, mla_pingpong.cuh, two_stage.cuh) are built and tested: their GPU tests, then their target rows.
#   KVBENCH_COMMIT=$(git rev-parse --short HEAD) KVBENCH_CUTLASS_DIR=third_party/cutlass-subset \
#     bash results/2026-12-07-sixteenth/callK.sh
. scripts/device_call_lib.sh callK
gpu_info
nb $py run_bench.py --variant two_stage,two_stage_pp,fused_tiled --shape seed --json "$w/build.json" > "$w/build.log" 2>&1
stamp "built: $(grep '^wall time' "$w/build.log")"
gpu_tests gpu-tests.log 200 -k "two_stage or fused_tiled"
pack
if [ $(( $(date +%s) - t0 )) -lt $(( ${CALL_S:-585} - 220 )) ]; then targets_run two_stage,two_stage_pp,fused_tiled
else stamp "no time for the targets"; fi
stamp done
