#!/usr/bin/env bash
# Session 2026-12-06 (eleventh), call A: every variant built with no GPU visible, then the whole GPU suite with
# room to finish (callF's 240 s cut it after 55 of 64 tests; this tree adds the NVML power test).
#   KVBENCH_COMMIT=<sha> [TESTS_S=340] bash results/2026-12-06-eleventh/callA.sh   (third_party/cutlass carried)
. scripts/device_call_lib.sh callA
gpu_info
build_everything
pack
gpu_tests gpu-tests.log ${TESTS_S:-340}
stamp done
