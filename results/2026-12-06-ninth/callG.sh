#!/usr/bin/env bash
# Session 2026-12-06 (ninth), run in the tenth (results/2026-12-06-tenth/callG-h100/): TMA's L2 promotion, 128 B (CUTLASS's) against 256 B
# (every earlier run, and kernels/hopper.cuh's default until 128 is measured). This machine's copy of the tree gets 128
# as its default (the build that ncu and the GPU tests see); probe copies (scripts/probe_axis.sh) pass both values.
#   CUT=0 (~430 s): builds in parallel with no GPU visible (two_stage, two_stage_pp, fused_tiled at the default; probes
#     of two_stage_pp and fused_tiled), two_stage_pp's probe timed at DeepSeek-V3 / V2-Lite 512 and 4096 tokens and
#     fused_tiled's at 64 and 512 (bf16, 3 rounds, with the breakdown), ncu's L2 counters of two_stage_pp's GEMM1 at V3
#     4096 and 512 (callE's were at 256 B), the GPU tests of the variants that build hopper.cuh's tensor maps.
#   CUT=1 (~190 s): two_stage_pp only (its probe, its default build, ncu, its GPU tests).
#   CUT=2 (~150 s): two_stage_pp's probe builds and timing, 2 rounds.
#   KVBENCH_COMMIT=<sha> [CUT=0|1|2] bash results/2026-12-06-ninth/callG.sh     (third_party/cutlass carried)
. scripts/device_call_lib.sh callG
cut=${CUT:-0}
gpu_info
sed -i 's/^#define KV_TMA_L2_PROMO 256$/#define KV_TMA_L2_PROMO 128/' kernels/hopper.cuh
grep -q '^#define KV_TMA_L2_PROMO 128$' kernels/hopper.cuh || { stamp "hopper.cuh: the default did not change"; exit 1; }
axes="KV_TMA_L2_PROMO=128,256"
# each probe's copy lives in a fixed folder (PROBE_DIR), so its timing run finds the builds made before it
defaults=two_stage,two_stage_pp,fused_tiled
[ "$cut" -ge 1 ] && defaults=two_stage_pp
PROBE_DIR=/tmp/probe-pp nb scripts/probe_axis.sh two_stage_pp "$axes" --shape seed --json "$w/b1.json" > "$w/build-pp.log" 2>&1 &
[ "$cut" -eq 0 ] && { PROBE_DIR=/tmp/probe-ft nb scripts/probe_axis.sh fused_tiled "$axes" --shape seed --json "$w/b2.json" > "$w/build-ft.log" 2>&1 & }
[ "$cut" -le 1 ] && { nb $py run_bench.py --variant $defaults --shape seed --json "$w/b3.json" > "$w/build-default.log" 2>&1 & }
wait
stamp "built: $(grep -h '^wall time' "$w"/build-*.log | paste -sd' ')"
PROBE_DIR=/tmp/probe-pp timeout -s INT 120 scripts/probe_axis.sh two_stage_pp "$axes" --shape deepseek-v3,deepseek-v2-lite --tokens 512,4096 --dtype bfloat16 \
  --baselines eager,torch-2gemm --rounds $(( cut == 2 ? 2 : 3 )) --json "$w/promo-pp.json" --markdown "$w/promo-pp.md" \
  > "$w/promo-pp.log" 2>&1 < /dev/null
stamp "two_stage_pp promo: exit $?, $(grep '^wall time' "$w/promo-pp.log")"
rows_summary "$w/promo-pp.json" 2>&1 | grep -v "eager\|empty" | tee "$w/promo-pp-summary.txt"
pack
[ "$cut" -eq 2 ] && { stamp done; exit 0; }
if [ "$cut" -eq 0 ]; then
  PROBE_DIR=/tmp/probe-ft timeout -s INT 90 scripts/probe_axis.sh fused_tiled "$axes" --shape deepseek-v3,deepseek-v2-lite --tokens 64,512 --dtype bfloat16 \
    --baselines eager,torch-2gemm --rounds 3 --json "$w/promo-ft.json" --markdown "$w/promo-ft.md" \
    > "$w/promo-ft.log" 2>&1 < /dev/null
  stamp "fused_tiled promo: exit $?, $(grep '^wall time' "$w/promo-ft.log")"
  rows_summary "$w/promo-ft.json" 2>&1 | grep -v "eager\|empty" | tee "$w/promo-ft-summary.txt"
  pack
fi
ncu_l2 two_stage_pp 4096 -128B
ncu_l2 two_stage_pp 512 -128B
pack
gpu_tests gpu-tests-tc.log 150 -k "$( [ "$cut" -eq 0 ] && echo "two_stage or fused_tiled" || echo two_stage_pp )" tests/test_gpu.py
stamp done
