"""Runs one target's tasks (check, then time) in a process of its own.

A CUDA fault poisons the whole context of the process that raised it, so variants never run in the
harness's own process. The worker sends ("ready"), then ("start", task) and ("row", Row) per task;
after a fault it sends the crashed row and exits, and the parent starts a new worker for the rest.
"""
from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import sys
import time

import torch

from harness import baselines, check, phases, pyvariant, timing
from harness.env import ClockSampler
from harness.guard import Guard
from harness.problem import DTYPES, Inputs, make_inputs
from harness.records import Kind, Row, Settings, Status, Target, Task, Timing
from harness.stats import StoppingRule, summarize

log = logging.getLogger(__name__)


@contextlib.contextmanager
def exact_float32():
    """float32 matmuls in true float32 (no TF32) while the block runs; the flags are restored after."""
    saved = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32,
             torch.get_float32_matmul_precision())
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved[:2]
        torch.set_float32_matmul_precision(saved[2])


def context_broken() -> bool:
    """True after a sticky CUDA error (illegal address, trap): the process cannot run CUDA any more."""
    try:
        torch.cuda.synchronize()
        torch.zeros(1, device="cuda").item()
        return False
    except Exception:
        return True


class Rotation:
    """Calls the forward on input sets in turn; keeps the last output to re-check it after timing."""

    def __init__(self, forward, sets: list[Inputs]):
        self.forward, self.sets, self.count = forward, sets, 0
        self.last_out, self.last_set = None, None

    def __call__(self):
        self.last_set = self.sets[self.count % len(self.sets)]
        self.count += 1
        self.last_out = self.forward(self.last_set)


@dataclasses.dataclass(frozen=True)
class Instruments:
    """What measures, made once per worker before any variant is imported."""
    helper: object                    # the timing_kernels extension
    gpu: timing.GpuTime               # device time in the run's cache mode
    gpu_warm: timing.GpuTime | None   # device time with a warm L2, as call latency has it (cold modes only)
    guard: Guard                      # what the timing and the check rely on, as it was
    l2_start: tuple[int, int] = (0, 0)  # persisting-L2 limit and window before any variant ran (l2_baseline)


def l2_baseline(helper) -> tuple[int, int]:
    """Clear the persisting-L2 limit and window, then read them back: the state a row must leave. A new
    context need not start at zero, and a device may refuse the limit (MIG); either way a row is judged by
    what it changed, not by the device's default."""
    helper.reset_persisting_l2()
    limit, window = helper.persisting_l2_state()
    return int(limit), int(window)


def make_instruments(helper, settings: Settings) -> Instruments:
    """Call before any variant is imported: the guard's snapshot is taken now."""
    flush = timing.L2Flush(settings.cache.flush) if settings.cache.flush else None
    return Instruments(helper, timing.GpuTime(helper, flush), timing.GpuTime(helper, None) if flush else None,
                       Guard(helper), l2_baseline(helper))


def time_task(rotation: Rotation, tools: Instruments, settings: Settings) -> tuple[Timing, Timing, Timing | None]:
    timing.warm_up(rotation)
    tools.gpu.warm_up(rotation)
    tools.helper.reset_persisting_l2()  # after the variant's own calls: lines marked persisting survive a flush
    k = timing.calls_per_sample(rotation)
    latency = timing.CallLatency(k)
    gpu_meas, call_meas = [], []
    for _ in range(settings.rounds):
        gpu_meas.append(timing.measure(tools.gpu, rotation, settings.rule))
        call_meas.append(timing.measure(latency, rotation, settings.call_rule))
    warm = None
    if tools.gpu_warm is not None:  # one round: it serves the device-bound test, not the gate's spread
        warm = _timing([timing.measure(tools.gpu_warm, rotation, settings.rule)], settings.rule)
    return _timing(gpu_meas, settings.rule), _timing(call_meas, settings.call_rule, k), warm


def _timing(measurements: list[timing.Measurement], rule: StoppingRule, calls_per_sample: int = 1) -> Timing:
    rounds = [m.samples_us for m in measurements]
    return Timing(summary=summarize(rounds, rule), method=measurements[-1].method,
                  samples_us=tuple(x for r in rounds for x in r),
                  invalid_batches=sum(m.invalid_batches for m in measurements), calls_per_sample=calls_per_sample)


def run_task(target: Target, task: Task, settings: Settings, tools: Instruments) -> Row:
    shape, dtype = task.shape, task.dtype
    row = Row(target.name, target.kind, shape, dtype, Status.OK)
    who = f"worker {target.name}"
    t = time.perf_counter()
    sets = [make_inputs(shape, DTYPES[dtype], seed=settings.seed + 1000 + i) for i in range(settings.input_sets)]
    t = phases.mark(who, "inputs", t)
    forward, compile_s = baselines.prepare(target, shape, sets[0])
    t = phases.mark(who, "prepare", t)
    row = dataclasses.replace(row, compile_s=compile_s)
    if target.kind != Kind.FLOOR:
        result = check.check_variant(forward, shape, dtype, settings.trials, settings.seed,
                                     graph_check=target.kind == Kind.KERNEL, fresh_output=target.fresh_output)
        t = phases.mark(who, "check", t)
        row = dataclasses.replace(row, status=result.status, message=result.message, error=result.error,
                                  unchecked=result.unchecked)
        if result.status != Status.OK or not settings.time:
            return row
    rotation = Rotation(forward, sets)
    with ClockSampler() as sampler:
        gpu, call, warm = time_task(rotation, tools, settings)
    t = phases.mark(who, "timing", t)
    row = dataclasses.replace(row, gpu=gpu, call=call, gpu_warm=warm, clocks=sampler.clocks())
    if target.kind != Kind.FLOOR:
        again = check.check_after_timing(forward, shape, dtype, rotation.sets, rotation.last_out, rotation.last_set,
                                         settings.seed, target.fresh_output)
        phases.mark(who, "check_after", t)
        if again.status != Status.OK:
            return without_timings(dataclasses.replace(row, status=again.status, message=again.message))
    return row


def without_timings(row: Row) -> Row:
    """A failed row carries no numbers: they would be read as the variant's."""
    return dataclasses.replace(row, gpu=None, call=None, gpu_warm=None)


def tampering(tools: Instruments) -> list[str]:
    """What was changed that the timing relies on: rebound attributes, a persisting-L2 limit or window."""
    changed = tools.guard.replaced()
    limit, window = tools.helper.persisting_l2_state()
    if (int(limit), int(window)) != tools.l2_start:
        changed.append(f"the persisting-L2 limit ({limit} B) or the stream's access window ({window} B), which "
                       "keep lines in L2 through the flush")
    return changed


def judge_tampering(row: Row, tools: Instruments) -> Row:
    """A row during which the timing's tools were changed fails, whatever it measured; the tools are put
    back for the next row."""
    changed = tampering(tools)
    if not changed:
        return row
    tools.guard.restore()
    tools.helper.reset_persisting_l2()
    return without_timings(dataclasses.replace(
        row, status=Status.TAMPERED, message=f"changed what the timing relies on: {', '.join(changed)} (restored)"))


def serve(target: Target, tasks: list[Task], settings: Settings, queue) -> None:
    """Worker entry point (its own process)."""
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    t = time.perf_counter()
    torch.cuda.init()
    helper = baselines.import_extension(settings.timing_so, settings.timing_module)
    stream = torch.cuda.Stream()  # not the legacy default stream, which would hide wrong-stream work
    t = phases.mark("worker", "cuda_init", t)
    queue.put(("ready", None))
    with exact_float32(), torch.cuda.stream(stream):
        tools = make_instruments(helper, settings)  # before any variant is imported
        phases.mark("worker", "instruments", t)
        for task in tasks:
            queue.put(("start", task))
            try:
                row = run_task(target, task, settings, tools)
            except pyvariant.BuildError as exc:  # a Python variant's import or Triton compile error
                row = Row(target.name, target.kind, task.shape, task.dtype, Status.BUILD_FAILED, str(exc))
            except Exception as exc:
                broken = context_broken()
                status = Status.CRASHED if broken else Status.REJECTED
                row = Row(target.name, target.kind, task.shape, task.dtype, status, _one_line(exc))
                if broken:  # this context is unusable: the parent restarts a worker for the rest
                    queue.put(("row", row))
                    _exit_now(queue, 3)
            queue.put(("row", judge_tampering(row, tools)))
    queue.put(("done", None))
    _exit_now(queue, 0)


def _exit_now(queue, code: int) -> None:
    """Deliver every queued message, then leave without interpreter and CUDA teardown: a variant's
    static destructors run then and have crashed the process after its rows were sent but not delivered."""
    queue.close()
    queue.join_thread()
    os._exit(code)


def _one_line(exc: BaseException) -> str:
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    # TORCH_CHECK messages end with a line naming the C++ source; the first line says what was wrong.
    text = lines[0] if lines else type(exc).__name__
    return f"{type(exc).__name__}: {text}"[:400]


def measure_ceilings_worker(dtypes: list[str], queue) -> None:
    from harness.roofline import measure_ceilings
    t = time.perf_counter()
    torch.cuda.init()
    t = phases.mark("ceilings", "cuda_init", t)
    with exact_float32():
        ceilings = measure_ceilings(dtypes)
    torch.cuda.empty_cache()  # a process that goes on (breakdown.serve_ahead) holds no idle gigabytes meanwhile
    phases.mark("ceilings", "measure", t)
    queue.put(("ceilings", ceilings))

