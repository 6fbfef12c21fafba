#!/usr/bin/env bash
# Session 2026-12-06 (seventh), for an H200; not run (no device started). Its probe builds need 3e2dfb0's kernels
# (the MLA_G1_* axes were removed after it). callE.sh follows on the warm machine, its builds done here: every
# variant built (gpu_session.sh's build step) beside callE's six probe builds, all with no GPU visible; then the
# seed float32 row and the issue-9 targets run (3 rounds, with the breakdown; the decode path's first H200 run).
#   KVBENCH_COMMIT=<sha> bash results/2026-12-06-seventh/callF.sh     (third_party/cutlass carried)
. scripts/device_call_lib.sh callF
gpu_info
pd=/tmp/probe-g1; mkdir -p "$pd"; cp kernels/cutlass_2gemm.cu "$pd/"
BUILD=1 SKIP_TESTS=1 SKIP_MULTI=1 PHASE=2 env CUDA_VISIBLE_DEVICES= scripts/gpu_session.sh \
  > "$w/build-session.log" 2>&1 < /dev/null &
PROBE_DIR=$pd nb scripts/probe_axis.sh two_stage_pp "MLA_G1_ORDER=0,1,2; MLA_G1_PAIR=0,1,2" --shape seed \
  --json "$w/build-probe.json" > "$w/build-probe.log" 2>&1 &
wait; stamp "built"; cp /tmp/gpu-session/phase2/build*.log "$w/" 2>/dev/null
grep -h "wall time\|FAILED" "$w"/build*.log | head -12
timeout -s INT 60 $py run_bench.py --variant fused_tiled --shape seed --dtype float32 --baselines empty-kernel,eager \
  --rounds 3 --no-breakdown --json "$w/seed-fp32.json" > "$w/seed.log" 2>&1 < /dev/null
stamp "seed: exit $?"
timeout -s INT 230 $py run_bench.py --variant two_stage,two_stage_pp,cutlass_2gemm,fused_tiled \
  --shape deepseek-v3,deepseek-v2-lite --tokens 64,512,4096 --dtype bfloat16 --baselines eager,eager-graph,torch-2gemm \
  --rounds 3 --json "$w/targets.json" --markdown "$w/targets.md" > "$w/targets.log" 2>&1 < /dev/null
stamp "targets: exit $?"
$py scripts/targets.py "$w/targets.json" "$w/seed-fp32.json" > "$w/targets-check.txt" 2>&1
cut -c1-260 "$w/targets-check.txt"
stamp done
