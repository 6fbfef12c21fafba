#!/usr/bin/env bash
# Session 2026-12-07 (thirteenth), call A, a fresh machine: the warpgroup index broadcast from lane 0 (KV_WG_BROADCAST,
# hopper.cuh), so wgmma descriptors stay in uniform registers. Every variant built with no GPU visible, beside one
# probe folder holding two_stage_pp, two_stage and fused_tiled at KV_WG_BROADCAST 0 / 1; the probe timed at
# DeepSeek-V3 and V2-Lite at 64 / 512 / 4096 tokens (bf16, 3 rounds); then the issue-9 targets (3 rounds).
#   KVBENCH_COMMIT=<sha> KVBENCH_CUTLASS_DIR=third_party/cutlass-subset bash results/2026-12-07-thirteenth/callA.sh
#   (third_party/cutlass-subset carried: scripts/cutlass_subset.sh)
. scripts/device_call_lib.sh callA
gpu_info
P=/tmp/probe_wg; AX="KV_WG_BROADCAST=0,1"
rm -rf "$P"; mkdir -p "$P"
for v in two_stage fused_tiled; do
  awk -v axes="$AX" '{ print } /^\/\/ dtypes:/ && !done { print "// axes: " axes; done = 1 }' kernels/$v.cu > "$P/$v.cu"
done
(PROBE_DIR=$P PYTHON=$py nb bash scripts/probe_axis.sh two_stage_pp "$AX" --shape seed --dtype bfloat16 \
  --baselines eager --jobs 6 > "$w/probe-build.log" 2>&1) &
build_everything
wait
stamp "probe built: $(grep -c 'built in' "$w/probe-build.log") builds; $(grep -c 'FAILED' "$w/probe-build.log") failed"
pack
PROBE_DIR=$P PYTHON=$py timeout -s INT 200 bash scripts/probe_axis.sh two_stage_pp "$AX" \
  --shape deepseek-v3,deepseek-v2-lite --tokens 64,512,4096 --dtype bfloat16 --baselines torch-2gemm \
  --rounds 3 --allow-failures --json "$w/probe.json" --markdown "$w/probe.md" > "$w/probe.log" 2>&1 < /dev/null
stamp "probe: exit $?, $(grep '^wall time' "$w/probe.log")"
rows_summary "$w/probe.json" > "$w/probe-summary.txt" 2>&1; cat "$w/probe-summary.txt"
pack
targets_run two_stage,two_stage_pp,cutlass_2gemm,fused_tiled
stamp done
