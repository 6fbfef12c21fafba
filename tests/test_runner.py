"""The runner's process handling on CPU, with fake workers: rows arrive in order, a crash or a hang costs only
the row it happened in, and a new worker takes the rest."""
import fake_workers

from harness import runner
from harness.records import Kind, Settings, Status, Target, Task
from harness.shapes import parse_shapes

TARGET = Target("fake", Kind.KERNEL, ("float32", "float16"))
OK, CRASHED, TIMED_OUT = Status.OK, Status.CRASHED, Status.TIMED_OUT
SHAPES = parse_shapes("seed,deepseek-v2-lite")
TASKS = [Task(s, d) for s in SHAPES for d in ("float32", "float16")]


def run(worker, tasks=TASKS, row_timeout_s=20.0):
    rows = []
    runner.run_target(TARGET, tasks, Settings(), rows.append, row_timeout_s=row_timeout_s, start_timeout_s=20,
                      worker=worker)
    return rows


def test_rows_arrive_for_every_task():
    rows = run(fake_workers.well_behaved)
    assert [(r.shape, r.dtype) for r in rows] == [(t.shape, t.dtype) for t in TASKS]
    assert {r.status for r in rows} == {OK}
    assert len({r.message for r in rows}) == 1  # one worker process served them all


def test_a_crash_costs_one_row_and_a_new_worker_goes_on():
    rows = run(fake_workers.dies_on_second_task)
    assert [r.status for r in rows] == [OK, CRASHED, OK, CRASHED]
    assert rows[1].message == "worker process died (exit code 7)"
    assert rows[0].message != rows[2].message  # the third row came from a fresh process


def test_a_hang_is_timed_out_and_the_rest_still_run():
    rows = run(fake_workers.hangs_on_dtype_float16, row_timeout_s=2.0)
    assert [(r.dtype, r.status) for r in rows] == [("float32", OK), ("float16", TIMED_OUT),
                                                   ("float32", OK), ("float16", TIMED_OUT)]
    assert "no answer within 2 s" in rows[1].message


def test_a_worker_that_never_starts_marks_each_row_crashed():
    rows = run(fake_workers.dies_at_start, tasks=TASKS[:2])
    assert [r.status for r in rows] == [CRASHED, CRASHED]
    assert "exit code 9" in rows[0].message


def test_workers_share_the_torch_import():
    """A worker forks from a server that imported torch once: no worker (nor a restart after a crash) pays
    for importing it again."""
    rows = run(fake_workers.reports_preloaded, tasks=TASKS[:1])
    assert [r.message for r in rows] == ["torch preloaded: True"]


def test_run_profiles_only_the_correct_rows_of_every_target_after_the_timing(monkeypatch):
    """runner.run hands every target's ok rows, once all are timed, to one profiling process, on the device
    the rows ran on (here: none, unpinned)."""
    from harness.records import Row
    events = []
    statuses = {"seed": OK, "deepseek-v2-lite": Status.WRONG}

    def fake_run_target(target, tasks, settings, on_row, row_timeout_s, *args, on_start=None, **kwargs):
        for task in tasks:
            if on_start:
                on_start(target, task)
            on_row(Row(target.name, target.kind, task.shape, task.dtype, statuses[task.shape.name]))
        events.append(("timed", target.name))
        return 0.0

    def fake_profile(jobs, settings, on_breakdown, timeout_s, *args, device="unset", **kwargs):
        events.append(("profiled", [(target.name, [(t.shape.name, t.dtype) for t in tasks]) for target, tasks in jobs]))
        assert device is None
        return runner.ProfileTimes()

    monkeypatch.setattr(runner, "run_target", fake_run_target)
    monkeypatch.setattr(runner, "profile_targets", fake_profile)
    plan = runner.Plan([TARGET, Target("other", Kind.KERNEL, ("float32",))], [])
    rows, started = [], []
    runner.run(plan, TASKS, Settings(), rows.append, on_start=lambda t, task: started.append(t.name),
               on_breakdown=lambda b: None)
    assert events == [("timed", "fake"), ("timed", "other"),
                      ("profiled", [("fake", [("seed", "float32"), ("seed", "float16")]), ("other", [("seed", "float32")])])]
    assert len(started) == 4 + 2 and len(rows) == 4 + 4  # "other" has two unsupported float16 rows
    events.clear()
    runner.run(plan, TASKS, Settings(), rows.append)  # no on_breakdown: nothing is profiled
    assert [e[0] for e in events] == ["timed", "timed"]
