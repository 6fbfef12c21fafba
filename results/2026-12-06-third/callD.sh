#!/usr/bin/env bash
# Session 2026-12-06 (third), fourth device call (results/NOTES.md), sized to the ~490 s of device time left: the
# final decode path (the latent's pass counted after its copy is issued; the per-box latent barriers and the L2
# prefetch removed) checked and timed once more. Builds fused_tiled and two_stage with no GPU visible, then tc_check
# of fused_tiled (9 shapes x bf16 / fp16), fused_tiled against two_stage at 1 and 64 tokens (3 rounds), and the GPU
# suite's fused_tiled tests. From the repository root, third_party/cutlass carried:
#   KVBENCH_COMMIT=<sha> bash results/2026-12-06-third/callD.sh
set -uo pipefail
export CUDA_HOME=/usr/local/cuda PATH=/usr/local/cuda/bin:$PATH TORCH_CUDA_ARCH_LIST=9.0a PYTHONUNBUFFERED=1
export KVBENCH_CUTLASS_DIR=third_party/cutlass
o=${OUT:-/tmp/out}; w=/tmp/callD; mkdir -p "$o" "$w"
pack() { tar -czf "$o/callD.tgz" -C "$w" .; }
trap pack EXIT
t0=$(date +%s); stamp() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
py=${PYTHON:-python3}
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv > "$w/gpu.txt" 2>&1; cat "$w/gpu.txt"
SHAPES="b=1,s=5,d=512,rank=64,heads=3,head_dim=128 b=4,s=16,d=1032,rank=200,heads=5,head_dim=128 deepseek-v3:64 deepseek-v3:1 kimi-k2:64 minicpm3:64 deepseek-v2-lite:64 b=1,s=7,d=2056,rank=136,heads=2,head_dim=128 b=1,s=3,d=512,rank=512,heads=1,head_dim=128"
env CUDA_VISIBLE_DEVICES= timeout 150 $py run_bench.py --variant fused_tiled,two_stage --shape seed \
  --json "$w/build.json" > "$w/build.log" 2>&1 < /dev/null
stamp "built: $(grep 'wall time' "$w/build.log")"
# shellcheck disable=SC2086
timeout 40 $py scripts/tc_check.py fused_tiled bfloat16,float16 $SHAPES > "$w/tc-check.log" 2>&1
stamp "tc_check: exit $?"; grep -v "^\[\|W1206\|still building" "$w/tc-check.log" | cut -c1-110
pack
timeout -s INT 60 $py run_bench.py --variant fused_tiled,two_stage --shape deepseek-v3,kimi-k2 --tokens 1,64 \
  --dtype bfloat16 --baselines eager,torch-2gemm --rounds 3 --timeout 40 --no-breakdown --json "$w/decode.json" \
  --markdown "$w/decode.md" > "$w/decode.log" 2>&1 < /dev/null
stamp "decode rows: exit $?"
grep -E "^\| " "$w/decode.md" | awk -F'|' '{print $2,$4,$5,$8}' | grep -v empty-kernel
pack
timeout -s INT -k 5 ${TESTS_S:-125} $py -m pytest -q -m gpu -k fused_tiled -p no:cacheprovider -rfEs > "$w/gpu-tests.log" 2>&1
stamp "GPU tests (fused_tiled): exit $?: $(grep -E 'passed|failed' "$w/gpu-tests.log" | tail -1)"
stamp done
