#!/usr/bin/env bash
# Session 2026-12-07 (thirteenth), call C: the ping-pong pairs again (MLA_PP_CLUSTER 2, 6 stages), the remote stage
# release at CTA scope since 9a1cd45 (never measured: the twelfth session's callC could not start). Two builds
# (pairs off / on) with no GPU visible; a check at the pair test shapes (bf16, fp16); DeepSeek-V3 512 / 4096 and
# V2-Lite 4096 timed (bf16, 3 rounds); ncu's cycles and tensor-pipe share of the pair build's launches (V3 4096).
#   KVBENCH_COMMIT=<sha> KVBENCH_CUTLASS_DIR=third_party/cutlass-subset bash results/2026-12-07-thirteenth/callC.sh
. scripts/device_call_lib.sh callC
gpu_info
P=/tmp/probe_pairs; AX="MLA_PP_STAGES=6; MLA_PP_CLUSTER=1,2"
rm -rf "$P"; mkdir -p "$P"
Q=/tmp/probe_pairs_ncu; rm -rf "$Q"; mkdir -p "$Q"; cp kernels/*.cuh "$Q/"  # the pair build alone, for ncu
sed 's|^#include "two_stage.cuh"|#define MLA_PP_CLUSTER 2\n#include "two_stage.cuh"|' kernels/two_stage_pp.cu > "$Q/two_stage_pp_pairs.cu"
(PYTHONPATH=. nb $py scripts/profile_variant.py "$Q/two_stage_pp_pairs.cu" seed bfloat16 1 > "$w/ncu-build.log" 2>&1) &
PROBE_DIR=$P PYTHON=$py nb bash scripts/probe_axis.sh two_stage_pp "$AX" --shape seed --dtype bfloat16 \
  --baselines eager --jobs 4 > "$w/build.log" 2>&1
wait
stamp "built: $(grep -c 'built in' "$w/build.log") builds"
S="b=1,s=200,d=264,rank=40,heads=4,head_dim=64 b=2,s=2000,d=64,rank=16,heads=16,head_dim=128"
S="$S b=1,s=1380,d=200,rank=136,heads=16,head_dim=128 b=3,s=50,d=1000,rank=96,heads=2,head_dim=128"
args=(); for s in $S; do args+=(--shape "$s"); done
PROBE_DIR=$P PYTHON=$py timeout -s INT 60 bash scripts/probe_axis.sh two_stage_pp "$AX" "${args[@]}" \
  --dtype bfloat16,float16 --baselines eager --rounds 1 --budget 0.02 --no-breakdown --allow-failures \
  --json "$w/check.json" > "$w/check.log" 2>&1 < /dev/null
stamp "check: exit $?"
$py - "$w/check.json" <<'PY'
import collections, json, sys
print(dict(collections.Counter((r["variant"], r["status"]) for r in json.load(open(sys.argv[1]))["rows"])))
PY
pack
PROBE_DIR=$P PYTHON=$py timeout -s INT 120 bash scripts/probe_axis.sh two_stage_pp "$AX" \
  --shape deepseek-v3,deepseek-v2-lite --tokens 512,4096 \
  --dtype bfloat16 --baselines torch-2gemm --rounds 3 --allow-failures \
  --json "$w/pairs.json" --markdown "$w/pairs.md" > "$w/pairs.log" 2>&1 < /dev/null
stamp "pairs: exit $?, $(grep '^wall time' "$w/pairs.log")"
rows_summary "$w/pairs.json" > "$w/pairs-summary.txt" 2>&1; cat "$w/pairs-summary.txt"
pack
m=gpu__time_duration.sum,sm__cycles_elapsed.avg,sm__cycles_elapsed.avg.per_second
m=$m,sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum
timeout 90 ncu --clock-control none --cache-control none --profile-from-start off --metrics "$m" --csv \
  $py scripts/profile_variant.py "$Q/two_stage_pp_pairs.cu" deepseek-v3:4096 bfloat16 3 > "$w/ncu-pairs.csv" 2> "$w/ncu-pairs.log"
stamp "ncu pairs: exit $?"
stamp done
