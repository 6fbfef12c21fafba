#!/usr/bin/env bash
# Session 2026-12-06 (sixth), second device call, on callA's warm machine (every build cached): the whole GPU suite at
# this commit, the seed float32 row, the targets run (3 rounds, with the breakdown: target 4 reads launches from it)
# and the V3 64 decode trace of the default build.
#   KVBENCH_COMMIT=<sha> bash results/2026-12-06-sixth/callB.sh     (third_party/cutlass carried)
. scripts/device_call_lib.sh callB
gpu_info
ls build/extensions 2>/dev/null | wc -l | sed 's/^/cached extension folders: /'
timeout -s INT -k 20 ${SUITE_S:-300} $py -m pytest -q -m gpu -p no:cacheprovider -rfEs --durations=30 \
  > "$w/gpu-tests.log" 2>&1
stamp "GPU tests: exit $?: $(grep -E 'passed|failed' "$w/gpu-tests.log" | tail -1)"
grep -E "^(FAILED|ERROR)" "$w/gpu-tests.log" | head -8
pack
timeout -s INT 60 $py run_bench.py --variant fused_tiled --shape seed --dtype float32 --baselines empty-kernel,eager \
  --rounds 3 --no-breakdown --json "$w/seed-fp32.json" > "$w/seed.log" 2>&1
stamp "seed: exit $?"
timeout -s INT 200 $py run_bench.py --variant two_stage,two_stage_pp,cutlass_2gemm,fused_tiled \
  --shape deepseek-v3,deepseek-v2-lite --tokens 64,512,4096 --dtype bfloat16 --baselines eager,eager-graph,torch-2gemm \
  --rounds 3 --json "$w/targets.json" --markdown "$w/targets.md" > "$w/targets.log" 2>&1
stamp "targets: exit $?"
$py scripts/targets.py "$w/targets.json" "$w/seed-fp32.json" > "$w/targets-check.txt" 2>&1; cut -c1-260 "$w/targets-check.txt"
pack
timeout 50 $py scripts/trace_tc.py fused_tiled bfloat16 deepseek-v3:64 --runs 7 --json "$w/trace.json" \
  > "$w/trace.txt" 2>&1 < /dev/null
stamp "trace: exit $?"; head -40 "$w/trace.txt"
stamp done
