#!/usr/bin/env bash
# Session 2026-12-06 (sixth), third device call (results/NOTES.md): why the hand-written ping-pong GEMM2
# (two_stage_pp, kernels/mla_pingpong.cuh) takes ~40 % longer than cutlass_2gemm's up-projection of the same tile
# (128 x 128, ping-pong) at prefill. ncu (full set, --clock-control none) of both variants at DeepSeek-V2-Lite and
# DeepSeek-V3, 4096 tokens, bf16, after building the two with no GPU visible.
#   KVBENCH_COMMIT=<sha> bash results/2026-12-06-sixth/callC.sh     (third_party/cutlass carried)
. scripts/device_call_lib.sh callC
gpu_info
nb $py run_bench.py --variant two_stage_pp,cutlass_2gemm --shape seed --json "$w/build.json" > "$w/build.log" 2>&1
stamp "built: exit $?"
PHASE=profile BUILD=0 NCU_KERNELS=6 NCU_S=110 \
  PROFILE="two_stage_pp,deepseek-v2-lite:4096,bfloat16 cutlass_2gemm,deepseek-v2-lite:4096,bfloat16 two_stage_pp,deepseek-v3:4096,bfloat16 cutlass_2gemm,deepseek-v3:4096,bfloat16" \
  scripts/gpu_session.sh > "$w/profile.log" 2>&1 < /dev/null
stamp "profile: exit $?"
cp /tmp/gpu-session/phaseprofile/ncu-* "$w/" 2>/dev/null
cat "$w/profile.log" | cut -c1-250 | tail -40
for f in "$w"/ncu-*.txt; do
  echo "== $(basename "$f")"
  grep -E "^  [a-zA-Z_].*(mla_pp|gemm2|chained|GemmUniversal|mla_tc)|Duration|L2 Cache Throughput|L1/TEX Cache Throughput|DRAM Throughput|Compute \(SM\) Throughput|L2 Hit Rate|Max Bandwidth|Issue Slots Busy|SM Busy|Registers Per|Achieved Occupancy" "$f" | cut -c1-150 | head -60
done
stamp done
