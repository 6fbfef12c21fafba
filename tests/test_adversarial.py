"""Adversarial variants (tests/adversarial/*.cu and *.py): each is wrong in one way, and the harness must say
which.

CPU part (marker `build`, no GPU): the four variants that fail to build, the Python one that fails to
import, and the bad header, through runner.plan; the CLI keeps finished rows, marked incomplete, when a run
is interrupted.
GPU part (marker `gpu`, the H200): the whole folder through the real command line, once; each variant's
row must carry its own status, the correct neighbour must keep its timings, and no row may be missing.
The run leaves out torch.compile (its compile time would dominate), the five build failures (failed
builds are never cached; the build tests above cover them) and the kernel breakdowns (test_breakdown.py
covers them), and uses a short row timeout: the infinite loop costs that much.
"""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from harness import cli, devices, discover, env, runner
from harness.errors import HeaderError
from harness.records import BUILTIN_ROWS, Device, Kind, Row, Status, Target, Task
from harness.shapes import preset

REPO = Path(__file__).resolve().parent.parent
ADV = REPO / "tests" / "adversarial"
ROW_TIMEOUT_S = 10  # the infinite loop costs this much of the GPU run; an ok row here takes ~2 s

# variant -> (status the harness must give, a fragment its message must contain)
CASES = {
    "other_stream": ("other-stream", "the work runs on"),
    "cached_output": ("stale-output", "trial 2: output matches the inputs' previous values"),
    # output caches keyed by the input's address, however they decide when to compute honestly
    "memo_by_address": ("stale-output", "trial 3: output matches the inputs' previous values"),
    "memo_refuses_capture": ("stale-output", "trial 2: output matches the inputs' previous values"),
    "memo_after_warmup": ("stale-output", "after timing, input set 1 refilled in place: output matches"),
    "static_buffer": ("bad-output", "shares memory with the previous call's output"),
    "patches_timing": ("tampered", "torch.cuda.Event.elapsed_time"),
    "writes_input": ("wrote-input", "changed input 'hidden'"),
    "partial_write": ("unwritten", "49152 of 98304 output elements were never written"),  # half the seed's rows
    "returns_zeros": ("wrong", "output is constant"),
    "nan_output": ("nan", "1 of 98304 elements are NaN or Inf"),
    "wrong_shape": ("bad-output", "expected shape (4, 96, 2, 4, 32), got (4, 96, 256)"),
    "wrong_dtype": ("bad-output", "expected dtype torch.float32, got torch.float64"),
    "non_contiguous": ("bad-output", "expected a contiguous output"),
    "oob_write": (Status.CRASHED, "CUDA error"),
    "infinite_loop": (Status.TIMED_OUT, f"no answer within {ROW_TIMEOUT_S} s"),
    "rejects_shape": (Status.REJECTED, "rank exceeds this design's limit of 32"),
    "host_abort": (Status.CRASHED, "worker process died"),
    "compile_error": (Status.BUILD_FAILED, "error"),
    "no_forward": (Status.BUILD_FAILED, "undefined symbol"),
    "wrong_signature": (Status.BUILD_FAILED, "undefined symbol"),
    "no_includes": (Status.BUILD_FAILED, "hint: the .cu names torch's API but includes none of its headers"),
    "bad_header": (Status.BAD_HEADER, "bad_header.cu:1: unknown header key 'speed'"),
    # Python variants: the same checks, and their own build failures
    "py_import_error": (Status.BUILD_FAILED, "No module named 'kvbench_no_such_module'"),
    "py_triton_compile_error": (Status.BUILD_FAILED, "Triton compile error"),
    "py_writes_input": ("wrote-input", "changed input 'hidden'"),
    "py_rejects": (Status.REJECTED, "ValueError: rank above 32 is not supported"),
}
CORRECT = "correct_neighbour"
OK_FLAGGED = {"refuses_capture": "graph-unchecked"}  # ok, but the table must show the check it skipped
BASELINE_ROWS = ("empty-kernel", "eager", "eager-graph", "torch-2gemm")
BUILD_FAILURES = ("compile_error", "no_forward", "wrong_signature", "no_includes", "py_import_error")
GPU_RUN = sorted(p.stem for p in discover.discover(ADV) if p.stem not in BUILD_FAILURES)


def test_every_adversarial_file_is_a_case():
    stems = {p.stem for p in discover.discover(ADV)}
    assert stems == set(CASES) | {CORRECT} | set(OK_FLAGGED)


def test_every_adversarial_file_says_what_it_does_wrong():
    for path in discover.discover(ADV):
        if path.stem in ("bad_header", CORRECT):
            continue
        assert discover.load_variant(path).summary, path


def test_bad_header_names_file_and_line_without_building():
    path = ADV / "bad_header.cu"
    with pytest.raises(HeaderError) as info:
        discover.load_variant(path)
    assert str(info.value).startswith(f"{path}:1: unknown header key 'speed'")


# ---- CPU: build failures become rows with the compiler's or the importer's words ----

@pytest.fixture(scope="module")
def failing_plan():
    """One plan (four builds and an import that fail; failed builds are never cached) shared by the build tests."""
    paths = [p for p in discover.discover(ADV) if p.stem in (*BUILD_FAILURES, "bad_header")]
    tasks = [Task(preset("seed"), "float32"), Task(preset("deepseek-v2-lite"), "float32")]
    return runner.plan(paths, tasks), tasks


@pytest.mark.build
@pytest.mark.parametrize("name", [*BUILD_FAILURES, "bad_header"])
def test_failing_variant_gets_one_row_per_task_with_its_status(failing_plan, name):
    plan, tasks = failing_plan
    mine = [r for r in plan.rows if r.variant == name]
    assert sorted((r.shape.name, r.dtype) for r in mine) == sorted((t.shape.name, t.dtype) for t in tasks)
    status, fragment = CASES[name]
    for row in mine:
        assert row.kind == Kind.KERNEL and row.status == status, row
        assert fragment in row.message, row.message
        assert row.gpu is None and row.call is None
    assert name not in {t.name for t in plan.targets}, "a variant that failed must not be run"


@pytest.mark.build
def test_failing_builds_leave_the_baselines_runnable(failing_plan):
    plan, _ = failing_plan
    assert [t.name for t in plan.targets] == list(BUILTIN_ROWS)


@pytest.mark.build
def test_compile_error_message_names_the_file_and_quotes_the_compiler(failing_plan):
    plan, _ = failing_plan
    row = next(r for r in plan.rows if r.variant == "compile_error")
    assert row.message.startswith(f"{ADV / 'compile_error.cu'}: "), row.message
    # nvcc's own line, "<build dir>/cuda.cu(N): error: expected an expression", N the line in compile_error.cu
    # itself: load_inline adds nothing in front of the source (no_implicit_headers)
    source = (ADV / "compile_error.cu").read_text().splitlines()
    bug_line = next(n for n, line in enumerate(source, 1) if "the bug under test" in line)
    assert f"cuda.cu({bug_line}): error: expected an expression" in row.message, row.message
    log_path = row.message.rsplit("(full log: ", 1)[1].rstrip(")")
    assert "error: expected an expression" in Path(log_path).read_text()


@pytest.mark.build
@pytest.mark.parametrize("name", ["no_forward", "wrong_signature"])
def test_missing_forward_fails_at_import_naming_the_symbol(failing_plan, name):
    plan, _ = failing_plan
    row = next(r for r in plan.rows if r.variant == name)
    assert row.message.startswith(f"{ADV / (name + '.cu')}: "), row.message
    # the mangled forward(Tensor, Tensor, Tensor, Tensor, long) the binding asks for
    assert "undefined symbol" in row.message and "forward" in row.message, row.message


# ---- CPU: an interrupted run keeps its finished rows, marked incomplete ----

def test_interrupted_run_keeps_finished_rows_marked_incomplete(tmp_path, monkeypatch, capsys):
    import torch

    seed = preset("seed")
    gpu = Device(0, "GPU-00000000-0000-0000-0000-000000000000", "NVIDIA H200")
    finished = [Row("eager", Kind.BASELINE, seed, "float32", Status.OK),
                Row("host_abort", Kind.KERNEL, seed, "float32", Status.CRASHED, "worker process died (exit code -6)")]
    out = tmp_path / "partial.json"
    seen_on_disk = []

    def fake_plan(paths, tasks, jobs=None, baselines=()):
        assert {p.stem for p in paths} == set(CASES) | {CORRECT} | set(OK_FLAGGED)
        floor = Target("empty-kernel", Kind.FLOOR, ("float32",), "/nonexistent/timing.so", "timing_kernels_x")
        return runner.Plan([floor], [Row("bad_header", Kind.KERNEL, seed, "float32", Status.BAD_HEADER,
                                         "x.cu:1: unknown")])

    def fake_run(plan_, tasks, settings, on_row, row_timeout_s, devices, on_ceilings, **hooks):  # progress, breakdown
        assert row_timeout_s == 7 and devices == [gpu]
        for row in plan_.rows + finished:
            on_row(row)
            seen_on_disk.append(json.loads(out.read_text()))
        raise KeyboardInterrupt

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setenv("TORCH_CUDA_ARCH_LIST", "9.0a")  # no device to ask for its architecture
    monkeypatch.setattr(env, "describe", lambda: {"gpu": "NVIDIA H200", "gpu_key": "h200"})
    monkeypatch.setattr(devices, "visible_devices", lambda: [gpu])
    monkeypatch.setattr(runner, "plan", fake_plan)
    monkeypatch.setattr(runner, "measure_ceilings", lambda dtypes, *a, **k: None)
    monkeypatch.setattr(runner, "run", fake_run)
    code = cli.main(["--kernels", str(ADV), "--json", str(out), "--timeout", "7"])
    assert code == cli.EXIT_INTERRUPTED
    assert "interrupted: 3 finished row(s) kept" in capsys.readouterr().err
    # the file was on disk, marked incomplete, from the first row on (rewritten at most every few seconds:
    # cli.ResultSink), and Ctrl-C wrote every finished row
    assert seen_on_disk and len(seen_on_disk[0]["rows"]) == 1
    assert all(d["complete"] is False for d in seen_on_disk)
    final = json.loads(out.read_text())
    assert final["complete"] is False
    assert {(r["variant"], r["status"]) for r in final["rows"]} == {
        ("bad_header", Status.BAD_HEADER), ("eager", Status.OK), ("host_abort", Status.CRASHED)}


# ---- GPU: the whole folder through the real command line, once ----

@pytest.fixture(scope="session")
def adversarial_run(tmp_path_factory):
    """One CLI run of tests/adversarial (builds included). The infinite loop waits out --timeout; the
    crashes each cost a fresh worker; --budget/--rounds keep the ok rows' timing short."""
    out = tmp_path_factory.mktemp("adversarial") / "adv.json"
    cmd = [sys.executable, "run_bench.py", "--kernels", "tests/adversarial", "--variant", ",".join(GPU_RUN),
           "--shape", "seed", "--dtype", "float32", "--json", str(out), "--timeout", str(ROW_TIMEOUT_S),
           "--budget", "0.3", "--rounds", "1", "--baselines", ",".join(BASELINE_ROWS), "--no-breakdown"]
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=1800)
    result = json.loads(out.read_text()) if out.exists() else None
    return proc, result


def _rows(adversarial_run) -> dict[str, dict]:
    proc, result = adversarial_run
    assert result is not None, f"no result file; exit {proc.returncode}\n{proc.stderr[-4000:]}"
    return {r["variant"]: r for r in result["rows"]}


@pytest.mark.gpu
def test_run_exits_1_and_completes(adversarial_run):
    proc, result = adversarial_run
    assert proc.returncode == cli.EXIT_FAILED, f"exit {proc.returncode}\n{proc.stderr[-4000:]}"
    assert result is not None and result["complete"] is True


@pytest.mark.gpu
def test_every_file_and_baseline_has_exactly_one_row(adversarial_run):
    _, result = adversarial_run
    names = [r["variant"] for r in result["rows"]]
    expected = GPU_RUN + list(BASELINE_ROWS)
    assert sorted(names) == sorted(expected)


@pytest.mark.gpu
@pytest.mark.parametrize("name, status, fragment", [(n, s, f) for n, (s, f) in CASES.items() if n in GPU_RUN],
                         ids=[n for n in CASES if n in GPU_RUN])
def test_adversarial_variant_gets_its_status(adversarial_run, name, status, fragment):
    row = _rows(adversarial_run)[name]
    assert row["status"] == status, f"{name}: {row['status']}: {row['message']}"
    assert fragment in row["message"], row["message"]
    assert row["gpu_us"] is None and row["call_us"] is None, "a failed row must not carry timings"


@pytest.mark.gpu
def test_correct_neighbour_keeps_its_result(adversarial_run):
    row = _rows(adversarial_run)[CORRECT]
    assert row["status"] == Status.OK, row["message"]
    assert row["gpu_us"]["median"] > 0 and row["call_us"]["median"] > 0
    assert row["error"]["rel"] is not None and row["error"]["rel"] <= 2e-5


@pytest.mark.gpu
@pytest.mark.parametrize("name", BASELINE_ROWS)
def test_baseline_rows_are_ok(adversarial_run, name):
    row = _rows(adversarial_run)[name]
    assert row["status"] == Status.OK, row["message"]
    assert row["gpu_us"]["median"] > 0 and row["call_us"]["median"] > 0


@pytest.mark.gpu
@pytest.mark.parametrize("name, flag", OK_FLAGGED.items())
def test_variant_that_refuses_capture_is_ok_and_flagged(adversarial_run, name, flag):
    row = _rows(adversarial_run)[name]
    assert row["status"] == Status.OK, row["message"]
    assert flag in row["flags"] and row["unchecked"] == ["graph-replay"]
    assert row["gpu_us"]["median"] > 0 and row["call_us"]["median"] > 0


@pytest.mark.gpu
def test_no_ok_row_is_below_the_empty_kernel(adversarial_run):
    """Honest rows launch a kernel: none may be flagged below the floor (the memoised ones were, and failed)."""
    rows = _rows(adversarial_run)
    floor = rows["empty-kernel"]["gpu_us"]["median"]
    for name, row in rows.items():
        if row["status"] == Status.OK and row["kind"] != "floor":
            assert "below-floor" not in row["flags"] and row["gpu_us"]["median"] > floor, name
            assert row["gpu_warm_us"]["median"] > 0 and row["call_us"]["calls_per_sample"] >= 1, name
