"""Runs every (target, shape, dtype): builds first, then one worker process per target, row by row.

The runner never prints: it logs progress and hands each finished row to `on_row`, so the caller
can write the result file as rows arrive (an interrupted run keeps every row that finished).
"""
from __future__ import annotations

import dataclasses
import logging
import multiprocessing
import queue as queue_module
import time
from collections.abc import Callable
from pathlib import Path

from harness import build, discover
from harness.baselines import baseline_targets
from harness.errors import HeaderError
from harness.records import (BAD_HEADER, BUILD_FAILED, CRASHED, KERNEL, NOT_RUN, TIMED_OUT, UNSUPPORTED, Row,
                             Target, Task)
from harness.roofline import Ceilings
from harness.worker import Settings, measure_ceilings_worker, serve

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


def timing_extension() -> build.ExtensionSource:
    return build.ExtensionSource("timing_kernels", TIMING_KERNELS.read_text(), TIMING_DECLS, TIMING_FUNCTIONS)


def variant_extension(spec: discover.VariantSpec) -> build.ExtensionSource:
    return build.ExtensionSource(spec.name, spec.source, build.FORWARD_DECL + "\n", ("forward",),
                                 spec.nvcc_flags, spec.ldflags, (str(spec.path.parent.resolve()),), spec.includes)


def plan(paths: list[Path], tasks: list[Task], cache_root: Path = build.DEFAULT_CACHE,
         jobs: int | None = None) -> Plan:
    """Parse headers and build everything; each failure becomes rows, never a stopped run."""
    specs, rows = [], []
    for path in paths:
        try:
            specs.append(discover.load_variant(path))
        except HeaderError as exc:
            rows += [Row(path.stem, KERNEL, t.shape, t.dtype, BAD_HEADER, str(exc)) for t in tasks]
    sources = [timing_extension()] + [variant_extension(s) for s in specs]
    built = build.build_all(sources, cache_root, jobs)
    helper = built["timing_kernels"]
    if not helper.ok:
        raise RuntimeError(f"the harness's own timing kernels failed to build:\n{helper.message}")
    targets = baseline_targets(helper.so_path, helper.module_name)
    for spec in specs:
        result = built[spec.name]
        if not result.ok:
            message = f"{spec.path}: {result.message}" + (f" (full log: {result.log_path})" if result.log_path else "")
            rows += [Row(spec.name, KERNEL, t.shape, t.dtype, BUILD_FAILED, message) for t in tasks]
            continue
        targets.append(Target(spec.name, KERNEL, spec.dtypes, result.so_path, result.module_name))
    return Plan(targets, rows, " ".join(build.arch_flags()))


def unsupported_rows(target: Target, tasks: list[Task]) -> list[Row]:
    return [Row(target.name, target.kind, t.shape, t.dtype, UNSUPPORTED,
                f"header dtypes: {', '.join(target.dtypes)}") for t in tasks if t.dtype not in target.dtypes]


def not_run_rows(targets: list[Target], tasks: list[Task], why: str) -> list[Row]:
    return [Row(t.name, t.kind, task.shape, task.dtype, NOT_RUN, why)
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
               row_timeout_s: float, start_timeout_s: float = 180.0, worker: Callable = serve) -> None:
    """All tasks of one target; a crashed or silent worker costs its current row, then a new one starts.
    `worker` is the process's entry point (tests pass fakes that crash or hang on cue)."""
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
                elif kind == "row":
                    pending.remove(Task(payload.shape, payload.dtype))
                    on_row(payload)
                    current, rows_done = None, rows_done + 1
                msg = _receive(proc, q, row_timeout_s if current else start_timeout_s)
            if msg is None and (current is not None or rows_done == 0):
                # Died or hung inside a row (or before its first): that row pays, the rest go on.
                victim = current or pending[0]
                status = TIMED_OUT if proc.is_alive() else CRASHED
                why = (f"no answer within {row_timeout_s:.0f} s (hang?)" if status == TIMED_OUT
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
        row_timeout_s: float = 600.0) -> None:
    for row in plan_.rows:
        on_row(row)
    for target in plan_.targets:
        for row in unsupported_rows(target, tasks):
            on_row(row)
        runnable = [t for t in tasks if t.dtype in target.dtypes]
        if runnable:
            log.info("running %s on %d (shape, dtype) pair(s)", target.name, len(runnable))
            run_target(target, runnable, settings, on_row, row_timeout_s)
