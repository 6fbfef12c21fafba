"""The plain records passed between stages: what to run (Target, Task) and what came out (Row)."""
from __future__ import annotations

import dataclasses

from harness.check import ErrorStats
from harness.problem import Shape
from harness.stats import Summary

# Statuses a row can end with. `ok`, `unsupported` and `not-run` are not failures.
OK = "ok"
UNSUPPORTED = "unsupported"     # the variant's header does not list this dtype
NOT_RUN = "not-run"             # no CUDA device, or the run was interrupted first
BUILD_FAILED = "build-failed"   # compile, link or import error (no forward, wrong signature)
BAD_HEADER = "bad-header"       # malformed `// key: value` header
REJECTED = "rejected"           # the variant raised an error for these inputs (e.g. a TORCH_CHECK limit)
CRASHED = "crashed"             # a CUDA fault or the worker process died
TIMED_OUT = "timed-out"         # the worker did not answer within the row timeout
NOT_FAILURES = frozenset({OK, UNSUPPORTED, NOT_RUN})

KERNEL, BASELINE, FLOOR = "kernel", "baseline", "floor"


@dataclasses.dataclass(frozen=True)
class Target:
    """Something to run: a built kernel variant, a torch baseline, or the empty-kernel floor."""
    name: str
    kind: str
    dtypes: tuple[str, ...]
    so_path: str = ""
    module_name: str = ""


@dataclasses.dataclass(frozen=True)
class Task:
    shape: Shape
    dtype: str


@dataclasses.dataclass(frozen=True)
class Clocks:
    sm_mhz_median: float
    sm_mhz_min: float
    sm_mhz_max_supported: float

    @property
    def throttled(self) -> bool:
        return self.sm_mhz_median < 0.85 * self.sm_mhz_max_supported


@dataclasses.dataclass(frozen=True)
class Timing:
    summary: Summary
    method: str
    samples_us: tuple[float, ...]
    invalid_batches: int = 0


@dataclasses.dataclass(frozen=True)
class Row:
    variant: str
    kind: str
    shape: Shape
    dtype: str
    status: str
    message: str = ""
    error: ErrorStats | None = None
    gpu: Timing | None = None
    call: Timing | None = None
    clocks: Clocks | None = None
    compile_s: float | None = None

    @property
    def failed(self) -> bool:
        return self.status not in NOT_FAILURES

    def key(self) -> tuple:
        return (self.shape, self.dtype, self.variant)
