#!/usr/bin/env bash
# Session 2026-12-06 (fifth), first device call (results/NOTES.md). Builds every variant (scripts/gpu_session.sh's
# build step, no GPU visible) and beside it the MLA_DEC_SPARE_SMS=0,1,2 probe of fused_tiled. Then: the whole GPU
# suite (nothing else running), the ceilings' spread (scripts/ceiling_spread.py), and the probe at V3 and kimi-k2,
# 1 and 64 tokens, WITH the per-kernel breakdown (does the spare launch profile at 2, or with the plain-launch
# fallback?). callB.sh follows on the same warm machine. From the repository root, third_party/cutlass carried:
#   KVBENCH_COMMIT=<sha> bash results/2026-12-06-fifth/callA.sh
set -uo pipefail
export CUDA_HOME=/usr/local/cuda PATH=/usr/local/cuda/bin:$PATH TORCH_CUDA_ARCH_LIST=9.0a PYTHONUNBUFFERED=1
export KVBENCH_CUTLASS_DIR=third_party/cutlass
o=${OUT:-/tmp/out}; w=/tmp/callA; mkdir -p "$o" "$w"
pack() { tar -czf "$o/callA.tgz" -C "$w" .; }
trap pack EXIT
t0=$(date +%s); stamp() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
py=${PYTHON:-python3}
nb() { env CUDA_VISIBLE_DEVICES= timeout 400 "$@" < /dev/null; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv > "$w/gpu.txt" 2>&1; cat "$w/gpu.txt"
AX="MLA_DEC_SPARE_SMS=0,1,2"
pd=/tmp/probe-a; mkdir -p "$pd"
# ---- builds (parallel)
BUILD=1 SKIP_TESTS=1 SKIP_MULTI=1 PHASE=2 env CUDA_VISIBLE_DEVICES= scripts/gpu_session.sh \
  > "$w/build-session.log" 2>&1 < /dev/null &
PROBE_DIR=$pd nb scripts/probe_axis.sh fused_tiled "$AX" --shape seed --json "$w/build-probe.json" \
  > "$w/build-probe.log" 2>&1 &
wait; stamp "built"; cp /tmp/gpu-session/phase2/build*.log "$w/" 2>/dev/null
grep -h "wall time\|FAILED" "$w"/build*.log | head -12
# ---- the GPU suite, alone
timeout -s INT -k 20 ${SUITE_S:-280} $py -m pytest -q -m gpu -p no:cacheprovider -rfEs --durations=30 \
  > "$w/gpu-tests.log" 2>&1
stamp "GPU tests: exit $?: $(grep -E 'passed|failed' "$w/gpu-tests.log" | tail -1)"
grep -E "^(FAILED|ERROR)" "$w/gpu-tests.log" | head -8
pack
# ---- the ceilings' spread
timeout 60 $py scripts/ceiling_spread.py --dtype bfloat16 --json "$w/ceilings.json" > "$w/ceilings.txt" 2>&1
stamp "ceilings: exit $?"; cat "$w/ceilings.txt" | cut -c1-220
pack
# ---- the spare launch, with the breakdown
PROBE_DIR=$pd timeout -s INT 150 scripts/probe_axis.sh fused_tiled "$AX" \
  --shape deepseek-v3,kimi-k2 --tokens 1,64 --dtype bfloat16 --baselines eager,torch-2gemm --rounds 3 --timeout 40 \
  --json "$w/probe.json" --markdown "$w/probe.md" > "$w/probe.log" 2>&1 < /dev/null
stamp "probe: exit $?"
grep -i "mla_decode\|refused" "$w/probe.log" | sort | uniq -c | head
grep -E "^\| " "$w/probe.md" | cut -c1-200 | head -40
stamp done
