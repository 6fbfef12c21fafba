"""Floors: the device's copy bandwidth and matrix rates, and each row's time against them."""
from __future__ import annotations

import dataclasses
import datetime

import torch

from harness.problem import DTYPES
from harness.shapes import Shape, flops, min_bytes

SUSPECT_BELOW = 0.8  # a cold row under 0.8x its floor is faster than physics allows: flag it


@dataclasses.dataclass(frozen=True)
class Ceilings:
    copy_gbps: float                       # device-to-device copy, bytes read + written
    matmul_tflops: dict[str, float]        # large square matmul per dtype (float32 without TF32)
    date: str


def _median_ms(fn, reps: int = 10) -> float:
    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return sorted(times)[len(times) // 2]


def _copy_ms(nbytes: int) -> float:
    src = torch.empty(nbytes, dtype=torch.uint8, device="cuda").random_()
    dst = torch.empty_like(src)
    return _median_ms(lambda: dst.copy_(src))


def measure_ceilings(dtypes: list[str], copy_bytes: int = 1 << 30, n: int = 8192) -> Ceilings:
    copy_ms = _copy_ms(copy_bytes)
    rates = {}
    for name in dtypes:
        a = torch.randn(n, n, device="cuda").to(DTYPES[name])  # random data: zeros run faster
        b = torch.randn(n, n, device="cuda").to(DTYPES[name])
        ms = _median_ms(lambda: a @ b, reps=5)
        rates[name] = 2 * n**3 / (ms * 1e-3) / 1e12
    return Ceilings(copy_gbps=2 * copy_bytes / (copy_ms * 1e-3) / 1e9, matmul_tflops=rates,
                    date=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"))


@dataclasses.dataclass(frozen=True)
class Roofline:
    bytes: int
    flops: int
    floor_us: float | None
    gbps: float | None
    tflops: float | None
    x_floor: float | None


def roofline(shape: Shape, dtype: str, gpu_us: float | None, ceilings: Ceilings | None) -> Roofline:
    nbytes, nflops = min_bytes(shape, dtype), flops(shape)
    floor_us = None
    if ceilings is not None and dtype in ceilings.matmul_tflops:
        floor_us = max(nbytes / (ceilings.copy_gbps * 1e3), nflops / (ceilings.matmul_tflops[dtype] * 1e6))
    if not gpu_us:
        return Roofline(nbytes, nflops, floor_us, None, None, None)
    return Roofline(nbytes, nflops, floor_us, gbps=nbytes / gpu_us / 1e3, tflops=nflops / gpu_us / 1e6,
                    x_floor=gpu_us / floor_us if floor_us else None)
