"""Runs every (target, shape, dtype): builds first, then one worker process per target, row by row, and after
a target's rows (when asked) one profiling process for its correct rows' per-kernel breakdowns; with several
GPUs, one such loop per GPU over its share of the (shape, dtype) groups, each process pinned to its GPU.
A target is anything with rows: a built-in row, a CUDA variant or one combination of its tuning axes, or a
Python variant.

The runner never prints: it logs progress and hands each finished row to `on_row`, so the caller
can write the result file as rows arrive (an interrupted run keeps every row that finished).
"""
from __future__ import annotations

import concurrent.futures
import dataclasses
import functools
import logging
import multiprocessing
import queue as queue_module
import threading
import time
from collections.abc import Callable
from pathlib import Path

from harness import axes, build, discover, pyvariant, schedule
from harness.baselines import baseline_targets
from harness.breakdown import Breakdown, serve_ahead, warm_profiler
from harness.breakdown import serve as profile_serve
from harness.devices import pinned_call, probe_worker
from harness.errors import HeaderError
from harness.records import BUILTIN_ROWS, Device, Kind, Row, Settings, Status, Target, Task
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
bool reset_persisting_l2();
std::vector<int64_t> persisting_l2_state();
void set_persisting_l2(int64_t limit_bytes, int64_t ptr, int64_t window_bytes);
"""
TIMING_FUNCTIONS = ("empty_launch", "blocker_create", "blocker_destroy", "blocker_hold", "blocker_release",
                    "blocker_timed_out", "reset_persisting_l2", "persisting_l2_state", "set_persisting_l2")


@dataclasses.dataclass(frozen=True)
class Plan:
    targets: list[Target]     # runnable: baselines, floor and the kernels that built
    rows: list[Row]           # rows already decided without a GPU: bad header, build failed, unsupported
    resources: dict = dataclasses.field(default_factory=dict)  # target name -> its kernels' KernelResources


def timing_extension() -> build.ExtensionSource:
    return build.ExtensionSource("timing_kernels", TIMING_KERNELS.read_text(), TIMING_DECLS, TIMING_FUNCTIONS)


def variant_extension(spec: discover.VariantSpec, combination: axes.Combination | None = None) -> build.ExtensionSource:
    """One extension of a CUDA variant; a combination of its axes adds its -D defines."""
    combination = combination or axes.Combination(spec.name)
    return build.ExtensionSource(combination.build_name, spec.source, build.FORWARD_DECL + "\n", ("forward",),
                                 (*spec.nvcc_flags, *combination.defines), spec.ldflags,
                                 (str(spec.path.parent.resolve()),), spec.includes)


def plan(paths: list[Path], tasks: list[Task], cache_root: Path = build.DEFAULT_CACHE,
         jobs: int | None = None, baselines: tuple[str, ...] = BUILTIN_ROWS,
         combinations=axes.combinations) -> Plan:
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
    targets = baseline_targets(helper.so_path, helper.module_name, baselines)
    resources = {}
    for spec, combination in cuda:
        result = built[combination.build_name]
        if not result.ok:
            message = f"{spec.path}: {result.message}" + (f" (full log: {result.log_path})" if result.log_path else "")
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
    return Plan(targets, rows, resources)


def unsupported_rows(target: Target, tasks: list[Task]) -> list[Row]:
    return [Row(target.name, target.kind, t.shape, t.dtype, Status.UNSUPPORTED,
                f"header dtypes: {', '.join(target.dtypes)}") for t in tasks if t.dtype not in target.dtypes]


def not_run_rows(targets: list[Target], tasks: list[Task], why: str) -> list[Row]:
    return [Row(t.name, t.kind, task.shape, task.dtype, Status.NOT_RUN, why)
            for t in targets for task in tasks if task.dtype in t.dtypes]


# ---- processes -----------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Processes:
    """The entry points of the processes the runner starts (tests pass fakes that crash, hang or lose
    their GPU on cue), and how long one may take to start."""
    serve: Callable = serve                       # runs one target's tasks (harness/worker.py)
    ceilings: Callable = measure_ceilings_worker  # measures one device's copy bandwidth and matmul rates
    probe: Callable = probe_worker                # does a fresh process still get a working GPU?
    profile: Callable = profile_serve             # profiles a device's correct rows (harness/breakdown.py)
    warm_profiler: Callable = warm_profiler       # the profiler's set-up, while the rows run (breakdown.serve_ahead)
    start_timeout_s: float = 180.0
    probe_timeout_s: float = 60.0


class DeviceLost(Exception):
    """A GPU stopped working: a fresh process cannot use it. `pending` are the current target's rows
    that did not run there (None: none of the device's rows ran)."""

    def __init__(self, reason: str, pending: list[Task] | None):
        super().__init__(reason)
        self.reason, self.pending = reason, pending


def worker_context():
    """Workers fork from a server process that imported torch and the worker module once, so a worker
    (and a new one after a crash) starts without importing torch again; each still runs in a process of
    its own. The server never initialises CUDA, so its forks can. Setting the preload list is idempotent:
    it is read once, when this process starts its fork server."""
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["harness.worker"])
    return ctx


def start_worker_server() -> None:
    """Start the workers' fork server now rather than at the first worker: it imports torch (≈ 3 s), which
    then overlaps whatever the caller does next (the builds), not a GPU's first process. Its environment is
    this process's now, before any build changes it."""
    import multiprocessing.forkserver
    worker_context()
    multiprocessing.forkserver.ensure_running()


def _spawn(ctx, name: str, fn, *args, device: Device | None = None):
    """Start `fn(*args, queue)` in a worker process; pinned to `device` if one is given (devices.pinned_call
    says how)."""
    q = ctx.Queue()
    call = (fn, (*args, q)) if device is None else (pinned_call, (device.uuid, fn, *args, q))
    proc = ctx.Process(target=call[0], args=call[1], name=f"worker-{name}", daemon=True)
    proc.start()
    return proc, q


def _stopped(stop: threading.Event | None) -> bool:
    return stop is not None and stop.is_set()


def _receive(proc, q, timeout_s: float, stop: threading.Event | None = None):
    """The next message, or None if the worker died, stayed silent for timeout_s, or the run was stopped."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and not _stopped(stop):
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
               device: Device | None = None, probe: Callable[[], str | None] | None = None,
               stop: threading.Event | None = None,
               on_start: Callable[[Target, Task], None] | None = None) -> float:
    """All tasks of one target; a crashed or silent worker costs its current row, then a new one starts.
    `worker` is the process's entry point (tests pass fakes that crash or hang on cue); it runs pinned to
    `device` if one is given. A worker that fails before it is ready has not run any variant code: then
    `probe` (if given) says whether the device itself is gone, and if so DeviceLost ends the target.
    `on_start` hears which row a worker has begun (progress).
    Returns the seconds its workers took to become ready (process start, imports, CUDA context)."""
    ctx = worker_context()
    pending = list(tasks)
    startup_s = 0.0
    while pending and not _stopped(stop):
        spawned = time.monotonic()
        proc, q = _spawn(ctx, target.name, worker, target, pending, settings, device=device)
        ready, current, rows_done = False, None, 0
        try:
            msg = _receive(proc, q, start_timeout_s, stop)
            while msg is not None and msg[0] != "done":
                kind, payload = msg
                if kind == "ready":
                    ready, startup_s = True, startup_s + time.monotonic() - spawned
                elif kind == "start":
                    current = payload
                    if on_start:
                        on_start(target, payload)
                elif kind == "row":
                    pending.remove(Task(payload.shape, payload.dtype))
                    on_row(payload)
                    current, rows_done = None, rows_done + 1
                msg = _receive(proc, q, row_timeout_s if current else start_timeout_s, stop)
            if msg is None and not _stopped(stop) and (current is not None or rows_done == 0):
                # Died or hung inside a row (or before its first): that row pays, the rest go on.
                victim = current or pending[0]
                status = Status.TIMED_OUT if proc.is_alive() else Status.CRASHED
                _stop(proc)
                why = (f"no answer within {row_timeout_s:.0f} s (hang?)" if status == Status.TIMED_OUT
                       else f"worker process died (exit code {proc.exitcode})")
                if not ready and probe is not None and (reason := probe()):
                    raise DeviceLost(reason, pending)
                pending.remove(victim)
                on_row(Row(target.name, target.kind, victim.shape, victim.dtype, status, why))
        finally:
            _stop(proc)
    return startup_s


@dataclasses.dataclass(frozen=True)
class ProfileTimes:
    """Where a device's profiling seconds went apart from its rows: its processes' start (spawn to ready:
    interpreter, torch import, CUDA context) and its first row (the profiler's own set-up rides on it)."""
    start_s: float = 0.0
    first_row_s: float = 0.0


@dataclasses.dataclass(frozen=True)
class Ahead:
    """A device's profiling process started before its rows (breakdown.serve_ahead): it measured the ceilings,
    set its profiler up while the rows ran, and waits for its jobs on `inbox`."""
    proc: object
    queue: object
    inbox: object

    def close(self) -> None:
        """No jobs for it (or they were handed over and it has finished): let it go, then make sure."""
        if self.proc.is_alive():
            try:
                self.inbox.put(None)
            except (OSError, ValueError):
                pass
        _stop(self.proc)


def start_ahead(dtypes: list[str], settings: Settings, processes: "Processes", device: Device | None) -> Ahead:
    """Start a device's profiling process before its rows; with `dtypes`, its first message is the ceilings."""
    ctx = worker_context()
    inbox = ctx.Queue()
    proc, q = _spawn(ctx, "profile", serve_ahead, processes.ceilings, dtypes, processes.warm_profiler,
                     processes.profile, settings, inbox, device=device)
    return Ahead(proc, q, inbox)


def profile_targets(jobs: list[tuple[Target, list[Task]]], settings: Settings,
                    on_breakdown: Callable[[Breakdown], None], timeout_s: float, start_timeout_s: float = 180.0,
                    worker: Callable = profile_serve, device: Device | None = None,
                    stop: threading.Event | None = None, ahead: Ahead | None = None) -> ProfileTimes:
    """Profile each (target, its correct rows) in one process (harness/breakdown.py says why it is not the
    timing's), pinned to `device` if one is given: a device's profiler starts once, not once per target.
    `ahead`: a process started before the rows, which gets the jobs if it is still alive (its start then
    counts from the hand-over). A crash or a hang costs only the breakdown of the row it was in; a fresh
    process takes the rest. Rows are never touched: breakdowns are their own records."""
    pending = [(target, task) for target, tasks in jobs for task in tasks]
    total, received = len(pending), 0
    start_s, first_row_s = 0.0, None
    while pending and not _stopped(stop):
        spawned = time.monotonic()
        if ahead is not None and ahead.proc.is_alive():
            proc, q = ahead.proc, ahead.queue
            ahead.inbox.put(_regroup(pending))
        else:
            proc, q = _spawn(worker_context(), "profile", worker, _regroup(pending), settings, device=device)
        ahead = None  # used once: a fresh process takes over after a crash
        ready, current, ready_at = False, None, None
        try:
            msg = _receive(proc, q, start_timeout_s, stop)
            while msg is not None and msg[0] != "done":
                kind, payload = msg
                if kind == "ready":
                    ready, ready_at = True, time.monotonic()
                    start_s += ready_at - spawned
                elif kind == "start":
                    current = payload
                elif kind == "breakdown":
                    pending = [(t, task) for t, task in pending
                               if (t.name, task) != (payload.variant, Task(payload.shape, payload.dtype))]
                    on_breakdown(payload)
                    if first_row_s is None and ready_at is not None:
                        first_row_s = time.monotonic() - ready_at
                    current, received = None, received + 1
                msg = _receive(proc, q, timeout_s if current else start_timeout_s, stop)
            if msg is None and not _stopped(stop):
                what = "hung" if proc.is_alive() else f"died (exit code {proc.exitcode})"
                if not ready or current is None:  # not inside a row: nothing to blame, so no fresh start
                    log.warning("the profiling process %s %s", what, "before its first row" if not ready
                                else "between rows")
                    break
                name, task = current
                log.warning("%s %s %s: the profiling process %s; a fresh one takes the rows left", name,
                            task.shape.label(), task.dtype, what)
                pending = [(t, tk) for t, tk in pending if (t.name, tk) != (name, task)]
            elif msg is not None:
                break  # done: every row it was given has its breakdown
        finally:
            _stop(proc)
    if received < total and not _stopped(stop):
        log.warning("%d of %d row(s) have no kernel breakdown", total - received, total)
    return ProfileTimes(start_s, first_row_s or 0.0)


def _regroup(pending: list[tuple[Target, Task]]) -> list[tuple[Target, list[Task]]]:
    jobs: dict[str, tuple[Target, list[Task]]] = {}
    for target, task in pending:
        jobs.setdefault(target.name, (target, []))[1].append(task)
    return list(jobs.values())


def profile_target(target: Target, tasks: list[Task], settings: Settings, on_breakdown: Callable[[Breakdown], None],
                   timeout_s: float, start_timeout_s: float = 180.0, worker: Callable = profile_serve,
                   device: Device | None = None, stop: threading.Event | None = None) -> None:
    """One target's rows (the `breakdown` command): profile_targets with one job."""
    profile_targets([(target, tasks)], settings, on_breakdown, timeout_s, start_timeout_s, worker, device, stop)


CEILINGS_TIMEOUT_S = 300.0


def measure_ceilings(dtypes: list[str], timeout_s: float = CEILINGS_TIMEOUT_S, device: Device | None = None,
                     worker: Callable = measure_ceilings_worker,
                     stop: threading.Event | None = None) -> Ceilings | None:
    proc, q = _spawn(worker_context(), "ceilings", worker, dtypes, device=device)
    try:
        return receive_ceilings(proc, q, timeout_s, stop)
    finally:
        _stop(proc)


def receive_ceilings(proc, q, timeout_s: float = CEILINGS_TIMEOUT_S,
                     stop: threading.Event | None = None) -> Ceilings | None:
    """The ceilings a process measures (its first message), or None if it died, hung or sent something else."""
    msg = _receive(proc, q, timeout_s, stop)
    return msg[1] if msg and msg[0] == "ceilings" else None


def probe_device(device: Device, processes: Processes = Processes()) -> str | None:
    """None if a fresh process pinned to `device` gets a working CUDA context there, else why not."""
    proc, q = _spawn(worker_context(), f"probe-gpu{device.index}", processes.probe, device=device)
    try:
        msg = _receive(proc, q, processes.probe_timeout_s)
        silent = msg is None and proc.is_alive()
    finally:
        _stop(proc)
    if msg is None:
        return ("a fresh process got no answer from it" if silent else
                f"a fresh process could not start on it (exit code {proc.exitcode})")
    return None if msg[0] == "ok" else f"a fresh process cannot use it ({msg[1]})"


# ---- the run: groups over devices ------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Share:
    """The groups one device runs, and how long it took: wall seconds from its first process to its last
    breakdown, and of those the seconds its worker processes took to start and the seconds spent measuring
    its ceilings and profiling its rows (each GPU's fixed costs, apart from its rows); of the profiling, the
    profiling process's start and its first row (ProfileTimes)."""
    device: Device | None     # None: this process's current GPU, unpinned
    tasks: list[Task]
    busy_s: float = 0.0
    startup_s: float = 0.0
    ceilings_s: float = 0.0
    profile_s: float = 0.0
    profile_start_s: float = 0.0
    profile_first_row_s: float = 0.0


def assign(targets: list[Target], tasks: list[Task], devices: list[Device] | None) -> list[Share]:
    """Whole (shape, dtype) groups per device (harness/schedule.py says why), balanced on the number of
    rows each group runs. One device gets every group in the order given: the work of a one-GPU run."""
    if not devices:
        return [Share(None, list(tasks))]
    parts = schedule.split(tasks, len(devices), weight=lambda task: sum(task.dtype in t.dtypes for t in targets))
    for device, part in zip(devices, parts):
        if not part:
            log.info("GPU %d idle: fewer (shape, dtype) groups than GPUs", device.index)
    return [Share(device, part) for device, part in zip(devices, parts) if part]


@dataclasses.dataclass(frozen=True)
class _Context:
    """What every device's share needs; the callbacks are serialized across device threads."""
    settings: Settings
    emit: Callable[[Row], None]
    on_ceilings: Callable[[Device | None, Ceilings | None], None] | None
    row_timeout_s: float
    processes: Processes
    stop: threading.Event
    on_start: Callable[[Target, Task], None] | None = None
    on_breakdown: Callable[[Breakdown], None] | None = None


def run_share(share: Share, targets: list[Target], cx: _Context) -> Share:
    """One device's groups, target by target, a worker process per target: the order a one-GPU run has
    always had. With `cx.on_breakdown`, the correct rows of every target are then profiled on the same device,
    by one process started before the rows (start_ahead: it measures the ceilings first and sets its profiler up
    while the rows run, so that set-up is paid once per device and off its critical path).
    If the device is lost, its remaining rows are not-run with the reason."""
    t0 = time.monotonic()
    device = share.device
    emit = cx.emit if device is None else (lambda row: cx.emit(dataclasses.replace(row, device=device)))
    probe = None if device is None else (lambda: probe_device(device, cx.processes))
    todo = [(t, runnable) for t in targets if (runnable := [task for task in share.tasks if task.dtype in t.dtypes])]
    where = "" if device is None else f" on GPU {device.index}"
    done, startup_s, ceilings_s, profile_s, profiled = 0, 0.0, 0.0, 0.0, ProfileTimes()
    ahead = None
    try:
        dtypes = sorted({t.dtype for t in share.tasks}) if cx.on_ceilings is not None and todo else []
        started = time.monotonic()
        if cx.on_breakdown is not None and todo:
            # The profiling process starts now: it measures the ceilings (alone on the GPU, as the rows wait),
            # then sets its profiler up while the rows run, so no GPU pays that set-up after its rows.
            ahead = start_ahead(dtypes, cx.settings, cx.processes, device)
            if dtypes:
                ceilings = receive_ceilings(ahead.proc, ahead.queue, stop=cx.stop)
        elif dtypes:
            ceilings = measure_ceilings(dtypes, device=device, worker=cx.processes.ceilings, stop=cx.stop)
        if dtypes:
            ceilings_s = time.monotonic() - started
            if ceilings is None and probe is not None and (reason := probe()):
                raise DeviceLost(reason, None)
            cx.on_ceilings(device, ceilings)
        profile_jobs: list[tuple[Target, list[Task]]] = []
        for target, runnable in todo:
            if cx.stop.is_set():
                break
            log.debug("running %s on %d (shape, dtype) pair(s)%s", target.name, len(runnable), where)
            correct: list[Task] = []

            def deliver(row: Row) -> None:
                if row.status == Status.OK:
                    correct.append(Task(row.shape, row.dtype))
                emit(row)

            startup_s += run_target(target, runnable, cx.settings, deliver, cx.row_timeout_s,
                                    cx.processes.start_timeout_s, cx.processes.serve, device=device, probe=probe,
                                    stop=cx.stop, on_start=cx.on_start)
            done += 1
            if correct:
                profile_jobs.append((target, correct))
        if cx.on_breakdown is not None and profile_jobs and not cx.stop.is_set():
            started = time.monotonic()
            profiled = profile_targets(profile_jobs, cx.settings, cx.on_breakdown, cx.row_timeout_s,
                                       cx.processes.start_timeout_s, cx.processes.profile, device=device,
                                       stop=cx.stop, ahead=ahead)
            profile_s = time.monotonic() - started
    except DeviceLost as lost:
        why = f"GPU {device.index} ({device.uuid}) lost: {lost.reason}"
        left = todo[done:] if lost.pending is None else [(todo[done][0], lost.pending)] + todo[done + 1:]
        log.warning("%s; %d row(s) not run", why, sum(len(tasks) for _, tasks in left))
        for target, tasks in left:
            for task in tasks:
                emit(Row(target.name, target.kind, task.shape, task.dtype, Status.NOT_RUN, why))
    finally:
        if ahead is not None:
            ahead.close()
    return dataclasses.replace(share, busy_s=time.monotonic() - t0, startup_s=startup_s, ceilings_s=ceilings_s,
                               profile_s=profile_s, profile_start_s=profiled.start_s,
                               profile_first_row_s=profiled.first_row_s)


def run(plan_: Plan, tasks: list[Task], settings: Settings, on_row: Callable[[Row], None],
        row_timeout_s: float = 600.0, devices: list[Device] | None = None,
        on_ceilings: Callable[[Device | None, Ceilings | None], None] | None = None,
        processes: Processes = Processes(), on_start: Callable[[Target, Task], None] | None = None,
        on_breakdown: Callable[[Breakdown], None] | None = None) -> list[Share]:
    """Every row of the plan. `devices`: the GPUs to spread whole (shape, dtype) groups over, one thread and
    one worker process at a time per GPU, each pinned to its GPU; None runs on this process's current GPU,
    unpinned. `on_ceilings(device, ceilings)` receives each device's ceilings, measured before its rows
    (not measured without it). `on_start(target, task)` hears each row a worker begins (progress). With
    `on_breakdown`, the correct rows are profiled after the device's last target, on their device, and their
    per-kernel breakdowns handed over. Returns what each device ran and for how long."""
    stop, lock = threading.Event(), threading.Lock()

    def serialized(handler: Callable) -> Callable:
        def call(*args) -> None:
            with lock:
                if stop.is_set():  # after Ctrl-C, killed workers are not the variants' crashes
                    return
                try:
                    handler(*args)
                except BaseException:  # Ctrl-C or a failing handler: no other device's call gets in after it
                    stop.set()
                    raise
        return call

    emit = serialized(on_row)
    cx = _Context(settings, emit, serialized(on_ceilings) if on_ceilings else None, row_timeout_s, processes, stop,
                  serialized(on_start) if on_start else None, serialized(on_breakdown) if on_breakdown else None)
    for row in plan_.rows:
        emit(row)
    for target in plan_.targets:
        for row in unsupported_rows(target, tasks):
            emit(row)
    shares = assign(plan_.targets, tasks, devices)
    if len(shares) == 1:  # in this thread: Ctrl-C reaches the one running worker loop directly
        return [run_share(shares[0], plan_.targets, cx)]
    return _in_threads([functools.partial(run_share, share, plan_.targets, cx) for share in shares], stop)


def _in_threads(jobs: list[Callable[[], Share]], stop: threading.Event) -> list[Share]:
    """Each job in a thread of its own; Ctrl-C (or a bug in one) stops them all."""
    results: list = [None] * len(jobs)
    errors: list[BaseException] = []

    def guarded(i: int) -> None:
        try:
            results[i] = jobs[i]()
        except BaseException as exc:  # re-raised in the main thread below
            errors.append(exc)
            stop.set()

    threads = [threading.Thread(target=guarded, args=(i,), name=f"device-{i}", daemon=True)
               for i in range(len(jobs))]
    for thread in threads:
        thread.start()
    try:
        for thread in threads:
            while thread.is_alive():
                thread.join(timeout=0.2)
    except KeyboardInterrupt:
        stop.set()  # each thread kills its worker and returns; the rows it would send after are dropped
        for thread in threads:
            thread.join()
        raise
    if errors:
        raise errors[0]
    return results
