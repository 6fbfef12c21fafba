"""--devices, --shard and merge through the command line, on CPU: the build and the GPU work are faked, the
rest (request, result file, per-device ceilings, run block, merge, compare) is the real code."""
import json

import pytest

from harness import cli, devices, env, resources, runner
from harness.breakdown import Breakdown, KernelTime
from harness.records import Device, Kind, Row, Status, Target, Timing
from harness.roofline import Ceilings
from harness.stats import StoppingRule, summarize

GPUS = [Device(0, "GPU-aaaa", "NVIDIA H200"), Device(1, "GPU-bbbb", "NVIDIA H200")]
SWEEP = ["--shape", "seed,deepseek-v2-lite", "--dtype", "float32,bfloat16", "--baselines", "eager",
         "--kernels", "tests/adversarial", "--variant", "correct_neighbour"]
# Besides a plain kernel, one combination of a variant's tuning axes and a Python variant: to the scheduler
# and to merge they are targets like any other.
TARGETS = [Target("empty-kernel", Kind.FLOOR, ("float32", "bfloat16"), "/x/timing.so", "timing_x"),
           Target("eager", Kind.BASELINE, ("float32", "bfloat16")),
           Target("correct_neighbour", Kind.KERNEL, ("float32",), "/x/cn.so", "correct_neighbour_1a2b"),
           Target("correct_neighbour[TILE=16]", Kind.KERNEL, ("float32",), "/x/cn16.so",
                  "correct_neighbour__TILE16_3c4d"),
           Target("tri", Kind.KERNEL, ("bfloat16",), "/x/tri.py", "kvbench_py_tri_5e6f")]
PTXAS = {name: (resources.KernelResources(f"_Z4gemm{i}", "sm_90a", 64 + i, 1024),)
         for i, name in enumerate(("correct_neighbour", "correct_neighbour[TILE=16]"))}


def fake_plan(paths, tasks, jobs=None, baselines=()):
    return runner.Plan(TARGETS, [], dict(PTXAS))


def fake_ceilings(device: Device) -> Ceilings:
    return Ceilings(copy_gbps=1000.0 * (device.index + 1), matmul_tflops={"float32": 10.0 * (device.index + 1),
                    "bfloat16": 100.0 * (device.index + 1)}, date="2026-11-30")


def fake_run(plan_, tasks, settings, on_row, row_timeout_s, devices, on_ceilings, on_start, on_breakdown):
    """The GPU work: each device's share as runner.assign makes it, every row 100 µs on the GPU, and each
    kernel row's breakdown: one launch of a kernel named after the GPU it ran on."""
    shares = runner.assign(plan_.targets, tasks, devices)
    timing = Timing(summarize([[100.0] * 30], StoppingRule()), "blocked-events+flush", (100.0,) * 30)
    for share in shares:
        on_ceilings(share.device, fake_ceilings(share.device))
        for target in plan_.targets:
            for task in share.tasks:
                if task.dtype in target.dtypes:
                    on_start(target, task)
                    on_row(Row(target.name, target.kind, task.shape, task.dtype, Status.OK, gpu=timing,
                               call=timing, device=share.device))
                    if target.kind == Kind.KERNEL:
                        kernel = KernelTime(f"gemm_on_{share.device.uuid}", "kernel", 1, 90.0)
                        on_breakdown(Breakdown(target.name, task.shape, task.dtype, (kernel,), 5))
    return shares


@pytest.fixture
def two_gpus(monkeypatch):
    import torch
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setenv("TORCH_CUDA_ARCH_LIST", "9.0a")
    monkeypatch.setattr(env, "describe", lambda: {"gpu": "NVIDIA H200", "gpu_key": "h200", "commit": "abc",
                                                  "dirty": False, "host": "gpu-host"})
    monkeypatch.setattr(devices, "visible_devices", lambda: GPUS)
    monkeypatch.setattr(runner, "plan", fake_plan)
    monkeypatch.setattr(runner, "run", fake_run)
    monkeypatch.setattr(resources, "read_loaded_in_subprocess", lambda so_paths: {})  # no driver to ask


def bench(tmp_path, name, *argv) -> tuple[int, dict]:
    out = tmp_path / f"{name}.json"
    code = cli.main([*SWEEP, *argv, "--json", str(out)])
    return code, json.loads(out.read_text())


def test_rows_record_their_gpu_and_are_held_against_its_ceilings(tmp_path, two_gpus, capsys):
    code, result = bench(tmp_path, "two", "--devices", "all")
    assert code == 0
    by_uuid = {d["uuid"]: d for d in result["devices"]}
    assert [d["index"] for d in result["devices"]] == [0, 1]
    assert by_uuid["GPU-bbbb"]["ceilings"]["copy_gbps"] == 2000.0 and by_uuid["GPU-bbbb"]["host"] == "gpu-host"
    assert result["ceilings"]["copy_gbps"] == 1000.0  # older readers get GPU 0's
    timed = [r for r in result["rows"] if r["status"] == "ok"]
    assert {r["device"]["uuid"] for r in timed} == {"GPU-aaaa", "GPU-bbbb"}
    for r in timed:
        if r["kind"] == "floor":
            continue
        ceilings = by_uuid[r["device"]["uuid"]]["ceilings"]
        floor = max(r["roofline"]["bytes"] / (ceilings["copy_gbps"] * 1e3),
                    r["roofline"]["flops"] / (ceilings["matmul_tflops"][r["dtype"]] * 1e6))
        assert r["roofline"]["floor_us"] == pytest.approx(floor, rel=1e-3)
    assert result["run"]["devices"] == [0, 1] and result["run"]["shard"] is None
    assert set(result["run"]["busy_s"]) == {"0", "1"}
    assert result["run"]["wall_s"] >= result["run"]["wall_without_build_s"] >= 0
    assert "wall time" in capsys.readouterr().out


def test_one_gpu_by_default(tmp_path, two_gpus):
    _, result = bench(tmp_path, "one")
    assert {r["device"]["index"] for r in result["rows"] if r["device"]} == {0}
    assert result["run"]["devices"] == [0]


def test_a_gpu_that_is_not_there_is_a_usage_error(tmp_path, two_gpus, capsys):
    assert cli.main([*SWEEP, "--devices", "0,2", "--json", str(tmp_path / "x.json")]) == cli.EXIT_USAGE
    err = capsys.readouterr().err
    assert "--devices 0,2: no GPU 2 here (this process sees GPUs 0-1)" in err and err.count("\n") == 1


@pytest.mark.parametrize("argv, message", [
    (["--shard", "3/2"], "--shard 3/2: I must be between 1 and N"),
    (["--shard", "half"], "--shard 'half': expected I/N"),
])
def test_bad_shards_exit_2_before_anything_is_built(tmp_path, argv, message, capsys, monkeypatch):
    monkeypatch.setattr(runner, "plan", lambda *a, **k: pytest.fail("built before the usage error"))
    assert cli.main([*SWEEP, *argv]) == cli.EXIT_USAGE
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_shards_run_apart_merge_into_the_whole_run(tmp_path, two_gpus, capsys):
    _, whole = bench(tmp_path, "whole", "--devices", "0,1")
    _, first = bench(tmp_path, "s1", "--shard", "1/2")
    _, second = bench(tmp_path, "s2", "--shard", "2/2")
    groups = {(r["shape"]["name"], r["dtype"]) for r in whole["rows"]}
    mine = [{(r["shape"]["name"], r["dtype"]) for r in part["rows"]} for part in (first, second)]
    assert mine[0] and mine[1] and not mine[0] & mine[1] and mine[0] | mine[1] == groups
    assert first["run"]["sweep"] == second["run"]["sweep"] == whole["run"]["sweep"]
    assert first["run"]["shard"] == {"index": 1, "count": 2} and first["run"]["sweep_groups"] == 4
    merged = tmp_path / "merged.json"
    assert cli.main(["merge", str(tmp_path / "s2.json"), str(tmp_path / "s1.json"), "--out", str(merged)]) == 0
    rows = json.loads(merged.read_text())["rows"]
    key = lambda r: (r["variant"], r["shape"]["name"], r["dtype"], r["status"])  # noqa: E731
    assert [key(r) for r in rows] == [key(r) for r in whole["rows"]]
    assert {r["variant"] for r in rows} >= {"correct_neighbour[TILE=16]", "tri"}
    for row in rows:  # each kernel row keeps the breakdown profiled on the GPU it ran on
        if row["kind"] == "kernel":
            assert row["kernels"]["list"][0]["name"] == f"gemm_on_{row['device']['uuid']}"
        assert row["axes"] == ({"TILE": "16"} if row["variant"] == "correct_neighbour[TILE=16]" else None)
    assert set(json.loads(merged.read_text())["resources"]) == set(PTXAS)
    capsys.readouterr()
    assert cli.main(["compare", str(tmp_path / "whole.json"), str(merged)]) == 0
    assert "gate passed" in capsys.readouterr().out


def test_without_a_gpu_a_shard_holds_only_its_groups(tmp_path, monkeypatch):
    import torch
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(runner, "plan", fake_plan)
    _, result = bench(tmp_path, "cpu", "--shard", "2/3", "--devices", "0,1")
    assert {r["status"] for r in result["rows"]} == {"not-run"}
    assert len({(r["shape"]["name"], r["dtype"]) for r in result["rows"]}) == 1  # 4 groups over 3 shards: 2, 1, 1
    assert result["run"]["devices"] == [] and result["run"]["groups"] == 1
