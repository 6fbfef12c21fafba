#!/usr/bin/env bash
# The multi-GPU check, on one host with two GPUs (the nvidia-h200-x2 machine); everything goes to $OUT:
#   (a) one sweep on 1 GPU and on 2 GPUs: wall times without and with builds;
#   (b) compare of the 2-GPU result against the 1-GPU result;
#   (c) the sweep as two shards run one after the other (one GPU each, as two 1-GPU CI jobs would), merged,
#       checked for the same rows as the unsharded 1-GPU run, and compared with it.
# The builds are made first, cold, by a run that sees no GPU (it builds and runs nothing), so every timed
# run finds them cached: builds do not depend on the number of GPUs, so "with builds" below is a run's
# time without builds plus that one cold build. Triton's autotuning cache is warmed the same way, first.
#   KVBENCH_COMMIT=$(git rev-parse HEAD) scripts/multi_gpu_check.sh
# SWEEP="..." changes the sweep; SKIP_SHARDS=1 leaves out (c), to time a larger sweep in the same minutes;
# PHASES=1 records each run's per-process phases (harness/phases.py) and their sums (phases-NAME.txt).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/out}
mkdir -p "$out"
py=${PYTHON:-python3}
export PYTHONUNBUFFERED=1 TORCH_CUDA_ARCH_LIST=${TORCH_CUDA_ARCH_LIST:-9.0a}
# the CUTLASS headers a tree sent to the GPU machine carries (that machine cannot pip-install them): without them
# cutlass_2gemm's rows are build-failed and the sweep is smaller than it says
if [ -z "${KVBENCH_CUTLASS_DIR:-}" ] && [ -d third_party/cutlass ]; then
  export KVBENCH_CUTLASS_DIR=third_party/cutlass
fi
# merge refuses files that record no commit; a tree copied without .git is named by a hash of its sources.
export KVBENCH_COMMIT=${KVBENCH_COMMIT:-tree-$(cat run_bench.py harness/*.py harness/cuda/* kernels/* | sha256sum | cut -c1-12)}
# The default sweep has 14 (shape, dtype) groups and two rounds, as the full sweep of issue 12: each GPU pays a fixed
# ~22-27 s (worker start-up, its ceilings, the profiling process),
# so a sweep much smaller than this one measures that overhead more than the split of the work.
sweep=${SWEEP:---shape seed,deepseek-v2-lite,minicpm3 --tokens 64,512,4096 --dtype float32,bfloat16 --baselines eager,torch-2gemm --budget 0.3 --rounds 2}

bench() {  # NAME ARGS...: one run of the sweep; its log, result file and table under $out
  local name=$1
  shift
  # shellcheck disable=SC2086  # the sweep is a list of flags
  KVBENCH_PHASES=${PHASES:+$out/phases-$name.jsonl} \
    $py run_bench.py $sweep --allow-failures --json "$out/$name.json" --markdown "$out/$name.md" "$@" \
    > "$out/$name.log" 2>&1
  if [ -n "${PHASES:-}" ] && [ -f "$out/phases-$name.jsonl" ]; then
    $py scripts/phases_summary.py "$out/phases-$name.jsonl" > "$out/phases-$name.txt" 2>&1
  fi
  echo "$name: exit $?, $(grep '^wall time' "$out/$name.log" || tail -1 "$out/$name.log")"
}
tool() {  # NAME ARGS...: a compare or merge, its output in $out/NAME.log
  local name=$1
  shift
  $py run_bench.py "$@" > "$out/$name.log" 2>&1
  echo "$name: exit $?, $(tail -1 "$out/$name.log")"
}

{ nvidia-smi -L; nvidia-smi topo -m; nproc; } > "$out/machine.txt" 2>&1
CUDA_VISIBLE_DEVICES="" bench build
# Triton autotunes each (shape, dtype) at its first call and keeps the choice on disk: like the builds, that is
# paid once per machine, so one pass over the Triton rows first lets both timed runs find it warm (at c3596a8 the
# 1-GPU run, first on a fresh machine, spent 27 s autotuning that the 2-GPU run after it did not).
bench warm-triton --variant triton_two_stage --baselines eager --devices 0,1 --budget 0.01 --rounds 1 --no-breakdown
bench one --devices 0
bench two --devices 0,1
tool compare-two-vs-one compare "$out/one.json" "$out/two.json" --markdown "$out/compare-two-vs-one.md"
if [ -z "${SKIP_SHARDS:-}" ]; then
  bench shard1 --devices 0 --shard 1/2
  bench shard2 --devices 0 --shard 2/2
  tool merge merge "$out/shard1.json" "$out/shard2.json" --out "$out/merged.json"
  tool compare-merged-vs-one compare "$out/one.json" "$out/merged.json" --markdown "$out/compare-merged-vs-one.md"
fi

$py - "$out" <<'EOF' | tee "$out/summary.txt"
import json, sys
from pathlib import Path

out = Path(sys.argv[1])
def load(name):
    path = out / f"{name}.json"
    return json.loads(path.read_text()) if path.exists() else None
def headline(name):
    lines = [ln for ln in (out / f"{name}.log").read_text().splitlines() if ln.startswith("gate ")]
    return lines[-1] if lines else "no verdict (see the log)"
def rows(data):
    return sorted((r["variant"], json.dumps(r["shape"], sort_keys=True), r["dtype"], r["status"]) for r in data["rows"])

build, one, two, merged = load("build"), load("one"), load("two"), load("merged")
print("---- summary ----")
if not (build and one and two):
    sys.exit("a run left no result file: see the logs in " + str(out))
cold = build["run"]["build_s"]
log = (out / "build.log").read_text()
cached = log.count(": cached in ")
made = f" ({cached} extension(s) found cached: a warm build, so 'with builds' below is not a cold one)" if cached else ""
print(f"commit {one['env'].get('commit')}; {len(one['rows'])} rows; build {cold:.1f} s{made}")
warm = load("warm-triton")
if warm:
    print(f"Triton's autotuning warmed first on both GPUs: {warm['run']['wall_without_build_s']:.1f} s "
          "(once per machine, like the build; in neither run below)")
for name, data in (("1 GPU ", one), ("2 GPUs", two)):
    run = data["run"]
    per_gpu = ", ".join(f"GPU {i} busy {s:.1f} s ({run['startup_s'][i]:.1f} s starting workers, "
                        f"{run.get('ceilings_s', {}).get(i, 0):.1f} s ceilings, "
                        f"{run.get('profile_s', {}).get(i, 0):.1f} s profiling "
                        f"(of which {run.get('profile_start_s', {}).get(i, 0):.1f} s its start, "
                        f"{run.get('profile_first_row_s', {}).get(i, 0):.1f} s its first row), "
                        f"{sum(1 for r in data['rows'] if (r.get('device') or {}).get('index') == int(i))} rows)"
                        for i, s in run.get("busy_s", {}).items()) or "no GPU"
    print(f"{name}: {run['wall_without_build_s']:.1f} s without builds, "
          f"{run['wall_without_build_s'] + cold:.1f} s with the build; {per_gpu}")
without = two["run"]["wall_without_build_s"] / one["run"]["wall_without_build_s"]
with_builds = (two["run"]["wall_without_build_s"] + cold) / (one["run"]["wall_without_build_s"] + cold)
print(f"(a) 2 GPUs / 1 GPU: {without:.2f}x without builds, {with_builds:.2f}x with builds "
      f"-> {'PASS' if without <= 0.6 else 'FAIL'} (done when <= 0.6x)")
print(f"(b) compare 2 GPUs against 1 GPU: {headline('compare-two-vs-one')}")
if merged:
    same = rows(merged) == rows(one)
    print(f"(c) shards 1/2 and 2/2 merged: {len(merged['rows'])} rows, (variant, shape, dtype, status) "
          f"{'the same as' if same else 'DIFFERENT from'} the unsharded run; "
          f"compare: {headline('compare-merged-vs-one')}")
else:
    print("(c) no merged file: shards skipped, or see merge.log")
EOF
