#!/usr/bin/env bash
# Session 2026-12-06 (fourth), first device call (results/NOTES.md). Builds every variant (scripts/gpu_session.sh's
# build step: variants, adversarial kernels, scaffold, launch floor; 400 s each) with no GPU visible, and beside it
# the MLA_DEC_SPARE_SMS=0,1 probe of fused_tiled (with two_stage in the same folder) and the V3 64 trace builds at
# 0 and 1. Then: the probe's check on 9 shapes (rounds 1: every row checked against the float64 reference), the
# probe timed at 1 and 64 tokens of V3 and kimi-k2 plus one odd shape (3 rounds), and the traces at 0 and 1.
# callB.sh follows on the same warm machine and finds every build cached. From the repository root,
# third_party/cutlass carried:
#   KVBENCH_COMMIT=<sha> bash results/2026-12-06-fourth/callA.sh
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
AX="MLA_DEC_SPARE_SMS=0,1"
SHAPE_ARGS=(); for s in b=1,s=5,d=512,rank=64,heads=3,head_dim=128 b=4,s=16,d=1032,rank=200,heads=5,head_dim=128 b=1,s=7,d=2056,rank=136,heads=2,head_dim=128 b=1,s=3,d=512,rank=512,heads=1,head_dim=128; do SHAPE_ARGS+=(--shape "$s"); done
pd=/tmp/probe-a; mkdir -p "$pd"; cp kernels/*.cuh kernels/two_stage.cu "$pd/"
# ---- builds (parallel)
BUILD=1 SKIP_TESTS=1 SKIP_MULTI=1 PHASE=2 env CUDA_VISIBLE_DEVICES= scripts/gpu_session.sh \
  > "$w/build-session.log" 2>&1 < /dev/null &
PROBE_DIR=$pd nb scripts/probe_axis.sh fused_tiled "$AX" --shape seed --json "$w/build-probe.json" \
  > "$w/build-probe.log" 2>&1 &
nb $py scripts/trace_tc.py fused_tiled bfloat16 deepseek-v3:64 --runs 1 > "$w/build-trace0.log" 2>&1 &
nb $py scripts/trace_tc.py fused_tiled bfloat16 deepseek-v3:64 --runs 1 --define MLA_DEC_SPARE_SMS=1 \
  > "$w/build-trace1.log" 2>&1 &
wait; stamp "built"; cp /tmp/gpu-session/phase2/build*.log "$w/" 2>/dev/null
grep -h "wall time\|FAILED" "$w"/build*.log | head -12
# ---- checks and measurements
PROBE_DIR=$pd timeout -s INT 90 scripts/probe_axis.sh fused_tiled "$AX" "${SHAPE_ARGS[@]}" --shape deepseek-v3,kimi-k2,minicpm3,deepseek-v2-lite \
  --tokens 1,64 --dtype bfloat16,float16 --baselines eager --rounds 1 --budget 0.05 --timeout 40 --no-breakdown \
  --json "$w/probe-check.json" --markdown "$w/probe-check.md" > "$w/probe-check.log" 2>&1 < /dev/null
stamp "probe check: exit $?"; grep -i "wrong\|fail\|error" "$w/probe-check.log" | head -5
pack
PROBE_DIR=$pd timeout -s INT 150 scripts/probe_axis.sh fused_tiled "$AX" \
  --shape deepseek-v3,kimi-k2 --tokens 1,64 --shape b=4,s=16,d=1032,rank=200,heads=5,head_dim=128 \
  --dtype bfloat16 --baselines eager,torch-2gemm --rounds 3 --timeout 40 --no-breakdown --json "$w/probe.json" \
  --markdown "$w/probe.md" > "$w/probe.log" 2>&1 < /dev/null
stamp "probe: exit $?"
grep -E "^\| " "$w/probe.md" | awk -F'|' '{print $2,$4,$5,$8}' | grep -v empty-kernel
pack
for s in 0 1; do
  timeout 45 $py scripts/trace_tc.py fused_tiled bfloat16 deepseek-v3:64 --runs 7 --define MLA_DEC_SPARE_SMS=$s \
    --json "$w/trace$s.json" > "$w/trace$s.txt" 2>&1 < /dev/null
  stamp "trace $s: exit $?"
done
stamp done
