#!/usr/bin/env bash
# Session 2026-12-07 (thirteenth), call E, callD cut down to what the last device minutes hold: the pair probe
# (MLA_PP_CLUSTER 1 / 2 at 6 stages) at kimi-k2 512 / 4096 and MiniCPM3 4096 (bf16, 2 rounds), the presets between
# callC's DeepSeek-V3 (pairs faster) and V2-Lite (pairs slower).
#   KVBENCH_COMMIT=<sha> KVBENCH_CUTLASS_DIR=third_party/cutlass-subset bash results/2026-12-07-thirteenth/callE.sh
. scripts/device_call_lib.sh callE
gpu_info
P=/tmp/probe_pairs; AX="MLA_PP_STAGES=6; MLA_PP_CLUSTER=1,2"
rm -rf "$P"; mkdir -p "$P"
PROBE_DIR=$P PYTHON=$py nb bash scripts/probe_axis.sh two_stage_pp "$AX" --shape seed --dtype bfloat16 \
  --baselines eager --jobs 2 > "$w/build.log" 2>&1
stamp "built: $(grep -c 'built in' "$w/build.log") builds"
pack
PROBE_DIR=$P PYTHON=$py timeout -s INT 60 bash scripts/probe_axis.sh two_stage_pp "$AX" \
  --shape kimi-k2 --tokens 512,4096 --shape b=1,s=4096,d=2560,rank=256,heads=40,head_dim=64 --dtype bfloat16 \
  --baselines torch-2gemm --rounds 2 --allow-failures --no-breakdown \
  --json "$w/pairs-e.json" > "$w/pairs-e.log" 2>&1 < /dev/null
stamp "pairs: exit $?"
rows_summary "$w/pairs-e.json" 2>&1 | grep two_stage_pp | cut -c1-100
stamp done
