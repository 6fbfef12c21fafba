#!/usr/bin/env bash
# Session 2026-12-07 (twelfth), call A, a fresh machine (results/NOTES.md, "the ping-pong GEMM2's stages and pairs"):
# two_stage_pp's ping-pong GEMM2 at MLA_PP_STAGES 5 / 6 (6: half-tile epilogue staging) x MLA_PP_CLUSTER 1 / 2 (2: CTA
# pairs with w_up multicast), built beside cutlass_2gemm in one probe folder with no GPU visible; a check-only run on
# the M > 128 test shapes (pairs, odd row-tile counts, partial tiles); the timed probe at DeepSeek-V3 and V2-Lite
# 512 / 4096 (bf16, 3 rounds); then ncu --set full of the GEMM2 launch of two_stage_pp (default build), of
# cutlass_2gemm, and of the 6-stage pair build, at DeepSeek-V3 4096 with the caches as the call leaves them.
#   KVBENCH_COMMIT=<sha> bash results/2026-12-07-twelfth/callA.sh   (third_party/cutlass carried)
. scripts/device_call_lib.sh callA
gpu_info
P=/tmp/probe_pp
AX="MLA_PP_STAGES=5,6; MLA_PP_CLUSTER=1,2"
rm -rf "$P"; mkdir -p "$P"; cp kernels/cutlass_2gemm.cu "$P/"
PROBE_DIR=$P PYTHON=$py nb bash scripts/probe_axis.sh two_stage_pp "$AX" --shape seed --dtype bfloat16 \
  --baselines eager --jobs 8 > "$w/build.log" 2>&1
stamp "built: $(grep -c 'built in' "$w/build.log") builds; $(grep '^wall time' "$w/build.log")"
S="b=1,s=512,d=7168,rank=512,heads=128,head_dim=128 b=3,s=50,d=1000,rank=96,heads=2,head_dim=128"
S="$S b=1,s=200,d=264,rank=40,heads=4,head_dim=64 b=2,s=2000,d=64,rank=16,heads=16,head_dim=128"
S="$S b=1,s=1380,d=200,rank=136,heads=16,head_dim=128 b=7,s=129,d=520,rank=72,heads=6,head_dim=40"
args=(); for s in $S; do args+=(--shape "$s"); done
PROBE_DIR=$P PYTHON=$py timeout -s INT 90 bash scripts/probe_axis.sh two_stage_pp "$AX" "${args[@]}" \
  --dtype bfloat16,float16 --baselines eager --rounds 1 --budget 0.02 --no-breakdown --allow-failures \
  --json "$w/check.json" > "$w/check.log" 2>&1 < /dev/null
stamp "check: exit $?"
$py - "$w/check.json" <<'PY'
import collections, json, sys
print(dict(collections.Counter((r["variant"], r["status"]) for r in json.load(open(sys.argv[1]))["rows"])))
PY
pack
PROBE_DIR=$P PYTHON=$py timeout -s INT 200 bash scripts/probe_axis.sh two_stage_pp "$AX" \
  --shape deepseek-v3,deepseek-v2-lite --tokens 512,4096 --dtype bfloat16 --baselines torch-2gemm --rounds 3 \
  --json "$w/probe.json" --markdown "$w/probe.md" > "$w/probe.log" 2>&1 < /dev/null
stamp "probe: exit $?, $(grep '^wall time' "$w/probe.log")"
rows_summary "$w/probe.json" > "$w/probe-summary.txt" 2>&1; cat "$w/probe-summary.txt"
pack
# ncu --set full of one GEMM2 launch each (the second call; the first runs outside the profiled range)
sed 's|^#include "two_stage.cuh"|#define MLA_PP_STAGES 6\n#define MLA_PP_CLUSTER 2\n#include "two_stage.cuh"|' \
  kernels/two_stage_pp.cu > "$P/two_stage_pp_s6c2.cu"
for v in two_stage_pp cutlass_2gemm "$P/two_stage_pp_s6c2.cu"; do
  [ $(( $(date +%s) - t0 )) -gt 400 ] && { stamp "no time for ncu of $v"; break; }
  n="$w/ncu-$(basename "$v" .cu)-v3-4096"
  PYTHONPATH=. nb $py scripts/profile_variant.py "$v" seed bfloat16 1 > /dev/null 2>&1  # the build, no GPU
  timeout 100 ncu --clock-control none --cache-control none --profile-from-start off --set full \
    -k "regex:Pingpong|gemm2_pingpong" --launch-skip 1 --launch-count 1 -f -o "$n" \
    $py scripts/profile_variant.py "$v" deepseek-v3:4096 bfloat16 2 > "$n.log" 2>&1
  stamp "ncu $v: exit $?"
  ncu --import "$n.ncu-rep" --csv --page details > "$n.csv" 2>&1
  ncu --import "$n.ncu-rep" --csv --page raw > "$n-raw.csv" 2>&1
  ncu --import "$n.ncu-rep" --csv --page source --print-source sass > "$n-sass.csv" 2>&1
  rm -f "$n.ncu-rep"
  $py scripts/ncu_summary.py "$n.csv" > "$n.summary" 2>&1; head -40 "$n.summary"
  $py scripts/ncu_hotspots.py "$n-sass.csv" 25 > "$n.hotspots" 2>&1; rm -f "$n-sass.csv"
  pack
done
stamp done
