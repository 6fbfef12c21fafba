#!/usr/bin/env bash
# Session 2026-12-06 (seventh), second device call, on callA's warm H200 (every build cached): the whole GPU suite
# at this commit, then the bf16 / fp16 preset sweep of README's results section (1 round, the command written there).
#   KVBENCH_COMMIT=<sha> bash results/2026-12-06-seventh/callB.sh     (third_party/cutlass carried)
. scripts/device_call_lib.sh callB
gpu_info
ls build/extensions 2>/dev/null | wc -l | sed 's/^/cached extension folders: /'
timeout -s INT -k 20 ${SUITE_S:-290} $py -m pytest -q -m gpu -p no:cacheprovider -rfEs --durations=30 \
  > "$w/gpu-tests.log" 2>&1
stamp "GPU tests: exit $?: $(grep -E 'passed|failed' "$w/gpu-tests.log" | tail -1)"
grep -E "^(FAILED|ERROR)" "$w/gpu-tests.log" | head -8
pack
timeout -s INT 250 $py run_bench.py --variant all --shape seed,deepseek-v2-lite,deepseek-v2,deepseek-v3,kimi-k2,minicpm3 \
  --tokens 64,512,4096 --baselines eager,eager-graph,torch-2gemm --budget 0.2 --rounds 1 --timeout 120 \
  --allow-failures --no-breakdown --devices all --dtype bfloat16,float16 \
  --json "$w/sweep-16bit.json" --markdown "$w/sweep-16bit.md" > "$w/sweep-16bit.log" 2>&1 < /dev/null
stamp "16-bit sweep: exit $?, $(grep '^wall time' "$w/sweep-16bit.log" || tail -1 "$w/sweep-16bit.log")"
stamp done
