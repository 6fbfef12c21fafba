#!/usr/bin/env bash
# Session 2026-12-07 (fourteenth), call A, a fresh machine: every variant built with no GPU visible (this tree:
# the CTA-pair rule of a837256 and the one cluster-count cache of hop::max_active_clusters_once), beside the
# thirteenth session's pair probe build (MLA_PP_CLUSTER 1 / 2 at 6 stages); the whole GPU suite (the pair test shape
# included); the issue-9 targets (3 rounds); then, while the call has time, callB's pair probe over the presets.
#   KVBENCH_COMMIT=$(git rev-parse --short HEAD) KVBENCH_CUTLASS_DIR=third_party/cutlass-subset \
#     bash results/2026-12-07-fourteenth/callA.sh      (third_party/cutlass-subset carried)
. scripts/device_call_lib.sh callA
gpu_info
AX="MLA_PP_STAGES=6; MLA_PP_CLUSTER=1,2"
probe_build pairs two_stage_pp "$AX" &
build_everything
wait
pack
gpu_tests gpu-tests.log 330
pack
targets_run two_stage,two_stage_pp,cutlass_2gemm,fused_tiled
pack
left=$(( ${CALL_S:-585} - ($(date +%s) - t0) ))  # CALL_S: the command seconds the session can still pay for
if [ "$left" -gt 60 ]; then
  probe_run pairs "$left" two_stage_pp "$AX" --shape deepseek-v2-lite,deepseek-v2,deepseek-v3,kimi-k2,minicpm3 \
    --tokens 4096,512 --baselines torch-2gemm --no-breakdown
fi
stamp done
