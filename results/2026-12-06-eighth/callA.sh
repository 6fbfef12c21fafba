#!/usr/bin/env bash
# Needs c8437e6's kernels (two_stage_pp_pair, removed from kernels/ after it: it never ran this session).
# Session 2026-12-06 (eighth), first device call (results/NOTES.md). Every variant built with no GPU visible
# (gpu_session.sh's build step), the new two_stage_pp_pair among them (GEMM1 in clusters of 2 with w_down multicast;
# prediction in NOTES); then the seed float32 row, the issue-9 targets run (3 rounds, with the breakdown: GEMM1's
# device time of two_stage_pp against two_stage_pp_pair; on an H200 the decode path's first run there), the GPU tests
# of the two_stage variants, and the bf16 /
#   fp16 preset sweep of README's results section (1 round) on an H200, callC.sh's GEMM1 counters on any other GPU; each
# step cut to the time left. callB.sh follows warm.
#   KVBENCH_COMMIT=<sha> bash results/2026-12-06-eighth/callA.sh     (third_party/cutlass carried)
. scripts/device_call_lib.sh callA
gpu_info
BUILD=1 SKIP_TESTS=1 SKIP_MULTI=1 PHASE=2 env CUDA_VISIBLE_DEVICES= scripts/gpu_session.sh \
  > "$w/build-session.log" 2>&1 < /dev/null
stamp "built"; cp /tmp/gpu-session/phase2/build*.log "$w/" 2>/dev/null
grep -h "wall time\|FAILED" "$w"/build*.log | head -12
timeout -s INT 60 $py run_bench.py --variant fused_tiled --shape seed --dtype float32 --baselines empty-kernel,eager \
  --rounds 3 --no-breakdown --json "$w/seed-fp32.json" > "$w/seed.log" 2>&1 < /dev/null
stamp "seed: exit $?"
timeout -s INT 150 $py run_bench.py --variant two_stage,two_stage_pp,two_stage_pp_pair,cutlass_2gemm,fused_tiled \
  --shape deepseek-v3,deepseek-v2-lite --tokens 64,512,4096 --dtype bfloat16 --baselines eager,eager-graph,torch-2gemm \
  --rounds 3 --json "$w/targets.json" --markdown "$w/targets.md" > "$w/targets.log" 2>&1 < /dev/null
stamp "targets: exit $?, $(grep '^wall time' "$w/targets.log")"
$py scripts/targets.py "$w/targets.json" "$w/seed-fp32.json" > "$w/targets-check.txt" 2>&1
cut -c1-250 "$w/targets-check.txt"
rows_summary "$w/targets.json" 2>&1 | grep -v "eager\|torch-2gemm" | tee "$w/targets-summary.txt"
pack
# the GPU tests of the variants that build mla_tc.cuh / two_stage.cuh (the whole suite is callB's)
gpu_tests gpu-tests-two_stage.log 120 -k "two_stage and not triton" tests/test_gpu.py
pack
if ! grep -q H200 "$w/gpu.txt"; then bash results/2026-12-06-eighth/callC.sh; stamp done; exit 0; fi
left=$(( ${CALL_S:-580} - $(date +%s) + t0 ))
preset_sweep sweep-16bit bfloat16,float16 $(( left > 20 ? left : 20 ))
stamp done
