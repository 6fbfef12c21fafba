#!/usr/bin/env bash
# Device-only compile of one variant for sm_90a with the harness's include paths: ptxas registers / spills / smem,
# and (with SASS=1) an HGMMA count from the cubin. No GPU needed.
#   scripts/ptxas_report.sh kernels/two_stage.cu [extra nvcc flags...]
set -euo pipefail
src=${1:?kernel .cu}; shift
root=$(cd "$(dirname "$0")/.." && pwd)
py=${PYTHON:-$root/.venv/bin/python}
site=$($py -c 'import torch, pathlib; print(pathlib.Path(torch.__file__).parent.parent)')
inc=$($py -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
cuda=${CUDA_HOME:-/usr/local/cuda}
out=${OUTDIR:-/tmp/ptxas_report}; mkdir -p "$out"
name=$(basename "$src" .cu)
"$cuda/bin/nvcc" -cubin -o "$out/$name.cubin" -x cu "$src" -I"$root/kernels" -I"$site/nvidia/cu13/include" \
  -isystem "$site/torch/include" -isystem "$site/torch/include/torch/csrc/api/include" -isystem "$inc" \
  -D__CUDA_NO_HALF_OPERATORS__ -D__CUDA_NO_HALF_CONVERSIONS__ -D__CUDA_NO_BFLOAT16_CONVERSIONS__ \
  -D__CUDA_NO_HALF2_OPERATORS__ --expt-relaxed-constexpr -O3 -lineinfo -std=c++20 \
  -gencode=arch=compute_90a,code=sm_90a -Xptxas -v "$@" 2>&1 | grep -E "error|warning|Compiling entry|Used|spill|stack" || true
if [ -n "${SASS:-}" ]; then
  cuobjdump=$(find "$root/.venv" -name cuobjdump -type f | head -1)
  "$cuobjdump" --dump-sass "$out/$name.cubin" > "$out/$name.sass"
  echo "HGMMA: $(grep -c HGMMA "$out/$name.sass")  LDL/STL: $(grep -cE 'LDL|STL' "$out/$name.sass")  SASS lines: $(wc -l < "$out/$name.sass")"
fi
