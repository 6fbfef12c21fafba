#!/usr/bin/env bash
# This session's second device call: the decode path checked (tc_check: d in halves is new), where its time goes
# (scripts/trace_tc.py on fused_tiled: the CTAs that store latent elements in launch slot 0, the others in slot 1),
# the probe MLA_DEC_HALVES 1 / 2 x MLA_DEC_TMA_STORE 0 / 1 next to two_stage in one run, the GPU suite's fused_tiled
# tests, and ncu of the
# decode kernel at V3 64. From the repository root, third_party/cutlass carried:
#   KVBENCH_COMMIT=<sha> bash results/2026-12-06-h100/call2.sh
set -uo pipefail
export CUDA_HOME=/usr/local/cuda PATH=/usr/local/cuda/bin:$PATH TORCH_CUDA_ARCH_LIST=9.0a PYTHONUNBUFFERED=1
export KVBENCH_CUTLASS_DIR=third_party/cutlass
o=${OUT:-/tmp/out}; w=/tmp/call2; mkdir -p "$o" "$w"
pack() { tar -czf "$o/call2.tgz" -C "$w" .; }
trap pack EXIT
t0=$(date +%s); stamp() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
py=${PYTHON:-python3}  # the device machine: python3 has torch; here: PYTHON=.venv/bin/python
nb() { env CUDA_VISIBLE_DEVICES= timeout 300 "$@" < /dev/null; }
AX="MLA_DEC_HALVES=1,2; MLA_DEC_TMA_STORE=0,1"  # MLA_DEC_LAT_BATCH at its default 1
PD=/tmp/probe-dec2; mkdir -p $PD; cp kernels/two_stage.cu $PD/  # two_stage timed in the probe's own run
# ---- builds (parallel): the probe's copies and two_stage, the traced build
PROBE_DIR=$PD PYTHON=$py nb scripts/probe_axis.sh fused_tiled "$AX" --shape seed --json "$w/build-probe.json" \
  > "$w/build-probe.log" 2>&1 &
CUDA_VISIBLE_DEVICES= timeout 300 $py -c "
import sys; sys.argv=['x','fused_tiled','bfloat16','seed']; sys.path.insert(0,'scripts')
import trace_tc
from harness import build, discover
from pathlib import Path
spec = discover.load_variant(Path('kernels/fused_tiled.cu'))
print(build.build_all([trace_tc.traced_extension(spec, ())]))" > "$w/build-trace.log" 2>&1 &
nb $py run_bench.py --variant fused_tiled --shape seed --json "$w/build.json" > "$w/build.log" 2>&1 &  # for ncu
wait; stamp "built"; grep -l "FAILED\|build-failed\|Error" "$w"/build*.log
[ -n "${BUILD_ONLY:-}" ] && exit 0
SHAPES="b=1,s=5,d=512,rank=64,heads=3,head_dim=128 b=4,s=16,d=1032,rank=200,heads=5,head_dim=128 deepseek-v3:64 deepseek-v3:1 kimi-k2:64 minicpm3:64 deepseek-v2-lite:64 b=1,s=7,d=2056,rank=136,heads=2,head_dim=128"
# shellcheck disable=SC2086
TIME=1 timeout 90 $py scripts/tc_check.py fused_tiled bfloat16,float16 $SHAPES > "$w/tc-check.log" 2>&1
stamp "tc_check: exit $?"; grep -v "^\[\|W1206\|still building" "$w/tc-check.log" | cut -c1-150
pack
PROBE_DIR=$PD PYTHON=$py timeout 200 scripts/probe_axis.sh fused_tiled "$AX" \
  --shape deepseek-v3,kimi-k2 --tokens 1,64 --dtype bfloat16 --rounds 3 \
  --budget 0.3 --baselines eager,torch-2gemm --json "$w/probe-halves-store.json" --markdown "$w/probe-halves-store.md" \
  > "$w/probe-halves-store.log" 2>&1 < /dev/null
stamp "probe: exit $?"
grep -E "^\| " "$w/probe-halves-store.md" | awk -F'|' '{print $2,$4,$5,$8,$9}'
pack
timeout -s INT -k 20 120 $py -m pytest -q -m gpu -k fused_tiled -p no:cacheprovider -rfEs > "$w/gpu-tests.log" 2>&1
stamp "GPU tests (fused_tiled): exit $?: $(grep -E 'passed|failed' "$w/gpu-tests.log" | tail -1)"
pack
[ $(( $(date +%s) - t0 )) -gt 330 ] && { stamp "no time for the trace"; exit 0; }
timeout 100 $py scripts/trace_tc.py fused_tiled bfloat16 deepseek-v3:64 deepseek-v3:1 kimi-k2:64 --runs 7 \
  --json "$w/trace-decode.json" > "$w/trace-decode.txt" 2>&1
stamp "trace: exit $?"; cat "$w/trace-decode.txt" | grep -v "^\[\|still building\|W1206"
pack
[ $(( $(date +%s) - t0 )) -gt 420 ] && { stamp "no time for ncu"; exit 0; }
# ncu of the decode kernel at V3 64 (one call after an unprofiled one; clocks untouched)
n="$w/ncu-fused_tiled-deepseek-v3-64-bfloat16"
timeout 120 ncu --clock-control none --profile-from-start off --set full --launch-count 4 -f -o "$n" \
  $py scripts/profile_variant.py fused_tiled deepseek-v3:64 bfloat16 3 > "$n.log" 2>&1
stamp "ncu: exit $?"
ncu --import "$n.ncu-rep" --csv --page details > "$n.csv" 2>&1
ncu --import "$n.ncu-rep" --csv --page source --print-source sass > "$n-sass.csv" 2>&1
rm -f "$n.ncu-rep"
$py scripts/ncu_summary.py "$n.csv" 2>&1 | tee "$n.summary"
$py scripts/ncu_hotspots.py "$n-sass.csv" 30 > "$n.hotspots" 2>&1; rm -f "$n-sass.csv"
stamp done
