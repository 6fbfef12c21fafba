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
    assert "schema 0, this harness reads schema 1" in capsys.readouterr().err


def test_compare_same_file_passes(tmp_path, capsys):
    md = tmp_path / "c.md"
    assert cli.main(["compare", str(DATA / "h200_run1.json"), str(DATA / "h200_run1.json"),
                     "--markdown", str(md)]) == 0
    assert "SAME" in capsys.readouterr().out and "SAME" in md.read_text()


def test_entry_point_runs_as_a_script():
    proc = subprocess.run([sys.executable, "run_bench.py", "--dtype", "int8"], cwd=REPO, capture_output=True,
                          text=True)
    assert proc.returncode == 2 and "unknown dtype 'int8'" in proc.stderr


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
                                               {b.key(): b}))
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
