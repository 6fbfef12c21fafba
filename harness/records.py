"""The plain records passed between stages: what to run (Target, Task, Settings), what a check found
(CheckResult) and what came out (Row), with the one set of statuses a row can end with. No torch here."""
from __future__ import annotations

import dataclasses
from enum import StrEnum

from harness.shapes import Shape
from harness.stats import StoppingRule, Summary


class Status(StrEnum):
    """How a row ended. `ok`, `unsupported` and `not-run` are not failures."""
    OK = "ok"
    UNSUPPORTED = "unsupported"     # the variant's header does not list this dtype
    NOT_RUN = "not-run"             # no CUDA device, or the run was interrupted first
    # decided by the check, by behaviour (harness/check.py says how)
    WRONG = "wrong"                 # outside tolerance, or a constant output
    NAN = "nan"                     # NaN or Inf that the variant computed
    UNWRITTEN = "unwritten"         # output elements never written
    BAD_OUTPUT = "bad-output"       # not a tensor, or wrong shape, dtype, device, layout
    WROTE_INPUT = "wrote-input"     # an input changed during the call
    STALE_OUTPUT = "stale-output"   # right for earlier inputs, not these (a cached output)
    OTHER_STREAM = "other-stream"   # the work is not on the caller's current stream
    TAMPERED = "tampered"           # the row changed what the timing relies on (rebound a function, L2 persistence)
    # decided by the runner, the worker or the build
    REJECTED = "rejected"           # the variant raised an error for these inputs (e.g. a TORCH_CHECK limit)
    CRASHED = "crashed"             # a CUDA fault or the worker process died
    TIMED_OUT = "timed-out"         # the worker did not answer within the row timeout
    BUILD_FAILED = "build-failed"   # compile, link or import error (no forward, wrong signature)
    BAD_HEADER = "bad-header"       # malformed `// key: value` header

    @property
    def failed(self) -> bool:
        return self not in NOT_FAILURES


NOT_FAILURES = frozenset({Status.OK, Status.UNSUPPORTED, Status.NOT_RUN})


class Kind(StrEnum):
    KERNEL = "kernel"       # a kernels/*.cu variant
    BASELINE = "baseline"   # a torch row every table has (eager, torch.compile, ...)
    FLOOR = "floor"         # the empty-kernel launch


# The built-in rows, in table order: the empty-kernel launch, then the torch rows a user would reach for.
# `eager` always runs (every speedup is relative to it) and so does the cheap empty kernel (the floor a
# call that launches a kernel cannot beat); `--baselines` selects among the others.
FLOOR_ROW = "empty-kernel"
REFERENCE_ROW = "eager"
BUILTIN_ROWS = (FLOOR_ROW, REFERENCE_ROW, "eager-graph", "compile", "compile-max-autotune", "torch-2gemm")
ALWAYS_RUN = (FLOOR_ROW, REFERENCE_ROW)


class CacheMode(StrEnum):
    """What the L2 holds when a GPU-time sample starts (see timing.L2Flush)."""
    COLD_READ = "cold-read"    # flushed by reading a buffer twice its size (default: no dirty lines left)
    COLD_WRITE = "cold-write"  # flushed by writing it, as triton's do_bench does
    HOT = "hot"                # kept: calls back to back

    @property
    def flush(self) -> str | None:
        return {CacheMode.COLD_READ: "read", CacheMode.COLD_WRITE: "write"}.get(self)


@dataclasses.dataclass(frozen=True)
class Settings:
    trials: int = 3
    seed: int = 0
    cache: CacheMode = CacheMode.COLD_READ
    rounds: int = 2
    time: bool = True             # False: check only (the GPU tests)
    input_sets: int = 4
    rule: StoppingRule = StoppingRule()
    call_rule: StoppingRule = StoppingRule(noise_target=0.01, min_samples=20)
    timing_so: str = ""           # the blocking-kernel extension
    timing_module: str = ""
    baselines: tuple[str, ...] = BUILTIN_ROWS  # the built-in rows that run (always ALWAYS_RUN)


@dataclasses.dataclass(frozen=True)
class Target:
    """Something to run: a built kernel variant, a torch baseline, or the empty-kernel floor."""
    name: str
    kind: Kind
    dtypes: tuple[str, ...]
    so_path: str = ""         # the built extension; a Python variant's .py file
    module_name: str = ""
    fresh_output: bool = True   # checked to return a new tensor each call (not a graph's static buffer)


@dataclasses.dataclass(frozen=True)
class Task:
    shape: Shape
    dtype: str


@dataclasses.dataclass(frozen=True)
class Device:
    """A GPU a worker is pinned to."""
    index: int      # as the harness process numbers its CUDA devices (after any CUDA_VISIBLE_DEVICES)
    uuid: str       # "GPU-...": what the worker is pinned to, and unique across hosts
    name: str = ""


@dataclasses.dataclass(frozen=True)
class ErrorStats:
    max_abs: float
    rel: float
    max_scaled: float  # max |out - ref| / rms(ref)

    def within(self, tol) -> bool:
        return self.rel <= tol.rel and self.max_scaled <= tol.elem


@dataclasses.dataclass(frozen=True)
class CheckResult:
    status: Status
    message: str = ""
    error: ErrorStats | None = None
    unchecked: tuple[str, ...] = ()  # checks that could not run (a call that refuses graph capture)


# The flag a row gets where Clocks.power_capped holds; here, not in report.py, so that compare reads it without torch.
POWER_FLAG = "power-capped"


@dataclasses.dataclass(frozen=True)
class Clocks:
    """What NVML read while a row was timed. The power fields are None where the board does not report them
    (and in result files written before they existed)."""
    sm_mhz_median: float
    sm_mhz_min: float
    sm_mhz_max_supported: float
    power_w_median: float | None = None      # board power draw
    power_limit_w: float | None = None       # the enforced limit at the time
    power_capped_share: float | None = None  # share of readings in which NVML named the power limit
    thermal_share: float | None = None       # ... named temperature or the hardware slowdown

    @property
    def throttled(self) -> bool:
        return self.sm_mhz_median < 0.85 * self.sm_mhz_max_supported

    @property
    def power_capped(self) -> bool:
        """The power limit held the clock down for most of the row, by 3 % or more: its time then depends on the
        energy a call takes as well as on its work, and on the card's temperature and limit, which vary between
        runs and boards. NVML also names the power cap while the clock sits a step or two (15-30 MHz) under its
        maximum, as right after a heavy row: that alone is not flagged."""
        return (self.power_capped_share or 0.0) >= 0.5 and self.sm_mhz_median < 0.97 * self.sm_mhz_max_supported


@dataclasses.dataclass(frozen=True)
class Timing:
    summary: Summary
    method: str
    samples_us: tuple[float, ...]
    invalid_batches: int = 0
    calls_per_sample: int = 1   # call latency: each sample is the mean of this many back-to-back calls


@dataclasses.dataclass(frozen=True)
class Row:
    variant: str
    kind: Kind
    shape: Shape
    dtype: str
    status: Status
    message: str = ""
    error: ErrorStats | None = None
    gpu: Timing | None = None
    call: Timing | None = None
    gpu_warm: Timing | None = None   # GPU time with the L2 kept warm, as call latency has it (cold modes only)
    clocks: Clocks | None = None
    compile_s: float | None = None
    unchecked: tuple[str, ...] = ()  # checks that could not run (e.g. "graph-replay": capture refused)
    device: Device | None = None     # the GPU the row ran on (None: decided without one)

    @property
    def failed(self) -> bool:
        return Status(self.status).failed

    def key(self) -> tuple:
        return (self.shape, self.dtype, self.variant)


_KIND_ORDER = {"floor": 0, "baseline": 1, "kernel": 2}
_BASELINE_ORDER = {name: i for i, name in enumerate(BUILTIN_ROWS)}


def table_order(row) -> tuple:
    """The order of a result file's rows: small shapes first; per (shape, dtype) the floor, the torch rows,
    then the kernels. Works on a Row and on a result file's ResultRow alike."""
    return (row.shape.tokens * row.shape.d, row.shape.label(), row.dtype, _KIND_ORDER.get(row.kind, 3),
            _BASELINE_ORDER.get(row.variant, 9), row.variant)
