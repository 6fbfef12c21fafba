"""Per-kernel breakdown: device activities are assigned to the profiled call that launched them (by the
profiler's correlation ids, else by time), aggregated per kernel, stored per row; the profiling process is
handled like a worker (a crash costs only breakdowns). The profiler itself runs on the GPU (marked tests)."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from harness import breakdown, occupancy, render, render_kernels, report
from harness.records import Kind, Row, Settings, Status, Target, Task
from harness.resultfile import parse_result
from harness.shapes import SEED

REPO = Path(__file__).resolve().parent.parent
H100 = occupancy.LIMITS[(9, 0)]


def annotation(i, ts, dur):
    return {"ph": "X", "cat": "user_annotation", "name": f"{breakdown.RANGE_PREFIX}{i}", "ts": ts, "dur": dur}


def launch(corr, ts, cat="cuda_runtime", name="cudaLaunchKernel"):
    return {"ph": "X", "cat": cat, "name": name, "ts": ts, "dur": 3, "args": {"correlation": corr}}


def kernel(name, corr, ts, dur, cat="kernel", block=(256, 1, 1), regs=64, smem=8192):
    args = {"correlation": corr, "grid": [4, 1, 1], "block": list(block), "registers per thread": regs,
            "shared memory": smem} if cat == "kernel" else {"correlation": corr}
    return {"ph": "X", "cat": cat, "name": name, "ts": ts, "dur": dur, "args": args}


def two_calls_trace():
    """Two calls of gemm + gemm + copy; an L2 flush launched before each call, outside the ranges."""
    events = []
    for i, base in enumerate((1000.0, 2000.0)):
        events += [launch(100 + 10 * i, base - 50), kernel("flush_kernel", 100 + 10 * i, base - 40, 30),
                   annotation(i, base, 400),
                   launch(101 + 10 * i, base + 5), kernel("gemm", 101 + 10 * i, base + 20, 10.0 + i),
                   launch(102 + 10 * i, base + 9), kernel("gemm", 102 + 10 * i, base + 31, 12.0),
                   launch(103 + 10 * i, base + 12, name="cudaMemcpyAsync"),
                   kernel("Memcpy DtoD (Device -> Device)", 103 + 10 * i, base + 44, 2.0, cat="gpu_memcpy")]
    return {"traceEvents": events}


def test_each_call_gets_its_own_launches_and_the_flush_is_dropped():
    per_call = breakdown.parse_trace(two_calls_trace(), calls=2)
    assert [[(x.name, x.kind) for x in call] for call in per_call] == [
        [("gemm", "kernel"), ("gemm", "kernel"), ("Memcpy DtoD (Device -> Device)", "memcpy")]] * 2
    assert per_call[1][0].device_us == 11.0 and per_call[0][0].block == (256, 1, 1)


def test_launch_records_missing_falls_back_to_device_time():
    trace = two_calls_trace()
    trace["traceEvents"] = [e for e in trace["traceEvents"] if e["cat"] not in breakdown.LAUNCH_CATEGORIES]
    per_call = breakdown.parse_trace(trace, calls=2)
    assert [len(call) for call in per_call] == [3, 3]  # the flush kernels start before the ranges: dropped


def test_the_launch_decides_when_device_and_host_clocks_disagree():
    """A device start a little before its range opened (clock skew) still belongs to the call that launched it."""
    trace = two_calls_trace()
    for e in trace["traceEvents"]:
        if e["cat"] == "kernel" and e["name"] == "gemm":
            e["ts"] -= 25  # now before its range's start
    per_call = breakdown.parse_trace(trace, calls=2)
    assert [len(call) for call in per_call] == [3, 3]


def test_aggregate_counts_and_times_per_call():
    kernels, note = breakdown.aggregate(breakdown.parse_trace(two_calls_trace(), calls=2), H100)
    gemm, copy = kernels
    assert (gemm.name, gemm.count, gemm.kind) == ("gemm", 2, "kernel")
    assert gemm.device_us == pytest.approx((22.0 + 23.0) / 2)  # median of the two calls' sums
    assert (copy.kind, copy.count, copy.occupancy) == ("memcpy", 1, None)
    assert gemm.occupancy == pytest.approx(occupancy.occupancy(H100, 256, 64, 8192))
    assert note == ""


def test_differing_calls_are_noted():
    trace = two_calls_trace()
    trace["traceEvents"] = [e for e in trace["traceEvents"] if e.get("args", {}).get("correlation") != 113]
    kernels, note = breakdown.aggregate(breakdown.parse_trace(trace, calls=2))
    assert note == "the launches differed between the 2 profiled calls"
    assert [k.kind for k in kernels] == ["kernel", "memcpy"]  # the copy of the first call is still listed


def test_busy_time_is_the_union_of_the_launches():
    def at(start, dur):
        return breakdown.Launch("k", "kernel", start, dur)
    assert breakdown.busy_us([at(0, 10), at(20, 5)]) == 15           # apart: the sum
    assert breakdown.busy_us([at(0, 10), at(4, 10)]) == 14           # overlapping: the span
    assert breakdown.busy_us([at(0, 10), at(2, 3), at(9, 1)]) == 10  # inside the first
    assert breakdown.busy_us([at(30, 5), at(0, 10), at(8, 4)]) == 17  # any order
    assert breakdown.busy_us([]) == 0
    assert breakdown.busy_and_overlap([[], [at(0, 10)], [at(0, 12)], [at(0, 20)]]) == (12, 0)
    assert breakdown.busy_and_overlap([[at(0, 10), at(4, 10)], [at(0, 10), at(2, 10)]]) == (13, 7)  # medians: 14 and 12, 6 and 8
    assert breakdown.busy_and_overlap([[], []]) == (None, None)


def pdl_pair_trace():
    """Two calls of a kernel pair whose second kernel starts while the first runs (a programmatic dependent
    launch: it waits inside for the first), as the profiler records them."""
    events = []
    for i, base in enumerate((1000.0, 2000.0)):
        events += [annotation(i, base, 400),
                   launch(201 + 10 * i, base + 5), kernel("gemm1", 201 + 10 * i, base + 20, 50.0),
                   launch(202 + 10 * i, base + 9), kernel("gemm2", 202 + 10 * i, base + 30, 240.0)]
    return {"traceEvents": events}


def test_overlapping_launches_are_not_counted_twice():
    per_call = breakdown.parse_trace(pdl_pair_trace(), calls=2)
    kernels, _ = breakdown.aggregate(per_call, H100)
    b = breakdown.Breakdown("pdl", SEED, "bfloat16", kernels, 2, "", *breakdown.busy_and_overlap(per_call))
    assert b.device_us == 290 and b.busy_us == 250 and b.overlap_us == 40
    listing = render_kernels.breakdown_table(b)
    assert "the launches overlap" in listing and "busy 250 µs" in listing
    again = breakdown.from_dict("pdl", SEED, "bfloat16", json.loads(json.dumps(breakdown.to_dict(b))))
    assert again.busy_us == 250 and again.overlap_us == 40
    # launches one after another: the busy time is their sum, and the table says nothing of overlap
    plain = breakdown.parse_trace(two_calls_trace(), calls=2)
    kernels, _ = breakdown.aggregate(plain, H100)
    b = breakdown.Breakdown("plain", SEED, "float32", kernels, 2, "", *breakdown.busy_and_overlap(plain))
    assert b.busy_us == pytest.approx(b.device_us) and b.overlap_us == pytest.approx(0)
    assert "overlap" not in render_kernels.breakdown_table(b)


def test_launches_in_sequence_never_read_as_overlapping_when_their_times_vary():
    """The overlap is each call's own (its summed launch times less their union), not the summed per-kernel medians
    less the median busy time: those are medians of different things, and for launches one after another they
    differ both ways (by 9 µs in the second case here), so a sum of medians can look like an overlap, or fall short
    of the busy time."""
    def call(base, first_us, second_us):
        return [breakdown.Launch("a", "kernel", base, first_us),
                breakdown.Launch("b", "kernel", base + first_us + 1, second_us)]
    for times in (((10, 4), (12, 4), (11, 9)), ((1, 10), (10, 1), (10, 10))):
        per_call = [call(1000.0 * i, *pair) for i, pair in enumerate(times)]
        kernels, _ = breakdown.aggregate(per_call, H100)
        b = breakdown.Breakdown("plain", SEED, "float32", kernels, 3, "", *breakdown.busy_and_overlap(per_call))
        assert b.overlap_us == 0, (b.device_us, b.busy_us)
        assert "overlap" not in render_kernels.breakdown_table(b)
        sums = [sum(pair) for pair in times]
        assert min(sums) <= b.busy_us <= max(sums)


def test_a_file_without_busy_time_reads_as_unknown():
    entry = breakdown.to_dict(sample_breakdown())
    assert "busy_us" not in entry  # the sample records none
    b = breakdown.from_dict("mine", SEED, "float32", entry)
    assert b.busy_us is None and b.overlap_us == 0
    assert "overlap" not in render_kernels.breakdown_table(b)


def sample_breakdown():
    kernels, note = breakdown.aggregate(breakdown.parse_trace(two_calls_trace(), calls=2), H100)
    return breakdown.Breakdown("mine", SEED, "float32", kernels, 2, note)


def test_stored_per_row_and_shown_as_a_count_and_a_list():
    b = sample_breakdown()
    rows = [Row("mine", Kind.KERNEL, SEED, "float32", Status.OK), Row("other", Kind.KERNEL, SEED, "float32",
                                                                       Status.WRONG, "bad")]
    data = report.result_dict(rows, {"gpu": "x"}, {"cache": "cold-read"}, None, True, {}, breakdowns={b.key(): b})
    parsed = parse_result(json.loads(json.dumps(data)))
    mine = next(r for r in parsed.rows if r.variant == "mine")
    assert mine.kernels.launches == 3 and [k.name for k in mine.kernels.kernels][0] == "gemm"
    assert next(r for r in parsed.rows if r.variant == "other").kernels is None
    table = render.result_table(parsed)
    header, _, first = table.splitlines()[:3]
    col = header.index("kernels")
    assert first[col:col + 7].strip() == "3"
    listing = render_kernels.breakdown_table(mine.kernels)
    assert "gemm" in listing and "Memcpy DtoD" in listing and "3 launch(es) per call" in listing


# ---- the profiling process: crash handling, with a fake worker ----

def test_a_dying_profiler_keeps_what_it_sent(caplog):
    import fake_workers

    from harness import runner
    got = []
    target = Target("fake", Kind.KERNEL, ("float32", "float16"))
    tasks = [Task(SEED, "float32"), Task(SEED, "float16")]
    runner.profile_target(target, tasks, Settings(), got.append, timeout_s=20, start_timeout_s=20,
                          worker=fake_workers.profiles_one_then_dies)
    assert [(b.dtype, b.note.startswith("fake pid")) for b in got] == [("float32", True)]
    assert "fake seed float16: the profiling process died (exit code 3)" in caplog.text
    assert "1 of 2 row(s) have no kernel breakdown" in caplog.text


def test_one_profiling_process_takes_every_target_and_a_crash_costs_one_row(caplog):
    """A device's correct rows of all its targets go to one process; when it dies in a row, a fresh one
    takes the rows after it: only the row it died in has no breakdown."""
    import fake_workers

    from harness import runner
    got = []
    first, second = Target("first", Kind.KERNEL, ("float32",)), Target("second", Kind.KERNEL, ("float32", "float16"))
    jobs = [(first, [Task(SEED, "float32")]), (second, [Task(SEED, "float32"), Task(SEED, "float16")])]
    runner.profile_targets(jobs, Settings(), got.append, timeout_s=20, start_timeout_s=20,
                           worker=fake_workers.profiles_one_then_dies)
    assert [(b.variant, b.dtype) for b in got] == [("first", "float32"), ("second", "float16")]
    assert len({b.note for b in got}) == 2  # two processes: the first died in its second row
    assert "second seed float32: the profiling process died (exit code 3)" in caplog.text
    assert "1 of 3 row(s) have no kernel breakdown" in caplog.text


def test_the_profiling_start_and_first_row_are_timed_apart():
    """What a device's fixed profiling cost is made of: the process's start (to "ready") and its first row."""
    import fake_workers

    from harness import runner
    target = Target("fake", Kind.KERNEL, ("float32", "float16"))
    got = []
    times = runner.profile_targets([(target, [Task(SEED, "float32"), Task(SEED, "float16")])], Settings(),
                                   got.append, timeout_s=20, start_timeout_s=20,
                                   worker=fake_workers.profiles_with_a_slow_start)
    assert len(got) == 2
    # first_row_s runs from the parent's receipt of "ready" to its receipt of the first breakdown: a "ready" that
    # reaches a busy parent late shortens it a little (0.2997 s on a loaded 2-core CI machine), so the lower bound
    # leaves room; it still tells the 0.3 s first row from nothing (0) and from start + first row (0.7)
    assert times.start_s >= 0.4 and 0.2 <= times.first_row_s < 0.3 + 0.4


# ---- GPU ----

@pytest.mark.gpu
def test_breakdown_command_profiles_eager_and_the_floor(tmp_path):
    """eager at the seed shape launches several kernels (three GEMMs and a copy on torch 2.11); the floor one.
    The two commands run at once (each is mostly process start-up; the test reads counts, not times)."""
    def start(variant):
        return subprocess.Popen([sys.executable, "run_bench.py", "breakdown", "--variant", variant, "--shape", "seed",
                                 "--dtype", "float32"], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)

    def output(proc):
        stdout, stderr = proc.communicate(timeout=600)
        assert proc.returncode == 0, stderr
        return stdout
    eager, floor = (output(proc) for proc in [start("eager"), start("empty-kernel")])
    head = next(line for line in eager.splitlines() if "launch(es) per call" in line)
    assert int(head.split(": ")[1].split()[0]) >= 3, eager
    assert ": 1 launch(es) per call" in floor, floor


@pytest.mark.gpu
def test_profiled_device_time_fits_inside_the_timed_gpu_time():
    """The kernels of one profiled call take no more device time than the call's measured GPU time (a few %
    for profiler jitter) and more than a tenth of it."""
    from harness import runner
    from harness.shapes import preset
    plan = runner.plan([], [])
    eager = next(t for t in plan.targets if t.name == "eager")
    settings = Settings(rounds=1, timing_so=plan.targets[0].so_path, timing_module=plan.targets[0].module_name)
    task = Task(preset("deepseek-v2-lite"), "bfloat16")
    rows, found = [], []
    runner.run_target(eager, [task], settings, rows.append, 300)
    runner.profile_target(eager, [task], settings, found.append, 300)
    (row,), (b,) = rows, found
    assert row.status == Status.OK and b.kernels, (row, b)
    gpu_us = row.gpu.summary.median
    assert 0.1 * gpu_us < b.device_us < 1.1 * gpu_us, (b.device_us, gpu_us)
    # eager's kernels run one after another: in each call the device's busy time is their sum, so no overlap; the
    # median busy time and the summed per-kernel medians (medians of different things) agree to a few %
    assert b.busy_us is not None and b.overlap_us <= 1e-6, (b.overlap_us, b.busy_us, b.device_us)
    assert 0.95 * b.device_us <= b.busy_us <= 1.05 * b.device_us, (b.busy_us, b.device_us)


RAISES_WHEN_PROFILED = '''# summary: test variant: correct, but raises while torch.profiler records

import torch


def forward(hidden, w_down, w_up_k, w_up_v, kv_heads):
    if torch._C._autograd._profiler_enabled():
        raise RuntimeError("CUDA error: invalid argument (only while profiled)")
    b, s, d = hidden.shape
    latent = hidden.reshape(b * s, d) @ w_down
    return torch.stack(((latent @ w_up_k).view(b, s, kv_heads, -1), (latent @ w_up_v).view(b, s, kv_heads, -1)), 2)
'''


@pytest.mark.gpu
def test_a_call_that_raises_only_under_the_profiler_is_flagged(tmp_path):
    """The row stays ok (its checked and timed calls were), and carries profile-failed with the exception in its
    breakdown's note; the baseline beside it does not."""
    (tmp_path / "raises_when_profiled.py").write_text(RAISES_WHEN_PROFILED)
    out = tmp_path / "run.json"
    done = subprocess.run([sys.executable, "run_bench.py", "--kernels", str(tmp_path), "--variant", "all",
                           "--shape", "seed", "--dtype", "float32", "--baselines", "eager", "--rounds", "1",
                           "--budget", "0.05", "--json", str(out)], cwd=REPO, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    rows = {r["variant"]: r for r in json.loads(out.read_text())["rows"]}
    flagged = rows["raises_when_profiled"]
    assert flagged["status"] == "ok" and report.PROFILE_FAILED_FLAG in flagged["flags"], flagged
    assert "only while profiled" in flagged["kernels"]["note"]
    assert report.PROFILE_FAILED_FLAG not in rows["eager"]["flags"] and rows["eager"]["kernels"]["launches"] >= 1
    assert report.PROFILE_FAILED_FLAG in done.stdout
