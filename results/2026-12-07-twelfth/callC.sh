#!/usr/bin/env bash
# Session 2026-12-07 (twelfth), call C, a fresh machine with little device time left: the pair build again after
# callA's ncu (the remote arrive's .release.cluster stalled the consumer on a cluster memory barrier every k-step):
# the remote arrive at CTA scope, from another warp. Two builds (6 stages, pairs off / on), a check at two pair
# shapes, then DeepSeek-V3 512 and 4096 timed (bf16, 2 rounds).
#   KVBENCH_COMMIT=<sha> bash results/2026-12-07-twelfth/callC.sh   (third_party/cutlass carried)
. scripts/device_call_lib.sh callC
gpu_info
P=/tmp/probe_c; AX="MLA_PP_STAGES=6; MLA_PP_CLUSTER=1,2"
PROBE_DIR=$P PYTHON=$py nb bash scripts/probe_axis.sh two_stage_pp "$AX" --shape seed --dtype bfloat16 \
  --baselines eager --jobs 4 > "$w/build.log" 2>&1
stamp "built: $(grep -c 'built in' "$w/build.log") builds"
PROBE_DIR=$P PYTHON=$py timeout -s INT 100 bash scripts/probe_axis.sh two_stage_pp "$AX" \
  --shape b=1,s=200,d=264,rank=40,heads=4,head_dim=64 --shape b=2,s=2000,d=64,rank=16,heads=16,head_dim=128 \
  --shape deepseek-v3 --tokens 512,4096 --dtype bfloat16 --baselines torch-2gemm --rounds 2 --budget 0.5 \
  --no-breakdown --allow-failures --json "$w/probe3.json" > "$w/probe3.log" 2>&1 < /dev/null
stamp "probe3: exit $?"
rows_summary "$w/probe3.json"
stamp done
