"""Time: kinds of measurement as separate pieces behind one interface, samples kept as data.

- GpuTime: device time of one call. A blocking kernel holds the stream while the host queues a
  batch of (L2 flush, start event, call, end event); released, the batch runs back to back, so the
  events bracket device work only, not the host's launch overhead (nvbench's cold measurement).
- CallLatency: host wall time per call, calls back to back, synchronized at the end of each sample:
  what a caller of the function feels, host overhead included.
`measure` drives either kind under a StoppingRule; `clock` is injectable so tests need no GPU.
"""
from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable
from typing import Protocol

import torch

from harness.stats import StoppingRule

log = logging.getLogger(__name__)

Call = Callable[[], object]  # one call of the timed function; the caller rotates input sets


class MeasurementKind(Protocol):
    name: str
    method: str

    def sample_batch(self, call: Call) -> list[float] | None:
        """Times of one batch of calls in microseconds, or None if the batch is invalid."""


@dataclasses.dataclass(frozen=True)
class Measurement:
    kind: str
    method: str
    samples_us: tuple[float, ...]
    invalid_batches: int
    elapsed_s: float


class L2Flush:
    """Evict the L2 before a cold sample by streaming a buffer twice its size through it.

    "read" (default) sums the buffer, leaving only clean lines behind; "write" zeroes it (triton's
    do_bench, nvbench), which leaves the L2 full of dirty lines whose write-back then overlaps the
    timed call and adds microseconds to a small kernel's time.
    """

    def __init__(self, mode: str = "read", nbytes: int | None = None, device: str = "cuda"):
        if nbytes is None:
            nbytes = 2 * torch.cuda.get_device_properties(torch.cuda.current_device()).L2_cache_size
        self.mode = mode
        self.nbytes = nbytes
        self.buffer = torch.ones(nbytes // 4, dtype=torch.int32, device=device)

    def __call__(self) -> None:
        if self.mode == "write":
            self.buffer.zero_()
        else:
            self.buffer.sum(dtype=torch.int64)  # the result is not needed, only the pass over memory


class GpuTime:
    name = "gpu"

    def __init__(self, blocker, flush: L2Flush | None, batch: int = 16, timeout_s: float = 1.0):
        self.blocker = blocker          # the timing_kernels extension (hold/release/timed_out)
        self.handle = blocker.blocker_create()
        self.flush = flush
        self.batch = batch
        self.timeout_s = timeout_s
        self.blocked = True             # falls back to plain events if even one call cannot be blocked
        self.events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                       for _ in range(batch)]

    @property
    def method(self) -> str:
        return ("blocked-events" if self.blocked else "events") + (f"+flush-{self.flush.mode}" if self.flush else "")

    def warm_up(self, call: Call) -> None:
        """One unblocked batch: kernels load lazily on first launch, which can wait on the device and
        so deadlock behind the blocking kernel."""
        blocked, self.blocked = self.blocked, False
        self.sample_batch(call)
        self.blocked = blocked

    def sample_batch(self, call: Call) -> list[float] | None:
        n = self.batch
        if self.blocked:
            self.blocker.blocker_hold(self.handle, self.timeout_s)
        for j in range(n):
            if self.flush:
                self.flush()
            start, end = self.events[j]
            start.record()
            call()
            end.record()
        if self.blocked:
            self.blocker.blocker_release(self.handle)
        self.events[n - 1][1].synchronize()
        if self.blocked and self.blocker.blocker_timed_out(self.handle):
            self._shrink()
            return None
        return [s.elapsed_time(e) * 1e3 for s, e in self.events[:n]]

    def _shrink(self) -> None:
        """A timed-out blocker means the queue filled or a call synchronized: queue fewer calls."""
        if self.batch > 1:
            self.batch //= 2
        else:
            log.warning("a call cannot run behind the blocking kernel (it synchronizes?): plain events")
            self.blocked = False

    def close(self) -> None:
        torch.cuda.synchronize()
        self.blocker.blocker_destroy(self.handle)


class CallLatency:
    name = "call"
    method = "wall-clock"

    def __init__(self, calls_per_sample: int = 1, clock: Callable[[], float] = time.perf_counter):
        self.calls_per_sample = calls_per_sample
        self.clock = clock

    def sample_batch(self, call: Call) -> list[float] | None:
        k = self.calls_per_sample
        torch.cuda.synchronize()
        t0 = self.clock()
        for j in range(k):
            call()
        torch.cuda.synchronize()
        return [(self.clock() - t0) / k * 1e6]


def calls_per_sample(call: Call, target_s: float = 5e-4, limit: int = 64) -> int:
    """Enough back-to-back calls that one sample lasts about target_s (sync cost amortized)."""
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(3):
        call()
    torch.cuda.synchronize()
    per_call = (time.perf_counter() - t0) / 3
    return max(1, min(limit, int(target_s / max(per_call, 1e-9))))


def warm_up(call: Call, min_calls: int = 5, min_time_s: float = 0.05) -> None:
    """Module load, handle creation, autotuning and allocator growth stay out of the numbers."""
    t0 = time.perf_counter()
    i = 0
    while i < min_calls or time.perf_counter() - t0 < min_time_s:
        call()
        i += 1
        if i >= 10000:
            break
    torch.cuda.synchronize()


def measure(kind: MeasurementKind, call: Call, rule: StoppingRule,
            clock: Callable[[], float] = time.perf_counter, max_invalid: int = 8) -> Measurement:
    samples: list[float] = []
    invalid = 0
    t0 = clock()
    while not samples or not rule.should_stop(samples, clock() - t0):  # at least one valid batch
        batch = kind.sample_batch(call)
        if batch is None:
            invalid += 1
            if invalid >= max_invalid:
                break
            continue
        samples.extend(batch)
    return Measurement(kind=kind.name, method=kind.method, samples_us=tuple(samples),
                       invalid_batches=invalid, elapsed_s=clock() - t0)
