"""Worker entry points that behave on cue, for testing the runner's process handling without a GPU.
They speak the real protocol: ("ready"), then ("start", task) and ("row", Row) per task, then ("done")."""
import dataclasses
import hashlib
import json
import os
import sys
import time
from pathlib import Path

from harness.records import Row, Status


def _row(target, task):
    return Row(target.name, target.kind, task.shape, task.dtype, Status.OK, f"pid {os.getpid()}")


def well_behaved(target, tasks, settings, queue):
    queue.put(("ready", None))
    for task in tasks:
        queue.put(("start", task))
        queue.put(("row", _row(target, task)))
    queue.put(("done", None))


def dies_on_second_task(target, tasks, settings, queue):
    """Like a CUDA fault or abort in the middle of a row: the process ends without a word."""
    queue.put(("ready", None))
    for i, task in enumerate(tasks):
        queue.put(("start", task))
        if i == 1:
            queue.close()
            queue.join_thread()
            os._exit(7)
        queue.put(("row", _row(target, task)))
    queue.put(("done", None))


def hangs_on_dtype_float16(target, tasks, settings, queue):
    """Like a kernel that never finishes."""
    queue.put(("ready", None))
    for task in tasks:
        queue.put(("start", task))
        if task.dtype == "float16":
            time.sleep(3600)
        queue.put(("row", _row(target, task)))
    queue.put(("done", None))


def dies_at_start(target, tasks, settings, queue):
    os._exit(9)


def reports_preloaded(target, tasks, settings, queue):
    """Says whether torch was already imported when the worker started (its start-up shared)."""
    queue.put(("ready", None))
    for task in tasks:
        queue.put(("start", task))
        row = dataclasses.replace(_row(target, task), message=f"torch preloaded: {'torch' in sys.modules}")
        queue.put(("row", row))
    queue.put(("done", None))


# ---- several GPUs: what a worker sees of its pinning, and a GPU that falls off the bus ----

# A GPU is gone when a file named after its UUID is in `lost_dir`, a folder each test passes as the first
# argument (functools.partial): workers fork from a server whose environment a test cannot change.
LOSING_GPU = "GPU-bbbb"  # the GPU that fails in `loses_gpu_b_on_its_second_row`


def _pinned_to() -> str | None:
    return os.environ.get("CUDA_VISIBLE_DEVICES")


def reports_its_gpu(target, tasks, settings, queue):
    """Each row's message says what the process saw: the GPU it was pinned to, the rest of its environment
    (a digest), its pid, and when the row started and ended (to see two GPUs work at once)."""
    queue.put(("ready", None))
    for task in tasks:
        queue.put(("start", task))
        t0 = time.time()
        time.sleep(0.4)
        rest = sorted((k, v) for k, v in os.environ.items() if k != "CUDA_VISIBLE_DEVICES")
        seen = {"visible": _pinned_to(), "rest": hashlib.sha256(json.dumps(rest).encode()).hexdigest(), "pid": os.getpid(), "t0": t0, "t1": time.time()}
        queue.put(("row", Row(target.name, target.kind, task.shape, task.dtype, Status.OK, json.dumps(seen))))
    queue.put(("done", None))


def _gone(lost_dir: str, gpu: str | None) -> bool:
    return gpu is not None and (Path(lost_dir) / gpu).exists()


def loses_gpu_b_on_its_second_row(lost_dir, target, tasks, settings, queue):
    """On LOSING_GPU the second row a process runs takes the GPU down: that process dies, and every later
    process pinned there dies before it is ready, as torch.cuda.init() does on a GPU that is gone."""
    if _gone(lost_dir, _pinned_to()):
        os._exit(1)
    queue.put(("ready", None))
    for i, task in enumerate(tasks):
        queue.put(("start", task))
        if _pinned_to() == LOSING_GPU and i == 1:
            (Path(lost_dir) / LOSING_GPU).touch()
            queue.close()
            queue.join_thread()
            os._exit(7)
        queue.put(("row", _row(target, task)))
    queue.put(("done", None))


def probe_sees_lost_gpus(lost_dir, queue):
    if _gone(lost_dir, _pinned_to()):
        queue.put(("error", "RuntimeError: No CUDA GPUs are available"))
    else:
        queue.put(("ok", None))


def ceilings_name_their_gpu(lost_dir, dtypes, queue):
    """Stands in for the measured ceilings: which GPU the measuring process saw (it dies on a lost GPU)."""
    if _gone(lost_dir, _pinned_to()):
        os._exit(1)
    queue.put(("ceilings", _pinned_to()))


def reports_its_cuda_view(queue):
    """On a real GPU machine: what a pinned process's CUDA sees (how many GPUs, and the first one's UUID)."""
    import torch
    queue.put(("view", (torch.cuda.device_count(), str(torch.cuda.get_device_properties(0).uuid))))


def profiles_one_then_dies(jobs, settings, queue):
    """A profiling process (harness/breakdown.py) that sends one breakdown and dies in its second row."""
    from harness.breakdown import Breakdown
    queue.put(("ready", None))
    rows = [(target, task) for target, tasks in jobs for task in tasks]
    for i, (target, task) in enumerate(rows[:2]):
        queue.put(("start", (target.name, task)))
        if i == 1:
            queue.close()
            queue.join_thread()
            os._exit(3)
        queue.put(("breakdown", Breakdown(target.name, task.shape, task.dtype, (), 5, f"fake pid {os.getpid()}")))
    queue.put(("done", None))


def profiles_naming_its_gpu(jobs, settings, queue):
    """A profiling process whose breakdowns say, in their note, which GPU it was pinned to and its pid."""
    from harness.breakdown import Breakdown
    queue.put(("ready", None))
    for target, tasks in jobs:
        for task in tasks:
            queue.put(("start", (target.name, task)))
            seen = json.dumps({"visible": _pinned_to(), "pid": os.getpid()})
            queue.put(("breakdown", Breakdown(target.name, task.shape, task.dtype, (), 5, seen)))
    queue.put(("done", None))


def profiles_with_a_slow_start(jobs, settings, queue):
    """A profiling process that takes 0.4 s to be ready and 0.3 s more in its first row (a profiler's set-up)."""
    from harness.breakdown import Breakdown
    time.sleep(0.4)
    queue.put(("ready", None))
    first = True
    for target, tasks in jobs:
        for task in tasks:
            queue.put(("start", (target.name, task)))
            if first:
                time.sleep(0.3)
                first = False
            queue.put(("breakdown", Breakdown(target.name, task.shape, task.dtype, (), 5, "")))
    queue.put(("done", None))


def ceilings_naming_their_process(dtypes, queue):
    """Stands in for the measured ceilings: the GPU the measuring process was pinned to, and its pid."""
    queue.put(("ceilings", json.dumps({"visible": _pinned_to(), "pid": os.getpid()})))


def warms_slowly(stamp_dir):
    """Stands in for the profiler's set-up (breakdown.warm_profiler): 2 s, its start and end stamped in a file
    named after its process."""
    path = Path(stamp_dir) / f"warm-{os.getpid()}"
    path.write_text(f"{time.time()}\n")
    time.sleep(2.0)
    with open(path, "a") as f:
        f.write(f"{time.time()}\n")


def stamps_its_rows(stamp_dir, target, tasks, settings, queue):
    """well_behaved, stamping when each row starts (a file per row)."""
    queue.put(("ready", None))
    for task in tasks:
        (Path(stamp_dir) / f"row-{target.name}-{task.shape.label()}-{task.dtype}").write_text(str(time.time()))
        queue.put(("start", task))
        queue.put(("row", _row(target, task)))
    queue.put(("done", None))
