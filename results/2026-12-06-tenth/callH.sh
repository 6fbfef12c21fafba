#!/usr/bin/env bash
# Session 2026-12-06 (tenth): the rest of the GPU suite that callF's 240 s cut off (its log stops after 55 results,
# the 33rd an F: tests/test_breakdown.py::test_profiled_device_time_fits_inside_the_timed_gpu_time, with no message).
# First the breakdown's GPU tests (the failed one among them, its bound on eager's busy time since rewritten), then
# every test after the cut, then the failed test once more on its own, each step packed as it ends.
#   KVBENCH_COMMIT=<sha> [BREAKDOWN_S=90] [REST_S=220] bash results/2026-12-06-tenth/callH.sh  (third_party/cutlass carried)
. scripts/device_call_lib.sh callH
gpu_info
gpu_tests gpu-tests-breakdown.log ${BREAKDOWN_S:-90} tests/test_breakdown.py
pack
gpu_tests gpu-tests-rest.log ${REST_S:-220} -k "torch_baselines or floor_row or devices or launch_floor or resources or scaffold or triton_variant" \
  tests/test_gpu.py tests/test_gpu_devices.py tests/test_launch_floor.py tests/test_resources.py \
  tests/test_scaffold.py tests/test_triton_variant.py
pack
gpu_tests gpu-tests-fits.log 40 -k fits_inside tests/test_breakdown.py
stamp done
