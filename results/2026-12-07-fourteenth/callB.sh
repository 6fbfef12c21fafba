#!/usr/bin/env bash
# Session 2026-12-07 (fourteenth), call B (after callA on the same warm machine, whose builds it finds cached; on a
# fresh one it builds what it runs): the thirteenth session's callD, the pair probe (MLA_PP_CLUSTER 1 / 2 at 6
# stages) over every preset at 512 and 4096 tokens (bf16, 3 rounds), to place the 25 MB pair bar; then ncu --set full
# with the SASS source page of one GEMM1 launch at DeepSeek-V3 4096 (bf16, the caches as the call leaves them) of
# two_stage_pp (mla_tc_kernel 128 x 128) and of cutlass_2gemm, for the GEMM1 cycle gap (93 k against 82-87 k).
# On an H200 first README's bf16 / fp16 preset sweep (1 round), the committed sweep at this tree.
#   KVBENCH_COMMIT=$(git rev-parse --short HEAD) KVBENCH_CUTLASS_DIR=third_party/cutlass-subset \
#     bash results/2026-12-07-fourteenth/callB.sh      (third_party/cutlass-subset carried)
. scripts/device_call_lib.sh callB
gpu_info
if grep -q H200 "$w/gpu.txt"; then preset_sweep sweep-16bit bfloat16,float16 200; pack; fi
AX="MLA_PP_STAGES=6; MLA_PP_CLUSTER=1,2"
[ -d /tmp/probe_pairs ] || probe_build pairs two_stage_pp "$AX"  # callA's builds, on a fresh machine
probe_run pairs 180 two_stage_pp "$AX" --shape deepseek-v2-lite,deepseek-v2,deepseek-v3,kimi-k2,minicpm3 \
  --tokens 4096,512 --baselines torch-2gemm --no-breakdown
pack
# GEMM1 is the first launch of each call; profile_variant.py's 2 profiled calls: the second call's GEMM1
for v in two_stage_pp cutlass_2gemm; do
  [ $(( $(date +%s) - t0 )) -gt 430 ] && { stamp "no time for ncu of $v"; break; }
  k="regex:mla_tc_kernel"; skip=1
  [ "$v" = cutlass_2gemm ] && { k="regex:device_kernel"; skip=2; }
  n="$w/ncu-$v-gemm1-v3-4096"
  PYTHONPATH=. nb $py scripts/profile_variant.py "$v" seed bfloat16 1 > /dev/null 2>&1  # the build, no GPU
  timeout 100 ncu --clock-control none --cache-control none --profile-from-start off --set full \
    --import-source no -k "$k" --launch-skip $skip --launch-count 1 -f -o "$n" \
    $py scripts/profile_variant.py "$v" deepseek-v3:4096 bfloat16 2 > "$n.log" 2>&1
  stamp "ncu $v: exit $?"
  ncu --import "$n.ncu-rep" --csv --page details > "$n.csv" 2>&1
  ncu --import "$n.ncu-rep" --csv --page source --print-source sass > "$n-sass.csv" 2>&1
  rm -f "$n.ncu-rep"
  $py scripts/ncu_summary.py "$n.csv" > "$n.summary" 2>&1; head -40 "$n.summary"
  $py scripts/ncu_hotspots.py "$n-sass.csv" 30 > "$n.hotspots" 2>&1
  gzip -f "$n-sass.csv"
  pack
done
stamp done
