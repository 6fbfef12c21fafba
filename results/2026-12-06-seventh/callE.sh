#!/usr/bin/env bash
# Session 2026-12-06 (seventh): GEMM1's unit order and clusters of 2 (MLA_G1_ORDER, MLA_G1_PAIR; prediction in
# results/NOTES.md) on two_stage_pp, with cutlass_2gemm in the same run for its latent GEMM's device time (the
# per-kernel breakdown). bf16, 2 rounds, 512 and 4096 tokens (sized to the device time left).
#   KVBENCH_COMMIT=<sha> bash results/2026-12-06-seventh/callE.sh     (third_party/cutlass carried)
. scripts/device_call_lib.sh callE
gpu_info
AX="MLA_G1_ORDER=0,1,2; MLA_G1_PAIR=0,1,2"
pd=/tmp/probe-g1; mkdir -p "$pd"; cp kernels/cutlass_2gemm.cu "$pd/"
PROBE_DIR=$pd nb scripts/probe_axis.sh two_stage_pp "$AX" --shape seed --json "$w/build-probe.json" \
  > "$w/build-probe.log" 2>&1
stamp "built: exit $?"; grep -h "wall time\|FAILED\|build-failed" "$w/build-probe.log" | head -5
# the check on odd M > 128 shapes (pairs with an even and an odd row-tile count, k tails, a 200-wide latent, k-splits)
SHAPE_ARGS=(); for s in b=2,s=2000,d=64,rank=16,heads=16,head_dim=128 b=1,s=512,d=1032,rank=200,heads=4,head_dim=128; do
  SHAPE_ARGS+=(--shape "$s"); done
PROBE_DIR=$pd timeout -s INT 60 scripts/probe_axis.sh two_stage_pp "$AX" "${SHAPE_ARGS[@]}" --dtype bfloat16 \
  --baselines eager --rounds 1 --budget 0.05 --timeout 40 --no-breakdown --json "$w/probe-check.json" \
  --markdown "$w/probe-check.md" > "$w/probe-check.log" 2>&1 < /dev/null
stamp "check: exit $?, $(grep -c '| ok ' "$w/probe-check.md") rows ok"; grep -iE "wrong|error|fail" "$w/probe-check.md" | cut -c1-160 | head -5
pack
PROBE_DIR=$pd timeout -s INT 170 scripts/probe_axis.sh two_stage_pp "$AX" \
  --shape deepseek-v3,deepseek-v2-lite --tokens 512,4096 \
  --dtype bfloat16 --baselines eager,torch-2gemm --rounds 2 --timeout 60 --json "$w/probe-g1.json" \
  --markdown "$w/probe-g1.md" > "$w/probe-g1.log" 2>&1 < /dev/null
stamp "probe: exit $?"
rows_summary "$w/probe-g1.json" 2>&1 | tee "$w/probe-g1-summary.txt"
stamp done
