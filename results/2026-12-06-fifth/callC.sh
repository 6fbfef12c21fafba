#!/usr/bin/env bash
# Session 2026-12-06 (fifth), third device call (results/NOTES.md). Builds every variant (scripts/gpu_session.sh's
# build step, no GPU visible) and beside it the MLA_DEC_SPARE_SMS=0,1 probe of fused_tiled. Then the probe at V3
# and kimi-k2, 1 and 64 tokens, WITH the per-kernel breakdown: with max_clusters' cache per extension, does the
# spare launch's row profile in the same process as the other build's? callD.sh (the GPU suite) follows on the
# same warm machine. From the repository root, third_party/cutlass carried:
#   KVBENCH_COMMIT=<sha> bash results/2026-12-06-fifth/callC.sh
set -uo pipefail
export CUDA_HOME=/usr/local/cuda PATH=/usr/local/cuda/bin:$PATH TORCH_CUDA_ARCH_LIST=9.0a PYTHONUNBUFFERED=1
export KVBENCH_CUTLASS_DIR=third_party/cutlass
o=${OUT:-/tmp/out}; w=/tmp/callC; mkdir -p "$o" "$w"
pack() { tar -czf "$o/callC.tgz" -C "$w" .; }
trap pack EXIT
t0=$(date +%s); stamp() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
py=${PYTHON:-python3}
nb() { env CUDA_VISIBLE_DEVICES= timeout 400 "$@" < /dev/null; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv > "$w/gpu.txt" 2>&1; cat "$w/gpu.txt"
AX="MLA_DEC_SPARE_SMS=0,1"
pd=/tmp/probe-a; mkdir -p "$pd"
# ---- builds (parallel)
BUILD=1 SKIP_TESTS=1 SKIP_MULTI=1 PHASE=2 env CUDA_VISIBLE_DEVICES= scripts/gpu_session.sh \
  > "$w/build-session.log" 2>&1 < /dev/null &
PROBE_DIR=$pd nb scripts/probe_axis.sh fused_tiled "$AX" --shape seed --json "$w/build-probe.json" \
  > "$w/build-probe.log" 2>&1 &
wait; stamp "built"; cp /tmp/gpu-session/phase2/build*.log "$w/" 2>/dev/null
grep -h "wall time\|FAILED" "$w"/build*.log | head -12
# ---- the spare launch, with the breakdown
PROBE_DIR=$pd timeout -s INT 150 scripts/probe_axis.sh fused_tiled "$AX" \
  --shape deepseek-v3,kimi-k2 --tokens 1,64 --dtype bfloat16 --baselines eager,torch-2gemm --rounds 3 --timeout 40 \
  --json "$w/probe.json" --markdown "$w/probe.md" > "$w/probe.log" 2>&1 < /dev/null
stamp "probe: exit $?"
$py -c "import json,sys; [print(r['variant'], (r.get('kernels') or {}).get('launches'), (r.get('kernels') or {}).get('note')) for r in json.load(open(sys.argv[1]))['rows'] if r['variant'].startswith('fused')]" "$w/probe.json"
grep -E "^\| " "$w/probe.md" | cut -c1-200 | head -40
stamp done
