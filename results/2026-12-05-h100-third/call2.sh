#!/usr/bin/env bash
# This session's second device call (results/NOTES.md, "Session 2026-12-05 (third)"): ncu profiles of the three
# places the open targets are held (cutlass_2gemm's two GEMMs at V3 4096 and V2-Lite 4096, targets 1-2;
# two_stage_pp at V3 512, target 3, and V3 64, target 4), and a correctness check of the kept GEMM2 at the new test
# shape. From the repository root, third_party/cutlass carried:
#   KVBENCH_COMMIT=<sha> bash results/2026-12-05-h100-third/call2.sh
set -uo pipefail
export CUDA_HOME=/usr/local/cuda PATH=/usr/local/cuda/bin:$PATH TORCH_CUDA_ARCH_LIST=9.0a PYTHONUNBUFFERED=1
export KVBENCH_CUTLASS_DIR=third_party/cutlass
o=${OUT:-/tmp/out}; w=/tmp/call2; mkdir -p "$o" "$w"
pack() { tar -czf "$o/call2.tgz" -C "$w" .; }
trap pack EXIT
t0=$(date +%s); stamp() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv; uname -r; } > "$w/machine.txt" 2>&1
cat "$w/machine.txt"
# ---- build the two variants with no GPU visible (profile_variant.py then finds them cached)
env CUDA_VISIBLE_DEVICES= timeout 300 python3 run_bench.py --variant two_stage_pp,cutlass_2gemm --shape seed \
  --json "$w/build.json" > "$w/build.log" 2>&1 < /dev/null
stamp "built: $(grep -c FAILED "$w/build.log") failed"
# ---- the kept GEMM2 at 1252 tiles (tests/test_gpu.py's new shape), both 16-bit dtypes
timeout 60 python3 scripts/tc_check.py two_stage_pp bfloat16,float16 "b=2,s=20000,d=64,rank=136,heads=2,head_dim=128" \
  > "$w/tc-check.log" 2>&1
stamp "tc_check: exit $?"; tail -3 "$w/tc-check.log"
# ---- profiles: one call after an unprofiled one, every kernel of it, the full set; text, CSV, raw metrics, SASS
for item in cutlass_2gemm,deepseek-v3:4096,bfloat16 two_stage_pp,deepseek-v3:64,bfloat16 \
            two_stage_pp,deepseek-v3:512,bfloat16 cutlass_2gemm,deepseek-v2-lite:4096,bfloat16; do
  IFS=, read -r v s d <<< "$item"
  name="$w/ncu-$v-${s//:/-}-$d"
  timeout 110 ncu --clock-control none --profile-from-start off --set full --launch-count 3 -f -o "$name" \
    python3 scripts/profile_variant.py "$v" "$s" "$d" 2 > "$name.log" 2>&1
  stamp "ncu $v $s $d: exit $?"
  ncu --import "$name.ncu-rep" --page details > "$name.txt" 2>&1
  ncu --import "$name.ncu-rep" --csv --page details > "$name.csv" 2>&1
  ncu --import "$name.ncu-rep" --csv --page raw 2>&1 | gzip > "$name-raw.csv.gz"
  ncu --import "$name.ncu-rep" --csv --page source --print-source sass > "$name-sass.csv" 2>&1
  rm -f "$name.ncu-rep"
  python3 scripts/ncu_summary.py "$name.csv" > "$name.summary" 2>&1; cat "$name.summary"
  python3 scripts/ncu_hotspots.py "$name-sass.csv" 30 > "$name.hotspots" 2>&1
  gzip -f "$name-sass.csv"
  pack
done
stamp done
