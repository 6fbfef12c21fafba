"""How steady are the harness's measured ceilings? (harness/roofline.py: the median of 5 calls of an 8192^3
matmul, the median of 10 copies of 1 GiB, measured once at a run's start.) Every row's floor, and so every
target ratio, divides by them; on H100s they spread 748-801 TFLOP/s between runs (results/NOTES.md).

Prints, on one GPU: the harness's own measure_ceilings() repeated; per-call rates of the matmul back to back
(does the rate sag as the GPU heats?) and after an idle pause; other matmul sizes; and the SM clock and power
draw beside each block (NVML). GPU only; writes JSON with --json.
  python scripts/ceiling_spread.py --dtype bfloat16 --json /tmp/ceilings.json
"""
from __future__ import annotations

import argparse
import json
import pathlib
import statistics
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

from harness.problem import DTYPES  # noqa: E402
from harness.roofline import measure_ceilings  # noqa: E402


def nvml_state() -> dict:
    try:
        import pynvml
        pynvml.nvmlInit()
        h = pynvml.nvmlDeviceGetHandleByIndex(torch.cuda.current_device())
        return {"sm_mhz": pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM),
                "power_w": pynvml.nvmlDeviceGetPowerUsage(h) / 1000.0,
                "temp_c": pynvml.nvmlDeviceGetTemperature(h, pynvml.NVML_TEMPERATURE_GPU)}
    except Exception as exc:  # NVML missing or refused: the rates still stand
        return {"nvml": repr(exc)}


def per_call_ms(fn, calls: int) -> list[float]:
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(calls)]
    for start, end in events:
        start.record()
        fn()
        end.record()
    torch.cuda.synchronize()
    return [s.elapsed_time(e) for s, e in events]


def matmul_block(m: int, n: int, k: int, dtype: torch.dtype, calls: int) -> dict:
    a = torch.randn(m, k, device="cuda").to(dtype)
    b = torch.randn(k, n, device="cuda").to(dtype)
    a @ b
    torch.cuda.synchronize()
    ms = per_call_ms(lambda: a @ b, calls)
    tf = [2 * m * n * k / (t * 1e-3) / 1e12 for t in ms]
    return {"shape": [m, n, k], "tflops": [round(x, 1) for x in tf], "median": round(statistics.median(tf), 1),
            "best": round(max(tf), 1), "after": nvml_state()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dtype", default="bfloat16", choices=sorted(DTYPES))
    ap.add_argument("--json")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("ceiling_spread: needs a CUDA GPU", file=sys.stderr)
        return 3
    dt = DTYPES[args.dtype]
    out: dict = {"gpu": torch.cuda.get_device_name(), "dtype": args.dtype, "idle": nvml_state()}
    print(out["gpu"], out["idle"])
    out["harness"] = []
    for i in range(5):  # the harness's own method, again and again on one machine
        c = measure_ceilings([args.dtype])
        out["harness"].append({"copy_gbps": round(c.copy_gbps, 1), "tflops": round(c.matmul_tflops[args.dtype], 1)})
        print(f"measure_ceilings #{i}: copy {c.copy_gbps:.0f} GB/s, matmul {c.matmul_tflops[args.dtype]:.1f} TFLOP/s")
    blocks = {}
    blocks["8192^3 x60 back to back"] = matmul_block(8192, 8192, 8192, dt, 60)
    time.sleep(2.0)
    blocks["8192^3 x8 after 2 s idle"] = matmul_block(8192, 8192, 8192, dt, 8)
    blocks["16384^3 x8"] = matmul_block(16384, 16384, 16384, dt, 8)
    blocks["4096^3 x60"] = matmul_block(4096, 4096, 4096, dt, 60)
    blocks["4096x16384x512 x60 (GEMM2 of V3 4096, one of k/v)"] = matmul_block(4096, 16384, 512, dt, 60)
    blocks["4096x512x7168 x60 (GEMM1 of V3 4096)"] = matmul_block(4096, 512, 7168, dt, 60)
    out["blocks"] = blocks
    for name, b in blocks.items():
        tf = b["tflops"]
        print(f"{name}: median {b['median']}, best {b['best']}, first 5 {tf[:5]}, last 5 {tf[-5:]}; {b['after']}")
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
