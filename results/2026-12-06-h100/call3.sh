#!/usr/bin/env bash
# NOT RUN: when it was written the device time left (343 s) was too little to start a machine; the next session can
# run it as it is (it checks and times the final tree's decode path).
# This session's last device call, sized to the device time left (~300 s): the final tree's fused_tiled checked
# (tc_check, 8 shapes x bf16 / fp16: the runtime choice of the output store is new) and timed next to two_stage at
# 1 and 64 tokens (3 rounds). From the repository root, third_party/cutlass carried:
#   KVBENCH_COMMIT=<sha> bash results/2026-12-06-h100/call3.sh
set -uo pipefail
export CUDA_HOME=/usr/local/cuda PATH=/usr/local/cuda/bin:$PATH TORCH_CUDA_ARCH_LIST=9.0a PYTHONUNBUFFERED=1
export KVBENCH_CUTLASS_DIR=third_party/cutlass
o=${OUT:-/tmp/out}; w=/tmp/call3; mkdir -p "$o" "$w"
pack() { tar -czf "$o/call3.tgz" -C "$w" .; }
trap pack EXIT
t0=$(date +%s); stamp() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
py=${PYTHON:-python3}  # the device machine: python3 has torch; here: PYTHON=.venv/bin/python
CUDA_VISIBLE_DEVICES= timeout 200 $py run_bench.py --variant fused_tiled,two_stage --shape seed --json "$w/build.json" \
  > "$w/build.log" 2>&1 < /dev/null
stamp "built: exit $?"
SHAPES="b=1,s=5,d=512,rank=64,heads=3,head_dim=128 b=4,s=16,d=1032,rank=200,heads=5,head_dim=128 deepseek-v3:64 deepseek-v3:1 kimi-k2:64 minicpm3:64 deepseek-v2-lite:64 b=1,s=7,d=2056,rank=136,heads=2,head_dim=128"
# shellcheck disable=SC2086
timeout 60 $py scripts/tc_check.py fused_tiled bfloat16,float16 $SHAPES > "$w/tc-check.log" 2>&1
stamp "tc_check: exit $?"; grep -v "^\[\|W1206\|still building" "$w/tc-check.log" | cut -c1-120
pack
timeout -s INT 120 $py run_bench.py --variant fused_tiled,two_stage --shape deepseek-v3,kimi-k2,deepseek-v2-lite \
  --tokens 1,64 --dtype bfloat16 --baselines eager,torch-2gemm --rounds 3 --no-breakdown \
  --json "$w/decode.json" --markdown "$w/decode.md" > "$w/decode.log" 2>&1 < /dev/null
stamp "decode rows: exit $?"
grep -E "^\| " "$w/decode.md" | awk -F'|' '{print $2,$4,$5,$8,$9}'
stamp done
