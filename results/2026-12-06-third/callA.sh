#!/usr/bin/env bash
# Session 2026-12-06 (third), first device call (results/NOTES.md): the tree at 2732766 had its GPU suite cut at
# 46 passed (15f765b) and only the fused_tiled selection since. Builds every variant and the V3 64 trace build with
# no GPU visible, then the whole GPU suite, then the seed float32 row of target 7 (3 rounds). callB.sh follows on
# the same warm machine and finds the builds cached. From the repository root, third_party/cutlass carried:
#   KVBENCH_COMMIT=<sha> bash results/2026-12-06-third/callA.sh
set -uo pipefail
export CUDA_HOME=/usr/local/cuda PATH=/usr/local/cuda/bin:$PATH TORCH_CUDA_ARCH_LIST=9.0a PYTHONUNBUFFERED=1
export KVBENCH_CUTLASS_DIR=third_party/cutlass
o=${OUT:-/tmp/out}; w=/tmp/callA; mkdir -p "$o" "$w"
pack() { tar -czf "$o/callA.tgz" -C "$w" .; }
trap pack EXIT
t0=$(date +%s); stamp() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
py=${PYTHON:-python3}
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv > "$w/gpu.txt" 2>&1; cat "$w/gpu.txt"
BUILD=1 SKIP_TESTS=1 SKIP_MULTI=1 PHASE=2 env CUDA_VISIBLE_DEVICES= timeout 300 scripts/gpu_session.sh \
  > "$w/build-session.log" 2>&1 < /dev/null &
env CUDA_VISIBLE_DEVICES= timeout 300 $py scripts/trace_tc.py fused_tiled bfloat16 deepseek-v3:64 --runs 1 \
  > "$w/build-trace.log" 2>&1 < /dev/null &
wait; stamp "built"; grep -h "FAILED\|build-failed" /tmp/gpu-session/phase2/build*.log | head -5
timeout -s INT -k 20 ${SUITE_S:-250} $py -m pytest -q -m gpu -p no:cacheprovider -rfEs --durations=30 \
  > "$w/gpu-tests.log" 2>&1
stamp "GPU tests: exit $?: $(grep -E 'passed|failed' "$w/gpu-tests.log" | tail -1)"
pack
timeout -s INT 40 $py run_bench.py --variant fused_tiled --shape seed --dtype float32 \
  --baselines empty-kernel,eager --rounds 3 --no-breakdown --json "$w/seed-fp32.json" --markdown "$w/seed-fp32.md" \
  > "$w/seed-fp32.log" 2>&1 < /dev/null
stamp "seed fp32: exit $?"
grep -E "^\| " "$w/seed-fp32.md" | awk -F'|' '{print $2,$4,$5,$8}'
stamp done
