#!/usr/bin/env bash
# Session 2026-12-07 (thirteenth), call B (after callA, warm or not): the whole GPU suite on this tree; then ncu's
# cycles, clock and tensor-pipe active share of every launch of three calls at DeepSeek-V3 4096 (bf16, the caches as
# the call leaves them) for two_stage_pp at KV_WG_BROADCAST 1 (the tree's) and 0, and cutlass_2gemm.
#   KVBENCH_COMMIT=<sha> KVBENCH_CUTLASS_DIR=third_party/cutlass-subset bash results/2026-12-07-thirteenth/callB.sh
. scripts/device_call_lib.sh callB
gpu_info
Q=/tmp/wg0; rm -rf "$Q"; mkdir -p "$Q"; cp kernels/*.cuh "$Q/"
sed 's|^#include "two_stage.cuh"|#define KV_WG_BROADCAST 0\n#include "two_stage.cuh"|' kernels/two_stage_pp.cu > "$Q/two_stage_pp_wg0.cu"
grep -q "KV_WG_BROADCAST 0" "$Q/two_stage_pp_wg0.cu" || stamp "the wg0 copy lacks its define"
(for v in two_stage_pp cutlass_2gemm "$Q/two_stage_pp_wg0.cu"; do
   PYTHONPATH=. nb $py scripts/profile_variant.py "$v" seed bfloat16 1 > /dev/null 2>&1
 done) &
gpu_tests gpu-tests.log 400
wait
pack
m=gpu__time_duration.sum,sm__cycles_elapsed.avg,sm__cycles_elapsed.avg.per_second
m=$m,sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum
for v in two_stage_pp "$Q/two_stage_pp_wg0.cu" cutlass_2gemm; do
  n="$w/ncu-$(basename "$v" .cu)"
  timeout 90 ncu --clock-control none --cache-control none --profile-from-start off --metrics "$m" --csv \
    $py scripts/profile_variant.py "$v" deepseek-v3:4096 bfloat16 3 > "$n.csv" 2> "$n.log"
  stamp "ncu $v: exit $?"
  grep -E '"(gpu__time|sm__|smsp__)' "$n.csv" | awk -F'","' '{print $5, $(NF-2), $NF}' | tr -d '"' | cut -c1-150 | head -40
  pack
done
stamp done
