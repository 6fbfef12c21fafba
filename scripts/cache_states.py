"""How much of a cold-timed call is the L2 state of its code rather than of its data: GPU time of CUDA variants
(the untraced builds run_bench.py times) and of the empty kernel, measured as the harness measures (blocked
events, its stopping rule) in three cache states:
  cold       the L2 flushed by a read pass before each call, as run_bench.py times: code and data from DRAM;
  warm-code  flushed, then one call of the same code on other inputs, then the timed call: the code (and what
             does not depend on the inputs) is in L2, this call's inputs are not;
  hot        nothing flushed.
A profiling aid, not a measurement of record (run_bench.py times the rows that count).
    python3 scripts/cache_states.py two_stage,fused_tiled bfloat16 deepseek-v3:64 seed --json cs.json
"""
from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

STATES = ("cold", "warm-code", "hot")


class WarmCodeFlush:
    """The flush of the warm-code state: the L2 flushed, then one call of the same code on other inputs."""
    mode = "read+warm-code"

    def __init__(self, l2: Callable[[], object], warm_call: Callable[[], object]):
        self.l2, self.warm_call = l2, warm_call

    def __call__(self) -> None:
        self.l2()
        self.warm_call()


def flush_for(state: str, l2, warm_call):
    """What GpuTime runs before each timed call in `state` (None: nothing)."""
    if state == "cold":
        return l2
    if state == "warm-code":
        return WarmCodeFlush(l2, warm_call)
    if state == "hot":
        return None
    raise ValueError(f"cache state must be one of {', '.join(STATES)}, got {state!r}")


def measure_states(helper, call, warm_call, l2, budget_s: float, states=STATES) -> dict[str, dict]:
    """{state: {median_us, iqr_us, n, method}} of `call` (warm_call: the same code on other inputs)."""
    from harness import stats, timing
    rule = stats.StoppingRule(budget_s=budget_s)
    out = {}
    for state in states:
        kind = timing.GpuTime(helper, flush_for(state, l2, warm_call))
        timing.warm_up(call)
        kind.warm_up(call)
        m = timing.measure(kind, call, rule)
        kind.close()
        out[state] = {"median_us": stats.median(m.samples_us), "iqr_us": stats.iqr(m.samples_us),
                      "n": len(m.samples_us), "method": m.method}
    return out


def build_for_timing(script: str, sources) -> tuple[dict, object] | int:
    """Build the harness's timing kernels and `sources`; (builds by name, the timing extension) when they built and
    a GPU is here, else the exit status, said in one line: 4 a build failed, 3 no GPU (built and cached, nothing
    timed, as run_bench.py without a GPU)."""
    import torch

    from harness import baselines, build, runner
    built = build.build_all([runner.timing_extension(), *sources])
    failed = [r.name for r in built.values() if not r.ok]
    if failed:
        print(f"{script}: build FAILED: {', '.join(failed)}", file=sys.stderr)
        return 4
    if not torch.cuda.is_available():
        print(f"{script}: no CUDA device: its kernels are built, nothing is timed", file=sys.stderr)
        return 3
    helper = baselines.import_extension(built["timing_kernels"].so_path, built["timing_kernels"].module_name)
    helper.reset_persisting_l2()
    return built, helper


def render(rows: list[dict]) -> str:
    """One line per row: the median in each state, and what warm code and hot data take off the cold time."""
    lines = [f"{'row':<34} {'dtype':<9} " + " ".join(f"{s:>10}" for s in STATES)
             + f" {'code':>7} {'data':>7}   (GPU µs, medians; code = cold - warm-code, data = warm-code - hot)"]
    for r in rows:
        t = {s: r["states"][s]["median_us"] for s in STATES}
        lines.append(f"{r['row']:<34} {r['dtype']:<9} " + " ".join(f"{t[s]:10.2f}" for s in STATES)
                     + f" {t['cold'] - t['warm-code']:7.2f} {t['warm-code'] - t['hot']:7.2f}")
    return "\n".join(lines)


def parse(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("variants", help="comma list of CUDA variants in kernels/")
    ap.add_argument("dtypes", help="comma list: float32, bfloat16, float16")
    ap.add_argument("shapes", nargs="+", help="shapes as run_bench.py's --shape takes one (deepseek-v3:64, seed)")
    ap.add_argument("--budget", type=float, default=0.3, help="seconds of sampling per row and state")
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    from harness.problem import DTYPES
    from harness.errors import UsageError
    from harness.shapes import parse_one
    for dt in args.dtypes.split(","):
        if dt not in DTYPES:
            ap.error(f"unknown dtype {dt!r}: {', '.join(DTYPES)}")
    for text in args.shapes:
        try:
            parse_one(text)
        except UsageError as exc:
            ap.error(str(exc))
    for name in args.variants.split(","):
        if not (ROOT / "kernels" / f"{name}.cu").is_file():
            ap.error(f"no CUDA variant kernels/{name}.cu")
    return args


def main(argv: list[str]) -> int:
    args = parse(argv)
    from harness import baselines, discover, env, runner, timing
    from harness.problem import DTYPES, make_inputs
    from harness.shapes import parse_one

    specs = [discover.load_variant(ROOT / "kernels" / f"{n}.cu") for n in args.variants.split(",")]
    exts = {s.name: runner.variant_extension(s) for s in specs}
    ready = build_for_timing("cache_states", exts.values())
    if isinstance(ready, int):
        return ready
    built, helper = ready
    l2 = timing.L2Flush("read")
    rows = [{"row": "empty-kernel", "dtype": "-",
             "states": measure_states(helper, helper.empty_launch, helper.empty_launch, l2, args.budget)}]
    for spec in specs:
        mod = baselines.import_extension(built[exts[spec.name].name].so_path, built[exts[spec.name].name].module_name)
        for text in args.shapes:
            shape = parse_one(text)
            for dt in args.dtypes.split(","):
                if dt not in spec.dtypes:
                    continue
                a = make_inputs(shape, DTYPES[dt], seed=1).tensors()
                b = make_inputs(shape, DTYPES[dt], seed=2).tensors()
                kept = []  # the warm call's outputs stay alive: the timed call writes other lines

                def warm(b=b, kept=kept):
                    kept[:] = [mod.forward(*b, shape.heads)]

                rows.append({"row": f"{spec.name} {shape.label()}/{shape.tokens}", "dtype": dt,
                             "states": measure_states(helper, lambda a=a: mod.forward(*a, shape.heads), warm, l2,
                                                      args.budget)})
                print(render(rows[-1:]).splitlines()[1], flush=True)
    print(render(rows))
    if args.json:
        Path(args.json).write_text(json.dumps({"env": env.describe(), "method": "blocked events; cold: L2 flush "
                                               "(read) before each call; warm-code: the flush, then one call on "
                                               "other inputs; hot: none", "args": vars(args), "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
