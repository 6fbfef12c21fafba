"""Report: rows -> the result file's dict (speedups, roofline, flags). Reporting never measures;
rendering the dict as a table is harness/render.py's."""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from harness import axes, breakdown, resources
from harness.records import CacheMode, Kind, Row, Status, Timing
from harness.resultfile import SCHEMA
from harness.roofline import SUSPECT_BELOW, Ceilings, roofline

NOISE_FLAG, THROTTLE_FLAG, FLOOR_FLAG, UNBLOCKED_FLAG = "noisy", "throttled", "below-floor", "unblocked"


def _round(x: float | None, digits: int = 4) -> float | None:
    if x is None or not math.isfinite(x):
        return None if x is None else str(x)
    return float(f"{x:.{digits}g}")


def _timing_dict(t: Timing | None) -> dict | None:
    if t is None:
        return None
    s = t.summary
    return {"median": _round(s.median), "iqr": _round(s.iqr), "n": s.n, "rel_se": _round(s.rel_se, 3),
            "noisy": s.noisy, "rounds": [_round(r) for r in s.rounds], "spread": _round(s.spread, 3),
            "method": t.method, "invalid_batches": t.invalid_batches, "percentiles": _percentiles(t.samples_us)}


def _percentiles(samples) -> dict:
    """The sample distribution in a few numbers (raw samples would swamp a committed file)."""
    qs = np.percentile(samples, [0, 5, 25, 50, 75, 95, 100])
    return {name: _round(float(q)) for name, q in zip(("min", "p5", "p25", "p50", "p75", "p95", "max"), qs)}


def _ratio(base: Timing | None, mine: Timing | None) -> float | None:
    if base is None or mine is None or mine.summary.median <= 0:
        return None
    return base.summary.median / mine.summary.median


def _speedups(row: Row, by_key: dict) -> dict:
    out = {}
    for ref_name in ("eager", "compile"):
        ref = by_key.get((row.shape, row.dtype, ref_name))
        ok = ref is not None and ref.status == Status.OK and row.status == Status.OK
        out[f"vs_{ref_name}"] = {"gpu": _round(_ratio(ref.gpu, row.gpu), 3) if ok else None,
                                 "call": _round(_ratio(ref.call, row.call), 3) if ok else None}
    return out


def flags(row: Row, roof, cache: CacheMode) -> list[str]:
    out = []
    if any(t is not None and t.summary.noisy for t in (row.gpu, row.call)):
        out.append(NOISE_FLAG)
    if row.clocks is not None and row.clocks.throttled:
        out.append(THROTTLE_FLAG)
    if cache != CacheMode.HOT and roof.x_floor is not None and roof.x_floor < SUSPECT_BELOW:
        out.append(FLOOR_FLAG)
    if row.gpu is not None and not row.gpu.method.startswith("blocked"):
        out.append(UNBLOCKED_FLAG)
    return out


def row_dict(row: Row, by_key: dict, ceilings: Ceilings | None, cache: CacheMode, build: str | None = None,
             kernels: breakdown.Breakdown | None = None) -> dict:
    # The floor row launches an empty kernel: the operation's bytes and FLOPs say nothing about it.
    timed = row.gpu.summary.median if row.gpu and row.kind != Kind.FLOOR else None
    roof = roofline(row.shape, row.dtype, timed, ceilings)
    return {
        "variant": row.variant, "kind": row.kind,
        "axes": axes.split_row_name(row.variant)[1] or None,  # NAME[BM=64]: {"BM": "64"}
        "build": build,  # <name>_<hash of source, flags, arch, torch>: which code produced the row
        "shape": {"name": row.shape.name, **row.shape.dims()}, "dtype": row.dtype,
        "status": row.status, "message": row.message,
        "error": {"max_abs": _round(row.error.max_abs, 3), "rel": _round(row.error.rel, 3)} if row.error else
                 {"max_abs": None, "rel": None},
        "gpu_us": _timing_dict(row.gpu), "call_us": _timing_dict(row.call),
        "speedup": _speedups(row, by_key),
        "roofline": {"bytes": roof.bytes, "flops": roof.flops, "floor_us": _round(roof.floor_us),
                     "gbps": _round(roof.gbps), "tflops": _round(roof.tflops), "x_floor": _round(roof.x_floor, 3)},
        "clocks": dataclasses.asdict(row.clocks) if row.clocks else None,
        "compile_s": _round(row.compile_s, 3),
        "flags": flags(row, roof, cache),
        "kernels": breakdown.to_dict(kernels) if kernels else None,  # per-kernel breakdown of one call
    }


def result_dict(rows: list[Row], env: dict, settings: dict, ceilings: Ceilings | None, complete: bool,
                builds: dict[str, str] | None = None, breakdowns: dict | None = None,
                variant_resources: dict[str, resources.VariantResources] | None = None) -> dict:
    """`breakdowns`: (shape, dtype, variant) -> Breakdown; `variant_resources`: variant -> VariantResources."""
    by_key = {r.key(): r for r in rows}
    ordered = sorted(rows, key=_order)
    builds, breakdowns = builds or {}, breakdowns or {}
    return {"schema": SCHEMA, "complete": complete, "env": env, "settings": settings,
            "ceilings": dataclasses.asdict(ceilings) if ceilings else None,
            "resources": {name: resources.to_dict(entry) for name, entry in sorted((variant_resources or {}).items())},
            "rows": [row_dict(r, by_key, ceilings, CacheMode(settings.get("cache", CacheMode.COLD_READ)),
                              builds.get(r.variant), breakdowns.get(r.key()))
                     for r in ordered]}


_KIND_ORDER = {"floor": 0, "baseline": 1, "kernel": 2}
_BASELINE_ORDER = {"eager": 0, "compile": 1, "torch-2gemm": 2}


def _order(row: Row):
    return (row.shape.tokens * row.shape.d, row.shape.label(), row.dtype, _KIND_ORDER.get(row.kind, 3),
            _BASELINE_ORDER.get(row.variant, 9), row.variant)
