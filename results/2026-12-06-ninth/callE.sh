#!/usr/bin/env bash
# Session 2026-12-06 (ninth), second device call: two_stage_pp_pair after its remote arrive lost `.release.cluster`
# (which compiles to MEMBAR.ALL.GPU before every consumer's per-k-step release; callA had the pair's GEMM1 at 2x
# two_stage_pp's). two_stage_pp and two_stage_pp_pair built alone, timed against each other and cutlass_2gemm at
# DeepSeek-V3 and V2-Lite 512 / 4096 tokens (bf16, 3 rounds, with the breakdown), the pair checked on the GPU suite's
# M > 128 tensor-core shapes (bf16, fp16), then ncu's L2 counters of GEMM1 of both at V3 4096 and 512 (callC.sh's).
# Ran at 253f8e3 (two_stage_pp_pair was removed after it); its check and ncu steps now call device_call_lib.sh's
# check_m128 and ncu_l2, the same commands.
#   KVBENCH_COMMIT=<sha> bash results/2026-12-06-ninth/callE.sh     (third_party/cutlass carried)
. scripts/device_call_lib.sh callE
gpu_info
nb $py run_bench.py --variant two_stage_pp,two_stage_pp_pair,cutlass_2gemm --shape seed --json "$w/build.json" \
  > "$w/build.log" 2>&1
stamp "built: exit $?, $(grep '^wall time' "$w/build.log")"
timeout -s INT 110 $py run_bench.py --variant two_stage_pp,two_stage_pp_pair,cutlass_2gemm \
  --shape deepseek-v3,deepseek-v2-lite --tokens 512,4096 --dtype bfloat16 --baselines eager,torch-2gemm \
  --rounds 3 --json "$w/pair.json" --markdown "$w/pair.md" > "$w/pair.log" 2>&1 < /dev/null
stamp "pair timing: exit $?, $(grep '^wall time' "$w/pair.log")"
rows_summary "$w/pair.json" 2>&1 | tee "$w/pair-summary.txt"
pack
check_m128 two_stage_pp_pair
pack
for t in 4096 512; do
  for v in two_stage_pp two_stage_pp_pair; do ncu_l2 $v $t; done
done
stamp done
