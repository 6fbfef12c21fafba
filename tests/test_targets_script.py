"""scripts/targets.py reads issue 9's targets from result files: the verdicts follow the rows' GPU times, library
designs do not count as hand-written, and a group's ratios never mix two files."""
import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest
import script_module


@pytest.fixture(scope="module")
def targets():
    return script_module.load("targets")


V3 = {"d": 7168, "rank": 512, "heads": 128, "head_dim": 128}


def row(variant, us, tokens=4096, dtype="bfloat16", kind="kernel", floor=200.0, status="ok"):
    return {"variant": variant, "kind": kind, "status": status, "dtype": dtype,
            "shape": {"name": "deepseek-v3", "b": 1, "s": tokens, **V3},
            "gpu_us": {"median": us}, "roofline": {"floor_us": floor}}


def write(tmp_path, name, rows):
    path = tmp_path / name
    path.write_text(json.dumps({"rows": rows}))
    return path


def baselines(tokens=4096, dtype="bfloat16"):
    return [row("eager", 400.0, tokens, dtype, "baseline"), row("torch-2gemm", 280.0, tokens, dtype, "baseline")]


def test_floor_target_met_and_missed(tmp_path, targets):
    met = targets.load([write(tmp_path, "a.json", [*baselines(), row("two_stage", 220.0)])])
    assert "MET" in targets.floor_target(met, 1, "deepseek-v3", 4096, 1.15)
    missed = targets.load([write(tmp_path, "b.json", [*baselines(), row("two_stage", 240.0)])])
    line = targets.floor_target(missed, 1, "deepseek-v3", 4096, 1.15)
    assert "not met" in line and "1.20x floor" in line


def test_library_rows_do_not_count_as_hand_written(tmp_path, targets):
    rows = [*baselines(), row("cutlass_2gemm", 200.0), row("two_stage", 300.0)]
    lines = targets.sweep_target(targets.load([write(tmp_path, "a.json", rows)]))
    assert lines[0].endswith("0 of 1 groups meet it")
    assert "fastest hand-written two_stage" in lines[1]


def test_failed_rows_and_slow_variants(tmp_path, targets):
    rows = [*baselines(), row("two_stage", 250.0), row("fused_tiled", 900.0)]  # 2.25x eager
    lines = targets.sweep_target(targets.load([write(tmp_path, "a.json", rows)]))
    assert "MISS" in lines[1] and "fused_tiled 2.25x eager" in lines[1]
    rows[-1] = row("fused_tiled", 1.0, status="wrong")  # a failed row has no say in the speed targets
    lines = targets.sweep_target(targets.load([write(tmp_path, "b.json", rows)]))
    assert lines[0].endswith("1 of 1 groups meet it")


def test_a_group_comes_whole_from_one_file(tmp_path, targets):
    first = write(tmp_path, "a.json", [*baselines(), row("two_stage", 250.0), row("fused_tiled", 230.0)])
    second = write(tmp_path, "b.json", [*baselines(), row("two_stage", 260.0)])
    groups = targets.load([first, second])
    assert set(groups[("deepseek-v3", 4096, "bfloat16")]) == {"eager", "torch-2gemm", "two_stage"}


def test_gzipped_files_and_unreadable_ones(tmp_path, targets):
    """The committed H200 files are .json.gz; a file that cannot be read is one line on stderr and exit code 2."""
    path = tmp_path / "a.json.gz"
    path.write_bytes(gzip.compress(json.dumps({"rows": [*baselines(), row("two_stage", 220.0)]}).encode()))
    assert "MET" in targets.floor_target(targets.load([path]), 1, "deepseek-v3", 4096, 1.15)
    not_rows = tmp_path / "list.json"
    not_rows.write_text("[1, 2]")
    script = Path(__file__).resolve().parent.parent / "scripts" / "targets.py"
    for bad, says in ((tmp_path / "nowhere.json", "no such result file"), (not_rows, "not a result file")):
        done = subprocess.run([sys.executable, str(script), str(bad)], capture_output=True, text=True)
        assert done.returncode == 2 and done.stdout == "", done
        assert done.stderr.count("\n") == 1 and says in done.stderr and str(bad) in done.stderr, done.stderr


def test_target_four_needs_one_launch_per_call(tmp_path, targets):
    """Target 4 reads "one launch, weights read once": a faster row that launches twice does not meet it, the best
    one-launch row is named beside it, and a file without breakdowns cannot show the bar met."""
    def decode(variant, us, n):
        r = row(variant, us, tokens=64, floor=16.0)
        if n is not None:
            r["kernels"] = {"launches": n, "calls": 5, "note": "", "list": []}
        return r
    bases = baselines(tokens=64)
    two = targets.load([write(tmp_path, "a.json", [*bases, decode("fused_tiled", 23.0, 2),
                                                   decode("two_stage", 25.0, 1)])])
    line = targets.floor_target(two, 4, "deepseek-v3", 64, 1.5, one_launch=True)
    assert "not met" in line and "2 launches per call" in line and "best one-launch kernel two_stage 25.0" in line
    met_by_one = targets.load([write(tmp_path, "e.json", [*bases, decode("fused_tiled", 20.0, 2),
                                                           decode("two_stage", 23.5, 1)])])
    line = targets.floor_target(met_by_one, 4, "deepseek-v3", 64, 1.5, one_launch=True)
    assert "MET" in line and "best one-launch kernel two_stage 23.5 us = 1.47x (meets the bar)" in line
    one = targets.load([write(tmp_path, "b.json", [*bases, decode("fused_tiled", 23.0, 1)])])
    assert "one launch per call" in targets.floor_target(one, 4, "deepseek-v3", 64, 1.5, one_launch=True)
    assert "MET" in targets.floor_target(one, 4, "deepseek-v3", 64, 1.5, one_launch=True)
    unknown = targets.load([write(tmp_path, "c.json", [*bases, decode("fused_tiled", 23.0, None)])])
    line = targets.floor_target(unknown, 4, "deepseek-v3", 64, 1.5, one_launch=True)
    assert "not met" in line and "not in the file" in line
    assert "MET" in targets.floor_target(unknown, 4, "deepseek-v3", 64, 1.5)  # the other floor targets: time only
    failed = decode("fused_tiled", 23.0, 0)  # the breakdown's profiling of the row failed: no count, its reason
    failed["kernels"].update(calls=0, note="not profiled: AcceleratorError: CUDA error: invalid argument")
    line = targets.floor_target(targets.load([write(tmp_path, "d.json", [*bases, failed])]), 4, "deepseek-v3", 64,
                                1.5, one_launch=True)
    assert "not met" in line and "invalid argument" in line and "0 launches" not in line


def test_a_floor_names_the_ceilings_it_came_from(tmp_path, targets):
    """The floor is the run's own: its matmul rate moves by several % between runs of one GPU model, so the line
    says which rate and bandwidth it used (the device's own when the row ran on one of several)."""
    path = tmp_path / "a.json"
    path.write_text(json.dumps({"ceilings": {"copy_gbps": 4085.0, "matmul_tflops": {"bfloat16": 737.0}},
                                "devices": [{"index": 1, "ceilings": {"copy_gbps": 4000.0,
                                                                      "matmul_tflops": {"bfloat16": 790.0}}}],
                                "rows": [*baselines(), row("two_stage", 220.0)]}))
    line = targets.floor_target(targets.load([path]), 1, "deepseek-v3", 4096, 1.15)
    assert "(200.0 us at this run's 737 TFLOP/s and 4085 GB/s)" in line
    on_one = row("two_stage", 220.0)
    on_one["device"] = {"index": 1, "uuid": "GPU-1"}
    path.write_text(json.dumps({"ceilings": None, "devices": [{"index": 1, "ceilings": {
        "copy_gbps": 4000.0, "matmul_tflops": {"bfloat16": 790.0}}}], "rows": [*baselines(), on_one]}))
    assert "at this run's 790 TFLOP/s" in targets.floor_target(targets.load([path]), 1, "deepseek-v3", 4096, 1.15)
    plain = targets.load([write(tmp_path, "b.json", [*baselines(), row("two_stage", 220.0)])])
    assert "at this run's" not in targets.floor_target(plain, 1, "deepseek-v3", 4096, 1.15)


def test_an_interrupted_run_is_named_and_its_missing_rows_do_not_crash(tmp_path):
    """A run cut before its kernel rows leaves groups of baselines only: each target says what is missing."""
    path = tmp_path / "cut.json"
    path.write_text(json.dumps({"complete": False, "rows": [*baselines(), *baselines(64)]}))
    proc = subprocess.run([sys.executable, "scripts/targets.py", str(path)], cwd=Path(__file__).parent.parent,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert f"note: {path} is marked incomplete" in proc.stdout
    assert "1. deepseek-v3 4096 bf16: no kernel row timed in these files" in proc.stdout
    assert "4. deepseek-v3 64 bf16: no kernel row timed in these files" in proc.stdout


def test_the_best_rows_clock_and_power_are_named(tmp_path, targets):
    """Near its bar a prefill verdict depends on how hard the power limit held the clock down in that run."""
    capped = row("cutlass_2gemm", 266.0)
    capped["clocks"] = {"sm_mhz_median": 1530.0, "sm_mhz_min": 1425, "sm_mhz_max_supported": 1980,
                        "power_w_median": 698.4, "power_limit_w": 700.0, "power_capped_share": 0.93}
    line = targets.floor_target(targets.load([write(tmp_path, "a.json", [*baselines(), capped])]), 1,
                                "deepseek-v3", 4096, 1.15)
    assert "cutlass_2gemm 266.0 us, clock 1530 MHz at 698 W, power cap named in 93 % of readings = 1.33x" in line
    old = row("cutlass_2gemm", 266.0)  # a file from before the power readings: the clock alone
    old["clocks"] = {"sm_mhz_median": 1530.0, "sm_mhz_min": 1425, "sm_mhz_max_supported": 1980}
    line = targets.floor_target(targets.load([write(tmp_path, "b.json", [*baselines(), old])]), 1,
                                "deepseek-v3", 4096, 1.15)
    assert "266.0 us, clock 1530 MHz = 1.33x" in line
