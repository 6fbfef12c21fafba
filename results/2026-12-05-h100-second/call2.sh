#!/usr/bin/env bash
# The GPU suite alone with a longer limit (call1's 200 s cut it after 38 tests on the H100): build, then pytest -m gpu.
#   KVBENCH_COMMIT=<sha> bash results/2026-12-05-h100-second/call2.sh
set -uo pipefail
export CUDA_HOME=/usr/local/cuda PATH=/usr/local/cuda/bin:$PATH TORCH_CUDA_ARCH_LIST=9.0a PYTHONUNBUFFERED=1
export KVBENCH_CUTLASS_DIR=third_party/cutlass
o=${OUT:-/tmp/out}; mkdir -p "$o"
t0=$(date +%s); stamp() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
if [ ! -d build ] || [ -z "$(ls build 2>/dev/null)" ]; then
  BUILD=1 SKIP_TESTS=1 SKIP_MULTI=1 PHASE=2 scripts/gpu_session.sh > "$o/build-session.log" 2>&1
fi
stamp built
left=$(( 580 - $(date +%s) + t0 ))
timeout -s INT -k 15 $left python3 -m pytest -q -m gpu -p no:cacheprovider -rfEs --durations=15 > "$o/gpu-tests.log" 2>&1
stamp "GPU tests: exit $?: $(grep -E 'passed|failed' "$o/gpu-tests.log" | tail -1)"
