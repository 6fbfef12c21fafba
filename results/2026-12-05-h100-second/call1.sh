#!/usr/bin/env bash
# The final tree's own GPU run (results/NOTES.md, "Session 2026-12-05 (second)"): kernels/ = 24a50d0's code, which
# had not been GPU-run since f3b9f06. Builds every variant with no GPU visible (gpu_session.sh's build), then the
# GPU suite, the issue-9 targets run (3 rounds) and the seed float32 run of target 7 (3 rounds). From the
# repository root, third_party/cutlass carried:
#   KVBENCH_COMMIT=<sha> bash results/2026-12-05-h100-second/call1.sh
set -uo pipefail
export CUDA_HOME=/usr/local/cuda PATH=/usr/local/cuda/bin:$PATH TORCH_CUDA_ARCH_LIST=9.0a PYTHONUNBUFFERED=1
export KVBENCH_CUTLASS_DIR=third_party/cutlass
o=${OUT:-/tmp/out}; w=/tmp/call1; mkdir -p "$o" "$w"
pack() { tar -czf "$o/call1.tgz" -C "$w" .; }
trap pack EXIT
t0=$(date +%s); stamp() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
BUILD=1 SKIP_TESTS=1 SKIP_MULTI=1 PHASE=2 scripts/gpu_session.sh > "$w/build-session.log" 2>&1
stamp "built"; grep -h "FAILED\|build-failed" /tmp/gpu-session/phase2/build*.log | head -5
timeout -s INT -k 20 200 python3 -m pytest -q -m gpu -p no:cacheprovider -rfEs --durations=30 > "$w/gpu-tests.log" 2>&1
stamp "GPU tests: exit $?: $(grep -E 'passed|failed' "$w/gpu-tests.log" | tail -1)"
pack
timeout -s INT 60 python3 run_bench.py --variant fused_tiled --shape seed --dtype float32 \
  --baselines empty-kernel,eager --rounds 3 --no-breakdown --json "$w/seed-fp32.json" --markdown "$w/seed-fp32.md" \
  > "$w/seed-fp32.log" 2>&1
stamp "seed fp32: exit $?"
left=$(( 585 - $(date +%s) + t0 ))
V=two_stage,two_stage_pp,cutlass_2gemm,fused_tiled
timeout -s INT $(( left > 30 ? left : 30 )) python3 run_bench.py --variant $V --shape deepseek-v3,deepseek-v2-lite \
  --tokens 64,512,4096 --dtype bfloat16 --baselines eager,eager-graph,torch-2gemm --rounds 3 --no-breakdown \
  --json "$w/targets.json" --markdown "$w/targets.md" > "$w/targets.log" 2>&1
stamp "targets: exit $?"
python3 scripts/targets.py "$w/targets.json" "$w/seed-fp32.json" > "$w/targets-check.txt" 2>&1
cat "$w/targets-check.txt" | head -40
stamp done
