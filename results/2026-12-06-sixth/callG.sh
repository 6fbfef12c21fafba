#!/usr/bin/env bash
# Session 2026-12-06 (sixth), last device call, sized to the ~360 s of device time left: the decode path against
# two_stage at DeepSeek-V3 and Kimi-K2, 1 and 64 tokens, bf16, 3 rounds, with the breakdown (its grid says how many
# clusters of 8 the GPU holds), and scripts/targets.py on the file (target 4). Builds only those two variants.
#   KVBENCH_COMMIT=<sha> bash results/2026-12-06-sixth/callG.sh     (third_party/cutlass carried)
. scripts/device_call_lib.sh callG
gpu_info
timeout 170 env CUDA_VISIBLE_DEVICES= $py run_bench.py --variant fused_tiled,two_stage --shape seed \
  --json "$w/build.json" > "$w/build.log" 2>&1 < /dev/null
stamp "built: exit $?"
timeout -s INT 110 $py run_bench.py --variant fused_tiled,two_stage --shape deepseek-v3,kimi-k2 --tokens 1,64 \
  --dtype bfloat16 --baselines eager,torch-2gemm --rounds 3 --timeout 40 --json "$w/decode.json" \
  --markdown "$w/decode.md" > "$w/decode.log" 2>&1 < /dev/null
stamp "decode: exit $?"
$py scripts/targets.py "$w/decode.json" > "$w/targets-check.txt" 2>&1; grep -E "^4\." "$w/targets-check.txt" | cut -c1-250
$py -c "
import json, sys
for r in json.load(open(sys.argv[1]))['rows']:
    k = r.get('kernels') or {}
    print(r['shape'].get('name'), r['shape'].get('s'), r['variant'], r['status'], (r.get('gpu_us') or {}).get('median'),
          k.get('launches'), [x.get('grid') for x in k.get('list', [])][:2])
" "$w/decode.json" 2>&1 | head -20
stamp done
