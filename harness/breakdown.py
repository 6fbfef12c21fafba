"""Per-kernel breakdown of one call: which kernels (and copies, memsets) a call launches, how many, and the
device time of each, through torch.profiler (CUPTI); no other dependency.

Apart from the timed samples: once a device's targets are checked and timed, their workers have exited, and
their correct rows are profiled by one process of its own (`serve`, started by runner.profile_targets on that
device; the profiler's start-up, seconds, is paid once per device). A profiler session leaves CUPTI attached
to the process that ran it (host overhead on every later launch), so it never shares a process with timing.
Each row: the call is prepared and warmed up as for timing, then PROFILED_CALLS calls are recorded, each with
a synchronize after it inside one record_function range (the row's L2 flush, when the cache mode is cold, runs
before the range). A device activity belongs to the call whose range holds the host-side launch it correlates
with (its CUPTI correlation id), or, lacking one, the range that holds its device start time (the call's work
ends before its range does); activities outside every range (the flush) are dropped. Per kernel name: launches
per call and device time per call (the median over the calls), with the first launch's grid, block, registers
and shared memory, and its theoretical occupancy. Per call also the device's busy time: the union of its
activities' intervals. Launches can overlap (a programmatic dependent launch starts while the kernel before it
runs, and waits inside for it), and then each kernel's time includes that wait, so the per-kernel times sum to more
than the device was busy; the busy time does not.

The records and the trace parsing need no torch (result-file readers use them); profiling imports it.
"""
from __future__ import annotations

import bisect
import dataclasses
import json
import logging
import statistics
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path

from harness import occupancy, phases
from harness.shapes import Shape

log = logging.getLogger(__name__)

PROFILED_CALLS = 5
RANGE_PREFIX = "kvbench.call."
DEVICE_CATEGORIES = {"kernel": "kernel", "gpu_memcpy": "memcpy", "gpu_memset": "memset"}
LAUNCH_CATEGORIES = ("cuda_runtime", "cuda_driver")


@dataclasses.dataclass(frozen=True)
class Launch:
    """One device activity in a profiled call, from the trace."""
    name: str
    kind: str                             # kernel, memcpy, memset
    start_us: float
    device_us: float
    grid: tuple[int, ...] | None = None
    block: tuple[int, ...] | None = None
    registers: int | None = None
    smem: int | None = None               # static + dynamic shared memory per block, bytes


@dataclasses.dataclass(frozen=True)
class KernelTime:
    """One kernel (by name) of a call."""
    name: str
    kind: str
    count: int                            # launches per call
    device_us: float                      # device time per call, all its launches (median over the calls)
    grid: tuple[int, ...] | None = None   # of its first launch
    block: tuple[int, ...] | None = None
    registers: int | None = None
    smem: int | None = None
    occupancy: float | None = None        # theoretical, of its first launch


@dataclasses.dataclass(frozen=True)
class Breakdown:
    variant: str
    shape: Shape
    dtype: str
    kernels: tuple[KernelTime, ...]
    calls: int                            # how many calls were profiled
    note: str = ""                        # why it is empty, or that calls differed
    busy_us: float | None = None          # device busy time per call: the union of its launches (median)
    # how much a call's summed launch times over-count its busy time (launches that overlap), median over the calls;
    # 0 if unknown. Per call, not device_us - busy_us: a sum of per-kernel medians is not a median of sums.
    overlap_us: float = 0.0

    @property
    def launches(self) -> int:
        return sum(k.count for k in self.kernels)

    @property
    def device_us(self) -> float:
        return sum(k.device_us for k in self.kernels)

    def key(self) -> tuple:
        return (self.shape, self.dtype, self.variant)


NOT_PROFILED = "not profiled: "  # a breakdown's note when profiling the call raised; the exception follows


def failed(b: Breakdown) -> bool:
    """The call raised while it was profiled (no call recorded): the variant fails under the profiler."""
    return b.calls == 0 and b.note.startswith(NOT_PROFILED)


# ---- the trace ----------------------------------------------------------------------------------------

def _dims(value) -> tuple[int, ...] | None:
    return tuple(int(v) for v in value) if isinstance(value, list) else None


def _int(value) -> int | None:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def parse_trace(trace: dict, calls: int) -> list[list[Launch]]:
    """The device activities of each profiled call, in start order, from a chrome trace (export_chrome_trace)."""
    events = trace.get("traceEvents", [])
    ranges = sorted((float(e["ts"]), float(e["ts"]) + float(e.get("dur", 0)), int(e["name"][len(RANGE_PREFIX):]))
                    for e in events if e.get("cat") == "user_annotation"
                    and str(e.get("name", "")).startswith(RANGE_PREFIX))
    starts = [r[0] for r in ranges]

    def call_of(ts: float) -> int | None:
        i = bisect.bisect_right(starts, ts) - 1
        return ranges[i][2] if i >= 0 and ts <= ranges[i][1] else None

    launched_at = {e["args"]["correlation"]: float(e["ts"]) for e in events
                   if e.get("cat") in LAUNCH_CATEGORIES and "correlation" in e.get("args", {})}
    per_call: list[list[Launch]] = [[] for _ in range(calls)]
    for e in events:
        kind = DEVICE_CATEGORIES.get(e.get("cat"))
        if kind is None:
            continue
        args = e.get("args", {})
        host_ts = launched_at.get(args.get("correlation"))
        # Without its launch record (a launch API the profiler does not trace), the device start time decides.
        index = call_of(host_ts if host_ts is not None else float(e["ts"]))
        if index is None or not 0 <= index < calls:
            continue
        per_call[index].append(Launch(
            name=str(e.get("name", "?")), kind=kind, start_us=float(e["ts"]), device_us=float(e.get("dur", 0.0)),
            grid=_dims(args.get("grid")), block=_dims(args.get("block")),
            registers=_int(args.get("registers per thread")), smem=_int(args.get("shared memory"))))
    return [sorted(launches, key=lambda launch: launch.start_us) for launches in per_call]


def aggregate(per_call: list[list[Launch]], limits: occupancy.SmLimits | None = None) -> tuple[tuple[KernelTime, ...], str]:
    """Per kernel name, in order of first appearance: launches and device time per call (medians over calls)."""
    per_call = [c for c in per_call if c] or per_call
    first: dict[tuple[str, str], Launch] = {}
    for launches in per_call:
        for launch in launches:
            first.setdefault((launch.name, launch.kind), launch)
    signatures = {tuple((launch.name, launch.kind) for launch in launches) for launches in per_call}
    note = "" if len(signatures) <= 1 else f"the launches differed between the {len(per_call)} profiled calls"
    kernels = []
    for (name, kind), launch in first.items():
        counts = [sum(1 for x in launches if (x.name, x.kind) == (name, kind)) for launches in per_call]
        times = [sum(x.device_us for x in launches if (x.name, x.kind) == (name, kind)) for launches in per_call]
        occupied = None
        if kind == "kernel" and launch.block and launch.registers is not None and launch.smem is not None:
            threads = launch.block[0] * launch.block[1] * launch.block[2]
            occupied = occupancy.occupancy(limits, threads, launch.registers, launch.smem)
        kernels.append(KernelTime(name, kind, int(round(statistics.median(counts))), statistics.median(times),
                                  launch.grid, launch.block, launch.registers, launch.smem, occupied))
    return tuple(kernels), note


def busy_us(launches: list[Launch]) -> float:
    """The time the device spent on at least one of `launches`: the length of the union of their intervals."""
    total, end = 0.0, None
    for launch in sorted(launches, key=lambda x: x.start_us):
        stop = launch.start_us + launch.device_us
        if end is None or launch.start_us >= end:
            total += launch.device_us
            end = stop
        elif stop > end:
            total += stop - end
            end = stop
    return total


def busy_and_overlap(per_call: list[list[Launch]]) -> tuple[float | None, float | None]:
    """Over the calls that launched anything, the medians of each call's busy time and of its overlap (its
    launches' summed times less their union); (None, None) if none did."""
    calls = [launches for launches in per_call if launches]
    if not calls:
        return None, None
    busy = [busy_us(launches) for launches in calls]
    overlap = [max(0.0, sum(x.device_us for x in launches) - b) for launches, b in zip(calls, busy)]
    return statistics.median(busy), statistics.median(overlap)


# ---- profiling (GPU) ----------------------------------------------------------------------------------

def profile_calls(call: Callable[[], object], flush: Callable[[], None] | None, calls: int = PROFILED_CALLS) -> dict:
    """Record `calls` calls under torch.profiler; the chrome trace as a dict."""
    import torch
    from torch.profiler import ProfilerActivity, profile, record_function

    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for i in range(calls):
            if flush is not None:
                flush()
            torch.cuda.synchronize()
            with record_function(f"{RANGE_PREFIX}{i}"):
                call()
                torch.cuda.synchronize()  # inside: the call's device work ends within its range
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "trace.json"
        prof.export_chrome_trace(str(path))
        return json.loads(path.read_text())


def profile_task(target, task, settings, flush, limits) -> Breakdown:
    from harness import baselines, timing
    from harness.problem import DTYPES, make_inputs
    from harness.worker import Rotation

    who = f"profile {target.name}"
    t = time.perf_counter()
    sets = [make_inputs(task.shape, DTYPES[task.dtype], seed=settings.seed + 1000 + i) for i in range(2)]
    t = phases.mark(who, "inputs", t)
    forward, _ = baselines.prepare(target, task.shape, sets[0])
    t = phases.mark(who, "prepare", t)
    rotation = Rotation(forward, sets)
    timing.warm_up(rotation)
    t = phases.mark(who, "warm_up", t)
    trace = profile_calls(rotation, flush)
    t = phases.mark(who, "session", t)
    per_call = parse_trace(trace, PROFILED_CALLS)
    phases.mark(who, "parse", t)
    kernels, note = aggregate(per_call, limits)
    if not kernels:
        note = note or "the profiler recorded no device activity"
    busy, overlap = busy_and_overlap(per_call)
    return Breakdown(target.name, task.shape, task.dtype, kernels, PROFILED_CALLS, note, busy, overlap or 0.0)


def serve(jobs, settings, queue) -> None:
    """Profiling process entry point (runner.profile_targets starts it) for `jobs`, a list of (target, tasks):
    ("ready"), then ("start", (target name, task)) and ("breakdown", Breakdown) per task, then ("done")."""
    import sys

    import torch

    from harness import timing
    from harness.worker import _exit_now, _one_line, context_broken, exact_float32

    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    # torch 2.11 warns at every session that it keeps only the current cycle's events: one session is one
    # row here, so the warning (a line per row in every run's log) says nothing.
    warnings.filterwarnings("ignore", message=".*Profiler clears events at the end of each cycle",
                            category=UserWarning)
    t = time.perf_counter()
    torch.cuda.init()
    stream = torch.cuda.Stream()
    limits = occupancy.limits_for(*torch.cuda.get_device_capability())
    phases.mark("profile", "cuda_init", t)
    queue.put(("ready", None))
    with exact_float32(), torch.cuda.stream(stream):
        flush = timing.L2Flush(settings.cache.flush) if settings.cache.flush else None
        for target, tasks in jobs:
            for task in tasks:
                queue.put(("start", (target.name, task)))
                try:
                    result = profile_task(target, task, settings, flush, limits)
                except Exception as exc:
                    if context_broken():
                        _exit_now(queue, 3)
                    result = Breakdown(target.name, task.shape, task.dtype, (), 0,
                                       f"{NOT_PROFILED}{_one_line(exc)}")
                queue.put(("breakdown", result))
    queue.put(("done", None))
    _exit_now(queue, 0)


def warm_profiler() -> None:
    """One profiler session with no work in it: CUPTI's and the profiler's set-up (≈ 5 s on the H200, the
    first row's cost otherwise) is host work in this process, so it can run while the device's rows run in
    other processes. Nothing without a GPU."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    if not torch.cuda.is_available():
        return
    t = time.perf_counter()
    torch.cuda.init()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # an empty session's "no events" notes
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]):
            pass
    phases.mark("profile", "warm_profiler", t)


def serve_ahead(ceilings, dtypes, warm, profile, settings, inbox, queue) -> None:
    """A device's profiling process started before its rows (runner.run_share): it measures the device's
    ceilings first with `ceilings(dtypes, queue)` if `dtypes` (the GPU is still idle: the rows wait for them),
    then runs `warm()` while the rows run (host work: the profiler's set-up), then waits for its jobs on
    `inbox` and profiles them with `profile(jobs, settings, queue)` (serve). None on `inbox`: nothing to
    profile, it exits."""
    if dtypes:
        ceilings(dtypes, queue)
    warm()
    queue.put(("warm", None))
    jobs = inbox.get()
    if jobs is not None:
        profile(jobs, settings, queue)
    from harness.worker import _exit_now
    _exit_now(queue, 0)


# ---- the result file's form -----------------------------------------------------------------------------

def to_dict(b: Breakdown) -> dict:
    busy = {} if b.busy_us is None else {"busy_us": round(b.busy_us, 3), "overlap_us": round(b.overlap_us, 3)}
    return {"launches": b.launches, "device_us": round(b.device_us, 3), **busy, "calls": b.calls, "note": b.note,
            "list": [{**dataclasses.asdict(k), "device_us": round(k.device_us, 3),
                      "occupancy": None if k.occupancy is None else round(k.occupancy, 3)} for k in b.kernels]}


def from_dict(variant: str, shape: Shape, dtype: str, entry: dict) -> Breakdown:
    kernels = tuple(KernelTime(name=str(k["name"]), kind=str(k.get("kind", "kernel")), count=int(k["count"]),
                               device_us=float(k["device_us"]), grid=_tuple(k.get("grid")),
                               block=_tuple(k.get("block")), registers=k.get("registers"), smem=k.get("smem"),
                               occupancy=k.get("occupancy")) for k in entry.get("list") or ())
    busy = entry.get("busy_us")  # absent in files written before it was recorded
    overlap = entry.get("overlap_us")  # absent before it was stored: then the summed medians less the busy time
    if overlap is None:
        overlap = 0.0 if busy is None else max(0.0, sum(k.device_us for k in kernels) - float(busy))
    return Breakdown(variant, shape, dtype, kernels, int(entry.get("calls") or 0), str(entry.get("note") or ""),
                     None if busy is None else float(busy), float(overlap))


def _tuple(value):
    return tuple(value) if isinstance(value, (list, tuple)) else None
