#!/usr/bin/env bash
# One session's H200 measurements, in two calls on the two-GPU machine (nvidia-h200-x2). Everything is
# written under /tmp/gpu-session/phase<N> and packed into $OUT/phase<N>.tgz (the device tool returns few files).
#   PHASE=1: build every variant once with no GPU visible (later steps find the builds cached), a hang guard
#            for two_stage_pp (its ping-pong consumers wait on each other's barriers), then the bf16/fp16 sweep
#            and the float32 sweep (SKIP_FP32=1: not it), each spread over every GPU the machine has.
#   PHASE=profile: ncu on the (variant, shape, dtype) of PROFILE (after the build; counters need Firecracker).
#   PHASE=2: the GPU tests (both GPUs visible: the multi-GPU tests need two), then the multi-GPU check
#            (scripts/multi_gpu_check.sh). Builds again if the machine is a fresh one. SKIP_TESTS=1 or
#            SKIP_MULTI=1 leaves one of the two out, so each fits one call (build ~220 s + tests, or the check).
#            PROBE_VARIANT, PROBE_AXES and PROBE_ARGS add a scripts/probe_axis.sh run after the tests (its builds
#            happen with the others); PROBES adds several, one per line, each "VARIANT|AXES|ARGS" (results in
#            probe-VARIANT.{json,md,log}).
# BUILD=0 skips the build-everything step (a call of probes or profiles only: each builds just what it runs); BUILD_S
# is each build command's time limit (default 400 s).
# A sweep cut by its time limit gets SIGINT: the harness keeps its finished rows (the file says complete: false).
# The machine gets the tree without .git: pass KVBENCH_COMMIT=<sha>; CUTLASS headers travel as third_party/cutlass.
#   KVBENCH_COMMIT=$(git rev-parse HEAD) PHASE=1 scripts/gpu_session.sh
set -uo pipefail
cd "$(dirname "$0")/.."
phase=${PHASE:-1}
work=/tmp/gpu-session/phase$phase
mkdir -p "$work"
out=${OUT:-/tmp/out}
mkdir -p "$out"
pack() { tar -czf "$out/phase$phase.tgz" -C "$work" .; }
trap pack EXIT
export PYTHONUNBUFFERED=1 KVBENCH_CUTLASS_DIR=${KVBENCH_CUTLASS_DIR:-third_party/cutlass}
export TORCH_CUDA_ARCH_LIST=${TORCH_CUDA_ARCH_LIST:-9.0a}
py=${PYTHON:-python3}
presets=seed,deepseek-v2-lite,deepseek-v2,deepseek-v3,kimi-k2,minicpm3
stamp() { echo "[$(date +%T)] $*"; }
probes=${PROBES:-}
if [ -n "${PROBE_AXES:-}" ]; then
  probes="$PROBE_VARIANT|$PROBE_AXES|${PROBE_ARGS:-}"$'\n'"$probes"
fi
# two_stage_pp is left out of every step once its guard failed (the mark survives between calls on a warm machine).
without_pingpong() { ls kernels/*.cu kernels/*.py | xargs -n1 basename | sed 's/\.[a-z]*$//' | grep -vx two_stage_pp | paste -sd,; }
variants=all
if [ -f /tmp/gpu-session/drop-pingpong ]; then
  variants=$(without_pingpong)
fi
sweep() {  # NAME DTYPES DEVICES: the preset sweep at decode, mid and prefill sizes
  # shellcheck disable=SC2086
  timeout -s INT "${SWEEP_S:-260}" $py run_bench.py --variant "$variants" --shape $presets --tokens 64,512,4096 \
    --baselines eager,eager-graph,torch-2gemm --budget 0.2 --rounds 1 --timeout 120 --allow-failures --no-breakdown \
    --dtype "$2" --devices "$3" --json "$work/$1.json" --markdown "$work/$1.md" > "$work/$1.log" 2>&1
  echo "$1: exit $?, $(grep '^wall time' "$work/$1.log" || tail -1 "$work/$1.log")"
}
# Each build command's limit: on a fresh 16-core H100 machine all of them in parallel took more than 300 s
# (results/NOTES.md, 2026-12-06 third).
build_s=${BUILD_S:-400}
build() {
  rm -f "$work"/build*.log  # a warm machine keeps the last call's: the summary below is this call's only
  CUDA_VISIBLE_DEVICES= timeout "$build_s" $py run_bench.py --variant all --shape seed --json "$work/build.json" \
    > "$work/build.log" 2>&1 &
  CUDA_VISIBLE_DEVICES= timeout "$build_s" $py run_bench.py --kernels tests/adversarial --variant all --shape seed \
    --json "$work/build-adv.json" > "$work/build-adv.log" 2>&1 &
  # tests/test_scaffold.py builds `new`'s template in a folder of its own; the build cache is keyed by content,
  # so building it here makes the GPU suite find it cached as well.
  local scaffold
  scaffold=$(mktemp -d)
  cp kernels/kv_common.cuh "$scaffold/"
  { $py run_bench.py new scaffolded --kernels "$scaffold" && CUDA_VISIBLE_DEVICES= timeout "$build_s" $py run_bench.py \
      --kernels "$scaffold" --variant all --shape seed --json "$work/build-scaffold.json"; } \
    > "$work/build-scaffold.log" 2>&1 &
  # scripts/launch_floor.py's kernels (its GPU test then finds them cached); without a GPU it exits 3 once built
  CUDA_VISIBLE_DEVICES= timeout "$build_s" $py scripts/launch_floor.py > "$work/build-launch-floor.log" 2>&1 &
  local v axes args
  while IFS='|' read -r v axes args; do  # each probe's builds (one per axis value) with the others
    [ -n "$v" ] || continue
    CUDA_VISIBLE_DEVICES= PROBE_DIR=/tmp/gpu-session/probe-$v timeout "$build_s" scripts/probe_axis.sh "$v" \
      "$axes" --shape seed --json "$work/build-probe-$v.json" > "$work/build-probe-$v.log" 2>&1 < /dev/null &
  done <<< "$probes"
  wait
  grep -h "wall time\|FAILED" "$work"/build*.log | head
}

{ nvidia-smi; nvidia-smi -q -d CLOCK,POWER; $py -c 'import torch, triton; print(torch.__version__, triton.__version__)'; nproc; } \
  > "$work/machine.txt" 2>&1
if [ "${BUILD:-1}" = 1 ]; then
  stamp "build (phase $phase)"
  build
fi
if [ "$phase" = 1 ]; then
  stamp "two_stage_pp hang guard"
  if ! timeout 90 $py scripts/tc_check.py two_stage_pp bfloat16 deepseek-v3:4096 "b=2,s=2000,d=64,rank=16,heads=16,head_dim=128" \
       "b=1,s=1380,d=200,rank=136,heads=16,head_dim=128" > "$work/pingpong-check.log" 2>&1; then
    echo "two_stage_pp failed its check or hung: left out of every later step"
    touch /tmp/gpu-session/drop-pingpong
    variants=$(without_pingpong)
  fi
  tail -4 "$work/pingpong-check.log"
  stamp "bf16/fp16 sweep on every GPU"
  sweep sweep-16bit bfloat16,float16 all
  if [ -z "${SKIP_FP32:-}" ]; then
    stamp "float32 sweep on every GPU"
    SWEEP_S=150 sweep sweep-fp32 float32 all
  fi
elif [ "$phase" = profile ]; then
  # ncu (counters need the Firecracker runtime; on gVisor it says so and the log shows it) on each
  # "variant,shape,dtype" of PROFILE: three calls, every kernel they launch, the full section set.
  uname -r >> "$work/machine.txt"
  for item in ${PROFILE:-two_stage,deepseek-v3:64,bfloat16 two_stage,deepseek-v3:512,bfloat16 \
                cutlass_2gemm,deepseek-v2-lite:4096,bfloat16 fused_tiled,seed,float32}; do
    IFS=, read -r v s d <<< "$item"
    stamp "ncu $v $s $d"
    name="$work/ncu-$v-${s//:/-}-$d"
    timeout "${NCU_S:-120}" ncu --clock-control none --profile-from-start off --set full --launch-count "${NCU_KERNELS:-8}" -f -o "$name" \
      $py scripts/profile_variant.py "$v" "$s" "$d" 3 > "$name.log" 2>&1
    echo "exit $?"
    # the report read back as text (with ncu's rule notes: stalls, occupancy limits) and as CSV; the
    # binary report itself stays behind (its size would crowd out the rest of $OUT)
    ncu --import "$name.ncu-rep" --page details > "$name.txt" 2>&1
    ncu --import "$name.ncu-rep" --csv --page details > "$name.csv" 2>&1
    # per-instruction SASS with its stall samples: which instruction the top stall waits on
    ncu --import "$name.ncu-rep" --csv --page source --print-source sass > "$name-sass.csv" 2>&1
    rm -f "$name.ncu-rep"
    $py scripts/ncu_summary.py "$name.csv" 2>&1 | tee "$name.summary"
    $py scripts/ncu_hotspots.py "$name-sass.csv" 30 > "$name.hotspots" 2>&1
  done
else
  if [ -z "${SKIP_TESTS:-}" ]; then
    stamp "GPU tests"
    # SIGINT, not SIGTERM: pytest interrupted so still prints the failures so far and their reasons.
    # The GPU suite (-m gpu); the build-marked tests need no GPU and run in CI (TESTS_MARK="gpu or build" adds them).
    timeout -s INT -k 30 "${TESTS_S:-300}" $py -m pytest -q -m "${TESTS_MARK:-gpu}" -p no:cacheprovider -rfEs \
      --durations=40 \
      > "$work/gpu-tests.log" 2>&1
    echo "GPU tests: exit $?"
    grep -E "passed|failed" "$work/gpu-tests.log" | tail -1
    pack  # what is done so far comes back even if a later step meets the call's time limit
  fi
  while IFS='|' read -r v axes args; do
    [ -n "$v" ] || continue
    stamp "probe $v over $axes"
    # shellcheck disable=SC2086
    PROBE_DIR=/tmp/gpu-session/probe-$v timeout "${PROBE_S:-120}" scripts/probe_axis.sh "$v" "$axes" \
      $args --json "$work/probe-$v.json" --markdown "$work/probe-$v.md" > "$work/probe-$v.log" 2>&1 < /dev/null
    echo "probe $v: exit $?"
    tail -25 "$work/probe-$v.log"
    pack
  done <<< "$probes"
  if [ -z "${SKIP_MULTI:-}" ]; then
    stamp "multi-GPU check"
    OUT="$work/multi" timeout "${MULTI_S:-400}" scripts/multi_gpu_check.sh > "$work/multi-gpu.log" 2>&1
    tail -8 "$work/multi-gpu.log"
  fi
fi
stamp done
