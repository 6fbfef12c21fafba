#!/usr/bin/env bash
# Ran once, at 0ba02ba (results/NOTES.md, 2026-12-05); MLA_G2_FLAG_WAIT is not in kernels/ after bb1e823.
# This session's second device call (results/NOTES.md, 2026-12-05): the decode flag wait (MLA_G2_FLAG_WAIT).
# Builds everything with no GPU visible (gpu_session.sh's build, the probe's two builds per variant, the trace
# builds and a mutated copy whose GEMM2 does not wait at all), then: the probe 0 / 1 on two_stage and
# two_stage_pp at 64 and 128 tokens (3 rounds), the decode trace with each value, the mutation's check (it must
# fail), the GPU suite, and the issue-9 targets run (3 rounds). Every step has its own time limit so that the call
# ends inside the device's 600 s and what is done comes back. From the repository root, third_party/cutlass carried.
#   KVBENCH_COMMIT=<sha> bash results/2026-12-05-h200/call2.sh
set -uo pipefail
export CUDA_HOME=/usr/local/cuda PATH=/usr/local/cuda/bin:$PATH TORCH_CUDA_ARCH_LIST=9.0a PYTHONUNBUFFERED=1
export KVBENCH_CUTLASS_DIR=third_party/cutlass
o=${OUT:-/tmp/out}; w=/tmp/call2; mkdir -p "$o" "$w"
pack() { tar -czf "$o/call2.tgz" -C "$w" .; }
trap pack EXIT
t0=$(date +%s); stamp() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
nb() { env CUDA_VISIBLE_DEVICES= timeout 300 "$@" < /dev/null; }
PRESETS="deepseek-v3,deepseek-v2,kimi-k2,deepseek-v2-lite,minicpm3 --tokens 64,128 --dtype bfloat16"
AX="MLA_G2_FLAG_WAIT=0,1"
# the mutation: GEMM2's flag wait removed (it must fail the check)
mkdir -p /tmp/mut && cp kernels/*.cuh kernels/two_stage.cu /tmp/mut/
sed -i 's/while (ld_acquire(&p.ready\[w.mt\]) < need)/while (ld_acquire(\&p.ready[w.mt]) < 0)/' /tmp/mut/mla_tc.cuh
grep -c "< 0) __nanosleep" /tmp/mut/mla_tc.cuh > "$w/mutation.txt"
# ---- builds (parallel)
BUILD=1 SKIP_TESTS=1 SKIP_MULTI=1 PHASE=2 scripts/gpu_session.sh > "$w/build-session.log" 2>&1 &
for v in two_stage two_stage_pp; do
  PROBE_DIR=/tmp/probe-$v nb scripts/probe_axis.sh $v "$AX" --shape seed --json "$w/build-probe-$v.json" > "$w/build-probe-$v.log" 2>&1 &
done
for f in 0 1; do
  nb python3 scripts/trace_tc.py two_stage bfloat16 deepseek-v3:64 --runs 1 --define MLA_G2_FLAG_WAIT=$f > "$w/build-trace$f.log" 2>&1 &
done
nb python3 run_bench.py --kernels /tmp/mut --variant two_stage --shape seed --json "$w/build-mut.json" > "$w/build-mut.log" 2>&1 &
wait; stamp "built"; grep -l "FAILED\|rror" "$w"/build-*.log
# ---- measurements
for v in two_stage two_stage_pp; do
  # shellcheck disable=SC2086
  PROBE_DIR=/tmp/probe-$v timeout 100 scripts/probe_axis.sh $v "$AX" --shape $PRESETS --rounds 3 --budget 0.3 \
    --baselines eager,torch-2gemm --json "$w/probe-$v.json" --markdown "$w/probe-$v.md" > "$w/probe-$v.log" 2>&1 < /dev/null
  stamp "probe $v: exit $?"
done
for f in 0 1; do
  timeout 40 python3 scripts/trace_tc.py two_stage bfloat16 deepseek-v3:64 --runs 7 --define MLA_G2_FLAG_WAIT=$f \
    --json "$w/trace$f.json" > "$w/trace$f.txt" 2>&1
  stamp "trace $f: exit $?"
done
timeout 60 python3 run_bench.py --kernels /tmp/mut --variant two_stage --shape deepseek-v3,kimi-k2 --tokens 64 \
  --dtype bfloat16 --baselines eager --rounds 1 --budget 0.1 --no-breakdown --json "$w/mutation.json" > "$w/mutation.log" 2>&1
stamp "mutation run: exit $? (1 = a variant failed, as it must)"
grep -E "two_stage" "$w/mutation.log" | head -4
timeout -s INT -k 20 200 python3 -m pytest -q -m gpu -p no:cacheprovider -rfEs --durations=30 > "$w/gpu-tests.log" 2>&1
stamp "GPU tests: exit $?: $(grep -E 'passed|failed' "$w/gpu-tests.log" | tail -1)"
pack
left=$(( 585 - $(date +%s) + t0 ))
V=two_stage,two_stage_pp,cutlass_2gemm,fused_tiled
timeout -s INT $(( left > 30 ? left : 30 )) python3 run_bench.py --variant $V --shape deepseek-v3,deepseek-v2-lite \
  --tokens 64,512,4096 --dtype bfloat16 --baselines eager,eager-graph,torch-2gemm --rounds 3 --no-breakdown \
  --json "$w/targets.json" --markdown "$w/targets.md" > "$w/targets.log" 2>&1
stamp "targets: exit $?"
python3 scripts/targets.py "$w/targets.json" > "$w/targets-check.txt" 2>&1
head -5 "$w/targets-check.txt"
for v in two_stage two_stage_pp; do grep -E "^\| " "$w/probe-$v.md" | awk -F'|' '{print $2,$4,$5,$8,$9}' | grep -v "empty-kernel"; done
grep -E "g1 reduced|latent ready|g2 main done|C exit|event-timed" "$w"/trace?.txt
stamp done
