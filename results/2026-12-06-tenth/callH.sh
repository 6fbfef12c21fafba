#!/usr/bin/env bash
# Session 2026-12-06 (tenth): the rest of the GPU suite that callF's 240 s cut off (its log stops after 55 results,
# the 33rd an F: tests/test_breakdown.py::test_profiled_device_time_fits_inside_the_timed_gpu_time, with no message).
# The failed test and every test after the cut, in collection order; then the failed test twice more on its own.
#   KVBENCH_COMMIT=<sha> bash results/2026-12-06-tenth/callH.sh     (third_party/cutlass carried)
. scripts/device_call_lib.sh callH
gpu_info
gpu_tests gpu-tests-rest.log ${REST_S:-330} -k "breakdown or torch_baselines or floor_row or devices or launch_floor or resources or scaffold or triton_variant" \
  tests/test_breakdown.py tests/test_gpu.py tests/test_gpu_devices.py tests/test_launch_floor.py tests/test_resources.py \
  tests/test_scaffold.py tests/test_triton_variant.py
pack
for i in 1 2; do gpu_tests gpu-tests-fits-$i.log 40 -k fits_inside tests/test_breakdown.py; done
stamp done
