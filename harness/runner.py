"""Runs every (target, shape, dtype): builds first, then one worker process per target, row by row.

The runner never prints: it logs progress and hands each finished row to `on_row`, so the caller
can write the result file as rows arrive (an interrupted run keeps every row that finished).
"""
from __future__ import annotations

import concurrent.futures
import dataclasses
import logging
import multiprocessing
import queue as queue_module
import time
from collections.abc import Callable
from pathlib import Path

from harness import axes, build, discover, pyvariant
from harness.baselines import baseline_targets
from harness.errors import HeaderError
from harness.records import Kind, Row, Settings, Status, Target, Task
from harness.roofline import Ceilings
from harness.worker import measure_ceilings_worker, serve

log = logging.getLogger(__name__)
TIMING_KERNELS = Path(__file__).resolve().parent / "cuda" / "timing_kernels.cu"
TIMING_DECLS = """void empty_launch();
int64_t blocker_create();
void blocker_destroy(int64_t handle);
void blocker_hold(int64_t handle, double timeout_s);
void blocker_release(int64_t handle);
bool blocker_timed_out(int64_t handle);
"""
TIMING_FUNCTIONS = ("empty_launch", "blocker_create", "blocker_destroy", "blocker_hold", "blocker_release",
                    "blocker_timed_out")


@dataclasses.dataclass(frozen=True)
class Plan:
    targets: list[Target]     # runnable: baselines, floor and the kernels that built
    rows: list[Row]           # rows already decided without a GPU: bad header, build failed, unsupported
    arch: str = ""            # the -gencode flags everything was built with
    resources: dict = dataclasses.field(default_factory=dict)  # target name -> its kernels' KernelResources


def timing_extension() -> build.ExtensionSource:
    return build.ExtensionSource("timing_kernels", TIMING_KERNELS.read_text(), TIMING_DECLS, TIMING_FUNCTIONS)


def variant_extension(spec: discover.VariantSpec, combination: axes.Combination | None = None) -> build.ExtensionSource:
    """One extension of a CUDA variant; a combination of its axes adds its -D defines."""
    combination = combination or axes.Combination(spec.name)
    return build.ExtensionSource(combination.build_name, spec.source, build.FORWARD_DECL + "\n", ("forward",),
                                 (*spec.nvcc_flags, *combination.defines), spec.ldflags,
                                 (str(spec.path.parent.resolve()),))


def plan(paths: list[Path], tasks: list[Task], cache_root: Path = build.DEFAULT_CACHE,
         jobs: int | None = None, combinations=axes.combinations) -> Plan:
    """Parse headers, build every combination of every CUDA variant and import-check every Python one; each
    failure becomes rows, never a stopped run. `combinations(name, axes)` picks the combinations to build."""
    specs, rows = [], []
    for path in paths:
        try:
            specs.append(discover.load_variant(path))
        except HeaderError as exc:
            rows += [Row(path.stem, Kind.KERNEL, t.shape, t.dtype, Status.BAD_HEADER, str(exc)) for t in tasks]
    cuda = [(spec, c) for spec in specs if spec.language == "cuda" for c in combinations(spec.name, spec.axes)]
    python = [spec for spec in specs if spec.language == "python"]
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:  # imports run while nvcc works
        imported = {spec.name: pool.submit(pyvariant.import_check, spec.path) for spec in python}
        built = build.build_all([timing_extension()] + [variant_extension(s, c) for s, c in cuda], cache_root, jobs)
        imported = {name: future.result() for name, future in imported.items()}
    helper = built["timing_kernels"]
    if not helper.ok:
        raise RuntimeError(f"the harness's own timing kernels failed to build:\n{helper.message}")
    targets = baseline_targets(helper.so_path, helper.module_name)
    resources = {}
    for spec, combination in cuda:
        result = built[combination.build_name]
        if not result.ok:
            message = f"{spec.path}: {result.message} (full log: {result.log_path})"
            rows += [Row(combination.name, Kind.KERNEL, t.shape, t.dtype, Status.BUILD_FAILED, message) for t in tasks]
            continue
        targets.append(Target(combination.name, Kind.KERNEL, spec.dtypes, result.so_path, result.module_name))
        resources[combination.name] = result.resources
    for spec in python:
        ok, message = imported[spec.name]
        if not ok:
            rows += [Row(spec.name, Kind.KERNEL, t.shape, t.dtype, Status.BUILD_FAILED, message) for t in tasks]
            continue
        targets.append(Target(spec.name, Kind.KERNEL, spec.dtypes, str(spec.path), pyvariant.module_name(spec.path)))
    return Plan(targets, rows, " ".join(build.arch_flags()), resources)


def unsupported_rows(target: Target, tasks: list[Task]) -> list[Row]:
    return [Row(target.name, target.kind, t.shape, t.dtype, Status.UNSUPPORTED,
                f"header dtypes: {', '.join(target.dtypes)}") for t in tasks if t.dtype not in target.dtypes]


def not_run_rows(targets: list[Target], tasks: list[Task], why: str) -> list[Row]:
    return [Row(t.name, t.kind, task.shape, task.dtype, Status.NOT_RUN, why)
            for t in targets for task in tasks if task.dtype in t.dtypes]


def _spawn(ctx, target, fn, *args):
    q = ctx.Queue()
    proc = ctx.Process(target=fn, args=(*args, q), name=f"worker-{target}", daemon=True)
    proc.start()
    return proc, q


def _receive(proc, q, timeout_s: float):
    """The next message, or None if the worker died or stayed silent for timeout_s."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            return q.get(timeout=0.5)
        except queue_module.Empty:
            if not proc.is_alive():
                try:
                    return q.get(timeout=0.5)  # a message may have landed just before the exit
                except queue_module.Empty:
                    return None
    return None


def _stop(proc) -> None:
    if proc.is_alive():
        proc.kill()
    proc.join(timeout=10)


def run_target(target: Target, tasks: list[Task], settings: Settings, on_row: Callable[[Row], None],
               row_timeout_s: float, start_timeout_s: float = 180.0, worker: Callable = serve,
               on_start: Callable[[Target, Task], None] | None = None) -> None:
    """All tasks of one target; a crashed or silent worker costs its current row, then a new one starts.
    `worker` is the process's entry point (tests pass fakes that crash or hang on cue); `on_start` hears
    which row a worker has begun (progress)."""
    ctx = multiprocessing.get_context("spawn")
    pending = list(tasks)
    while pending:
        proc, q = _spawn(ctx, target.name, worker, target, pending, settings)
        current, rows_done = None, 0
        try:
            msg = _receive(proc, q, start_timeout_s)
            while msg is not None and msg[0] != "done":
                kind, payload = msg
                if kind == "start":
                    current = payload
                    if on_start:
                        on_start(target, payload)
                elif kind == "row":
                    pending.remove(Task(payload.shape, payload.dtype))
                    on_row(payload)
                    current, rows_done = None, rows_done + 1
                msg = _receive(proc, q, row_timeout_s if current else start_timeout_s)
            if msg is None and (current is not None or rows_done == 0):
                # Died or hung inside a row (or before its first): that row pays, the rest go on.
                victim = current or pending[0]
                status = Status.TIMED_OUT if proc.is_alive() else Status.CRASHED
                why = (f"no answer within {row_timeout_s:.0f} s (hang?)" if status == Status.TIMED_OUT
                       else f"worker process died (exit code {proc.exitcode})")
                pending.remove(victim)
                on_row(Row(target.name, target.kind, victim.shape, victim.dtype, status, why))
        finally:
            _stop(proc)


def measure_ceilings(dtypes: list[str], timeout_s: float = 300.0) -> Ceilings | None:
    ctx = multiprocessing.get_context("spawn")
    proc, q = _spawn(ctx, "ceilings", measure_ceilings_worker, dtypes)
    try:
        msg = _receive(proc, q, timeout_s)
        return msg[1] if msg else None
    finally:
        _stop(proc)


def run(plan_: Plan, tasks: list[Task], settings: Settings, on_row: Callable[[Row], None],
        row_timeout_s: float = 600.0, on_start: Callable[[Target, Task], None] | None = None,
        on_breakdown: Callable | None = None) -> None:
    """Every row of the plan. With `on_breakdown`, each target's correct rows are then profiled in a process
    of their own (harness/breakdown.py) and their per-kernel breakdowns handed over."""
    for row in plan_.rows:
        on_row(row)
    for target in plan_.targets:
        for row in unsupported_rows(target, tasks):
            on_row(row)
        runnable = [t for t in tasks if t.dtype in target.dtypes]
        if runnable:
            log.debug("running %s on %d (shape, dtype) pair(s)", target.name, len(runnable))
            correct: list[Task] = []

            def deliver(row: Row) -> None:
                if row.status == Status.OK:
                    correct.append(Task(row.shape, row.dtype))
                on_row(row)

            run_target(target, runnable, settings, deliver, row_timeout_s, on_start=on_start)
            if on_breakdown and correct:
                from harness import breakdown  # imports torch's profiler
                breakdown.profile_target(target, correct, settings, on_breakdown, row_timeout_s)
