"""Report: rows -> the result file's dict (speedups, roofline, flags). Reporting never measures;
rendering the dict as a table is harness/render.py's."""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping

import numpy as np

from harness import axes, breakdown, resources
from harness.records import (BUILTIN_ROWS, FLOOR_ROW, POWER_FLAG, REFERENCE_ROW, CacheMode, Device, Kind, Row, Status,
                             Timing, table_order)
from harness.resultfile import SCHEMA
from harness.roofline import SUSPECT_BELOW, Ceilings, roofline

NOISE_FLAG, THROTTLE_FLAG, FLOOR_FLAG, UNBLOCKED_FLAG = "noisy", "throttled", "below-floor", "unblocked"
GRAPH_UNCHECKED_FLAG = "graph-unchecked"  # the call refused CUDA graph capture, so that check did not run
# The call raised under torch.profiler (CUPTI tracing on) when the breakdown profiled it: a failure of the variant's
# that the timed and checked calls did not meet (its reason is the breakdown's note in the result file).
PROFILE_FAILED_FLAG = "profile-failed"
# A call that launches a kernel cannot take less GPU time than an empty kernel's launch in the same run;
# 0.9 leaves room for the two medians' noise (a tiny real kernel sits just above the empty one).
BELOW_LAUNCH = 0.9
SPEEDUP_REFERENCES = (REFERENCE_ROW, "compile")


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
            "method": t.method, "invalid_batches": t.invalid_batches, "percentiles": _percentiles(t.samples_us),
            "calls_per_sample": t.calls_per_sample}


def _percentiles(samples) -> dict:
    """The sample distribution in a few numbers (raw samples would swamp a committed file)."""
    qs = np.percentile(samples, [0, 5, 25, 50, 75, 95, 100])
    return {name: _round(float(q)) for name, q in zip(("min", "p5", "p25", "p50", "p75", "p95", "max"), qs)}


def _ratio(base: Timing | None, mine: Timing | None) -> float | None:
    if base is None or mine is None or mine.summary.median <= 0:
        return None
    return base.summary.median / mine.summary.median


def _ok(row: Row | None) -> bool:
    return row is not None and row.status == Status.OK


def _speedup(ref: Row | None, row: Row) -> dict:
    ok = _ok(ref) and _ok(row)
    return {"gpu": _round(_ratio(ref.gpu, row.gpu), 3) if ok else None,
            "call": _round(_ratio(ref.call, row.call), 3) if ok else None}


def torch_best(row: Row, by_key: dict) -> dict[str, Row | None]:
    """Per metric, the fastest ok torch row of the same shape and dtype: the best a torch user gets
    without writing a kernel (eager, in a CUDA graph, compiled, or rewritten)."""
    torch_rows = [r for name in BUILTIN_ROWS if (r := by_key.get((row.shape, row.dtype, name))) is not None
                  and r.kind == Kind.BASELINE and _ok(r)]
    best = {}
    for metric in ("gpu", "call"):
        timed = [r for r in torch_rows if getattr(r, metric) is not None]
        best[metric] = min(timed, key=lambda r: getattr(r, metric).summary.median, default=None)
    return best


def _speedups(row: Row, by_key: dict) -> dict:
    out = {f"vs_{name}": _speedup(by_key.get((row.shape, row.dtype, name)), row) for name in SPEEDUP_REFERENCES}
    best = torch_best(row, by_key)
    out["vs_torch_best"] = {metric: _speedup(best[metric], row)[metric] for metric in ("gpu", "call")}
    return out


def below_launch(row: Row, by_key: dict) -> bool:
    """GPU time under the same run's empty-kernel launch: such a call launched nothing."""
    floor = by_key.get((row.shape, row.dtype, FLOOR_ROW))
    if row.kind == Kind.FLOOR or row.gpu is None or not _ok(floor) or floor.gpu is None:
        return False
    return row.gpu.summary.median < BELOW_LAUNCH * floor.gpu.summary.median


def flags(row: Row, roof, cache: CacheMode, by_key: dict | None = None,
          kernels: breakdown.Breakdown | None = None) -> list[str]:
    out = []
    if any(t is not None and t.summary.noisy for t in (row.gpu, row.call)):
        out.append(NOISE_FLAG)
    if row.clocks is not None and row.clocks.throttled:
        out.append(THROTTLE_FLAG)
    if row.clocks is not None and row.clocks.power_capped:
        out.append(POWER_FLAG)
    under_roofline = cache != CacheMode.HOT and roof.x_floor is not None and roof.x_floor < SUSPECT_BELOW
    if under_roofline or below_launch(row, by_key or {}):
        out.append(FLOOR_FLAG)
    if row.gpu is not None and not row.gpu.method.startswith("blocked"):
        out.append(UNBLOCKED_FLAG)
    if row.unchecked:
        out.append(GRAPH_UNCHECKED_FLAG)
    if kernels is not None and breakdown.failed(kernels):
        out.append(PROFILE_FAILED_FLAG)
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
        "gpu_us": _timing_dict(row.gpu), "gpu_warm_us": _timing_dict(row.gpu_warm), "call_us": _timing_dict(row.call),
        "speedup": _speedups(row, by_key),
        "torch_best": {metric: best.variant if best else None for metric, best in torch_best(row, by_key).items()},
        "roofline": {"bytes": roof.bytes, "flops": roof.flops, "floor_us": _round(roof.floor_us),
                     "gbps": _round(roof.gbps), "tflops": _round(roof.tflops), "x_floor": _round(roof.x_floor, 3)},
        "clocks": dataclasses.asdict(row.clocks) if row.clocks else None,
        "compile_s": _round(row.compile_s, 3),
        "unchecked": list(row.unchecked),
        "flags": flags(row, roof, cache, by_key, kernels),
        "device": {"index": row.device.index, "uuid": row.device.uuid} if row.device else None,
        "kernels": breakdown.to_dict(kernels) if kernels else None,  # per-kernel breakdown of one call
    }


def result_dict(rows: list[Row], env: dict, settings: dict, ceilings: Ceilings | None, complete: bool,
                builds: dict[str, str] | None = None, *,
                devices: Mapping[Device, Ceilings | None] | None = None, breakdowns: dict | None = None,
                variant_resources: Mapping[str, resources.VariantResources] | None = None) -> dict:
    """`devices`: each GPU the rows ran on, with the ceilings measured on it; a row that ran on one is held
    against that GPU's ceilings, other rows against `ceilings` (which older readers take as the run's).
    `breakdowns`: (shape, dtype, variant) -> Breakdown; `variant_resources`: variant -> VariantResources."""
    by_key = {r.key(): r for r in rows}
    ordered = sorted(rows, key=table_order)
    builds, devices, breakdowns = builds or {}, devices or {}, breakdowns or {}
    cache = CacheMode(settings.get("cache", CacheMode.COLD_READ))
    out = {"schema": SCHEMA, "complete": complete, "env": env, "settings": settings,
           "ceilings": dataclasses.asdict(ceilings) if ceilings else None}
    if devices:
        out["devices"] = [{"index": d.index, "uuid": d.uuid, "name": d.name, "host": env.get("host"),
                           "ceilings": dataclasses.asdict(c) if c else None}
                          for d, c in sorted(devices.items(), key=lambda item: item[0].index)]
    out["resources"] = {name: resources.to_dict(entry) for name, entry in sorted((variant_resources or {}).items())}
    out["rows"] = [row_dict(r, by_key, devices.get(r.device, ceilings) if r.device else ceilings, cache,
                            builds.get(r.variant), breakdowns.get(r.key())) for r in ordered]
    return out
