#!/usr/bin/env bash
# Session 2026-12-06 (second), first device call (results/NOTES.md): the final tree's GPU check and the decode
# path's knobs. Builds with no GPU visible (every variant for the suite, the probe's six fused_tiled builds, two
# trace builds), then: tc_check of fused_tiled (8 shapes x bf16 / fp16), the probe MLA_DEC_FILL_AFTER_RELEASE x
# MLA_DEC_LAT_COPY at 1 and 64 tokens and two odd shapes (3 rounds), the GPU suite, the V3 64 trace at
# FILL_AFTER_RELEASE 0 and 1 with the TMA multicast copy, and the decode rows of the other variants with what is left. Every step
# has its own limit so the call ends inside 600 s. From the repository root, third_party/cutlass carried:
#   KVBENCH_COMMIT=<sha> bash results/2026-12-06-second/call1.sh
set -uo pipefail
export CUDA_HOME=/usr/local/cuda PATH=/usr/local/cuda/bin:$PATH TORCH_CUDA_ARCH_LIST=9.0a PYTHONUNBUFFERED=1
export KVBENCH_CUTLASS_DIR=third_party/cutlass
o=${OUT:-/tmp/out}; w=/tmp/call1; mkdir -p "$o" "$w"
pack() { tar -czf "$o/call1.tgz" -C "$w" .; }
trap pack EXIT
t0=$(date +%s); stamp() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
py=${PYTHON:-python3}
nb() { env CUDA_VISIBLE_DEVICES= timeout 280 "$@" < /dev/null; }
AX="MLA_DEC_FILL_AFTER_RELEASE=0,1; MLA_DEC_LAT_COPY=0,1,2"
SHAPES="b=1,s=5,d=512,rank=64,heads=3,head_dim=128 b=4,s=16,d=1032,rank=200,heads=5,head_dim=128 deepseek-v3:64 deepseek-v3:1 kimi-k2:64 minicpm3:64 deepseek-v2-lite:64 b=1,s=7,d=2056,rank=136,heads=2,head_dim=128"
# ---- builds (parallel)
BUILD=1 SKIP_TESTS=1 SKIP_MULTI=1 PHASE=2 nb scripts/gpu_session.sh > "$w/build-session.log" 2>&1 &
PROBE_DIR=/tmp/probe-ft nb scripts/probe_axis.sh fused_tiled "$AX" --shape seed --json "$w/build-probe.json" \
  > "$w/build-probe.log" 2>&1 &
for f in 0 1; do
  nb $py scripts/trace_tc.py fused_tiled bfloat16 deepseek-v3:64 --runs 1 --define MLA_DEC_FILL_AFTER_RELEASE=$f \
    --define MLA_DEC_LAT_COPY=2 \
    > "$w/build-trace$f.log" 2>&1 &
done
wait; stamp "built"; grep -l "FAILED\|rror" "$w"/build-*.log
# ---- checks and measurements
# shellcheck disable=SC2086
timeout 60 $py scripts/tc_check.py fused_tiled bfloat16,float16 $SHAPES > "$w/tc-check.log" 2>&1
stamp "tc_check: exit $?"; grep -v "^\[\|W1206\|still building" "$w/tc-check.log" | cut -c1-120
PROBE_DIR=/tmp/probe-ft timeout -s INT 150 scripts/probe_axis.sh fused_tiled "$AX" \
  --shape deepseek-v3,kimi-k2 --tokens 1,64 \
  --shape b=4,s=16,d=1032,rank=200,heads=5,head_dim=128 --shape b=1,s=7,d=2056,rank=136,heads=2,head_dim=128 \
  --dtype bfloat16 --baselines eager,torch-2gemm --rounds 3 --timeout 40 --no-breakdown --json "$w/probe.json" --markdown "$w/probe.md" > "$w/probe.log" 2>&1 < /dev/null
stamp "probe: exit $?"
grep -E "^\| " "$w/probe.md" | awk -F'|' '{print $2,$4,$5,$8,$9}'
pack
timeout -s INT -k 20 190 $py -m pytest -q -m gpu -p no:cacheprovider -rfEs --durations=30 > "$w/gpu-tests.log" 2>&1
stamp "GPU tests: exit $?: $(grep -E 'passed|failed' "$w/gpu-tests.log" | tail -1)"
for f in 0 1; do
  timeout 40 $py scripts/trace_tc.py fused_tiled bfloat16 deepseek-v3:64 --runs 7 --define MLA_DEC_FILL_AFTER_RELEASE=$f \
    --define MLA_DEC_LAT_COPY=2 \
    --json "$w/trace$f.json" > "$w/trace$f.txt" 2>&1
  stamp "trace $f: exit $?"
done
pack
left=$(( 585 - $(date +%s) + t0 ))
timeout -s INT $(( left > 20 ? left : 20 )) $py run_bench.py --variant fused_tiled,two_stage,two_stage_pp \
  --shape deepseek-v3,kimi-k2,deepseek-v2-lite --tokens 1,64 --dtype bfloat16 --baselines eager,torch-2gemm --rounds 3 \
  --no-breakdown --json "$w/decode.json" --markdown "$w/decode.md" > "$w/decode.log" 2>&1 < /dev/null
stamp "decode rows: exit $?"
grep -E "^\| " "$w/decode.md" | awk -F'|' '{print $2,$4,$5,$8,$9}'
grep -E "g1 reduced|latent ready|g2 main done|C exit|event-timed" "$w"/trace?.txt
stamp done
