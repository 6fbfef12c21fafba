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

import torch

from harness import baselines, check, pyvariant, timing
from harness.env import ClockSampler
from harness.problem import DTYPES, Inputs, make_inputs, reference_float64
from harness.records import Kind, Row, Settings, Status, Target, Task, Timing
from harness.shapes import Shape
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


def time_task(rotation: Rotation, gpu_kind: timing.GpuTime, settings: Settings) -> tuple[Timing, Timing]:
    timing.warm_up(rotation)
    gpu_kind.warm_up(rotation)
    latency = timing.CallLatency(timing.calls_per_sample(rotation))
    gpu_meas, call_meas = [], []
    for _ in range(settings.rounds):
        gpu_meas.append(timing.measure(gpu_kind, rotation, settings.rule))
        call_meas.append(timing.measure(latency, rotation, settings.call_rule))
    return (_timing(gpu_meas, settings.rule), _timing(call_meas, settings.call_rule))


def _timing(measurements: list[timing.Measurement], rule: StoppingRule) -> Timing:
    rounds = [m.samples_us for m in measurements]
    return Timing(summary=summarize(rounds, rule), method=measurements[-1].method,
                  samples_us=tuple(x for r in rounds for x in r),
                  invalid_batches=sum(m.invalid_batches for m in measurements))


def recheck_timed_output(rotation: Rotation, shape: Shape, dtype: str) -> check.CheckResult:
    torch.cuda.synchronize()
    ref = reference_float64(shape, rotation.last_set)
    layout = check.judge_layout(rotation.last_out, shape, dtype, ref.device)
    return layout or check.judge_values(rotation.last_out, ref, dtype)


def run_task(target: Target, task: Task, settings: Settings, gpu_kind: timing.GpuTime) -> Row:
    shape, dtype = task.shape, task.dtype
    row = Row(target.name, target.kind, shape, dtype, Status.OK)
    sets = [make_inputs(shape, DTYPES[dtype], seed=settings.seed + 1000 + i) for i in range(settings.input_sets)]
    forward, compile_s = baselines.prepare(target, shape, sets[0])
    row = dataclasses.replace(row, compile_s=compile_s)
    if target.kind != Kind.FLOOR:
        result = check.check_variant(forward, shape, dtype, settings.trials, settings.seed,
                                     graph_check=target.kind == Kind.KERNEL)
        row = dataclasses.replace(row, status=result.status, message=result.message, error=result.error)
        if result.status != Status.OK or not settings.time:
            return row
    rotation = Rotation(forward, sets)
    with ClockSampler() as sampler:
        gpu, call = time_task(rotation, gpu_kind, settings)
    row = dataclasses.replace(row, gpu=gpu, call=call, clocks=sampler.clocks())
    if target.kind != Kind.FLOOR:
        again = recheck_timed_output(rotation, shape, dtype)
        if again.status != Status.OK:
            return dataclasses.replace(row, status=again.status, gpu=None, call=None,
                                       message=f"output of a timed call: {again.message}")
    return row


def serve(target: Target, tasks: list[Task], settings: Settings, queue) -> None:
    """Worker entry point (spawned)."""
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    torch.cuda.init()
    helper = baselines.import_extension(settings.timing_so, settings.timing_module)
    stream = torch.cuda.Stream()  # not the legacy default stream, which would hide wrong-stream work
    queue.put(("ready", None))
    with exact_float32(), torch.cuda.stream(stream):
        flush = timing.L2Flush(settings.cache.flush) if settings.cache.flush else None
        gpu_kind = timing.GpuTime(helper, flush)
        for task in tasks:
            queue.put(("start", task))
            try:
                row = run_task(target, task, settings, gpu_kind)
            except pyvariant.BuildError as exc:  # a Python variant's import or Triton compile error
                row = Row(target.name, target.kind, task.shape, task.dtype, Status.BUILD_FAILED, str(exc))
            except Exception as exc:
                broken = context_broken()
                status = Status.CRASHED if broken else Status.REJECTED
                message = _one_line(exc)
                queue.put(("row", Row(target.name, target.kind, task.shape, task.dtype, status, message)))
                if broken:  # this context is unusable: the parent restarts a worker for the rest
                    _exit_now(queue, 3)
                continue
            queue.put(("row", row))
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
    with exact_float32():
        queue.put(("ceilings", measure_ceilings(dtypes)))

