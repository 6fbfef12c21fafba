#!/usr/bin/env bash
# Call L of 2026-12-07 (sixteenth): the last 300 s of device time, after every start had failed. two_stage alone
# (it runs both of ae01cfd's launch paths: the decode launch with a zeroed latent-store map, the whole-K GEMM1 that
# encodes and uses it) built with no GPU visible, then its GPU correctness tests.
#   KVBENCH_COMMIT=$(git rev-parse --short HEAD) bash results/2026-12-07-sixteenth/callL.sh
. scripts/device_call_lib.sh callL
gpu_info
nb $py run_bench.py --variant two_stage --shape seed --json "$w/build.json" > "$w/build.log" 2>&1
stamp "built: $(grep '^wall time' "$w/build.log")"
gpu_tests gpu-tests.log 150 -k "two_stage and not pp and not triton"
stamp done
