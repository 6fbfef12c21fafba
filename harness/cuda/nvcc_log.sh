#!/bin/sh
# The nvcc of the harness's builds (PYTORCH_NVCC, set by build.toolchain_env): runs the real nvcc and keeps
# everything it printed, ptxas's -v resource report included, in nvcc.log in the build folder (ninja runs
# there), which torch would otherwise discard when the build succeeds. Output and exit status are nvcc's.
"${CUDA_HOME:-/usr/local/cuda}/bin/nvcc" "$@" > nvcc.log 2>&1
status=$?
cat nvcc.log >&2
exit $status
