#!/usr/bin/env bash
# Measure a compile-time knob of a variant without changing the variant: a copy of kernels/VARIANT.cu (beside
# copies of kernels/*.cuh) gets the tuning-axis header `// axes: AXES`, so the harness builds one extension per
# value (passed as -D defines), checks and times each as its own row VARIANT[NAME=value], and reports them.
#   scripts/probe_axis.sh two_stage "MLA_GEMM1_SPLIT_CAP=8,16,64" --shape deepseek-v3 --tokens 64,512 \
#       --dtype bfloat16 --json /tmp/probe.json
# Every argument after AXES goes to run_bench.py. PROBE_DIR keeps the folder (default: a new temporary one).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -lt 2 ]; then
  echo "usage: scripts/probe_axis.sh VARIANT 'NAME=v1,v2[; NAME2=...]' [run_bench.py arguments...]" >&2
  exit 2
fi
variant=$1 axes=$2
shift 2
src=kernels/$variant.cu
if [ ! -f "$src" ]; then
  echo "probe_axis: $src: no such CUDA variant" >&2
  exit 2
fi
if grep -q '^// axes:' "$src"; then
  echo "probe_axis: $src already declares axes; probe them with run_bench.py directly" >&2
  exit 2
fi
dir=${PROBE_DIR:-$(mktemp -d)}
mkdir -p "$dir"
cp kernels/*.cuh "$dir/"
# the axes line goes right after the header's `// dtypes:` line (the header is the file's leading comment lines)
awk -v axes="$axes" '{ print } /^\/\/ dtypes:/ && !done { print "// axes: " axes; done = 1 }' "$src" > "$dir/$variant.cu"
grep -q '^// axes:' "$dir/$variant.cu" || { echo "probe_axis: $src has no '// dtypes:' header line" >&2; exit 2; }
exec "${PYTHON:-python3}" run_bench.py --kernels "$dir" --variant all "$@"
