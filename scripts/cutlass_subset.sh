#!/usr/bin/env bash
# Copy of the CUTLASS headers that the variants declaring `// includes: cutlass` actually include (nvcc -M's closure,
# about 13 of 28 MB), for device calls: the working tree and the carried paths must fit in 64 MiB together.
#   scripts/cutlass_subset.sh [SRC=third_party/cutlass] [DEST=third_party/cutlass-subset]
# Then carry DEST and run the call with KVBENCH_CUTLASS_DIR=DEST. A variant that includes a header outside the
# closure fails its build on the device with nvcc's "No such file", never silently.
set -euo pipefail
cd "$(dirname "$0")/.."
src=$(realpath "${1:-third_party/cutlass}") dest=${2:-third_party/cutlass-subset}  # nvcc -M names absolute paths
py=${PYTHON:-.venv/bin/python}
export CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
rm -rf "$dest"; mkdir -p "$dest/include" "$dest/tools/util/include"
for cu in $(grep -l '^// includes:.*cutlass' kernels/*.cu); do
  # the harness's flags for this variant (its own included), CUTLASS resolved to $src
  flags=$(KVBENCH_CUTLASS_DIR=$src $py scripts/nvcc_flags.py "$cu")
  # shellcheck disable=SC2086
  "$CUDA_HOME/bin/nvcc" -M -arch=sm_90a $flags -DTORCH_EXTENSION_NAME=subset "$cu"
done | tr ' \\' '\n\n' | grep "^$src/" | { cat; echo "$src/include/cutlass/version.h"; } | sort -u | while read -r f; do
  mkdir -p "$dest/$(dirname "${f#"$src"/}")"; cp "$f" "$dest/${f#"$src"/}"
done
echo "$dest: $(find "$dest" -type f | wc -l) headers, $(du -sh "$dest" | cut -f1)"
