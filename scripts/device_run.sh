#!/usr/bin/env bash
# One batch on the lent GPU machine: GPU tests, then the benchmark; logs and result files go to $OUT.
#   scripts/device_run.sh NAME [run_bench.py arguments...]
# SKIP_TESTS=1 skips the tests; TESTS="-m gpu tests/test_gpu.py" narrows them. The GPU machine gets the
# tree without .git: pass KVBENCH_COMMIT=$(git rev-parse HEAD) (and KVBENCH_DIRTY=1) in the command.
set -uo pipefail
name=${1:?name}; shift
out=${OUT:-/tmp/out}; mkdir -p "$out"
export PYTHONUNBUFFERED=1
py=${PYTHON:-python3}
{ nvidia-smi; nvidia-smi -q -d CLOCK,PERFORMANCE; $py -c 'import torch; print(torch.__version__, torch.version.cuda)'; } \
  > "$out/$name-machine.txt" 2>&1
if [ -z "${SKIP_TESTS:-}" ]; then
  $py -m pytest -q ${TESTS:--m "gpu or build" tests} 2>&1 | tee "$out/$name-tests.log" | tail -25
fi
$py run_bench.py --json "$out/$name.json" --markdown "$out/$name.md" "$@" 2>&1 | tee "$out/$name-bench.log" | tail -45
