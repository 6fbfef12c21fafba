#!/usr/bin/env bash
# callG cut to the ~580 s of device time left after refused starts (two_stage_pp only: no fused_tiled probe,
# no two_stage / fused_tiled builds, the GPU tests of two_stage_pp alone).
# Session 2026-12-06 (ninth): TMA's L2 promotion, 128 B (CUTLASS's) against 256 B (every earlier run and
# kernels/hopper.cuh's default until 128 is measured). Builds in parallel with no GPU visible: two_stage, two_stage_pp, fused_tiled at the
# default, and probe copies of two_stage_pp and fused_tiled at KV_TMA_L2_PROMO=128,256 (scripts/probe_axis.sh). Then
# the two probes timed (bf16, 3 rounds, with the breakdown: two_stage_pp at DeepSeek-V3 / V2-Lite 512 and 4096 tokens,
# fused_tiled at 64 and 512), ncu's L2 counters of two_stage_pp's GEMM1 at V3 4096 and 512 (at 128 B here; callE's were at 256 B), and the
# GPU tests of the variants that build hopper.cuh's tensor maps.
#   KVBENCH_COMMIT=<sha> bash results/2026-12-06-ninth/callG2.sh     (third_party/cutlass carried)
. scripts/device_call_lib.sh callG2
gpu_info
# this machine's copy of the tree builds 128 B as its default (what ncu and the GPU tests below see); the probe copies
# pass the value explicitly
sed -i 's/^#define KV_TMA_L2_PROMO 256$/#define KV_TMA_L2_PROMO 128/' kernels/hopper.cuh
grep -q '^#define KV_TMA_L2_PROMO 128$' kernels/hopper.cuh || { stamp "hopper.cuh: the default did not change"; exit 1; }
axes="KV_TMA_L2_PROMO=128,256"
PROBE_DIR=/tmp/probe-pp nb scripts/probe_axis.sh two_stage_pp "$axes" --shape seed --json "$w/b1.json" > "$w/build-pp.log" 2>&1 &
nb $py run_bench.py --variant two_stage_pp --shape seed --json "$w/b3.json" > "$w/build-default.log" 2>&1 &
wait
stamp "built: $(grep -h '^wall time' "$w"/build-*.log | paste -sd' ')"
PROBE_DIR=/tmp/probe-pp timeout -s INT 120 scripts/probe_axis.sh two_stage_pp "$axes" --shape deepseek-v3,deepseek-v2-lite \
  --tokens 512,4096 --dtype bfloat16 --baselines eager,torch-2gemm --rounds 3 --json "$w/promo-pp.json" \
  --markdown "$w/promo-pp.md" > "$w/promo-pp.log" 2>&1 < /dev/null
stamp "two_stage_pp promo: exit $?, $(grep '^wall time' "$w/promo-pp.log")"
rows_summary "$w/promo-pp.json" 2>&1 | grep -v "eager\|empty" | tee "$w/promo-pp-summary.txt"
pack
M=gpu__time_duration.sum,lrc__xbar2gpc_sectors_op_read.sum,lrc__lts2lrc_sectors_op_read.sum
M=$M,lrc__average_xbar2gpc_sectors_op_read.ratio,lts__t_sectors_srcunit_tex_op_read.sum
M=$M,lts__t_sectors_srcunit_ltcfabric.sum,dram__bytes_read.sum
for t in 4096 512; do
  timeout 60 ncu --clock-control none --profile-from-start off --metrics "$M" --launch-count 1 --csv \
    $py scripts/profile_variant.py two_stage_pp deepseek-v3:$t bfloat16 2 > "$w/ncu-two_stage_pp-$t.csv" 2> "$w/ncu-$t.log"
  stamp "ncu two_stage_pp $t (128 B): exit $?"
  grep -E '"(gpu__time|lrc__|lts__|dram__)' "$w/ncu-two_stage_pp-$t.csv" | awk -F'","' '{print $(NF-2), $NF}' | tr -d '"'
done
pack
gpu_tests gpu-tests-tc.log 150 -k "two_stage_pp" tests/test_gpu.py
stamp done
