#!/usr/bin/env bash
# Call M of 2026-12-07 (eighteenth), a fresh machine: every variant built with no GPU visible, then the issue-9
# targets (3 rounds; no H200 has timed them since b958278), then the whole GPU suite with the seconds CALL_S leaves
# (its last green run, caf761b, predates 884fab0's TMA-store GEMM1 epilogue). The fifteenth's callH.sh ran the
# tests first; the targets come first here, because a suite cut short can finish on the warm machine (the builds
# are cached) and a lent H200 is the scarcer thing.
#   CALL_S=<seconds> KVBENCH_COMMIT=$(git rev-parse --short HEAD) KVBENCH_CUTLASS_DIR=third_party/cutlass-subset \
#     bash results/2026-12-07-eighteenth/callM.sh      (third_party/cutlass-subset carried)
. scripts/device_call_lib.sh callM
gpu_info
build_everything
pack
targets_run two_stage,two_stage_pp,cutlass_2gemm,fused_tiled
pack
left=$(( ${CALL_S:-585} - ($(date +%s) - t0) - 10 ))
[ "$left" -gt 60 ] && gpu_tests gpu-tests.log "$left"
stamp done
