#!/usr/bin/env bash
# Session 2026-12-07 (fifteenth), call G (a fresh machine): GEMM1's whole-K latent by TMA stores from a swizzled
# staging (MLA_G1_TMA_STORE 1, the new default) against the fragment stores of before (0), two_stage_pp, bf16,
# 3 rounds, with the breakdown (GEMM1's device us) at 4096 tokens of four presets and V3 512; then both builds
# checked once (bf16 and fp16) on the GPU suite's shapes whose GEMM1 takes the path: M = 40000 with a 136-wide
# latent (the second 128-column tile 8 wide, the last row tile half full) and M = 1380.
#   KVBENCH_COMMIT=$(git rev-parse --short HEAD) KVBENCH_CUTLASS_DIR=third_party/cutlass-subset \
#     bash results/2026-12-07-fifteenth/callG.sh      (third_party/cutlass-subset carried)
. scripts/device_call_lib.sh callG
gpu_info
AX="MLA_G1_TMA_STORE=0,1"
probe_build g1st two_stage_pp "$AX"
pack
probe_run g1st 120 two_stage_pp "$AX" --shape deepseek-v3,deepseek-v2-lite,kimi-k2,minicpm3 --tokens 4096 \
  --shape b=1,s=512,d=7168,rank=512,heads=128,head_dim=128 --baselines torch-2gemm
pack
grep "two_stage_pp" "$w/g1st-summary.txt" | cut -c1-120
PROBE_DIR=/tmp/probe_g1st PYTHON=$py timeout -s INT 60 bash scripts/probe_axis.sh two_stage_pp "$AX" \
  --shape b=2,s=20000,d=64,rank=136,heads=2,head_dim=128 --shape b=1,s=1380,d=200,rank=136,heads=16,head_dim=128 \
  --shape deepseek-v3 --tokens 4096 --dtype bfloat16,float16 --baselines eager --rounds 1 --budget 0.02 --no-breakdown \
  --allow-failures --json "$w/check.json" > "$w/check.log" 2>&1 < /dev/null
stamp "check: exit $?"
$py - "$w/check.json" <<'PY'
import collections, json, sys
print(dict(collections.Counter((r["variant"], r["status"]) for r in json.load(open(sys.argv[1]))["rows"])))
PY
stamp done
