#!/usr/bin/env bash
# Session 2026-12-06 (second), second device call (results/NOTES.md), sized to the device time left (~230 s): the
# decode path's early-fill wait (MLA_DEC_EARLY_FILL) and box dealing (MLA_DEC_SPREAD) probed next to two_stage in one
# run, and the tree's default fused_tiled checked by tc_check (8 shapes x bf16 / fp16). Builds with no GPU visible
# (the probe's four fused_tiled builds with two_stage beside them, the default fused_tiled), then tc_check, the probe
# at 1 and 64 tokens and one odd shape (3 rounds), then the GPU suite's fused_tiled tests with what is left of
# LIMIT_S. From the repository root, third_party/cutlass carried:
#   KVBENCH_COMMIT=<sha> LIMIT_S=220 bash results/2026-12-06-second/call2.sh
set -uo pipefail
export CUDA_HOME=/usr/local/cuda PATH=/usr/local/cuda/bin:$PATH TORCH_CUDA_ARCH_LIST=9.0a PYTHONUNBUFFERED=1
export KVBENCH_CUTLASS_DIR=third_party/cutlass
o=${OUT:-/tmp/out}; w=/tmp/call2; mkdir -p "$o" "$w"
pack() { tar -czf "$o/call2.tgz" -C "$w" .; }
trap pack EXIT
t0=$(date +%s); stamp() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
py=${PYTHON:-python3}
limit=${LIMIT_S:-220}
nb() { env CUDA_VISIBLE_DEVICES= timeout 160 "$@" < /dev/null; }
AX="MLA_DEC_EARLY_FILL=9,3; MLA_DEC_SPREAD=0,1"
SHAPES="b=1,s=5,d=512,rank=64,heads=3,head_dim=128 b=4,s=16,d=1032,rank=200,heads=5,head_dim=128 deepseek-v3:64 deepseek-v3:1 kimi-k2:64 minicpm3:64 deepseek-v2-lite:64 b=1,s=7,d=2056,rank=136,heads=2,head_dim=128"
# two_stage in the probe's folder: discovered beside the probed builds, so its rows are in the same run
mkdir -p /tmp/probe-ef && cp kernels/two_stage.cu /tmp/probe-ef/
# ---- builds (parallel)
PROBE_DIR=/tmp/probe-ef nb scripts/probe_axis.sh fused_tiled "$AX" --shape seed --json "$w/build-probe.json" \
  > "$w/build-probe.log" 2>&1 &
nb $py run_bench.py --variant fused_tiled --shape seed --json "$w/build-default.json" > "$w/build-default.log" 2>&1 &
wait; stamp "built"; grep -h "wall time\|FAILED" "$w"/build-*.log | head
# ---- checks and measurements
# shellcheck disable=SC2086
timeout 40 $py scripts/tc_check.py fused_tiled bfloat16,float16 $SHAPES > "$w/tc-check.log" 2>&1
stamp "tc_check: exit $?"; grep -v "^\[\|W1206\|still building" "$w/tc-check.log" | cut -c1-100
pack
PROBE_DIR=/tmp/probe-ef timeout -s INT 60 scripts/probe_axis.sh fused_tiled "$AX" \
  --shape deepseek-v3,kimi-k2 --tokens 1,64 --shape b=4,s=16,d=1032,rank=200,heads=5,head_dim=128 \
  --dtype bfloat16 --baselines eager,torch-2gemm --rounds 3 --timeout 40 --no-breakdown --json "$w/probe.json" \
  --markdown "$w/probe.md" > "$w/probe.log" 2>&1 < /dev/null
stamp "probe: exit $?"
grep -E "^\| " "$w/probe.md" | awk -F'|' '{print $2,$4,$5,$8}' | grep -v empty-kernel
pack
left=$(( limit - 10 - $(date +%s) + t0 ))
if [ $left -gt 40 ]; then
  timeout -s INT -k 5 $left $py -m pytest -q -m gpu -k fused_tiled -p no:cacheprovider -rfEs > "$w/gpu-tests.log" 2>&1
  stamp "GPU tests (fused_tiled): exit $?: $(grep -E 'passed|failed' "$w/gpu-tests.log" | tail -1)"
fi
stamp done
