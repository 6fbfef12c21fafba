#!/usr/bin/env bash
# Session 2026-12-06 (seventh), first device call (results/NOTES.md). Builds the three builds of the early-fill probe
# (MLA_DEC_EARLY_FILL=0,1,3, prediction in NOTES) and, on an H200, every variant (gpu_session.sh's build step), all
# with no GPU visible. Then, on an H200: the issue-9 targets run (3 rounds, with the breakdown; the decode path's first H200
# run) and the seed float32 row; on any other GPU: the early-fill probe first (its prediction is for the H100).
# callB.sh follows on the warm machine.
#   KVBENCH_COMMIT=<sha> bash results/2026-12-06-seventh/callA.sh     (third_party/cutlass carried)
. scripts/device_call_lib.sh callA
gpu_info
AX="MLA_DEC_EARLY_FILL=0,1,3"
pd=/tmp/probe-fill; mkdir -p "$pd"
# every variant only where the targets run follows (an H200); the probe's three builds always
if grep -q H200 "$w/gpu.txt"; then
  BUILD=1 SKIP_TESTS=1 SKIP_MULTI=1 PHASE=2 env CUDA_VISIBLE_DEVICES= scripts/gpu_session.sh \
    > "$w/build-session.log" 2>&1 < /dev/null &
fi
PROBE_DIR=$pd nb scripts/probe_axis.sh fused_tiled "$AX" --shape seed --json "$w/build-probe.json" \
  > "$w/build-probe.log" 2>&1 &
wait; stamp "built"; cp /tmp/gpu-session/phase2/build*.log "$w/" 2>/dev/null
grep -h "wall time\|FAILED" "$w"/build*.log | head -12
targets() {
  timeout -s INT 60 $py run_bench.py --variant fused_tiled --shape seed --dtype float32 --baselines empty-kernel,eager \
    --rounds 3 --no-breakdown --json "$w/seed-fp32.json" > "$w/seed.log" 2>&1 < /dev/null
  stamp "seed: exit $?"
  timeout -s INT 220 $py run_bench.py --variant two_stage,two_stage_pp,cutlass_2gemm,fused_tiled \
    --shape deepseek-v3,deepseek-v2-lite --tokens 64,512,4096 --dtype bfloat16 --baselines eager,eager-graph,torch-2gemm \
    --rounds 3 --json "$w/targets.json" --markdown "$w/targets.md" > "$w/targets.log" 2>&1 < /dev/null
  stamp "targets: exit $?"
  $py scripts/targets.py "$w/targets.json" "$w/seed-fp32.json" > "$w/targets-check.txt" 2>&1
  cut -c1-260 "$w/targets-check.txt"; pack
}
fill_probe() {
  PROBE_DIR=$pd timeout -s INT 200 scripts/probe_axis.sh fused_tiled "$AX" \
    --shape deepseek-v3,kimi-k2 --tokens 1,64 --shape b=4,s=16,d=1032,rank=200,heads=5,head_dim=128 \
    --dtype bfloat16 --baselines eager,torch-2gemm --rounds 3 --timeout 40 --json "$w/probe-fill.json" \
    --markdown "$w/probe-fill.md" > "$w/probe-fill.log" 2>&1 < /dev/null
  stamp "fill probe: exit $?"
  grep -E "^\| " "$w/probe-fill.md" | awk -F'|' '{print $2,$4,$5,$8,$9}' | grep -v empty-kernel; pack
}
if grep -q H200 "$w/gpu.txt"; then targets; else fill_probe; fi
stamp done
