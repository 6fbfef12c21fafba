#!/usr/bin/env bash
# Session 2026-12-06 (ninth), second device call: two_stage_pp_pair after its remote arrive lost `.release.cluster`
# (which compiles to MEMBAR.ALL.GPU before every consumer's per-k-step release; callA had the pair's GEMM1 at 2x
# two_stage_pp's). two_stage_pp and two_stage_pp_pair built alone, timed against each other and cutlass_2gemm at
# DeepSeek-V3 and V2-Lite 512 / 4096 tokens (bf16, 3 rounds, with the breakdown), the pair checked on the GPU suite's
# M > 128 tensor-core shapes (bf16, fp16), then ncu's L2 counters of GEMM1 of both at V3 4096 and 512 (callC.sh's).
#   KVBENCH_COMMIT=<sha> bash results/2026-12-06-ninth/callE.sh     (third_party/cutlass carried)
. scripts/device_call_lib.sh callE
gpu_info
nb $py run_bench.py --variant two_stage_pp,two_stage_pp_pair,cutlass_2gemm --shape seed --json "$w/build.json" \
  > "$w/build.log" 2>&1
stamp "built: exit $?, $(grep '^wall time' "$w/build.log")"
timeout -s INT 110 $py run_bench.py --variant two_stage_pp,two_stage_pp_pair,cutlass_2gemm \
  --shape deepseek-v3,deepseek-v2-lite --tokens 512,4096 --dtype bfloat16 --baselines eager,torch-2gemm \
  --rounds 3 --json "$w/pair.json" --markdown "$w/pair.md" > "$w/pair.log" 2>&1 < /dev/null
stamp "pair timing: exit $?, $(grep '^wall time' "$w/pair.log")"
rows_summary "$w/pair.json" 2>&1 | tee "$w/pair-summary.txt"
pack
S="b=1,s=512,d=7168,rank=512,heads=128,head_dim=128 b=3,s=50,d=1000,rank=96,heads=2,head_dim=128 b=1,s=200,d=264,rank=40,heads=4,head_dim=64"
S="$S b=2,s=33,d=512,rank=64,heads=6,head_dim=128 b=2,s=2000,d=64,rank=16,heads=16,head_dim=128"
S="$S b=1,s=1380,d=200,rank=136,heads=16,head_dim=128 b=7,s=129,d=520,rank=72,heads=6,head_dim=40"
args=(); for s in $S; do args+=(--shape "$s"); done
timeout -s INT 60 $py run_bench.py --variant two_stage_pp_pair "${args[@]}" --dtype bfloat16,float16 --baselines eager \
  --rounds 1 --budget 0.02 --no-breakdown --allow-failures --json "$w/check.json" > "$w/check.log" 2>&1 < /dev/null
stamp "check: exit $?"
$py - "$w/check.json" <<'PY'
import json, sys, collections
c = collections.Counter((r["variant"], r["status"]) for r in json.load(open(sys.argv[1]))["rows"])
print(dict(c))
PY
pack
M=gpu__time_duration.sum,lrc__xbar2gpc_sectors_op_read.sum,lrc__lts2lrc_sectors_op_read.sum
M=$M,lrc__average_xbar2gpc_sectors_op_read.ratio,lts__t_sectors_srcunit_tex_op_read.sum
M=$M,lts__t_sectors_srcunit_ltcfabric.sum,dram__bytes_read.sum
for t in 4096 512; do
  for v in two_stage_pp two_stage_pp_pair; do
    timeout 60 ncu --clock-control none --profile-from-start off --metrics "$M" --launch-count 1 --csv \
      $py scripts/profile_variant.py "$v" deepseek-v3:$t bfloat16 2 > "$w/ncu-$v-$t.csv" 2> "$w/ncu-$v-$t.log"
    stamp "ncu $v $t: exit $?"
    grep -E '"(gpu__time|lrc__|lts__|dram__)' "$w/ncu-$v-$t.csv" | awk -F'","' '{print $(NF-2), $NF}' | tr -d '"'
  done
done
stamp done
