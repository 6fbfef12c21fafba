#!/usr/bin/env bash
# This session's first device call (results/NOTES.md, "Session 2026-12-05 (third)"): the latent-stationary GEMM2 of
# two_stage_pp (MLA_PP_ASTAT). Builds with no GPU visible (gpu_session.sh's build and the probe's two builds), then
# the probe 0 / 1 at 512 and 4096 tokens (3 rounds), the GPU suite (the new multi-run shape included) and, in the
# time left, the issue-9 targets run (3 rounds). From the repository root, third_party/cutlass carried:
#   KVBENCH_COMMIT=<sha> bash results/2026-12-05-h100-third/call1.sh
set -uo pipefail
export CUDA_HOME=/usr/local/cuda PATH=/usr/local/cuda/bin:$PATH TORCH_CUDA_ARCH_LIST=9.0a PYTHONUNBUFFERED=1
export KVBENCH_CUTLASS_DIR=third_party/cutlass
o=${OUT:-/tmp/out}; w=/tmp/call1; mkdir -p "$o" "$w"
pack() { tar -czf "$o/call1.tgz" -C "$w" .; }
trap pack EXIT
t0=$(date +%s); stamp() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
nb() { env CUDA_VISIBLE_DEVICES= timeout 300 "$@" < /dev/null; }
AX="MLA_PP_ASTAT=0,1"
PRESETS="deepseek-v3,deepseek-v2-lite,kimi-k2,minicpm3 --tokens 512,4096 --dtype bfloat16"
# ---- builds (parallel)
BUILD=1 SKIP_TESTS=1 SKIP_MULTI=1 PHASE=2 scripts/gpu_session.sh > "$w/build-session.log" 2>&1 &
PROBE_DIR=/tmp/probe-pp nb scripts/probe_axis.sh two_stage_pp "$AX" --shape seed --json "$w/build-probe.json" \
  > "$w/build-probe.log" 2>&1 &
wait; stamp "built"; grep -l "FAILED\|build-failed" "$w"/build-*.log /tmp/gpu-session/phase2/build*.log 2>/dev/null
# ---- measurements
# shellcheck disable=SC2086
PROBE_DIR=/tmp/probe-pp timeout 150 scripts/probe_axis.sh two_stage_pp "$AX" --shape $PRESETS --rounds 3 \
  --budget 0.3 --baselines torch-2gemm --json "$w/probe-astat.json" --markdown "$w/probe-astat.md" \
  > "$w/probe-astat.log" 2>&1 < /dev/null
stamp "probe: exit $?"
grep -E "^\| " "$w/probe-astat.md" | awk -F'|' '{print $2,$4,$5,$8,$9}'
pack
timeout -s INT -k 20 240 python3 -m pytest -q -m gpu -p no:cacheprovider -rfEs --durations=30 > "$w/gpu-tests.log" 2>&1
stamp "GPU tests: exit $?: $(grep -E 'passed|failed' "$w/gpu-tests.log" | tail -1)"
pack
left=$(( 585 - $(date +%s) + t0 ))
V=two_stage,two_stage_pp,cutlass_2gemm,fused_tiled
timeout -s INT $(( left > 30 ? left : 30 )) python3 run_bench.py --variant $V --shape deepseek-v3,deepseek-v2-lite \
  --tokens 64,512,4096 --dtype bfloat16 --baselines eager,eager-graph,torch-2gemm --rounds 3 --no-breakdown \
  --json "$w/targets.json" --markdown "$w/targets.md" > "$w/targets.log" 2>&1
stamp "targets: exit $?"
python3 scripts/targets.py "$w/targets.json" > "$w/targets-check.txt" 2>&1
head -12 "$w/targets-check.txt"
stamp done
