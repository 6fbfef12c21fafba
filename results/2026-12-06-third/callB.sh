#!/usr/bin/env bash
# Session 2026-12-06 (third), second device call, right after callA.sh on the same warm machine (builds cached):
# the issue-9 targets run (3 rounds, bf16: DeepSeek-V3 and V2-Lite at 64 / 512 / 4096 tokens), the
# decode path's V3 64 trace (7 cold runs), then the bf16 / fp16 preset sweep (1 round) with what is left of
# LIMIT_S. A fresh machine builds what each step needs first (slower, same results). From the repository root,
# third_party/cutlass carried:
#   KVBENCH_COMMIT=<sha> LIMIT_S=560 bash results/2026-12-06-third/callB.sh
set -uo pipefail
export CUDA_HOME=/usr/local/cuda PATH=/usr/local/cuda/bin:$PATH TORCH_CUDA_ARCH_LIST=9.0a PYTHONUNBUFFERED=1
export KVBENCH_CUTLASS_DIR=third_party/cutlass
o=${OUT:-/tmp/out}; w=/tmp/callB; mkdir -p "$o" "$w"
pack() { tar -czf "$o/callB.tgz" -C "$w" .; }
trap pack EXIT
t0=$(date +%s); stamp() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
py=${PYTHON:-python3}
limit=${LIMIT_S:-560}
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv > "$w/gpu.txt" 2>&1; cat "$w/gpu.txt"
timeout -s INT 220 $py run_bench.py --variant two_stage,two_stage_pp,cutlass_2gemm,fused_tiled \
  --shape deepseek-v3,deepseek-v2-lite --tokens 64,512,4096 --dtype bfloat16 \
  --baselines eager,eager-graph,torch-2gemm --rounds 3 --no-breakdown \
  --json "$w/targets.json" --markdown "$w/targets.md" > "$w/targets.log" 2>&1 < /dev/null
stamp "targets: exit $?"
$py scripts/targets.py "$w/targets.json" /tmp/callA/seed-fp32.json > "$w/targets-check.txt" 2>&1
head -12 "$w/targets-check.txt"
pack
timeout 60 $py scripts/trace_tc.py fused_tiled bfloat16 deepseek-v3:64 --runs 7 --json "$w/trace.json" \
  > "$w/trace.txt" 2>&1 < /dev/null
stamp "trace: exit $?"
pack
left=$(( limit - 10 - $(date +%s) + t0 ))
if [ $left -gt 60 ]; then
  SWEEP_S=$left PHASE=1 BUILD=0 SKIP_FP32=1 scripts/gpu_session.sh > "$w/sweep-session.log" 2>&1 < /dev/null
  stamp "sweep: $(grep -h 'sweep-16bit' "$w/sweep-session.log" | tail -1)"
  cp /tmp/gpu-session/phase1/sweep-16bit.* "$w/" 2>/dev/null
fi
stamp done
