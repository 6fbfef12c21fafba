#!/usr/bin/env bash
# Session 2026-12-06 (sixth), sixth device call (results/NOTES.md): the decode path's early w_up fills
# (MLA_DEC_EARLY_FILL=0,1,3; 3 is the default) at DeepSeek-V3 and Kimi-K2, 1 and 64 tokens, plus one odd shape,
# bf16, 3 rounds, with the per-kernel breakdown.
#   KVBENCH_COMMIT=<sha> bash results/2026-12-06-sixth/callF.sh     (third_party/cutlass carried)
. scripts/device_call_lib.sh callF
gpu_info
AX="MLA_DEC_EARLY_FILL=0,1,3"
pd=/tmp/probe-f; mkdir -p "$pd"
PROBE_DIR=$pd nb scripts/probe_axis.sh fused_tiled "$AX" --shape seed --json "$w/build-probe.json" \
  > "$w/build-probe.log" 2>&1
stamp "built: exit $?"
PROBE_DIR=$pd timeout -s INT 200 scripts/probe_axis.sh fused_tiled "$AX" \
  --shape deepseek-v3,kimi-k2 --tokens 1,64 --shape b=4,s=16,d=1032,rank=200,heads=5,head_dim=128 \
  --dtype bfloat16 --baselines eager,torch-2gemm --rounds 3 --timeout 40 --json "$w/probe.json" \
  --markdown "$w/probe.md" > "$w/probe.log" 2>&1 < /dev/null
stamp "probe: exit $?"
grep -E "^\| " "$w/probe.md" | awk -F'|' '{print $2,$4,$5,$8,$9}' | grep -v empty-kernel
stamp done
