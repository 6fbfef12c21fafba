#!/usr/bin/env bash
# Session 2026-12-07 (fourteenth), call D, for under 320 s of command: two_stage_pp and two_stage built alone with no
# GPU visible, then checked (bf16, fp16) at the GPU suite's tensor-core shapes past M = 128 and its declines, the CTA
# pairs' test shape included (check_m128); then DeepSeek-V3 and V2-Lite at 512 / 4096 tokens timed, if CALL_S leaves time.
#   CALL_S=<s> KVBENCH_COMMIT=$(git rev-parse --short HEAD) bash results/2026-12-07-fourteenth/callD.sh
. scripts/device_call_lib.sh callD
gpu_info
nb $py run_bench.py --variant two_stage_pp,two_stage --shape seed --dtype bfloat16 --baselines eager \
  --json "$w/build.json" > "$w/build.log" 2>&1
stamp "built: $(grep -c 'built in' "$w/build.log") builds"
check_m128 two_stage_pp,two_stage
pack
left=$(( ${CALL_S:-300} - ($(date +%s) - t0) ))
if [ "$left" -gt 50 ]; then
  timeout -s INT "$left" $py run_bench.py --variant two_stage_pp,two_stage --shape deepseek-v3,deepseek-v2-lite \
    --tokens 4096,512 --dtype bfloat16 --baselines torch-2gemm --rounds 3 --no-breakdown --allow-failures \
    --json "$w/timed.json" --markdown "$w/timed.md" > "$w/timed.log" 2>&1 < /dev/null
  stamp "timed: exit $?"
  rows_summary "$w/timed.json" 2>&1 | cut -c1-100
fi
stamp done
