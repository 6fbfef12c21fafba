# Sourced by a session's device-call scripts (results/<session>/callX.sh): the environment every call needs, a work
# folder packed into one archive under $OUT on exit (the device tool returns few files), and the helpers the calls
# share. Usage, first lines of a call script run from the repository root:
#   . scripts/device_call_lib.sh callA        # work folder /tmp/callA, archive $OUT/callA.tgz
# Then: $w (work folder), $py, stamp MSG (seconds since the start), nb CMD... (a build with no GPU visible, 400 s
# limit), pack (archive now as well: a later step cut by the call's limit keeps what came before), gpu_info,
# rows_summary JSON (a line a row: status, GPU µs, the first kernel's device µs and grid, the call's busy µs),
# gpu_tests LOG SECONDS [pytest arguments] (the GPU tests, their summary line and failures), preset_sweep NAME DTYPES
# SECONDS (README's preset sweep, 1 round, into NAME.{json,md,log}), build_everything (every variant built with no GPU
# visible by scripts/gpu_session.sh's build step, its logs kept), targets_run VARIANTS (the seed float32 row and
# the issue-9 targets run, 3 rounds with the breakdown, checked by scripts/targets.py), ncu_l2 VARIANT TOKENS [TAG] (the
# L2 and DRAM counters of the variant's first kernel in one call at DeepSeek-V3 TOKENS, bf16, into ncu-VARIANT-TOKENS[TAG]),
# check_m128 VARIANT (a check-only run on tests/test_gpu.py's tensor-core shapes that reach M > 128 or its declines, bf16
# and fp16, into check.{json,log}; prints the rows' status counts), probe_build NAME VARIANT AXES (scripts/probe_axis.sh's
# builds of VARIANT's AXES with no GPU visible, in /tmp/probe_NAME) and probe_run NAME SECONDS VARIANT AXES ARGS...
# (that probe run with ARGS, bf16, 3 rounds, into NAME.{json,md,log} and NAME-summary.txt), ncu_gemm1 VARIANT
# PRESET:TOKENS (ncu --set full of one GEMM1 launch: its pages and hotspots).
set -uo pipefail
export CUDA_HOME=/usr/local/cuda PATH=/usr/local/cuda/bin:$PATH TORCH_CUDA_ARCH_LIST=9.0a PYTHONUNBUFFERED=1
export KVBENCH_CUTLASS_DIR=${KVBENCH_CUTLASS_DIR:-third_party/cutlass}
call_name=${1:?call name}
o=${OUT:-/tmp/out}; w=/tmp/$call_name; mkdir -p "$o" "$w"
pack() { tar -czf "$o/$call_name.tgz" -C "$w" .; }
trap pack EXIT
t0=$(date +%s); stamp() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
py=${PYTHON:-python3}
nb() { env CUDA_VISIBLE_DEVICES= timeout 400 "$@" < /dev/null; }
gpu_info() {
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv > "$w/gpu.txt" 2>&1
  cat "$w/gpu.txt"
  echo "commit ${KVBENCH_COMMIT:-unset}" >> "$w/gpu.txt"
}
rows_summary() {
  $py - "$1" <<'PY'
import json, sys
for r in json.load(open(sys.argv[1]))["rows"]:
    k = r.get("kernels") or {}
    first = (k.get("list") or [{}])[0]
    sh = r["shape"]
    print(f"{sh.get('name') or ''}:{sh.get('s')} {r['variant']:40s} {r['status']:6s} "
          f"gpu {((r.get('gpu_us') or {}).get('median') or 0):8.2f}  first kernel {first.get('device_us') or 0:7.2f} "
          f"grid {first.get('grid')} busy {k.get('busy_us')}")
PY
}
gpu_tests() {
  local log=$w/$1 limit=$2
  shift 2
  timeout -s INT -k 20 "$limit" $py -m pytest -q -m gpu -p no:cacheprovider -rfEs --durations=30 "$@" > "$log" 2>&1
  stamp "GPU tests $*: exit $?: $(grep -E ' in [0-9.]+s' "$log" | tail -1)"
  grep -E "^(FAILED|ERROR)" "$log" | head -8
}
preset_sweep() {
  timeout -s INT "$3" $py run_bench.py --variant all --shape seed,deepseek-v2-lite,deepseek-v2,deepseek-v3,kimi-k2,minicpm3 \
    --tokens 64,512,4096 --baselines eager,eager-graph,torch-2gemm --budget 0.2 --rounds 1 --timeout 120 \
    --allow-failures --no-breakdown --devices all --dtype "$2" --json "$w/$1.json" --markdown "$w/$1.md" \
    > "$w/$1.log" 2>&1 < /dev/null
  stamp "$1: exit $?, $(grep '^wall time' "$w/$1.log" || tail -1 "$w/$1.log")"
}
targets_run() {
  timeout -s INT 60 $py run_bench.py --variant fused_tiled --shape seed --dtype float32 --baselines empty-kernel,eager \
    --rounds 3 --no-breakdown --json "$w/seed-fp32.json" > "$w/seed.log" 2>&1 < /dev/null
  stamp "seed: exit $?"
  timeout -s INT 150 $py run_bench.py --variant "$1" --shape deepseek-v3,deepseek-v2-lite --tokens 64,512,4096 \
    --dtype bfloat16 --baselines eager,eager-graph,torch-2gemm --rounds 3 --json "$w/targets.json" \
    --markdown "$w/targets.md" > "$w/targets.log" 2>&1 < /dev/null
  stamp "targets: exit $?, $(grep '^wall time' "$w/targets.log")"
  $py scripts/targets.py "$w/targets.json" "$w/seed-fp32.json" > "$w/targets-check.txt" 2>&1
  cut -c1-250 "$w/targets-check.txt"
  rows_summary "$w/targets.json" 2>&1 | grep -v "eager\|torch-2gemm" > "$w/targets-summary.txt"
}
ncu_l2() {
  local m=gpu__time_duration.sum,lrc__xbar2gpc_sectors_op_read.sum,lrc__lts2lrc_sectors_op_read.sum
  m=$m,lrc__average_xbar2gpc_sectors_op_read.ratio,lts__t_sectors_srcunit_tex_op_read.sum
  m=$m,lts__t_sectors_srcunit_ltcfabric.sum,dram__bytes_read.sum
  local f=$w/ncu-$1-$2${3:-}
  timeout 60 ncu --clock-control none --profile-from-start off --metrics "$m" --launch-count 1 --csv \
    $py scripts/profile_variant.py "$1" "deepseek-v3:$2" bfloat16 2 > "$f.csv" 2> "$f.log"
  stamp "ncu $1 $2${3:-}: exit $?"
  grep -E '"(gpu__time|lrc__|lts__|dram__)' "$f.csv" | awk -F'","' '{print $(NF-2), $NF}' | tr -d '"'
}
# ncu --set full of one GEMM1 launch of VARIANT (two_stage_pp or cutlass_2gemm) at SHAPE (preset:tokens), bf16, the
# caches as the call leaves them: its details, raw and SASS source pages (gzipped), summary and hotspots. The kernel
# filter counts only matching launches: two_stage_pp's GEMM1 is its only mla_tc_kernel launch (skip 1 = the second
# profiled call's); cutlass_2gemm runs GEMM1 and one up-projection a call, both inside chained_gemm_kernel (skip 2).
ncu_gemm1() {
  local v=$1 shape=$2 k="regex:mla_tc_kernel" skip=1
  [ "$v" = cutlass_2gemm ] && { k="regex:chained_gemm_kernel"; skip=2; }
  local n="$w/ncu-$v-gemm1-${shape/:/-}"
  timeout 100 ncu --clock-control none --cache-control none --profile-from-start off --set full \
    --import-source no -k "$k" --launch-skip $skip --launch-count 1 -f -o "$n" \
    $py scripts/profile_variant.py "$v" "$shape" bfloat16 2 > "$n.log" 2>&1
  stamp "ncu $v $shape: exit $?"
  ncu --import "$n.ncu-rep" --csv --page details > "$n.csv" 2>&1
  ncu --import "$n.ncu-rep" --csv --page raw > "$n-raw.csv" 2>&1
  ncu --import "$n.ncu-rep" --csv --page source --print-source sass > "$n-sass.csv" 2>&1
  rm -f "$n.ncu-rep"
  $py scripts/ncu_summary.py "$n.csv" > "$n.summary" 2>&1; head -4 "$n.summary" | cut -c1-250
  $py scripts/ncu_hotspots.py "$n-sass.csv" 30 > "$n.hotspots" 2>&1
  gzip -f "$n-sass.csv" "$n-raw.csv"
  pack
}
build_everything() {
  BUILD=1 SKIP_TESTS=1 SKIP_MULTI=1 PHASE=2 env CUDA_VISIBLE_DEVICES= scripts/gpu_session.sh \
    > "$w/build-session.log" 2>&1 < /dev/null
  stamp "built"
  cp /tmp/gpu-session/phase2/build*.log "$w/" 2>/dev/null
  grep -h "wall time" "$w"/build*.log | head -6
}
check_m128() {
  local S="b=1,s=512,d=7168,rank=512,heads=128,head_dim=128 b=3,s=50,d=1000,rank=96,heads=2,head_dim=128"
  S="$S b=1,s=200,d=264,rank=40,heads=4,head_dim=64 b=2,s=33,d=512,rank=64,heads=6,head_dim=128"
  S="$S b=2,s=2000,d=64,rank=16,heads=16,head_dim=128 b=1,s=1380,d=200,rank=136,heads=16,head_dim=128"
  S="$S b=7,s=129,d=520,rank=72,heads=6,head_dim=40 b=1,s=200,d=64,rank=512,heads=128,head_dim=128"
  local args=() s
  for s in $S; do args+=(--shape "$s"); done
  timeout -s INT 60 $py run_bench.py --variant "$1" "${args[@]}" --dtype bfloat16,float16 --baselines eager \
    --rounds 1 --budget 0.02 --no-breakdown --allow-failures --json "$w/check.json" > "$w/check.log" 2>&1 < /dev/null
  stamp "check: exit $?"
  $py - "$w/check.json" <<'PY'
import collections, json, sys
print(dict(collections.Counter((r["variant"], r["status"]) for r in json.load(open(sys.argv[1]))["rows"])))
PY
}
probe_build() {
  local dir=/tmp/probe_$1
  mkdir -p "$dir"
  PROBE_DIR=$dir PYTHON=$py nb bash scripts/probe_axis.sh "$2" "$3" --shape seed --dtype bfloat16 --baselines eager \
    --jobs 4 > "$w/$1-build.log" 2>&1
  stamp "probe $1 built: $(grep -c 'built in' "$w/$1-build.log") builds"
}
probe_run() {
  local name=$1 secs=$2 variant=$3 axes=$4
  shift 4
  PROBE_DIR=/tmp/probe_$name PYTHON=$py timeout -s INT "$secs" bash scripts/probe_axis.sh "$variant" "$axes" "$@" \
    --dtype bfloat16 --rounds 3 --allow-failures --json "$w/$name.json" --markdown "$w/$name.md" \
    > "$w/$name.log" 2>&1 < /dev/null
  stamp "probe $name: exit $?, $(grep '^wall time' "$w/$name.log")"
  rows_summary "$w/$name.json" > "$w/$name-summary.txt" 2>&1
  grep "$variant" "$w/$name-summary.txt" | cut -c1-100
}
