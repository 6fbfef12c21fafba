#!/usr/bin/env bash
# Session 2026-12-06 (third), third device call (results/NOTES.md): the decode path's latent hand-over. Builds with
# no GPU visible, in one probe folder: fused_tiled over MLA_DEC_COUNT_LATE x MLA_DEC_LAT_BOXES (4 builds), a copy
# fused_tiled_l2 over MLA_DEC_L2_AHEAD=8,16 and a copy fused_tiled_h2 at MLA_DEC_HALVES=2 (the other knobs at their
# defaults), two_stage beside them; the default fused_tiled and its trace build. Then tc_check of the default build
# (9 shapes x bf16 / fp16; one shape leaves CTAs without GEMM2 boxes), the probe at 1 and 64 tokens and one odd
# shape (3 rounds), the V3 64 trace, and the GPU suite's fused_tiled tests with what is left of LIMIT_S.
# From the repository root, third_party/cutlass carried:
#   KVBENCH_COMMIT=<sha> LIMIT_S=500 bash results/2026-12-06-third/callC.sh
set -uo pipefail
export CUDA_HOME=/usr/local/cuda PATH=/usr/local/cuda/bin:$PATH TORCH_CUDA_ARCH_LIST=9.0a PYTHONUNBUFFERED=1
export KVBENCH_CUTLASS_DIR=third_party/cutlass
o=${OUT:-/tmp/out}; w=/tmp/callC; mkdir -p "$o" "$w"
pack() { tar -czf "$o/callC.tgz" -C "$w" .; }
trap pack EXIT
t0=$(date +%s); stamp() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
py=${PYTHON:-python3}
limit=${LIMIT_S:-500}
nb() { env CUDA_VISIBLE_DEVICES= timeout 260 "$@" < /dev/null; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv > "$w/gpu.txt" 2>&1; cat "$w/gpu.txt"
AX="MLA_DEC_COUNT_LATE=0,1; MLA_DEC_LAT_BOXES=0,1"
SHAPES="b=1,s=5,d=512,rank=64,heads=3,head_dim=128 b=4,s=16,d=1032,rank=200,heads=5,head_dim=128 deepseek-v3:64 deepseek-v3:1 kimi-k2:64 minicpm3:64 deepseek-v2-lite:64 b=1,s=7,d=2056,rank=136,heads=2,head_dim=128 b=1,s=3,d=512,rank=512,heads=1,head_dim=128"
pd=/tmp/probe-c; mkdir -p "$pd"; cp kernels/*.cuh kernels/two_stage.cu "$pd/"
for c in "l2|MLA_DEC_L2_AHEAD=8,16" "h2|MLA_DEC_HALVES=2"; do
  IFS='|' read -r tag axis <<< "$c"
  awk -v axes="$axis" '{ print } /^\/\/ dtypes:/ && !done { print "// axes: " axes; done = 1 }' kernels/fused_tiled.cu \
    > "$pd/fused_tiled_$tag.cu"
done
# ---- builds (parallel)
PROBE_DIR=$pd nb scripts/probe_axis.sh fused_tiled "$AX" --shape seed --json "$w/build-probe.json" \
  > "$w/build-probe.log" 2>&1 &
nb $py run_bench.py --variant fused_tiled --shape seed --json "$w/build-default.json" > "$w/build-default.log" 2>&1 &
nb $py scripts/trace_tc.py fused_tiled bfloat16 deepseek-v3:64 --runs 1 > "$w/build-trace.log" 2>&1 &
wait; stamp "built"; grep -h "wall time\|FAILED" "$w"/build-*.log | head
# ---- checks and measurements
# shellcheck disable=SC2086
timeout 60 $py scripts/tc_check.py fused_tiled bfloat16,float16 $SHAPES > "$w/tc-check.log" 2>&1
stamp "tc_check: exit $?"; grep -v "^\[\|W1206\|still building" "$w/tc-check.log" | cut -c1-110
pack
PROBE_DIR=$pd timeout -s INT 170 scripts/probe_axis.sh fused_tiled "$AX" \
  --shape deepseek-v3,kimi-k2 --tokens 1,64 --shape b=4,s=16,d=1032,rank=200,heads=5,head_dim=128 \
  --dtype bfloat16 --baselines eager,torch-2gemm --rounds 3 --timeout 40 --no-breakdown --json "$w/probe.json" \
  --markdown "$w/probe.md" > "$w/probe.log" 2>&1 < /dev/null
stamp "probe: exit $?"
grep -E "^\| " "$w/probe.md" | awk -F'|' '{print $2,$4,$5,$8}' | grep -v empty-kernel
pack
timeout 50 $py scripts/trace_tc.py fused_tiled bfloat16 deepseek-v3:64 --runs 7 --json "$w/trace.json" \
  > "$w/trace.txt" 2>&1 < /dev/null
stamp "trace: exit $?"
pack
left=$(( limit - 10 - $(date +%s) + t0 ))
if [ $left -gt 100 ]; then  # the selection builds what its fixture needs first (≈ 110 s on an H100 machine)
  timeout -s INT -k 5 $left $py -m pytest -q -m gpu -k fused_tiled -p no:cacheprovider -rfEs > "$w/gpu-tests.log" 2>&1
  stamp "GPU tests (fused_tiled): exit $?: $(grep -E 'passed|failed' "$w/gpu-tests.log" | tail -1)"
fi
stamp done
