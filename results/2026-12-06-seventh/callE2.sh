#!/usr/bin/env bash
# Session 2026-12-06 (seventh): callE.sh cut to the ~380 s of device time left. GEMM1 pairs (MLA_G1_PAIR 0 / 1 / 2
# with MLA_G1_ORDER 1: row tile fastest, so a pair shares w_down's boxes at 512 tokens as well) on two_stage_pp at
# DeepSeek-V3 and V2-Lite at 512 and 4096 tokens, bf16, 2 rounds, with the per-kernel breakdown (GEMM1's device time).
#   KVBENCH_COMMIT=<sha> bash results/2026-12-06-seventh/callE2.sh     (third_party/cutlass carried)
. scripts/device_call_lib.sh callE2
gpu_info
AX="MLA_G1_ORDER=1; MLA_G1_PAIR=0,1,2"
pd=/tmp/probe-g1b; mkdir -p "$pd"
PROBE_DIR=$pd nb scripts/probe_axis.sh two_stage_pp "$AX" --shape seed --json "$w/build-probe.json" \
  > "$w/build-probe.log" 2>&1
stamp "built: exit $?"; grep -h "wall time\|FAILED\|build-failed" "$w/build-probe.log" | head -5
PROBE_DIR=$pd timeout -s INT 120 scripts/probe_axis.sh two_stage_pp "$AX" \
  --shape deepseek-v3,deepseek-v2-lite --tokens 512,4096 \
  --dtype bfloat16 --baselines eager,torch-2gemm --rounds 2 --timeout 60 --json "$w/probe-g1.json" \
  --markdown "$w/probe-g1.md" > "$w/probe-g1.log" 2>&1 < /dev/null
stamp "probe: exit $?"
rows_summary "$w/probe-g1.json" 2>&1 | tee "$w/probe-g1-summary.txt"
stamp done
