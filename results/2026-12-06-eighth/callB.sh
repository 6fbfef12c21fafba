#!/usr/bin/env bash
# Run after callA.sh at c8437e6's kernels (see callA.sh).
# Session 2026-12-06 (eighth), second device call, on callA's warm machine (every build cached): the whole GPU suite
# at this commit, then the float32 preset sweep of README's results section (1 round), each cut to the time left.
#   KVBENCH_COMMIT=<sha> [CALL_S=<the call's seconds>] bash results/2026-12-06-eighth/callB.sh     (third_party/cutlass carried)
. scripts/device_call_lib.sh callB
gpu_info
ls build/extensions 2>/dev/null | wc -l | sed 's/^/cached extension folders: /'
gpu_tests gpu-tests.log "${SUITE_S:-330}"
pack
left=$(( ${CALL_S:-580} - $(date +%s) + t0 ))
preset_sweep sweep-fp32 float32 $(( left > 20 ? left : 20 ))
stamp done
