#!/usr/bin/env bash
# Session 2026-12-06 (fifth), fourth device call (results/NOTES.md), on callC's warm machine (every build cached):
# the whole GPU suite at the session's last kernel change. From the repository root, third_party/cutlass carried:
#   KVBENCH_COMMIT=<sha> bash results/2026-12-06-fifth/callD.sh
set -uo pipefail
export CUDA_HOME=/usr/local/cuda PATH=/usr/local/cuda/bin:$PATH TORCH_CUDA_ARCH_LIST=9.0a PYTHONUNBUFFERED=1
export KVBENCH_CUTLASS_DIR=third_party/cutlass
o=${OUT:-/tmp/out}; w=/tmp/callD; mkdir -p "$o" "$w"
pack() { tar -czf "$o/callD.tgz" -C "$w" .; }
trap pack EXIT
t0=$(date +%s); stamp() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
py=${PYTHON:-python3}
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv > "$w/gpu.txt" 2>&1; cat "$w/gpu.txt"
ls build/extensions 2>/dev/null | wc -l | sed 's/^/cached extension folders: /'
timeout -s INT -k 20 ${SUITE_S:-330} $py -m pytest -q -m gpu -p no:cacheprovider -rfEs --durations=30 \
  > "$w/gpu-tests.log" 2>&1
stamp "GPU tests: exit $?: $(grep -E 'passed|failed' "$w/gpu-tests.log" | tail -1)"
grep -E "^(FAILED|ERROR)" "$w/gpu-tests.log" | head -8
stamp done
