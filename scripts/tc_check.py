"""Check variants against the float64 reference on a list of shapes and say WHERE an output is wrong (which rows of
a 128-row tile, which 64-column box of a 256-column tile, k half or v half), to debug the tensor-core paths on
the GPU in one call. Not a harness stage: run_bench.py and tests/test_gpu.py are the checks of record.
    python3 scripts/tc_check.py two_stage,fused_tiled bfloat16,float16 "deepseek-v3:64" "b=1,s=300,d=256,rank=64,heads=2,head_dim=128"
"""
import os
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from harness import baselines, build, discover, runner  # noqa: E402
from harness.problem import DTYPES, KVDecompress, make_inputs  # noqa: E402
from harness.shapes import parse_one  # noqa: E402

def cold_us(fn, reps=20):
    """Median device time of fn() after reading a 2x-L2 buffer; a spin kernel holds the stream while the host
    queues flush, events and call, so no launch gap is timed (a quick look; run_bench.py is the measurement)."""
    flush = torch.empty(int(2 * torch.cuda.get_device_properties(0).L2_cache_size // 4) + 1, device="cuda")
    flush.fill_(1.0)
    times = []
    for _ in range(reps + 3):
        torch.cuda._sleep(2_000_000)
        flush.sum()
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        torch.cuda.synchronize()
        times.append(a.elapsed_time(b) * 1e3)
    times = sorted(times[3:])
    return times[len(times) // 2]


TOL = {"bfloat16": 1e-2, "float16": 2e-3, "float32": 2e-5}


def where_wrong(out, ref, shape):
    """Fractions of bad elements by tile row half, column box and k/v half."""
    M, n = shape.tokens, shape.n_up
    o = out.reshape(M, 2 * n).double()
    r = ref.reshape(M, 2 * n)
    bad = (o - r).abs() > 0.05 * r.pow(2).mean().sqrt() + 1e-30
    rows = torch.arange(M, device=o.device)
    cols = torch.arange(2 * n, device=o.device)
    parts = []
    for name, mask in (("rows%128<64", (rows % 128) < 64), ("rows%128>=64", (rows % 128) >= 64)):
        parts.append(f"{name} {bad[mask].float().mean().item():.3f}")
    for b in range(4):
        mask = (cols % 256) // 64 == b
        parts.append(f"colbox{b} {bad[:, mask].float().mean().item():.3f}")
    parts.append(f"k {bad[:, :n].float().mean().item():.3f} v {bad[:, n:].float().mean().item():.3f}")
    parts.append(f"nan {torch.isnan(o).float().mean().item():.3f}")
    return ", ".join(parts)


def main(names, dtypes, shapes):
    root = Path(__file__).resolve().parent.parent
    specs = [discover.load_variant(root / "kernels" / f"{n}.cu") for n in names.split(",")]
    built = build.build_all([runner.variant_extension(s) for s in specs])
    failed = 0
    for spec in specs:
        b = built[spec.name]
        if not b.ok:
            print(f"{spec.name}: BUILD FAILED {b.message}")
            failed += 1
            continue
        mod = baselines.import_extension(b.so_path, b.module_name)
        for text in shapes:
            shape = parse_one(text)
            for dt in dtypes.split(","):
                inp = make_inputs(shape, DTYPES[dt], seed=1)
                ref = KVDecompress(shape.heads, shape.head_dim)(*(t.double() for t in inp.tensors()))
                out = torch.full(shape.out_shape, float("nan"), device="cuda", dtype=DTYPES[dt])
                out = mod.forward(*inp.tensors(), shape.heads)
                torch.cuda.synchronize()
                rel = ((out.double() - ref).norm() / ref.norm()).item()
                ok = rel < TOL[dt]
                failed += not ok
                msg = "" if ok else "  WRONG: " + where_wrong(out, ref, shape)
                label = f"{shape.label()}/{shape.tokens}"
                timing = ""
                if ok and os.environ.get("TIME"):
                    args = (*inp.tensors(), shape.heads)
                    t_var = cold_us(lambda: mod.forward(*args))
                    two = baselines.two_gemm(shape.heads, shape.head_dim)
                    t_2g = cold_us(lambda: two(*inp.tensors()))
                    timing = f"  cold-event us: {spec.name} {t_var:.1f}  torch-2gemm {t_2g:.1f}"
                print(f"{spec.name:12s} {label:34s} {dt:9s} rel {rel:.2e}{msg}{timing}", flush=True)
    return failed


if __name__ == "__main__":
    sys.exit(1 if main(sys.argv[1], sys.argv[2], sys.argv[3:]) else 0)
