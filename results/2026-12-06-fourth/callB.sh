#!/usr/bin/env bash
# Session 2026-12-06 (fourth), second device call (results/NOTES.md), on callA's warm machine (every build cached):
# the whole GPU suite (300 s), the seed float32 row of target 7 (3 rounds), then the targets run (3 rounds) and
# scripts/targets.py on both. From the repository root, third_party/cutlass carried:
#   KVBENCH_COMMIT=<sha> bash results/2026-12-06-fourth/callB.sh
set -uo pipefail
export CUDA_HOME=/usr/local/cuda PATH=/usr/local/cuda/bin:$PATH TORCH_CUDA_ARCH_LIST=9.0a PYTHONUNBUFFERED=1
export KVBENCH_CUTLASS_DIR=third_party/cutlass
o=${OUT:-/tmp/out}; w=/tmp/callB; mkdir -p "$o" "$w"
pack() { tar -czf "$o/callB.tgz" -C "$w" .; }
trap pack EXIT
t0=$(date +%s); stamp() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
py=${PYTHON:-python3}
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv > "$w/gpu.txt" 2>&1; cat "$w/gpu.txt"
ls build/extensions 2>/dev/null | wc -l | sed 's/^/cached extension folders: /'
timeout -s INT -k 20 ${SUITE_S:-300} $py -m pytest -q -m gpu -p no:cacheprovider -rfEs --durations=30 \
  > "$w/gpu-tests.log" 2>&1
stamp "GPU tests: exit $?: $(grep -E 'passed|failed' "$w/gpu-tests.log" | tail -1)"
grep -E "^(FAILED|ERROR)" "$w/gpu-tests.log" | head -8
pack
timeout -s INT 40 $py run_bench.py --variant fused_tiled --shape seed --dtype float32 \
  --baselines empty-kernel,eager --rounds 3 --no-breakdown --json "$w/seed-fp32.json" --markdown "$w/seed-fp32.md" \
  > "$w/seed-fp32.log" 2>&1 < /dev/null
stamp "seed fp32: exit $?"
pack
timeout -s INT 220 $py run_bench.py --variant two_stage,two_stage_pp,cutlass_2gemm,fused_tiled \
  --shape deepseek-v3,deepseek-v2-lite --tokens 64,512,4096 --dtype bfloat16 \
  --baselines eager,eager-graph,torch-2gemm --rounds 3 --no-breakdown \
  --json "$w/targets.json" --markdown "$w/targets.md" > "$w/targets.log" 2>&1 < /dev/null
stamp "targets: exit $?"
$py scripts/targets.py "$w/targets.json" "$w/seed-fp32.json" > "$w/targets-check.txt" 2>&1
head -14 "$w/targets-check.txt"
stamp done
