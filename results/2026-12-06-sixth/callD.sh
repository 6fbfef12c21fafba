#!/usr/bin/env bash
# Session 2026-12-06 (sixth), fourth device call (results/NOTES.md): GEMM1's unit order at 512 and 4096 tokens
# (MLA_G1_NFAST=0,1 on two_stage_pp: row tile fastest, as now, or column tile fastest), bf16, 3 rounds, with the
# per-kernel breakdown (GEMM1 is each call's first kernel, so its device time there is its own).
#   KVBENCH_COMMIT=<sha> bash results/2026-12-06-sixth/callD.sh     (third_party/cutlass carried)
. scripts/device_call_lib.sh callD
gpu_info
AX="MLA_G1_NFAST=0,1"
pd=/tmp/probe-d; mkdir -p "$pd"
PROBE_DIR=$pd nb scripts/probe_axis.sh two_stage_pp "$AX" --shape seed --json "$w/build-probe.json" \
  > "$w/build-probe.log" 2>&1
stamp "built: exit $?"
PROBE_DIR=$pd timeout -s INT 300 scripts/probe_axis.sh two_stage_pp "$AX" \
  --shape deepseek-v3,deepseek-v2-lite,kimi-k2,minicpm3 --tokens 512,4096 --dtype bfloat16 \
  --baselines eager,torch-2gemm --rounds 3 --timeout 60 --json "$w/probe.json" --markdown "$w/probe.md" \
  > "$w/probe.log" 2>&1 < /dev/null
stamp "probe: exit $?"
$py -c "
import json, sys
for r in json.load(open(sys.argv[1]))['rows']:
    k = r.get('kernels') or {}
    if r['variant'].startswith('two_stage'):
        g1 = [x.get('device_us') for x in k.get('list', [])][:1]
        print(r['shape'].get('name'), r['shape'].get('s'), r['variant'], r['status'], (r.get('gpu_us') or {}).get('median'), 'GEMM1', g1)
" "$w/probe.json" 2>&1 | head -20
grep -E "^\| " "$w/probe.md" | awk -F'|' '{print $2,$4,$5,$8,$9}' | grep -v empty-kernel
stamp done
