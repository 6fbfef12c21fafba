#!/usr/bin/env bash
# Session 2026-12-06 (ninth), the final tree's call (kernels/ = 1764445's): every variant built with no GPU visible,
# the seed float32 row and the issue-9 targets run (3 rounds, with the breakdown) with scripts/targets.py, the whole
# GPU suite, then README's bf16 / fp16 preset sweep (1 round) with what is left of CALL_S (on an H200; on any other
# GPU the sweep is skipped: README's results section is the H200's).
#   KVBENCH_COMMIT=<sha> CALL_S=<the call's seconds> bash results/2026-12-06-ninth/callF.sh     (third_party/cutlass carried)
. scripts/device_call_lib.sh callF
gpu_info
BUILD=1 SKIP_TESTS=1 SKIP_MULTI=1 PHASE=2 env CUDA_VISIBLE_DEVICES= scripts/gpu_session.sh \
  > "$w/build-session.log" 2>&1 < /dev/null
stamp "built"; cp /tmp/gpu-session/phase2/build*.log "$w/" 2>/dev/null
grep -h "wall time" "$w"/build*.log | head -6
timeout -s INT 60 $py run_bench.py --variant fused_tiled --shape seed --dtype float32 --baselines empty-kernel,eager \
  --rounds 3 --no-breakdown --json "$w/seed-fp32.json" > "$w/seed.log" 2>&1 < /dev/null
stamp "seed: exit $?"
timeout -s INT 150 $py run_bench.py --variant two_stage,two_stage_pp,cutlass_2gemm,fused_tiled \
  --shape deepseek-v3,deepseek-v2-lite --tokens 64,512,4096 --dtype bfloat16 --baselines eager,eager-graph,torch-2gemm \
  --rounds 3 --json "$w/targets.json" --markdown "$w/targets.md" > "$w/targets.log" 2>&1 < /dev/null
stamp "targets: exit $?, $(grep '^wall time' "$w/targets.log")"
$py scripts/targets.py "$w/targets.json" "$w/seed-fp32.json" > "$w/targets-check.txt" 2>&1
cut -c1-250 "$w/targets-check.txt"
rows_summary "$w/targets.json" 2>&1 | grep -v "eager\|torch-2gemm" > "$w/targets-summary.txt"
pack
gpu_tests gpu-tests.log 240
pack
grep -q H200 "$w/gpu.txt" || { stamp "not an H200: no sweep"; exit 0; }
left=$(( ${CALL_S:-580} - $(date +%s) + t0 ))
preset_sweep sweep-16bit bfloat16,float16 $(( left > 20 ? left : 20 ))
stamp done
