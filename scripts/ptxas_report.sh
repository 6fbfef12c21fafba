#!/usr/bin/env bash
# Device-only compile of one variant for sm_90a with the harness's own flags (scripts/nvcc_flags.py): ptxas
# registers / spills / smem, and (with SASS=1) an HGMMA count from the cubin. No GPU needed.
#   scripts/ptxas_report.sh kernels/two_stage.cu [extra nvcc flags...]
set -euo pipefail
src=${1:?kernel .cu}; shift
root=$(cd "$(dirname "$0")/.." && pwd)
py=${PYTHON:-$root/.venv/bin/python}
cuda=${CUDA_HOME:-/usr/local/cuda}
out=${OUTDIR:-/tmp/ptxas_report}; mkdir -p "$out"
name=$(basename "$src" .cu)
flags=$(CUDA_HOME=$cuda $py "$root/scripts/nvcc_flags.py" "$src") || exit 2
# shellcheck disable=SC2086  # the flags are one word each (paths without spaces)
"$cuda/bin/nvcc" -cubin -o "$out/$name.cubin" -x cu "$src" $flags -gencode=arch=compute_90a,code=sm_90a "$@" 2>&1 \
  | grep -E "error|warning|Compiling entry|Used|spill|stack" || true
if [ -n "${SASS:-}" ]; then
  cuobjdump=$(find "$root/.venv" -name cuobjdump -type f | head -1)
  "$cuobjdump" --dump-sass "$out/$name.cubin" > "$out/$name.sass"
  echo "HGMMA: $(grep -c HGMMA "$out/$name.sass")  LDL/STL: $(grep -cE 'LDL|STL' "$out/$name.sass")  SASS lines: $(wc -l < "$out/$name.sass")"
fi
