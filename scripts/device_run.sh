#!/usr/bin/env bash
# One batch on the lent GPU machine: GPU tests, then the benchmark; logs and result files go to $OUT.
#   scripts/device_run.sh NAME [run_bench.py arguments...]
# Usage from the device tool: bash scripts/device_run.sh run1 --shape seed,deepseek-v2-lite --dtype float32,bfloat16
set -uo pipefail
name=${1:?name}; shift
out=${OUT:-/tmp/out}; mkdir -p "$out"
export PYTHONUNBUFFERED=1
py=${PYTHON:-python3}
{ nvidia-smi; nvidia-smi -q -d CLOCK,PERFORMANCE; $py -c 'import torch; print(torch.__version__, torch.version.cuda)'; } \
  > "$out/$name-machine.txt" 2>&1
if [ -z "${SKIP_TESTS:-}" ]; then
  $py -m pytest -q -m "gpu or build" tests 2>&1 | tee "$out/$name-tests.log" | tail -25
fi
$py run_bench.py --json "$out/$name.json" --markdown "$out/$name.md" "$@" 2>&1 | tee "$out/$name-bench.log" | tail -60
