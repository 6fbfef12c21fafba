#!/usr/bin/env bash
# Session 2026-12-06 (seventh), third device call, on the warm H200: the float32 preset sweep of README's results
# section (1 round), then callA's early-fill probe (its three builds cached under /tmp/probe-fill).
#   KVBENCH_COMMIT=<sha> bash results/2026-12-06-seventh/callC.sh     (third_party/cutlass carried)
. scripts/device_call_lib.sh callC
gpu_info
timeout -s INT 200 $py run_bench.py --variant all --shape seed,deepseek-v2-lite,deepseek-v2,deepseek-v3,kimi-k2,minicpm3 \
  --tokens 64,512,4096 --baselines eager,eager-graph,torch-2gemm --budget 0.2 --rounds 1 --timeout 120 \
  --allow-failures --no-breakdown --devices all --dtype float32 \
  --json "$w/sweep-fp32.json" --markdown "$w/sweep-fp32.md" > "$w/sweep-fp32.log" 2>&1 < /dev/null
stamp "fp32 sweep: exit $?, $(grep '^wall time' "$w/sweep-fp32.log" || tail -1 "$w/sweep-fp32.log")"
pack
AX="MLA_DEC_EARLY_FILL=0,1,3"
PROBE_DIR=/tmp/probe-fill timeout -s INT 200 scripts/probe_axis.sh fused_tiled "$AX" \
  --shape deepseek-v3,kimi-k2 --tokens 1,64 --shape b=4,s=16,d=1032,rank=200,heads=5,head_dim=128 \
  --dtype bfloat16 --baselines eager,torch-2gemm --rounds 3 --timeout 40 --json "$w/probe-fill.json" \
  --markdown "$w/probe-fill.md" > "$w/probe-fill.log" 2>&1 < /dev/null
stamp "fill probe: exit $?"
grep -E "^\| " "$w/probe-fill.md" | awk -F'|' '{print $2,$4,$5,$8,$9}' | grep -v empty-kernel
stamp done
