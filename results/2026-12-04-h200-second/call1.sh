#!/usr/bin/env bash
# Ran once, at 91d7573, on an H100 (results/2026-12-05-h100-call1/); both knobs it probes were removed after it.
# The first H200 call of the cold-code measurement (results/NOTES.md, 2026-12-04 second): from the repository
# root on the device, $OUT the folder that comes back, third_party/cutlass carried. Builds everything first with
# no GPU visible (in parallel), then: code_fetch, cache_states, the decode trace in three cache states and with
# KV_CODE_PREFETCH and with MLA_G2_WARMUP, and the probes of those knobs on the four tensor-core variants.
# About 8-9 minutes.
#   KVBENCH_COMMIT=<sha> bash results/2026-12-04-h200-second/call1.sh
set -uo pipefail
export CUDA_HOME=/usr/local/cuda PATH=/usr/local/cuda/bin:$PATH TORCH_CUDA_ARCH_LIST=9.0a PYTHONUNBUFFERED=1
export KVBENCH_CUTLASS_DIR=third_party/cutlass
o=${OUT:-/tmp/out}; w=/tmp/call1; mkdir -p "$o" "$w"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv > "$w/machine.txt"
nb() { env CUDA_VISIBLE_DEVICES= timeout "${BUILD_S:-360}" "$@" < /dev/null; }  # BUILD_S: a slower machine's check
TWO="deepseek-v3,kimi-k2,deepseek-v2-lite --tokens 64,512 --dtype bfloat16"
CUT="deepseek-v3,deepseek-v2-lite --tokens 64,4096 --dtype bfloat16"
declare -A AX=([two_stage]="KV_CODE_PREFETCH=0,65536; MLA_G2_WARMUP=0,1" [two_stage_pp]="KV_CODE_PREFETCH=0,65536"
               [fused_tiled]="KV_CODE_PREFETCH=0,24576" [cutlass_2gemm]="KV_CODE_PREFETCH=0,131072")
declare -A ARGS=([two_stage]="--shape $TWO" [two_stage_pp]="--shape $TWO"
                 [fused_tiled]="--shape seed --dtype float32" [cutlass_2gemm]="--shape $CUT")
# ---- builds
nb python3 scripts/code_fetch.py > "$w/build-cf.log" 2>&1 &
nb python3 scripts/cache_states.py two_stage,fused_tiled,cutlass_2gemm bfloat16 seed > "$w/build-cs.log" 2>&1 &
nb python3 scripts/trace_tc.py two_stage bfloat16 deepseek-v3:64 --runs 1 > "$w/build-tr.log" 2>&1 &
nb python3 scripts/trace_tc.py two_stage bfloat16 deepseek-v3:64 --runs 1 --define KV_CODE_PREFETCH=65536 > "$w/build-tr2.log" 2>&1 &
nb python3 scripts/trace_tc.py two_stage bfloat16 deepseek-v3:64 --runs 1 --define MLA_G2_WARMUP=1 > "$w/build-tr3.log" 2>&1 &
for v in "${!AX[@]}"; do
  PROBE_DIR=/tmp/probe-$v nb scripts/probe_axis.sh "$v" "${AX[$v]}" --shape seed --json "$w/build-probe-$v.json" > "$w/build-probe-$v.log" 2>&1 &
done
wait; echo "[$(date +%T)] built"; grep -l "FAILED\|rror" "$w"/build-*.log
# ---- measurements
timeout 60 python3 scripts/code_fetch.py --read-entry > "$w/read-entry.txt" 2>&1; echo "read-entry: $?"
timeout 120 python3 scripts/code_fetch.py --json "$w/code-fetch.json" > "$w/code-fetch.txt" 2>&1; echo "code_fetch: $?"
timeout 120 python3 scripts/cache_states.py two_stage,cutlass_2gemm bfloat16 deepseek-v3:64 deepseek-v3:512 kimi-k2:64 deepseek-v2-lite:64 --json "$w/cache-states-bf16.json" > "$w/cache-states-bf16.txt" 2>&1; echo "cache_states bf16: $?"
timeout 60 python3 scripts/cache_states.py fused_tiled float32 seed --json "$w/cache-states-fp32.json" > "$w/cache-states-fp32.txt" 2>&1; echo "cache_states fp32: $?"
timeout 90 python3 scripts/trace_tc.py two_stage bfloat16 deepseek-v3:64 --runs 7 --cache cold,warm-code,hot --json "$w/trace.json" > "$w/trace.txt" 2>&1; echo "trace: $?"
timeout 45 python3 scripts/trace_tc.py two_stage bfloat16 deepseek-v3:64 --runs 7 --define KV_CODE_PREFETCH=65536 --json "$w/trace-pf.json" > "$w/trace-pf.txt" 2>&1; echo "trace pf: $?"
timeout 45 python3 scripts/trace_tc.py two_stage bfloat16 deepseek-v3:64 --runs 7 --define MLA_G2_WARMUP=1 --json "$w/trace-wu.json" > "$w/trace-wu.txt" 2>&1; echo "trace warm-up: $?"
for v in two_stage fused_tiled two_stage_pp cutlass_2gemm; do
  # shellcheck disable=SC2086
  PROBE_DIR=/tmp/probe-$v timeout 120 scripts/probe_axis.sh "$v" "${AX[$v]}" ${ARGS[$v]} --rounds 3 --budget 0.3 \
    --baselines eager,torch-2gemm --json "$w/probe-$v.json" --markdown "$w/probe-$v.md" > "$w/probe-$v.log" 2>&1 < /dev/null
  echo "probe $v: $?"
done
tar -czf "$o/call1.tgz" -C "$w" .
cat "$w/read-entry.txt" "$w/code-fetch.txt" "$w"/cache-states-*.txt | grep -v Warn | tail -40
for v in two_stage fused_tiled two_stage_pp cutlass_2gemm; do tail -14 "$w/probe-$v.log"; done
