"""Command-line exits: usage errors exit 2 with one line; compare works on files alone."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from harness import cli

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "tests" / "data"


@pytest.mark.parametrize("argv, message", [
    (["--variant", "nosuch"], "unknown variant 'nosuch'"),
    (["--shape", "seed,nosuch"], "unknown shape 'nosuch'"),
    (["--shape", "b=1,s=2"], "missing d, rank, heads, head_dim"),
    (["--dtype", "float64"], "unknown dtype 'float64'"),
    (["--rounds", "0"], "--rounds must be positive"),
    (["--json", "/proc/nope/x.json"], "--json /proc/nope/x.json: cannot write there"),
    (["--bogus"], "unrecognized arguments: --bogus"),
    (["--compare", "/nonexistent.json"], "no such result file"),
    (["compare", "/nonexistent.json", "/x.json"], "no such result file"),
    (["compare", "only-one.json"], "the following arguments are required: current"),
])
def test_usage_errors_exit_2_with_one_line(argv, message, capsys):
    assert cli.main(argv) == cli.EXIT_USAGE
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_corrupt_and_old_files_exit_2(tmp_path, capsys):
    truncated = tmp_path / "t.json"
    truncated.write_text((DATA / "h200_run1.json").read_text()[:500])
    old = tmp_path / "old.json"
    old.write_text(json.dumps({"schema": 0, "env": {}, "rows": []}))
    assert cli.main(["compare", str(truncated), str(DATA / "h200_run1.json")]) == 2
    assert "not valid JSON" in capsys.readouterr().err
    assert cli.main(["compare", str(old), str(DATA / "h200_run1.json")]) == 2
    assert "schema 0, this harness reads schema 1 to 2" in capsys.readouterr().err


def test_compare_same_file_passes(tmp_path, capsys):
    md = tmp_path / "c.md"
    assert cli.main(["compare", str(DATA / "h200_run1.json"), str(DATA / "h200_run1.json"),
                     "--markdown", str(md)]) == 0
    assert "SAME" in capsys.readouterr().out and "SAME" in md.read_text()


def test_entry_point_runs_as_a_script():
    proc = subprocess.run([sys.executable, "run_bench.py", "--dtype", "int8"], cwd=REPO, capture_output=True,
                          text=True)
    assert proc.returncode == 2 and "unknown dtype 'int8'" in proc.stderr


def test_ctrl_c_during_the_build_leaves_an_incomplete_result_file(tmp_path, monkeypatch, capsys):
    from harness import runner

    def interrupted_build(paths, tasks, jobs=None, baselines=()):
        raise KeyboardInterrupt

    monkeypatch.setattr(runner, "plan", interrupted_build)
    out = tmp_path / "r.json"
    try:
        code = cli.main(["--kernels", str(REPO / "tests" / "adversarial"), "--variant", "correct_neighbour",
                         "--json", str(out)])
    except KeyboardInterrupt:
        pytest.fail("Ctrl-C during the build escaped as a traceback")
    assert code == cli.EXIT_INTERRUPTED
    assert "interrupted: 0 finished row(s) kept" in capsys.readouterr().err
    result = json.loads(out.read_text())
    assert result["complete"] is False and result["rows"] == []


def test_ctrl_c_does_not_wait_for_running_builds(monkeypatch):
    """build_all returns at once on Ctrl-C: queued builds never start, running ones are not waited for."""
    import concurrent.futures
    import threading
    import time

    from harness import build

    release, started = threading.Event(), []

    def slow_build(src, cache_root):
        started.append(src.name)
        release.wait(30)
        return build.BuildResult(src.name, ok=True)

    def ctrl_c(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(build, "build_one", slow_build)
    monkeypatch.setattr(build, "check_toolchain", lambda home: None)
    monkeypatch.setattr(concurrent.futures, "wait", ctrl_c)
    sources = [build.ExtensionSource(f"v{i}", "", "", ()) for i in range(4)]
    t0 = time.perf_counter()
    try:
        with pytest.raises(KeyboardInterrupt):
            build.build_all(sources, jobs=1)
        assert time.perf_counter() - t0 < 5
        assert started == ["v0"]  # the three queued builds were cancelled
    finally:
        release.set()


@pytest.mark.parametrize("argv", [["compare", "tests/data/h200_run1.json", "tests/data/h200_run2.json"],
                                  ["plot", "tests/data/h200_run1.json", "--out", "{tmp}/p.png"]])
def test_compare_and_plot_do_not_import_torch(argv, tmp_path):
    """A CI job that only compares result files need not install torch (and starts in well under a second)."""
    argv = [a.format(tmp=tmp_path) for a in argv]
    code = ("import sys; from harness import cli; code = cli.main(%r); "
            "assert 'torch' not in sys.modules, 'torch was imported'; sys.exit(code)" % argv)
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]


def _request(argv):
    args = cli.bench_parser().parse_args(argv)
    request = cli.check_request(args)
    return request, cli.settings_record(cli.make_settings(args, request), request, arch="")


def test_token_list_and_baselines_are_recorded():
    request, record = _request(["--kernels", "tests/adversarial", "--variant", "correct_neighbour,returns_zeros",
                                "--shape", "seed,minicpm3", "--tokens", "64,512", "--baselines", "torch-2gemm",
                                "--cache", "hot"])
    assert [(t.shape.name, t.shape.s) for t in request.tasks] == [("seed", 96), ("minicpm3", 64), ("minicpm3", 512)]
    assert record["tokens"] == [64, 512]
    # eager (the reference of every speedup) and the empty kernel (the launch floor) always run
    assert record["baselines"] == ["empty-kernel", "eager", "torch-2gemm"]
    assert record["variants"] == ["correct_neighbour", "returns_zeros"]
    assert record["cache"] == "hot"
    _, default = _request([])
    assert default["baselines"] == ["empty-kernel", "eager", "eager-graph", "compile", "compile-max-autotune",
                                    "torch-2gemm"]
    assert default["cache"] == "cold-read"


@pytest.mark.parametrize("argv, message", [
    (["--baselines", "eager,nosuch"], "--baselines: unknown row 'nosuch'"),
    (["--tokens", "64,0"], "--tokens '64,0': '0' is not a positive integer"),
    (["--hot"], "unrecognized arguments: --hot"),
    (["--cache", "cold"], "argument --cache: invalid choice: 'cold'"),
])
def test_new_flags_usage_errors(argv, message, capsys):
    assert cli.main(argv) == cli.EXIT_USAGE
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_compare_command_fails_on_missing_rows_unless_allowed(tmp_path, capsys):
    data = json.loads((DATA / "h200_run1.json").read_text())
    data["rows"] = [r for r in data["rows"] if r["variant"] != "two_stage"]
    fewer = tmp_path / "fewer.json"
    fewer.write_text(json.dumps(data))
    assert cli.main(["compare", str(DATA / "h200_run1.json"), str(fewer)]) == 1
    assert "MISSING" in capsys.readouterr().out
    assert cli.main(["compare", str(DATA / "h200_run1.json"), str(fewer), "--allow-missing"]) == 0
    data["complete"] = False
    fewer.write_text(json.dumps(data))
    assert cli.main(["compare", str(DATA / "h200_run1.json"), str(fewer)]) == cli.EXIT_USAGE
    assert "the current run is incomplete" in capsys.readouterr().err


# ---- the kernel author's commands ----

def kernels_folder(tmp_path):
    import shutil
    shutil.copy(REPO / "kernels" / "kv_common.cuh", tmp_path)
    return tmp_path


def test_new_writes_a_variant_with_a_valid_header_and_refuses_taken_names(tmp_path, capsys):
    from harness import discover
    folder = kernels_folder(tmp_path)
    assert cli.main(["new", "mine", "--kernels", str(folder)]) == cli.EXIT_OK
    spec = discover.load_variant(folder / "mine.cu")
    assert spec.dtypes == ("float32", "bfloat16", "float16") and spec.axes == (("TILE", ("16", "32")),)
    assert '#include "kv_common.cuh"' in spec.source and "check_inputs(" in spec.source
    capsys.readouterr()
    (folder / "tri.py").write_text("")
    for argv, message in [(["new", "mine"], "mine.cu exists"), (["new", "tri"], "tri.py exists"),
                          (["new", "my-kernel"], "not a valid variant name"), (["new", "eager"], "built-in row"),
                          (["new"], "required: name")]:
        assert cli.main([*argv, "--kernels", str(folder)]) == cli.EXIT_USAGE, argv
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1, err
    assert (folder / "mine.cu").read_text() == spec.source  # never overwritten


def test_new_never_overwrites_a_file_that_appears_after_the_check(tmp_path, monkeypatch):
    from harness import scaffold
    from harness.errors import UsageError
    folder = kernels_folder(tmp_path)
    (folder / "late.cu").write_text("// mine\n")
    monkeypatch.setattr(scaffold, "check_name", lambda name, kernels_dir: None)  # as if it appeared just after
    with pytest.raises(UsageError, match="late.cu: cannot write"):
        scaffold.write_variant("late", folder)
    assert (folder / "late.cu").read_text() == "// mine\n"


def test_new_needs_the_shared_header_beside_it(tmp_path, capsys):
    assert cli.main(["new", "mine", "--kernels", str(tmp_path)]) == cli.EXIT_USAGE
    assert "has no kv_common.cuh" in capsys.readouterr().err and not (tmp_path / "mine.cu").exists()


def test_list_shows_every_variant_with_its_header_and_build_status(tmp_path, capsys):
    folder = kernels_folder(tmp_path)
    assert cli.main(["new", "tiled", "--kernels", str(folder)]) == 0
    (folder / "tri.py").write_text("# summary: a Triton one\n# dtypes: bfloat16\n\ndef forward(*a):\n    pass\n")
    (folder / "broken.cu").write_text("// speed: fast\n")
    capsys.readouterr()
    assert cli.main(["list", "--kernels", str(folder)]) == cli.EXIT_OK
    lines = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()[2:]}
    assert set(lines) == {"broken", "tiled", "tri"}
    assert "TILE=16,32 (2 builds)" in lines["tiled"] and "2/2 not built" in lines["tiled"]
    assert "bfloat16" in lines["tri"] and "python" in lines["tri"] and "a Triton one" in lines["tri"]
    assert "bad header" in lines["broken"] and "unknown header key 'speed'" in lines["broken"]


def test_list_of_the_repository_names_every_file(capsys):
    from harness import discover
    assert cli.main(["list"]) == cli.EXIT_OK
    out = capsys.readouterr().out
    for path in discover.discover(REPO / "kernels"):
        assert str(path) in out


def schema2_file(tmp_path):
    from harness import breakdown, report
    from harness.records import Kind, Row, Status
    from harness.resultfile import write_result_file
    from harness.shapes import SEED
    b = breakdown.Breakdown("mine", SEED, "float32", (
        breakdown.KernelTime("gemm_kernel", "kernel", 2, 10.5, (4, 1, 1), (256, 1, 1), 64, 8192, 0.5),
        breakdown.KernelTime("Memcpy DtoD (Device -> Device)", "memcpy", 1, 1.25)), 5)
    rows = [Row("mine", Kind.KERNEL, SEED, "float32", Status.OK), Row("eager", Kind.BASELINE, SEED, "float32",
                                                                       Status.OK)]
    path = tmp_path / "r.json"
    write_result_file(path, report.result_dict(rows, {"gpu": "x"}, {"cache": "cold-read"}, None, True, {},
                                               breakdowns={b.key(): b}))
    return path


def test_breakdown_prints_a_stored_list(tmp_path, capsys):
    path = schema2_file(tmp_path)
    assert cli.main(["breakdown", "--variant", "mine", "--shape", "seed", "--result", str(path)]) == cli.EXIT_OK
    out = capsys.readouterr().out
    assert out.startswith("mine seed float32: 3 launch(es) per call, 11.75 µs of device time")
    assert "gemm_kernel" in out and "4x1x1" in out and "50%" in out and "Memcpy DtoD" in out


@pytest.mark.parametrize("argv, message", [
    (["--variant", "eager"], "has no kernel breakdown"),
    (["--variant", "nosuch"], "no row nosuch seed float32"),
    (["--variant", "mine", "--dtype", "bfloat16"], "no row mine seed bfloat16"),
    (["--variant", "mine", "--shape", "seed,deepseek-v3"], "breakdown takes one shape, got 2"),
    (["--variant", "mine", "--dtype", "float32,float16"], "breakdown takes one dtype, got 2"),
])
def test_breakdown_usage_errors(tmp_path, capsys, argv, message):
    path = schema2_file(tmp_path)
    assert cli.main(["breakdown", *argv, "--result", str(path)]) == cli.EXIT_USAGE
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1, err


def test_breakdown_of_the_committed_schema_1_file_says_there_is_none(capsys):
    assert cli.main(["breakdown", "--variant", "two_stage", "--result", str(DATA / "h200_run1.json")]) == 2
    assert "has no kernel breakdown (status ok; schema 1)" in capsys.readouterr().err


def test_breakdown_without_a_gpu_and_without_a_file_exits_3(capsys):
    import torch
    if torch.cuda.is_available():
        pytest.skip("the no-GPU path")
    assert cli.main(["breakdown", "--variant", "eager"]) == cli.EXIT_TOOLCHAIN
    assert "no CUDA device: breakdown profiles on the GPU" in capsys.readouterr().err


def test_resources_of_a_python_variant_says_where_its_numbers_are(tmp_path, capsys):
    (tmp_path / "tri.py").write_text("def forward(a, b, c, d, e):\n    pass\n")
    assert cli.main(["resources", "--kernels", str(tmp_path)]) == cli.EXIT_OK
    assert "tri" in capsys.readouterr().out


def test_the_result_file_is_rewritten_at_most_once_per_interval_and_every_row_is_in_the_last(tmp_path, monkeypatch):
    """Rows and breakdowns arriving 0.5 s apart: a rewrite when the first arrives and then only once 2 s have
    passed since the last; Ctrl-C's save and the final one write every row."""
    import harness.report
    monkeypatch.setattr(harness.report, "result_dict", lambda rows, *a, **k: {"rows": list(rows)})
    writes = []
    monkeypatch.setattr(cli, "write_result_file", lambda path, data: writes.append((now[0], len(data["rows"]))))
    now = [0.0]
    sink = cli.ResultSink(tmp_path / "r.json", {}, {}, every_s=2.0, clock=lambda: now[0])
    for i in range(9):
        now[0] = 0.5 * i
        sink.add(f"row {i}") if i % 3 else sink.add_breakdown(type("B", (), {"key": lambda self, i=i: i})())
    assert writes == [(0.0, 0), (2.0, 3), (4.0, 6)]  # at 0, 1.5 and 3 s a breakdown, else a row
    now[0] = 4.5
    sink.add("row 9")  # too soon: not written ...
    assert len(writes) == 3
    sink.save(complete=False)  # ... until Ctrl-C's save or the final one
    assert writes[-1] == (4.5, 7)
