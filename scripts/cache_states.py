"""How much of a call's time is the L2 state of its code rather than of its data: GPU event time of CUDA
variants (the untraced builds run_bench.py times) under trace_tc's three cache states, cold (L2 flushed, as
run_bench.py times), warm-code (flushed, then one call on other tensors of the same shape) and hot (no flush),
median over runs, with the empty kernel under the same states. A profiling aid, not a measurement of record.
    python3 scripts/cache_states.py two_stage,fused_tiled bfloat16 deepseek-v3:64 seed --runs 21
"""
import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from harness import baselines, build, discover, runner  # noqa: E402
from harness.problem import DTYPES, make_inputs  # noqa: E402
from harness.shapes import parse_one  # noqa: E402
from trace_tc import CACHE_STATES, one_run  # noqa: E402


class _Empty:
    """The harness's empty kernel behind the forward(*args) call one_run makes."""
    def __init__(self, mod):
        self.mod = mod

    def forward(self, *args):
        self.mod.empty_launch()


def median_us(mod, args, flush, cache, other, runs):
    for _ in range(2):
        one_run(mod, args, flush, cache, other, traced=False)
    return sorted(one_run(mod, args, flush, cache, other, traced=False)[1] for _ in range(runs))[runs // 2]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("variants")
    ap.add_argument("dtypes")
    ap.add_argument("shapes", nargs="+")
    ap.add_argument("--runs", type=int, default=21)
    a = ap.parse_args(argv)
    root = Path(__file__).resolve().parent.parent
    specs = [discover.load_variant(root / "kernels" / f"{n}.cu") for n in a.variants.split(",")]
    exts = {s.name: runner.variant_extension(s) for s in specs}
    helper = runner.timing_extension()
    built = build.build_all([helper, *exts.values()])
    flush = torch.empty(int(2 * torch.cuda.get_device_properties(0).L2_cache_size // 4) + 1, device="cuda")
    flush.fill_(1.0)
    hb = built[helper.name]
    empty = _Empty(baselines.import_extension(hb.so_path, hb.module_name))
    print(f"{'row':28s} {'dtype':9s} " + " ".join(f"{c:>10s}" for c in CACHE_STATES) + "   (GPU µs, median)")
    print(f"{'empty kernel':28s} {'-':9s} " + " ".join(
        f"{median_us(empty, (), flush, c, (), a.runs):10.2f}" for c in CACHE_STATES))
    for spec in specs:
        b = built[exts[spec.name].name]
        if not b.ok:
            print(f"{spec.name}: BUILD FAILED {b.message}")
            return 1
        mod = baselines.import_extension(b.so_path, b.module_name)
        for text in a.shapes:
            shape = parse_one(text)
            for dt in a.dtypes.split(","):
                args = (*make_inputs(shape, DTYPES[dt], seed=1).tensors(), shape.heads)
                other = (*make_inputs(shape, DTYPES[dt], seed=2).tensors(), shape.heads)
                label = f"{spec.name} {shape.label()}/{shape.tokens}"
                print(f"{label:28s} {dt:9s} " + " ".join(
                    f"{median_us(mod, args, flush, c, other, a.runs):10.2f}" for c in CACHE_STATES))
    return 0


if __name__ == "__main__":
    sys.exit(main())
