#!/usr/bin/env bash
# Session 2026-12-06 (sixth), fifth device call (results/NOTES.md): the breakdown's busy time on the GPU. The
# breakdown's GPU tests (tests/test_breakdown.py -m gpu), and `run_bench.py breakdown` of two_stage_pp (a PDL pair)
# at DeepSeek-V3 and V2-Lite 4096 tokens, bf16, whose header should name the overlap.
#   KVBENCH_COMMIT=<sha> bash results/2026-12-06-sixth/callE.sh     (third_party/cutlass carried)
. scripts/device_call_lib.sh callE
gpu_info
nb $py run_bench.py --variant two_stage_pp --shape seed --json "$w/build.json" > "$w/build.log" 2>&1 &
timeout -s INT -k 20 200 $py -m pytest -q -m gpu -p no:cacheprovider -rfEs tests/test_breakdown.py \
  > "$w/gpu-tests.log" 2>&1
stamp "breakdown GPU tests: exit $?: $(grep -E 'passed|failed' "$w/gpu-tests.log" | tail -1)"
wait; stamp "built"
for s in deepseek-v3 deepseek-v2-lite; do
  timeout 90 $py run_bench.py breakdown --variant two_stage_pp --shape $s --tokens 4096 --dtype bfloat16 \
    > "$w/breakdown-two_stage_pp-$s-4096.txt" 2>&1
  stamp "breakdown $s: exit $?"; cut -c1-200 "$w/breakdown-two_stage_pp-$s-4096.txt" | tail -6
done
stamp done
