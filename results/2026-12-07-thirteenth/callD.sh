#!/usr/bin/env bash
# Session 2026-12-07 (thirteenth), call D: callC's pair probe (MLA_PP_CLUSTER 1 / 2 at 6 stages) over every preset at
# 512 and 4096 tokens (bf16, 3 rounds), to see which shapes the pairs help (callC: V3 faster, V2-Lite slower).
#   KVBENCH_COMMIT=<sha> KVBENCH_CUTLASS_DIR=third_party/cutlass-subset bash results/2026-12-07-thirteenth/callD.sh
. scripts/device_call_lib.sh callD
gpu_info
P=/tmp/probe_pairs; AX="MLA_PP_STAGES=6; MLA_PP_CLUSTER=1,2"
rm -rf "$P"; mkdir -p "$P"
PROBE_DIR=$P PYTHON=$py nb bash scripts/probe_axis.sh two_stage_pp "$AX" --shape seed --dtype bfloat16 \
  --baselines eager --jobs 4 > "$w/build.log" 2>&1
stamp "built: $(grep -c 'built in' "$w/build.log") builds"
PROBE_DIR=$P PYTHON=$py timeout -s INT 200 bash scripts/probe_axis.sh two_stage_pp "$AX" \
  --shape deepseek-v2-lite,deepseek-v2,deepseek-v3,kimi-k2,minicpm3 --tokens 512,4096 --dtype bfloat16 \
  --baselines torch-2gemm --rounds 3 --allow-failures --no-breakdown \
  --json "$w/pairs-presets.json" --markdown "$w/pairs-presets.md" > "$w/pairs-presets.log" 2>&1 < /dev/null
stamp "pairs over the presets: exit $?, $(grep '^wall time' "$w/pairs-presets.log")"
rows_summary "$w/pairs-presets.json" > "$w/pairs-presets-summary.txt" 2>&1
grep two_stage_pp "$w/pairs-presets-summary.txt" | cut -c1-100
stamp done
