#!/usr/bin/env bash
# Session 2026-12-06 (sixth), first device call (results/NOTES.md): fused_tiled's decode in clusters of 4 where the
# device holds more CTAs that way (MLA_DEC_CL4; 2 forces it wherever it fits). Builds every variant (gpu_session.sh's
# build step) beside the probe's three builds; then the probe's check (odd shapes and four presets at 1 / 64 tokens,
# bf16 and fp16, 1 round) and its timing (V3 and kimi-k2 at 1 / 64 tokens and one odd shape, bf16, 3 rounds, with
# the per-kernel breakdown: each row's grid says which cluster size ran). callB.sh follows on the warm machine.
#   KVBENCH_COMMIT=<sha> bash results/2026-12-06-sixth/callA.sh     (third_party/cutlass carried)
. scripts/device_call_lib.sh callA
gpu_info
AX="MLA_DEC_CL4=0,1,2"
pd=/tmp/probe-a; mkdir -p "$pd"
BUILD=1 SKIP_TESTS=1 SKIP_MULTI=1 PHASE=2 env CUDA_VISIBLE_DEVICES= scripts/gpu_session.sh \
  > "$w/build-session.log" 2>&1 < /dev/null &
PROBE_DIR=$pd nb scripts/probe_axis.sh fused_tiled "$AX" --shape seed --json "$w/build-probe.json" \
  > "$w/build-probe.log" 2>&1 &
wait; stamp "built"; cp /tmp/gpu-session/phase2/build*.log "$w/" 2>/dev/null
grep -h "wall time\|FAILED" "$w"/build*.log | head -12
SHAPE_ARGS=(); for s in b=1,s=5,d=512,rank=64,heads=3,head_dim=128 b=4,s=16,d=1032,rank=200,heads=5,head_dim=128 b=1,s=7,d=2056,rank=136,heads=2,head_dim=128 b=1,s=3,d=512,rank=512,heads=1,head_dim=128; do SHAPE_ARGS+=(--shape "$s"); done
PROBE_DIR=$pd timeout -s INT 110 scripts/probe_axis.sh fused_tiled "$AX" "${SHAPE_ARGS[@]}" \
  --shape deepseek-v3,kimi-k2,minicpm3,deepseek-v2-lite --tokens 1,64 --dtype bfloat16,float16 --baselines eager \
  --rounds 1 --budget 0.05 --timeout 40 --no-breakdown \
  --json "$w/probe-check.json" --markdown "$w/probe-check.md" > "$w/probe-check.log" 2>&1 < /dev/null
stamp "probe check: exit $?"; grep -ci "| ok " "$w/probe-check.md"; grep -i "wrong\|fail\|error" "$w/probe-check.log" | head -5
pack
PROBE_DIR=$pd timeout -s INT 170 scripts/probe_axis.sh fused_tiled "$AX" \
  --shape deepseek-v3,kimi-k2 --tokens 1,64 --shape b=4,s=16,d=1032,rank=200,heads=5,head_dim=128 \
  --dtype bfloat16 --baselines eager,torch-2gemm --rounds 3 --timeout 40 --json "$w/probe.json" \
  --markdown "$w/probe.md" > "$w/probe.log" 2>&1 < /dev/null
stamp "probe: exit $?"
$py -c "
import json, sys
for r in json.load(open(sys.argv[1]))['rows']:
    k = r.get('kernels') or {}
    if r['variant'].startswith('fused'):
        print(r['shape'].get('name'), r['shape'].get('s'), r['variant'], (r.get('gpu_us') or {}).get('median'),
              k.get('launches'), [x.get('grid') for x in k.get('list', [])], k.get('note'))
" "$w/probe.json" 2>&1 | head -20
grep -E "^\| " "$w/probe.md" | awk -F'|' '{print $2,$4,$5,$8}' | grep -v empty-kernel
stamp done
