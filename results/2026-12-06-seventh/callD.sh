#!/usr/bin/env bash
# Session 2026-12-06 (seventh): why the hand-written GEMM1 makes ~1.4x the L2 requests of CUTLASS's at prefill
# (results/NOTES.md, "The prefill GEMMs against CUTLASS's"). ncu's full set on the first kernel (GEMM1) of one call
# of two_stage_pp and of cutlass_2gemm at DeepSeek-V3 4096 bf16, exported as the raw page (every counter the set
# collected: the L2's per-source sectors, fabric traffic, hits and misses).
#   KVBENCH_COMMIT=<sha> bash results/2026-12-06-seventh/callD.sh     (third_party/cutlass carried)
. scripts/device_call_lib.sh callD
gpu_info
nb $py run_bench.py --variant two_stage_pp,cutlass_2gemm --shape seed --json "$w/build.json" > "$w/build.log" 2>&1
stamp "built: exit $?"
for v in two_stage_pp cutlass_2gemm; do
  timeout 150 ncu --clock-control none --profile-from-start off --set full --launch-count 1 -f -o "$w/ncu-$v" \
    $py scripts/profile_variant.py "$v" deepseek-v3:4096 bfloat16 2 > "$w/ncu-$v.log" 2>&1
  stamp "ncu $v: exit $?"
  ncu --import "$w/ncu-$v.ncu-rep" --csv --page raw > "$w/raw-$v.csv" 2>&1
  rm -f "$w/ncu-$v.ncu-rep"
done
$py - "$w/raw-two_stage_pp.csv" "$w/raw-cutlass_2gemm.csv" <<'PY' 2>&1 | tee "$w/l2-compare.txt" | head -70
import csv, sys
rows = []
for f in sys.argv[1:]:
    r = list(csv.reader(open(f)))
    hdr, units, vals = r[0], r[1], r[2]
    rows.append(dict(zip(hdr, vals)))
    u = dict(zip(hdr, units))
keys = [k for k in rows[0] if (k.startswith("lts__t_") or k.startswith("dram__bytes") or k.startswith("lts__d")
        or "xbar" in k or k.startswith("gpu__time")) and k in rows[1]]
for k in keys:
    a, b = rows[0][k], rows[1][k]
    if a != b: print(f"{k:70s} {a:>16s} {b:>16s} {u.get(k,'')}")
PY
stamp done
