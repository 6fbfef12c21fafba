# Device call 1 of session 2026-12-04 (second): run from the repository root on the H200 ($OUT = the returned folder).
export CUDA_HOME=/usr/local/cuda PATH=/usr/local/cuda/bin:$PATH TORCH_CUDA_ARCH_LIST=9.0a PYTHONUNBUFFERED=1; o=$OUT
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw --format=csv > $o/machine.txt
B="env CUDA_VISIBLE_DEVICES= timeout 400"
$B python3 scripts/trace_tc.py two_stage bfloat16 deepseek-v3:64 --runs 1 > /tmp/pb1.log 2>&1 &
$B python3 scripts/trace_tc.py two_stage bfloat16 deepseek-v3:64 --runs 1 --define KV_CODE_PREFETCH=65536 > /tmp/pb2.log 2>&1 &
$B python3 scripts/cache_states.py fused_tiled float32 seed --runs 1 > /tmp/pb3.log 2>&1 &
PROBE_DIR=/tmp/p2 $B scripts/probe_axis.sh two_stage "KV_CODE_PREFETCH=0,65536" --shape seed --json /tmp/pb4.json > /tmp/pb4.log 2>&1 &
PROBE_DIR=/tmp/p3 $B scripts/probe_axis.sh fused_tiled "KV_CODE_PREFETCH=0,24576" --shape seed --json /tmp/pb5.json > /tmp/pb5.log 2>&1 &
timeout 200 python3 scripts/code_fetch.py --runs 21 > $o/code-fetch.txt 2>&1; echo "code_fetch rc $?"
wait; date
timeout 60 python3 scripts/cache_states.py fused_tiled float32 seed --runs 21 > $o/cache-states.txt 2>&1; echo "cs rc $?"
timeout 90 python3 scripts/trace_tc.py two_stage bfloat16 deepseek-v3:64 --runs 7 --cache cold,warm-code,hot --json $o/trace.json > $o/trace.txt 2>&1; echo "trace rc $?"
timeout 60 python3 scripts/trace_tc.py two_stage bfloat16 deepseek-v3:64 --runs 7 --define KV_CODE_PREFETCH=65536 --json $o/trace-pf.json > $o/trace-pf.txt 2>&1; echo "trace-pf rc $?"
PROBE_DIR=/tmp/p2 timeout 150 scripts/probe_axis.sh two_stage "KV_CODE_PREFETCH=0,65536" --shape deepseek-v3,kimi-k2,deepseek-v2-lite --tokens 64,512 --dtype bfloat16 --rounds 3 --baselines eager,torch-2gemm --json $o/probe-two.json --markdown $o/probe-two.md > /tmp/probe-two.log 2>&1; echo "probe2 rc $?"
PROBE_DIR=/tmp/p3 timeout 60 scripts/probe_axis.sh fused_tiled "KV_CODE_PREFETCH=0,24576" --shape seed --dtype float32 --rounds 3 --baselines eager --json $o/probe-fused.json --markdown $o/probe-fused.md > /tmp/probe-fused.log 2>&1; echo "probe3 rc $?"
gzip $o/*.json; tail -2 /tmp/pb*.log; cat $o/code-fetch.txt $o/cache-states.txt | grep -v Warn; grep -v Warn $o/trace.txt | head -90; tail -30 /tmp/probe-two.log; tail -12 /tmp/probe-fused.log
