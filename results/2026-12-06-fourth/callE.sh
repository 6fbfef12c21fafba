#!/usr/bin/env bash
# Session 2026-12-06 (fourth), fifth device call, typed as one command line on the same warm machine: callD's
# DeepSeek-V3 64 group with the breakdown again, packed into one file so that it comes back (probe folder and builds
# from callC). Kept as it ran, at cdf93fd.
export CUDA_HOME=/usr/local/cuda PATH=/usr/local/cuda/bin:$PATH TORCH_CUDA_ARCH_LIST=9.0a PYTHONUNBUFFERED=1 KVBENCH_CUTLASS_DIR=third_party/cutlass; w=/tmp/e; mkdir -p $w; trap 'tar -czf $OUT/e.tgz -C $w .' EXIT; PROBE_DIR=/tmp/probe-c timeout -s INT 90 scripts/probe_axis.sh fused_tiled "MLA_DEC_SPARE_SMS=0,1" --shape deepseek-v3 --tokens 64 --dtype bfloat16 --baselines eager,eager-graph,torch-2gemm --rounds 3 --timeout 40 --json $w/v3-64-breakdown.json --markdown $w/v3-64-breakdown.md > $w/v3-64-breakdown.log 2>&1 < /dev/null; echo "exit $?"; tail -30 $w/v3-64-breakdown.log | cut -c1-200
