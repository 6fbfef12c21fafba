#!/usr/bin/env bash
# Session 2026-12-06 (eleventh), call C, a fresh machine: the four tensor-core variants built with no GPU visible;
# the targets run again (is callA's per-variant clock and power pattern at 4096 tokens the same in a second run?);
# then, per variant, ncu's cycles and clock of GEMM1 and GEMM2 at DeepSeek-V3 4096 with the caches as the call leaves
# them (--cache-control none: GEMM2 reads the latent GEMM1 just wrote, as in the timed sequence).
#   KVBENCH_COMMIT=<sha> bash results/2026-12-06-eleventh/callC.sh   (third_party/cutlass carried)
. scripts/device_call_lib.sh callC
gpu_info
nb $py run_bench.py --variant two_stage,two_stage_pp,cutlass_2gemm,fused_tiled --shape seed --dtype bfloat16 \
  --baselines eager > "$w/build.log" 2>&1
stamp "built: $(grep -c ' ok' "$w/build.log") ok lines"
targets_run two_stage,two_stage_pp,cutlass_2gemm,fused_tiled
pack
m=gpu__time_duration.sum,sm__cycles_elapsed.avg,sm__cycles_elapsed.avg.per_second,dram__bytes_read.sum,dram__bytes_write.sum
for v in two_stage_pp cutlass_2gemm two_stage; do
  timeout 90 ncu --clock-control none --cache-control none --profile-from-start off --metrics "$m" --csv \
    $py scripts/profile_variant.py "$v" deepseek-v3:4096 bfloat16 3 > "$w/ncu-cycles-$v.csv" 2> "$w/ncu-cycles-$v.log"
  stamp "ncu $v: exit $?"
  grep -E '"(gpu__time|sm__cycles|dram__)' "$w/ncu-cycles-$v.csv" | awk -F'","' '{print $5, $(NF-2), $NF}' | tr -d '"' | cut -c1-160 | head -24
  pack
done
stamp done
