#!/usr/bin/env bash
# Call J of 2026-12-07 (sixteenth), after the fifteenth's callH.sh on the same warm machine (its builds cached): the
# bf16 / fp16 preset sweep on whatever card was lent (target 5's V2-Lite / kimi-k2 4096 groups after the TMA-store
# GEMM1 epilogue), then scripts/sm_placement.py's block -> SM map of both GEMM1 grids, then while CALL_S allows ncu of
# GEMM1 at V2-Lite 4096 for two_stage_pp and cutlass_2gemm.
#   CALL_S=<seconds> KVBENCH_COMMIT=$(git rev-parse --short HEAD) KVBENCH_CUTLASS_DIR=third_party/cutlass-subset \
#     bash results/2026-12-07-sixteenth/callJ.sh      (third_party/cutlass-subset carried)
. scripts/device_call_lib.sh callJ
gpu_info
preset_sweep sweep-16bit bfloat16,float16 200
pack
$py scripts/targets.py "$w/sweep-16bit.json" > "$w/sweep-targets-check.txt" 2>&1
grep -iE "target 5|miss|groups" "$w/sweep-targets-check.txt" | cut -c1-250 | head -12
# Where the blocks of both GEMM1 grids land (V2-Lite 4096's 32 x 4 tiles), if time is left
if [ $(( $(date +%s) - t0 )) -lt $(( ${CALL_S:-585} - 60 )) ]; then
  nb $py scripts/sm_placement.py > "$w/placement-build.log" 2>&1
  timeout 60 $py scripts/sm_placement.py --tiles-m 32 --tiles-n 4 --json "$w/placement.json" > "$w/placement.txt" 2>&1
  stamp "placement: exit $?"; head -12 "$w/placement.txt" | cut -c1-200
fi
for v in two_stage_pp cutlass_2gemm; do  # the builds (cached after callH), no GPU
  PYTHONPATH=. nb $py scripts/profile_variant.py "$v" seed bfloat16 1 > "$w/build-$v.log" 2>&1
done
for spec in "two_stage_pp deepseek-v2-lite:4096" "cutlass_2gemm deepseek-v2-lite:4096"; do
  [ $(( $(date +%s) - t0 )) -gt $(( ${CALL_S:-585} - 40 )) ] && { stamp "no time for ncu $spec"; break; }
  ncu_gemm1 $spec
done
stamp done
