# Sourced by a session's device-call scripts (results/<session>/callX.sh): the environment every call needs, a work
# folder packed into one archive under $OUT on exit (the device tool returns few files), and the helpers the calls
# share. Usage, first lines of a call script run from the repository root:
#   . scripts/device_call_lib.sh callA        # work folder /tmp/callA, archive $OUT/callA.tgz
# Then: $w (work folder), $py, stamp MSG (seconds since the start), nb CMD... (a build with no GPU visible, 400 s
# limit), pack (archive now as well: a later step cut by the call's limit keeps what came before), gpu_info,
# rows_summary JSON (a line a row: status, GPU µs, the first kernel's device µs and grid, the call's busy µs),
# gpu_tests LOG SECONDS [pytest arguments] (the GPU tests, their summary line and failures), preset_sweep NAME DTYPES
# SECONDS (README's preset sweep, 1 round, into NAME.{json,md,log}).
set -uo pipefail
export CUDA_HOME=/usr/local/cuda PATH=/usr/local/cuda/bin:$PATH TORCH_CUDA_ARCH_LIST=9.0a PYTHONUNBUFFERED=1
export KVBENCH_CUTLASS_DIR=third_party/cutlass
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
