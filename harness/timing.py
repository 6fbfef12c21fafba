"""Time: kinds of measurement as separate pieces behind one interface, samples kept as data.

- GpuTime: device time of one call. A blocking kernel holds the stream while the host queues a
  batch of (L2 flush, start event, call, end event); released, the batch runs back to back, so the
  events bracket device work only, not the host's launch overhead (nvbench's cold measurement).
  The blocker is what keeps the host out of the numbers when nothing else does: with the L2 kept warm
  (`--cache hot`) and a call whose host side is slower than its kernel. In the cold modes the flush
  before each call mostly keeps the GPU busy while the host queues the next call anyway.
- CallLatency: host wall time per call, calls back to back, synchronized at the end of each sample:
  what a caller of the function feels, host overhead included. Its L2 is warm (nothing flushes it
  between calls), and a sample is the mean of `calls_per_sample` calls.
`measure` drives either kind under a StoppingRule. The clock, the event type and the synchronize function
are injectable, so tests run the loops with no GPU; their defaults are bound when this module is imported,
before any variant is, so a variant that rebinds them later does not change what is measured here.
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
_perf_counter, _synchronize_device = time.perf_counter, torch.cuda.synchronize  # bound before any variant


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

    def __init__(self, blocker, flush: L2Flush | None, batch: int = 16, timeout_s: float = 1.0,
                 event_type=torch.cuda.Event):
        self.blocker = blocker          # the timing_kernels extension (hold/release/timed_out)
        self.handle = blocker.blocker_create()
        self.flush = flush
        self.batch = batch
        self.timeout_s = timeout_s
        self.blocked = True             # falls back to plain events if even one call cannot be blocked
        # The event methods as they are now: a later rebinding of the class's attributes is not used.
        self._record, self._elapsed_ms = event_type.record, event_type.elapsed_time
        self._synchronize = event_type.synchronize
        self.events = [(event_type(enable_timing=True), event_type(enable_timing=True)) for _ in range(batch)]

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
            self._record(start)
            call()
            self._record(end)
        if self.blocked:
            self.blocker.blocker_release(self.handle)
        self._synchronize(self.events[n - 1][1])
        if self.blocked and self.blocker.blocker_timed_out(self.handle):
            self._shrink()
            return None
        return [self._elapsed_ms(s, e) * 1e3 for s, e in self.events[:n]]

    def _shrink(self) -> None:
        """A timed-out blocker means the queue filled or a call synchronized: queue fewer calls."""
        if self.batch > 1:
            self.batch //= 2
        else:
            log.warning("a call cannot run behind the blocking kernel (it synchronizes?): plain events")
            self.blocked = False

    def close(self) -> None:
        _synchronize_device()
        self.blocker.blocker_destroy(self.handle)


class CallLatency:
    name = "call"
    method = "wall-clock"

    def __init__(self, calls_per_sample: int = 1, clock: Callable[[], float] = time.perf_counter,
                 synchronize: Callable[[], None] = torch.cuda.synchronize):
        self.calls_per_sample = calls_per_sample
        self.clock = clock
        self.synchronize = synchronize

    def sample_batch(self, call: Call) -> list[float] | None:
        k = self.calls_per_sample
        self.synchronize()
        t0 = self.clock()
        for j in range(k):
            call()
        self.synchronize()
        return [(self.clock() - t0) / k * 1e6]


def calls_per_sample(call: Call, target_s: float = 5e-4, limit: int = 64) -> int:
    """Enough back-to-back calls that one sample lasts about target_s (sync cost amortized)."""
    _synchronize_device()
    t0 = _perf_counter()
    for _ in range(3):
        call()
    _synchronize_device()
    per_call = (_perf_counter() - t0) / 3
    return max(1, min(limit, int(target_s / max(per_call, 1e-9))))


def warm_up(call: Call, min_calls: int = 5, min_time_s: float = 0.05) -> None:
    """Module load, handle creation, autotuning and allocator growth stay out of the numbers."""
    t0 = _perf_counter()
    i = 0
    while i < min_calls or _perf_counter() - t0 < min_time_s:
        call()
        i += 1
        if i >= 10000:
            break
    _synchronize_device()


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
