#!/usr/bin/env bash
# This session's first device call (results/NOTES.md, "Session 2026-12-06"): fused_tiled's one-launch decode path
# (kernels/mla_decode.cuh, MLA_FUSED_DECODE). Builds with no GPU visible, then: tc_check of the new path (correctness
# and a hang guard first), the probe MLA_FUSED_DECODE 0 / 1 at 64 tokens over the presets (3 rounds), the GPU suite's
# fused_tiled tests, and in the time left the issue-9 decode rows next to two_stage. From the repository root,
# third_party/cutlass carried:
#   KVBENCH_COMMIT=<sha> bash results/2026-12-06-h100/call1.sh
set -uo pipefail
export CUDA_HOME=/usr/local/cuda PATH=/usr/local/cuda/bin:$PATH TORCH_CUDA_ARCH_LIST=9.0a PYTHONUNBUFFERED=1
export KVBENCH_CUTLASS_DIR=third_party/cutlass
o=${OUT:-/tmp/out}; w=/tmp/call1; mkdir -p "$o" "$w"
pack() { tar -czf "$o/call1.tgz" -C "$w" .; }
trap pack EXIT
t0=$(date +%s); stamp() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
nb() { env CUDA_VISIBLE_DEVICES= timeout 300 "$@" < /dev/null; }
py=${PYTHON:-python3}  # the device machine: python3 has torch; here: PYTHON=.venv/bin/python
AX="MLA_FUSED_DECODE=0,1"
SHAPES="b=1,s=5,d=512,rank=64,heads=3,head_dim=128 b=4,s=16,d=1032,rank=200,heads=5,head_dim=128 deepseek-v3:64 deepseek-v3:1 kimi-k2:64 minicpm3:64 deepseek-v2-lite:64 b=1,s=7,d=2056,rank=136,heads=2,head_dim=128"
# ---- builds (parallel): the variants of the comparison, the probe's two copies
nb $py run_bench.py --variant fused_tiled,two_stage,two_stage_pp,cutlass_2gemm --shape seed \
  --json "$w/build.json" > "$w/build.log" 2>&1 &
PROBE_DIR=/tmp/probe-dec PYTHON=$py nb scripts/probe_axis.sh fused_tiled "$AX" --shape seed --json "$w/build-probe.json" \
  > "$w/build-probe.log" 2>&1 &
wait; stamp "built"; grep -l "FAILED\|build-failed" "$w"/build*.log
[ -n "${BUILD_ONLY:-}" ] && exit 0
# ---- correctness of the new path first (a hang ends here, not in the probe)
# shellcheck disable=SC2086
TIME=1 timeout 120 $py scripts/tc_check.py fused_tiled,two_stage bfloat16,float16 $SHAPES > "$w/tc-check.log" 2>&1
stamp "tc_check: exit $?"; cat "$w/tc-check.log" | grep -v "^\[" | cut -c1-150
pack
# ---- the probe: 0 (the engine's fused launch) against 1 (the decode path), same run
PROBE_DIR=/tmp/probe-dec PYTHON=$py timeout 200 scripts/probe_axis.sh fused_tiled "$AX" \
  --shape deepseek-v3,deepseek-v2,kimi-k2,deepseek-v2-lite,minicpm3 --tokens 1,64 --dtype bfloat16 --rounds 3 \
  --budget 0.3 --baselines eager,torch-2gemm --json "$w/probe-decode.json" --markdown "$w/probe-decode.md" \
  > "$w/probe-decode.log" 2>&1 < /dev/null
stamp "probe: exit $?"
grep -E "^\| " "$w/probe-decode.md" | awk -F'|' '{print $2,$4,$5,$8,$9}'
pack
timeout -s INT -k 20 170 $py -m pytest -q -m gpu -k fused_tiled -p no:cacheprovider -rfEs > "$w/gpu-tests.log" 2>&1
stamp "GPU tests (fused_tiled): exit $?: $(grep -E 'passed|failed' "$w/gpu-tests.log" | tail -1)"
pack
left=$(( 585 - $(date +%s) + t0 ))
timeout -s INT $(( left > 30 ? left : 30 )) $py run_bench.py --variant two_stage,two_stage_pp,fused_tiled,cutlass_2gemm \
  --shape deepseek-v3,deepseek-v2-lite --tokens 64,512 --dtype bfloat16 --baselines eager,eager-graph,torch-2gemm \
  --rounds 3 --no-breakdown --json "$w/targets-decode.json" --markdown "$w/targets-decode.md" > "$w/targets.log" 2>&1
stamp "targets (64, 512): exit $?"
grep -E "^\| " "$w/targets-decode.md" | awk -F'|' '{print $2,$4,$5,$8,$9}'
stamp done
