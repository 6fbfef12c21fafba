#!/usr/bin/env bash
# Session 2026-12-07 (fifteenth), call E (a fresh machine): the CTA-pair bar probed below 25 MB (MLA_PP_PAIR_MIN_MB
# 25 = the default against 0 = pairs wherever the row tiles pair up) at kimi-k2 (w_up 16.8 MB), V2-Lite (4.2 MB) and
# MiniCPM3 (2.6 MB), 512 and 4096 tokens (bf16, 3 rounds); then ncu --set full with the SASS source page of one GEMM1
# launch of two_stage_pp and of cutlass_2gemm at DeepSeek-V2-Lite 4096 (our GEMM1 19.5 us against CUTLASS's 15.8 on
# the H100 at caf761b; at V3 4096 they are equal) and of cutlass_2gemm at V3 4096 (callB's run missed its kernel).
#   KVBENCH_COMMIT=$(git rev-parse --short HEAD) KVBENCH_CUTLASS_DIR=third_party/cutlass-subset \
#     bash results/2026-12-07-fifteenth/callE.sh      (third_party/cutlass-subset carried)
. scripts/device_call_lib.sh callE
gpu_info
AX="MLA_PP_PAIR_MIN_MB=25,0"
probe_build bar two_stage_pp "$AX" &
for v in two_stage_pp cutlass_2gemm; do PYTHONPATH=. nb $py scripts/profile_variant.py "$v" seed bfloat16 1 \
  > "$w/build-$v.log" 2>&1 & done
wait
stamp "built"
pack
probe_run bar 150 two_stage_pp "$AX" --shape kimi-k2,deepseek-v2-lite,minicpm3 --tokens 4096,512 \
  --baselines torch-2gemm --no-breakdown
pack
for spec in "two_stage_pp deepseek-v2-lite:4096" "cutlass_2gemm deepseek-v2-lite:4096" "cutlass_2gemm deepseek-v3:4096"; do
  [ $(( $(date +%s) - t0 )) -gt ${CALL_S:-540} ] && { stamp "no time for ncu $spec"; break; }
  ncu_gemm1 $spec
done
stamp done
