#!/usr/bin/env bash
# callG2 cut to the ~240 s of device time left (a start takes ~90 s of it): only the two probe builds of two_stage_pp
# (KV_TMA_L2_PROMO=128,256, in parallel, no GPU visible), then the two timed against each other at DeepSeek-V3 and
# V2-Lite 512 / 4096 (bf16, 2 rounds, with the breakdown). See callG.sh for the question.
#   KVBENCH_COMMIT=<sha> bash results/2026-12-06-ninth/callG3.sh     (third_party/cutlass carried)
. scripts/device_call_lib.sh callG3
gpu_info
axes="KV_TMA_L2_PROMO=128,256"
PROBE_DIR=/tmp/probe-pp nb scripts/probe_axis.sh two_stage_pp "$axes" --shape seed --json "$w/b1.json" > "$w/build-pp.log" 2>&1
stamp "built: $(grep -h '^wall time' "$w"/build-pp.log)"
PROBE_DIR=/tmp/probe-pp timeout -s INT 60 scripts/probe_axis.sh two_stage_pp "$axes" --shape deepseek-v3,deepseek-v2-lite \
  --tokens 512,4096 --dtype bfloat16 --baselines torch-2gemm \
  --rounds 2 --json "$w/promo-pp.json" --markdown "$w/promo-pp.md" > "$w/promo-pp.log" 2>&1 < /dev/null
stamp "two_stage_pp promo: exit $?, $(grep '^wall time' "$w/promo-pp.log")"
rows_summary "$w/promo-pp.json" 2>&1 | grep -v "empty" | tee "$w/promo-pp-summary.txt"
stamp done
