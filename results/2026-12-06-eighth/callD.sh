#!/usr/bin/env bash
# Needs c8437e6's kernels (two_stage_pp_pair, removed from kernels/ after it: it never ran this session).
# Session 2026-12-06 (eighth), cut to the ~350 s of device time left after callA's machine was taken back mid-run:
# two_stage_pp and two_stage_pp_pair built alone, checked on the GPU suite's tensor-core shapes (bf16, fp16), then
# timed against each other at DeepSeek-V3 and V2-Lite 512 / 4096 tokens (bf16, 3 rounds, with the breakdown).
#   KVBENCH_COMMIT=<sha> bash results/2026-12-06-eighth/callD.sh     (third_party/cutlass carried)
. scripts/device_call_lib.sh callD
gpu_info
nb $py run_bench.py --variant two_stage_pp,two_stage_pp_pair --shape seed --json "$w/build.json" > "$w/build.log" 2>&1
stamp "built: exit $?, $(grep '^wall time' "$w/build.log")"
timeout -s INT 110 $py run_bench.py --variant two_stage_pp,two_stage_pp_pair \
  --shape deepseek-v3,deepseek-v2-lite --tokens 512,4096 --dtype bfloat16 --baselines eager,torch-2gemm \
  --rounds 3 --json "$w/pair.json" --markdown "$w/pair.md" > "$w/pair.log" 2>&1 < /dev/null
stamp "pair timing: exit $?, $(grep '^wall time' "$w/pair.log")"
rows_summary "$w/pair.json" 2>&1 | tee "$w/pair-summary.txt"
pack
# the tensor-core shapes of tests/test_gpu.py that reach M > 128 (the pair path) or its declines, check only
S="b=1,s=512,d=7168,rank=512,heads=128,head_dim=128 b=3,s=50,d=1000,rank=96,heads=2,head_dim=128 b=1,s=200,d=264,rank=40,heads=4,head_dim=64"
S="$S b=2,s=33,d=512,rank=64,heads=6,head_dim=128 b=2,s=2000,d=64,rank=16,heads=16,head_dim=128"
S="$S b=1,s=1380,d=200,rank=136,heads=16,head_dim=128 b=7,s=129,d=520,rank=72,heads=6,head_dim=40"
args=(); for s in $S; do args+=(--shape "$s"); done
timeout -s INT 60 $py run_bench.py --variant two_stage_pp_pair "${args[@]}" --dtype bfloat16,float16 --baselines eager \
  --rounds 1 --budget 0.02 --no-breakdown --allow-failures --json "$w/check.json" > "$w/check.log" 2>&1 < /dev/null
stamp "check: exit $?"
grep -E "two_stage_pp_pair" "$w/check.log" | awk '{print $1, $2, $3, $4, $5}' | sort | uniq -c | head -20
stamp done
