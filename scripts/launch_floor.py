"""What a small kernel's time above the empty-kernel floor is made of: device time, measured as the harness
measures a variant (blocked events; "cold": the L2 flushed before each call, "hot": not), of synthetic kernels
(scripts/launch_floor.cu) that add one cost at a time, and optionally of a real variant in the same run:

  empty 1x1         the harness's empty-kernel row (one block of one thread)
  grid              G blocks of T threads, no shared memory
  grid+smem         ... with S bytes of dynamic shared memory
  copy              ... each block copies W shared bytes (weights) + H bytes of its own (rows) into shared memory
  copy+store        ... and writes O bytes of output
With --cluster C the grid is launched in clusters of C blocks as well, each ending on a cluster barrier.

The defaults are fused_tiled DIRECT's at the seed in float32 (96 blocks of 256 threads, 115.5 KB of shared memory,
w_down + w_up = 96 KB, 4 rows of 1 KB in and 4 of 1 KB out per block).
    python3 scripts/launch_floor.py --variant fused_tiled --shape seed --dtype float32 [--json out.json]
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SOURCE = Path(__file__).resolve().with_suffix(".cu")
DECLS = ("void floor_launch(at::Tensor weights, at::Tensor rows, at::Tensor out, int64_t grid, "
         "int64_t threads, int64_t smem_bytes, int64_t w_bytes, int64_t h_bytes, int64_t o_bytes, int64_t stage, "
         "int64_t cluster);\n")


def cases(grid: int, threads: int, smem: int, w: int, h: int, o: int, cluster: int = 1) -> list[tuple[str, tuple]]:
    """(name, floor_launch arguments after the tensors) of each synthetic case, cheapest first; the empty-kernel
    row is added by the caller. With cluster > 1 the plain grid comes first, then the same grid in clusters."""
    c = f" cluster {cluster}" if cluster > 1 else ""
    plain = [(f"grid {grid}x{threads}", (grid, threads, 0, 0, 0, 0, 0, 1))] if cluster > 1 else []
    return plain + [
        (f"grid {grid}x{threads}{c}", (grid, threads, 0, 0, 0, 0, 0, cluster)),
        (f"grid+smem {smem} B{c}", (grid, threads, smem, 0, 0, 0, 0, cluster)),
        (f"copy {w}+{h} B{c}", (grid, threads, smem, w, h, 0, 1, cluster)),
        (f"copy+store {o} B{c}", (grid, threads, smem, w, h, o, 2, cluster)),
    ]


def parse(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--grid", type=int, default=96)
    ap.add_argument("--threads", type=int, default=256)
    ap.add_argument("--smem", type=int, default=118232, help="dynamic shared memory bytes per block")
    ap.add_argument("--weights", type=int, default=98304, help="bytes every block copies (shared by all)")
    ap.add_argument("--rows", type=int, default=4096, help="bytes each block copies of its own")
    ap.add_argument("--out", type=int, default=4096, help="bytes each block writes")
    ap.add_argument("--cluster", type=int, default=1, help="blocks per cluster (1: a plain launch)")
    ap.add_argument("--variant", help="a kernels/ variant to time in the same run, at --shape and --dtype")
    ap.add_argument("--shape", default="seed")
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--budget", type=float, default=1.0, help="seconds of sampling per case and mode")
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    for name in ("weights", "rows", "out"):
        if getattr(args, name) % 16:
            ap.error(f"--{name} must be a multiple of 16 bytes")
    if args.weights + args.rows > args.smem:
        ap.error("--weights + --rows must fit in --smem")
    if args.cluster < 1 or args.grid % args.cluster:
        ap.error("--grid must be a multiple of --cluster")
    return args


def main(argv: list[str]) -> int:
    args = parse(argv)
    import torch

    from harness import baselines, build, discover, env, runner, stats, timing
    from harness.problem import DTYPES, make_inputs
    from harness.shapes import parse_one

    sources = [runner.timing_extension(),
               build.ExtensionSource("launch_floor", SOURCE.read_text(), DECLS, ("floor_launch",))]
    spec = None
    if args.variant:
        spec = discover.load_variant(ROOT / "kernels" / f"{args.variant}.cu")
        sources.append(runner.variant_extension(spec))
    built = build.build_all(sources)
    failed = [r.name for r in built.values() if not r.ok]
    if failed:
        print(f"launch_floor: build FAILED: {', '.join(failed)}", file=sys.stderr)
        return 4
    if not torch.cuda.is_available():  # as run_bench.py without a GPU: built (and cached), nothing timed
        print("launch_floor: no CUDA device: its kernels are built, nothing is timed", file=sys.stderr)
        return 3
    helper = baselines.import_extension(built["timing_kernels"].so_path, built["timing_kernels"].module_name)
    floor = baselines.import_extension(built["launch_floor"].so_path, built["launch_floor"].module_name)

    f32 = dict(dtype=torch.float32, device="cuda")
    weights = torch.randn(max(args.weights // 4, 4), **f32)
    rows = torch.randn(max(args.grid * args.rows // 4, 4), **f32)
    out = torch.empty(max(args.grid * args.out // 4, 4), **f32)
    calls = [("empty 1x1", helper.empty_launch)]
    for name, a in cases(args.grid, args.threads, args.smem, args.weights, args.rows, args.out, args.cluster):
        calls.append((name, lambda a=a: floor.floor_launch(weights, rows, out, *a)))
    if spec is not None:
        module = baselines.import_extension(built[spec.name].so_path, built[spec.name].module_name)
        shape = parse_one(args.shape)
        inputs = make_inputs(shape, DTYPES[args.dtype], seed=0).tensors()
        calls.append((f"{args.variant} {args.shape} {args.dtype}",
                      lambda: module.forward(*inputs, shape.heads)))

    helper.reset_persisting_l2()
    rule = stats.StoppingRule(budget_s=args.budget)
    results = []
    for mode, flush in (("cold", timing.L2Flush("read")), ("hot", None)):
        kind = timing.GpuTime(helper, flush)
        for name, call in calls:
            timing.warm_up(call)
            kind.warm_up(call)
            m = timing.measure(kind, call, rule)
            results.append({"case": name, "mode": mode, "median_us": stats.median(m.samples_us),
                            "iqr_us": stats.iqr(m.samples_us), "n": len(m.samples_us)})
        kind.close()
    print(render(results))
    if args.json:
        Path(args.json).write_text(json.dumps({"env": env.describe(), "method": "blocked events; cold: L2 flush "
                                               "(read) before each call; hot: none", "args": vars(args),
                                               "results": results}, indent=1))
    return 0


def render(results: list[dict]) -> str:
    """One line per case: cold and hot medians, and the cold step over the previous case."""
    by_case: dict[str, dict[str, float]] = {}
    for r in results:
        by_case.setdefault(r["case"], {})[r["mode"]] = r["median_us"]
    lines = [f"{'case':<34} {'cold us':>8} {'hot us':>8} {'step':>7}"]
    prev = None
    for case, t in by_case.items():
        cold, hot = t.get("cold", float("nan")), t.get("hot", float("nan"))
        step = "" if prev is None else f"{cold - prev:+7.2f}"
        lines.append(f"{case:<34} {cold:8.2f} {hot:8.2f} {step:>7}")
        prev = cold
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
