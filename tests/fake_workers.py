"""Worker entry points that behave on cue, for testing the runner's process handling without a GPU.
They speak the real protocol: ("ready"), then ("start", task) and ("row", Row) per task, then ("done")."""
import os
import time

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


def profiles_one_then_dies(target, tasks, settings, queue):
    """A profiling process (harness/breakdown.py) that sends one breakdown and dies in the second row."""
    from harness.breakdown import Breakdown
    queue.put(("ready", None))
    queue.put(("start", tasks[0]))
    queue.put(("breakdown", Breakdown(target.name, tasks[0].shape, tasks[0].dtype, (), 5, "fake")))
    queue.put(("start", tasks[1]))
    queue.close()
    queue.join_thread()
    os._exit(3)
