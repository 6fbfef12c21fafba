#!/usr/bin/env bash
# Run after callA.sh at c8437e6's kernels (see callA.sh).
# Session 2026-12-06 (eighth), second device call, on callA's warm machine (every build cached): the whole GPU suite
# at this commit, then the float32 preset sweep of README's results section (1 round), each cut to the time left.
#   KVBENCH_COMMIT=<sha> [CALL_S=<the call's seconds>] bash results/2026-12-06-eighth/callB.sh     (third_party/cutlass carried)
. scripts/device_call_lib.sh callB
gpu_info
ls build/extensions 2>/dev/null | wc -l | sed 's/^/cached extension folders: /'
timeout -s INT -k 20 ${SUITE_S:-330} $py -m pytest -q -m gpu -p no:cacheprovider -rfEs --durations=30 \
  > "$w/gpu-tests.log" 2>&1
stamp "GPU tests: exit $?: $(grep -E 'passed|failed' "$w/gpu-tests.log" | tail -1)"
grep -E "^(FAILED|ERROR)" "$w/gpu-tests.log" | head -8
pack
left=$(( ${CALL_S:-580} - $(date +%s) + t0 ))
timeout -s INT $(( left > 20 ? left : 20 )) $py run_bench.py --variant all \
  --shape seed,deepseek-v2-lite,deepseek-v2,deepseek-v3,kimi-k2,minicpm3 --tokens 64,512,4096 \
  --baselines eager,eager-graph,torch-2gemm --budget 0.2 --rounds 1 --timeout 120 --allow-failures --no-breakdown \
  --dtype float32 --json "$w/sweep-fp32.json" --markdown "$w/sweep-fp32.md" > "$w/sweep-fp32.log" 2>&1 < /dev/null
stamp "fp32 sweep: exit $?, $(grep '^wall time' "$w/sweep-fp32.log" || tail -1 "$w/sweep-fp32.log")"
stamp done
