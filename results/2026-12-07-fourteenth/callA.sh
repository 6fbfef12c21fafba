#!/usr/bin/env bash
# Session 2026-12-07 (fourteenth), call A, a fresh machine: every variant built with no GPU visible (this tree:
# the CTA-pair rule of a837256 and the one cluster-count cache of hop::max_active_clusters_once), beside the
# thirteenth session's pair probe build (MLA_PP_CLUSTER 1 / 2 at 6 stages); the whole GPU suite (the pair test shape
# included); the issue-9 targets (3 rounds); then, while the call has time, callB's pair probe over the presets.
#   KVBENCH_COMMIT=$(git rev-parse --short HEAD) KVBENCH_CUTLASS_DIR=third_party/cutlass-subset \
#     bash results/2026-12-07-fourteenth/callA.sh      (third_party/cutlass-subset carried)
. scripts/device_call_lib.sh callA
gpu_info
P=/tmp/probe_pairs; AX="MLA_PP_STAGES=6; MLA_PP_CLUSTER=1,2"
rm -rf "$P"; mkdir -p "$P"
(PROBE_DIR=$P PYTHON=$py nb bash scripts/probe_axis.sh two_stage_pp "$AX" --shape seed --dtype bfloat16 \
  --baselines eager --jobs 4 > "$w/probe-build.log" 2>&1) &
build_everything
wait
stamp "probe built: $(grep -c 'built in' "$w/probe-build.log") builds"
pack
gpu_tests gpu-tests.log 330
pack
targets_run two_stage,two_stage_pp,cutlass_2gemm,fused_tiled
pack
left=$(( ${CALL_S:-585} - ($(date +%s) - t0) ))  # CALL_S: the command seconds the session can still pay for
if [ "$left" -gt 60 ]; then
  PROBE_DIR=$P PYTHON=$py timeout -s INT "$left" bash scripts/probe_axis.sh two_stage_pp "$AX" \
    --shape deepseek-v2-lite,deepseek-v2,deepseek-v3,kimi-k2,minicpm3 --tokens 4096,512 --dtype bfloat16 \
    --baselines torch-2gemm --rounds 3 --allow-failures --no-breakdown \
    --json "$w/pairs-presets.json" --markdown "$w/pairs-presets.md" > "$w/pairs-presets.log" 2>&1 < /dev/null
  stamp "pairs over the presets: exit $?, $(grep '^wall time' "$w/pairs-presets.log")"
  rows_summary "$w/pairs-presets.json" > "$w/pairs-presets-summary.txt" 2>&1
  grep two_stage_pp "$w/pairs-presets-summary.txt" | cut -c1-100
fi
stamp done
