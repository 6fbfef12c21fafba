"""Several GPUs on CPU, with fake workers: whole (shape, dtype) groups per GPU, workers pinned to their GPU,
GPUs working at once, a GPU that is lost mid-run, ceilings per GPU, and one GPU doing what a run always did."""
import functools
import json
import os
from collections import defaultdict

import fake_workers
import pytest

from harness import devices, runner
from harness.records import Device, Kind, Settings, Status, Target, Task
from harness.shapes import parse_shapes

GPU_A = Device(0, "GPU-aaaa", "NVIDIA H200")
GPU_B = Device(1, fake_workers.LOSING_GPU, "NVIDIA H200")
TARGETS = [Target("first", Kind.KERNEL, ("float32", "bfloat16")), Target("second", Kind.KERNEL, ("float32",))]
TASKS = [Task(s, d) for s in parse_shapes("seed,deepseek-v2-lite") for d in ("float32", "bfloat16")]
PLAN = runner.Plan(TARGETS, [])


def run(serve, gpus, lost_dir="/nonexistent", tasks=TASKS, breakdowns=None):
    """A run of the fake plan over `gpus`; a GPU is lost once a file named after it is in `lost_dir`. With
    `breakdowns` (a list), the rows are profiled too (the ceilings then come from the profiling process)."""
    rows, ceilings = [], []
    lost = functools.partial
    shares = runner.run(PLAN, tasks, Settings(), rows.append, row_timeout_s=20, devices=gpus,
                        on_ceilings=lambda device, found: ceilings.append((device, found)),
                        on_breakdown=None if breakdowns is None else breakdowns.append,
                        processes=runner.Processes(serve=serve,
                                                   ceilings=lost(fake_workers.ceilings_name_their_gpu, lost_dir),
                                                   probe=lost(fake_workers.probe_sees_lost_gpus, lost_dir),
                                                   profile=fake_workers.profiles_naming_its_gpu,
                                                   start_timeout_s=20, probe_timeout_s=20))
    return rows, ceilings, shares


def timed(rows):
    return [r for r in rows if r.status != Status.UNSUPPORTED]


@pytest.fixture(scope="module")
def two_gpu_run():
    """One run over two GPUs whose workers report what they saw, and the environment an unpinned one sees."""
    before = dict(os.environ)
    rows, _, shares = run(fake_workers.reports_its_gpu, [GPU_A, GPU_B])
    unpinned, _, _ = run(fake_workers.reports_its_gpu, None, tasks=TASKS[:1])
    assert dict(os.environ) == before  # the harness's own environment is never changed
    return rows, shares, json.loads(unpinned[0].message)


def test_each_row_ran_pinned_to_its_recorded_gpu_and_nothing_else_changed(two_gpu_run):
    rows, _, unpinned = two_gpu_run
    for row in timed(rows):
        seen = json.loads(row.message)
        assert seen["visible"] == row.device.uuid  # the worker saw only the GPU its row names
        assert seen["rest"] == unpinned["rest"]    # and every other variable as an unpinned worker does
    assert {r.device for r in timed(rows)} == {GPU_A, GPU_B}


def test_pinning_sets_only_the_visible_gpu_and_refuses_once_cuda_is_up(monkeypatch):
    import torch
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")  # restored after the test
    monkeypatch.setenv("NCCL_NVLS_ENABLE", "0")
    before, seen = dict(os.environ), {}
    devices.pinned_call("GPU-aaaa", lambda: seen.update(os.environ))
    assert seen == {**before, "CUDA_VISIBLE_DEVICES": "GPU-aaaa"}
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: True)
    with pytest.raises(RuntimeError, match="CUDA was initialised before this worker could be pinned"):
        devices.pinned_call("GPU-bbbb", lambda: pytest.fail("ran unpinned"))


def test_a_group_never_straddles_two_gpus_and_every_row_runs_once(two_gpu_run):
    rows, shares, _ = two_gpu_run
    keys = [r.key() for r in rows]
    expected = {(t.shape, t.dtype, target.name) for t in TASKS for target in TARGETS}
    assert len(keys) == len(set(keys)) and set(keys) == expected
    gpus_of_group = defaultdict(set)
    for row in timed(rows):
        gpus_of_group[(row.shape, row.dtype)].add(row.device)
    assert all(len(gpus) == 1 for gpus in gpus_of_group.values())
    # balanced on rows: each GPU has one float32 group (2 rows) and one bfloat16 group (1 row)
    assert sorted(len(share.tasks) for share in shares) == [2, 2]
    assert all(share.busy_s > share.startup_s + share.ceilings_s and share.startup_s > 0 and share.ceilings_s > 0
               and share.profile_s == 0 for share in shares)  # no breakdowns asked for
    assert sorted(sum(t.dtype == "float32" for t in share.tasks) for share in shares) == [1, 1]
    unsupported = [r for r in rows if r.status == Status.UNSUPPORTED]
    assert len(unsupported) == 2 and all(r.device is None for r in unsupported)


def test_two_gpus_work_at_the_same_time(two_gpu_run):
    rows, _, _ = two_gpu_run
    spans = defaultdict(list)
    for row in timed(rows):
        seen = json.loads(row.message)
        spans[row.device].append((seen["t0"], seen["t1"]))
    overlap = [(a0, a1) for a0, a1 in spans[GPU_A] for b0, b1 in spans[GPU_B] if a0 < b1 and b0 < a1]
    assert overlap, "no row on one GPU ran while a row ran on the other"


def test_one_gpu_runs_the_same_rows_in_the_same_order_as_before():
    pinned, _, _ = run(fake_workers.well_behaved, [GPU_A])
    unpinned, _, _ = run(fake_workers.well_behaved, None)
    assert [(r.variant, r.shape, r.dtype, r.status) for r in pinned] == \
           [(r.variant, r.shape, r.dtype, r.status) for r in unpinned]
    assert {r.device for r in timed(pinned)} == {GPU_A} and {r.device for r in unpinned} == {None}
    assert len({r.message for r in timed(pinned) if r.variant == "first"}) == 1  # one worker per target


def test_a_lost_gpu_marks_its_remaining_rows_not_run_and_the_other_goes_on(tmp_path):
    serve = functools.partial(fake_workers.loses_gpu_b_on_its_second_row, str(tmp_path))
    rows, _, _ = run(serve, [GPU_A, GPU_B], str(tmp_path))
    on_a = [r for r in timed(rows) if r.device == GPU_A]
    on_b = [r for r in timed(rows) if r.device == GPU_B]
    assert on_a and {r.status for r in on_a} == {Status.OK}
    # GPU b: its first row ran, the second took the GPU down with it, the rest could not run there
    assert [r.status for r in on_b] == [Status.OK, Status.CRASHED, Status.NOT_RUN]
    assert on_b[1].variant == "first" and "worker process died (exit code 7)" in on_b[1].message
    assert on_b[2].variant == "second" and on_b[2].message == (
        "GPU 1 (GPU-bbbb) lost: a fresh process cannot use it (RuntimeError: No CUDA GPUs are available)")
    assert len({r.key() for r in rows}) == len(rows) == len(TASKS) * len(TARGETS)


@pytest.mark.parametrize("profiled", [False, True], ids=["ceilings-process", "profiling-process"])
def test_a_gpu_lost_before_its_first_row_has_all_its_rows_not_run(tmp_path, profiled):
    (tmp_path / GPU_B.uuid).touch()
    serve = functools.partial(fake_workers.loses_gpu_b_on_its_second_row, str(tmp_path))
    found = [] if profiled else None
    rows, ceilings, _ = run(serve, [GPU_A, GPU_B], str(tmp_path), breakdowns=found)
    on_b = [r for r in timed(rows) if r.device == GPU_B]
    assert on_b and {r.status for r in on_b} == {Status.NOT_RUN}
    assert all("GPU 1 (GPU-bbbb) lost" in r.message for r in on_b)
    assert ceilings == [(GPU_A, GPU_A.uuid)]  # the lost GPU's measurement failed first
    assert {r.status for r in timed(rows) if r.device == GPU_A} == {Status.OK}
    if profiled:  # GPU A's rows are still profiled, on GPU A
        assert found and {json.loads(b.note)["visible"] for b in found} == {GPU_A.uuid}


def test_ceilings_are_measured_on_each_gpu():
    _, ceilings, _ = run(fake_workers.well_behaved, [GPU_A, GPU_B])
    assert sorted(ceilings, key=lambda c: c[0].index) == [(GPU_A, GPU_A.uuid), (GPU_B, GPU_B.uuid)]


def test_breakdowns_are_profiled_by_one_process_per_gpu_pinned_to_it():
    """After a GPU's targets, one profiling process pinned to that GPU profiles all their correct rows there."""
    rows, found = [], []
    shares = runner.run(PLAN, TASKS, Settings(), rows.append, row_timeout_s=20, devices=[GPU_A, GPU_B],
               processes=runner.Processes(serve=fake_workers.well_behaved,
                                          profile=fake_workers.profiles_naming_its_gpu, start_timeout_s=20),
               on_breakdown=found.append)
    device_of = {r.key(): r.device for r in timed(rows)}
    assert len(found) == len(device_of) and {b.key() for b in found} == set(device_of)  # each correct row, once
    processes = defaultdict(set)
    for b in found:
        seen = json.loads(b.note)
        assert seen["visible"] == device_of[b.key()].uuid
        processes[seen["visible"]].add(seen["pid"])
    # both targets have groups on both GPUs: one profiling process for each GPU, for both targets
    assert len(processes) == 2 and all(len(pids) == 1 for pids in processes.values())
    assert {b.variant for b in found} == {t.name for t in PLAN.targets}
    assert all(share.busy_s > share.profile_s > 0 for share in shares)


def test_one_process_per_gpu_measures_its_ceilings_then_sets_its_profiler_up_while_the_rows_run(tmp_path):
    """The profiling process starts before a GPU's rows: it measures that GPU's ceilings, sets the profiler up
    while the rows run (they do not wait for it), then profiles them: one process per GPU for all three."""
    rows, ceilings, found = [], {}, []
    stamps = str(tmp_path)
    shares = runner.run(PLAN, TASKS, Settings(), rows.append, row_timeout_s=20, devices=[GPU_A, GPU_B],
                        on_ceilings=lambda device, seen: ceilings.update({device: json.loads(seen)}),
                        on_breakdown=found.append,
                        processes=runner.Processes(serve=functools.partial(fake_workers.stamps_its_rows, stamps),
                                                   ceilings=fake_workers.ceilings_naming_their_process,
                                                   warm_profiler=functools.partial(fake_workers.warms_slowly, stamps),
                                                   profile=fake_workers.profiles_naming_its_gpu,
                                                   start_timeout_s=20))
    assert {device: seen["visible"] for device, seen in ceilings.items()} == {GPU_A: GPU_A.uuid, GPU_B: GPU_B.uuid}
    device_of = {r.key(): r.device for r in timed(rows)}
    assert {b.key() for b in found} == set(device_of)
    for b in found:  # profiled by the process that measured its GPU's ceilings
        assert json.loads(b.note)["pid"] == ceilings[device_of[b.key()]]["pid"]
    warm_ends = {int(p.name.split("-")[1]): float(p.read_text().split()[1]) for p in tmp_path.glob("warm-*")}
    assert sorted(warm_ends) == sorted(seen["pid"] for seen in ceilings.values())
    first_row = min(float(p.read_text()) for p in tmp_path.glob("row-*"))
    assert first_row < min(warm_ends.values())  # the rows began while the profilers were still setting up
    assert all(share.ceilings_s > 0 for share in shares)


def test_a_failure_in_one_gpu_thread_stops_the_run_and_drops_later_rows():
    rows = []

    def interrupted(row):
        rows.append(row)
        if row.status == Status.OK:
            raise KeyboardInterrupt  # as Ctrl-C, or a bug in the caller's row handler

    with pytest.raises(KeyboardInterrupt):
        runner.run(PLAN, TASKS, Settings(), interrupted, row_timeout_s=20, devices=[GPU_A, GPU_B],
                   processes=runner.Processes(serve=fake_workers.reports_its_gpu, start_timeout_s=20))
    assert [r.status for r in rows if r.status == Status.OK] == [Status.OK]
    assert not [p for p in __import__("multiprocessing").active_children() if p.name.startswith("worker-")]
