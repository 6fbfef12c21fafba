#!/usr/bin/env bash
# Needs c8437e6's kernels (two_stage_pp_pair, removed from kernels/ after it: it never ran this session).
# Session 2026-12-06 (eighth), on a warm machine after callA (builds cached): does two_stage_pp_pair's GEMM1 read the
# L2 slices less often? ncu (chosen counters, --clock-control none) on the first kernel (GEMM1) of one call of
# two_stage_pp, two_stage_pp_pair and cutlass_2gemm at DeepSeek-V3 4096 and 512 bf16: duration, sectors delivered to
# the GPCs and read from the slices, the coalescer's ratio, fabric sectors, DRAM bytes, tensor-pipe activity.
#   KVBENCH_COMMIT=<sha> bash results/2026-12-06-eighth/callC.sh     (third_party/cutlass carried)
. scripts/device_call_lib.sh callC
gpu_info
M=gpu__time_duration.sum,lrc__xbar2gpc_sectors_op_read.sum,lrc__lts2lrc_sectors_op_read.sum
M=$M,lrc__average_xbar2gpc_sectors_op_read.ratio,lts__t_sectors_srcunit_tex_op_read.sum
M=$M,lts__t_sectors_srcunit_ltcfabric.sum,dram__bytes_read.sum
M=$M,sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active
for t in 4096 512; do
  for v in two_stage_pp two_stage_pp_pair cutlass_2gemm; do
    timeout 60 ncu --clock-control none --profile-from-start off --metrics "$M" --launch-count 1 --csv \
      $py scripts/profile_variant.py "$v" deepseek-v3:$t bfloat16 2 > "$w/ncu-$v-$t.csv" 2> "$w/ncu-$v-$t.log"
    stamp "ncu $v $t: exit $?"
    grep -E '"(gpu__time|lrc__|lts__|dram__|sm__pipe)' "$w/ncu-$v-$t.csv" | awk -F'","' '{print $(NF-2), $NF}' | tr -d '"'
  done
done
stamp done
