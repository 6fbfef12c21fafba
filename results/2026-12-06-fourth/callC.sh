#!/usr/bin/env bash
# Session 2026-12-06 (fourth), third device call (results/NOTES.md): the tree with MLA_DEC_SPARE_SMS=1 as the
# default, on a fresh machine. Builds every variant (scripts/gpu_session.sh's build step), a probe folder (fused_tiled
# at MLA_DEC_SPARE_SMS=0,1 beside copies of two_stage, two_stage_pp and cutlass_2gemm) and the V3 64 trace build, all
# with no GPU visible. Then tc_check of fused_tiled (9 shapes x bf16 / fp16), the whole GPU suite, the seed float32
# row of target 7, the targets run (3 rounds), the DeepSeek-V3 64 group again WITH the per-kernel breakdown (target 4
# asks for one launch; both forms of fused_tiled in it), scripts/targets.py on those files, and the V3 64 trace.
# callD.sh may follow on the same warm machine. From the repository root, third_party/cutlass carried:
#   KVBENCH_COMMIT=<sha> bash results/2026-12-06-fourth/callC.sh
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
SHAPES="b=1,s=5,d=512,rank=64,heads=3,head_dim=128 b=4,s=16,d=1032,rank=200,heads=5,head_dim=128 deepseek-v3:64 deepseek-v3:1 kimi-k2:64 minicpm3:64 deepseek-v2-lite:64 b=1,s=7,d=2056,rank=136,heads=2,head_dim=128 b=1,s=3,d=512,rank=512,heads=1,head_dim=128"
pd=/tmp/probe-c; mkdir -p "$pd"; cp kernels/*.cuh kernels/two_stage.cu kernels/two_stage_pp.cu kernels/cutlass_2gemm.cu "$pd/"
# ---- builds (parallel)
BUILD=1 SKIP_TESTS=1 SKIP_MULTI=1 PHASE=2 env CUDA_VISIBLE_DEVICES= scripts/gpu_session.sh \
  > "$w/build-session.log" 2>&1 < /dev/null &
PROBE_DIR=$pd nb scripts/probe_axis.sh fused_tiled "$AX" --shape seed --json "$w/build-probe.json" \
  > "$w/build-probe.log" 2>&1 &
nb $py scripts/trace_tc.py fused_tiled bfloat16 deepseek-v3:64 --runs 1 > "$w/build-trace.log" 2>&1 &
wait; stamp "built"; cp /tmp/gpu-session/phase2/build*.log "$w/" 2>/dev/null
grep -h "wall time" "$w"/build*.log | head -8
# ---- checks and measurements
# shellcheck disable=SC2086
timeout 60 $py scripts/tc_check.py fused_tiled bfloat16,float16 $SHAPES > "$w/tc-check.log" 2>&1
stamp "tc_check: exit $?"; grep -v "^\[\|W1206\|still building" "$w/tc-check.log" | cut -c1-110 | tail -12
pack
timeout -s INT -k 20 ${SUITE_S:-240} $py -m pytest -q -m gpu -p no:cacheprovider -rfEs --durations=30 \
  > "$w/gpu-tests.log" 2>&1
stamp "GPU tests: exit $?: $(grep -E 'passed|failed' "$w/gpu-tests.log" | tail -1)"
grep -E "^(FAILED|ERROR)" "$w/gpu-tests.log" | head -8
pack
timeout -s INT 40 $py run_bench.py --variant fused_tiled --shape seed --dtype float32 \
  --baselines empty-kernel,eager --rounds 3 --no-breakdown --json "$w/seed-fp32.json" --markdown "$w/seed-fp32.md" \
  > "$w/seed-fp32.log" 2>&1 < /dev/null
stamp "seed fp32: exit $?"
timeout -s INT 80 $py run_bench.py --variant two_stage,two_stage_pp,cutlass_2gemm,fused_tiled \
  --shape deepseek-v3,deepseek-v2-lite --tokens 64,512,4096 --dtype bfloat16 \
  --baselines eager,eager-graph,torch-2gemm --rounds 3 --no-breakdown \
  --json "$w/targets.json" --markdown "$w/targets.md" > "$w/targets.log" 2>&1 < /dev/null
stamp "targets: exit $?"
pack
PROBE_DIR=$pd timeout -s INT 80 scripts/probe_axis.sh fused_tiled "$AX" --shape deepseek-v3 --tokens 64 \
  --dtype bfloat16 --baselines eager,eager-graph,torch-2gemm --rounds 3 --timeout 40 \
  --json "$w/v3-64-breakdown.json" --markdown "$w/v3-64-breakdown.md" > "$w/v3-64-breakdown.log" 2>&1 < /dev/null
stamp "V3 64 with breakdown: exit $?"
grep -E "^\| " "$w/v3-64-breakdown.md" | awk -F'|' '{print $4,$8}' | head -12
$py scripts/targets.py "$w/targets.json" "$w/v3-64-breakdown.json" "$w/seed-fp32.json" > "$w/targets-check.txt" 2>&1
head -14 "$w/targets-check.txt"
pack
timeout 40 $py scripts/trace_tc.py fused_tiled bfloat16 deepseek-v3:64 --runs 7 --json "$w/trace.json" \
  > "$w/trace.txt" 2>&1 < /dev/null
stamp "trace: exit $?"
stamp done
