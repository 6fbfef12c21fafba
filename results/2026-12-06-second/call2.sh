#!/usr/bin/env bash
# Session 2026-12-06 (second), second device call (results/NOTES.md): the decode path's early-fill wait
# (MLA_DEC_EARLY_FILL) and box dealing (MLA_DEC_SPREAD) probed next to two_stage in one run, then the GPU suite
# on the tree's defaults. Builds with no GPU visible (every variant for the suite, the probe's six fused_tiled builds and two_stage beside them),
# the probe at 1 and 64 tokens and one odd shape (3 rounds), then the suite with the rest of the call's 600 s.
# From the repository root, third_party/cutlass carried:
#   KVBENCH_COMMIT=<sha> bash results/2026-12-06-second/call2.sh
set -uo pipefail
export CUDA_HOME=/usr/local/cuda PATH=/usr/local/cuda/bin:$PATH TORCH_CUDA_ARCH_LIST=9.0a PYTHONUNBUFFERED=1
export KVBENCH_CUTLASS_DIR=third_party/cutlass
o=${OUT:-/tmp/out}; w=/tmp/call2; mkdir -p "$o" "$w"
pack() { tar -czf "$o/call2.tgz" -C "$w" .; }
trap pack EXIT
t0=$(date +%s); stamp() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
py=${PYTHON:-python3}
nb() { env CUDA_VISIBLE_DEVICES= timeout 290 "$@" < /dev/null; }
AX="MLA_DEC_EARLY_FILL=9,3,0; MLA_DEC_SPREAD=0,1"
# two_stage in the probe's folder: discovered beside the probed builds, so its rows are in the same run
mkdir -p /tmp/probe-ef && cp kernels/two_stage.cu /tmp/probe-ef/
# ---- builds (parallel)
BUILD=1 SKIP_TESTS=1 SKIP_MULTI=1 PHASE=2 nb scripts/gpu_session.sh > "$w/build-session.log" 2>&1 &
PROBE_DIR=/tmp/probe-ef nb scripts/probe_axis.sh fused_tiled "$AX" --shape seed --json "$w/build-probe.json" \
  > "$w/build-probe.log" 2>&1 &
wait; stamp "built"; grep -h "wall time\|FAILED" "$w"/build-*.log /tmp/gpu-session/phase2/build*.log | head
# ---- measurements
PROBE_DIR=/tmp/probe-ef timeout -s INT 120 scripts/probe_axis.sh fused_tiled "$AX" \
  --shape deepseek-v3,kimi-k2,deepseek-v2-lite --tokens 1,64 --shape b=4,s=16,d=1032,rank=200,heads=5,head_dim=128 \
  --dtype bfloat16 --baselines eager,torch-2gemm --rounds 3 --timeout 40 --no-breakdown --json "$w/probe.json" \
  --markdown "$w/probe.md" > "$w/probe.log" 2>&1 < /dev/null
stamp "probe: exit $?"
grep -E "^\| " "$w/probe.md" | awk -F'|' '{print $2,$4,$5,$8,$9}'
pack
left=$(( 590 - $(date +%s) + t0 ))
timeout -s INT -k 10 $(( left > 30 ? left : 30 )) $py -m pytest -q -m gpu -p no:cacheprovider -rfEs --durations=30 \
  > "$w/gpu-tests.log" 2>&1
stamp "GPU tests: exit $?: $(grep -E 'passed|failed' "$w/gpu-tests.log" | tail -1)"
stamp done
