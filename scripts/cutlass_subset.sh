#!/usr/bin/env bash
# Copy of the CUTLASS headers that the variants declaring `// includes: cutlass` actually include (nvcc -M's closure,
# about 13 of 28 MB), for device calls: the working tree and the carried paths must fit in 64 MiB together.
#   scripts/cutlass_subset.sh [SRC=third_party/cutlass] [DEST=third_party/cutlass-subset]
# Then carry DEST and run the call with KVBENCH_CUTLASS_DIR=DEST. A variant that includes a header outside the
# closure fails its build on the device with nvcc's "No such file", never silently.
set -euo pipefail
cd "$(dirname "$0")/.."
src=${1:-third_party/cutlass} dest=${2:-third_party/cutlass-subset}
py=${PYTHON:-.venv/bin/python}
export CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
flags=$($py - <<'PY' 2>/dev/null
import site, sysconfig
import torch.utils.cpp_extension as ext
dirs = ext.include_paths() + [sysconfig.get_paths()["include"], site.getsitepackages()[0] + "/nvidia/cu13/include"]
print(" ".join("-I" + d for d in dirs))
PY
)
rm -rf "$dest"; mkdir -p "$dest/include" "$dest/tools/util/include"
for cu in $(grep -l '^// includes:.*cutlass' kernels/*.cu); do
  "$CUDA_HOME/bin/nvcc" -M -std=c++20 -arch=sm_90a -I"$src/include" -I"$src/tools/util/include" -Ikernels $flags \
    $(sed -n 's|^// nvcc-flags:||p' "$cu") -DTORCH_EXTENSION_NAME=subset "$cu"  # the variant's own flags too
done | tr ' \\' '\n\n' | grep "^$src/" | { cat; echo "$src/include/cutlass/version.h"; } | sort -u | while read -r f; do
  mkdir -p "$dest/$(dirname "${f#"$src"/}")"; cp "$f" "$dest/${f#"$src"/}"
done
echo "$dest: $(find "$dest" -type f | wc -l) headers, $(du -sh "$dest" | cut -f1)"
