"""scripts/launch_floor.py: its cases add one cost at a time, its table's steps are differences of cold medians,
bad arguments are refused, and its kernels build (the measurement itself needs the GPU: the script says so)."""
import pytest
import torch

import script_module

from harness import build


@pytest.fixture(scope="module")
def lf():
    return script_module.load("launch_floor")


def test_cases_add_one_cost_at_a_time(lf):
    got = lf.cases(96, 256, 118232, 98304, 4096, 4096)
    args = [a for _, a in got]
    assert args == [(96, 256, 0, 0, 0, 0, 0, 1), (96, 256, 118232, 0, 0, 0, 0, 1),
                    (96, 256, 118232, 98304, 4096, 0, 1, 1), (96, 256, 118232, 98304, 4096, 4096, 2, 1)]
    assert [n for n, _ in got] == ["grid 96x256", "grid+smem 118232 B", "copy 98304+4096 B", "copy+store 4096 B"]


def test_a_cluster_run_starts_from_the_plain_grid(lf):
    got = lf.cases(128, 256, 40000, 24576, 3072, 3072, cluster=4)
    assert got[0] == ("grid 128x256", (128, 256, 0, 0, 0, 0, 0, 1))
    assert all(a[-1] == 4 and "cluster 4" in n for n, a in got[1:])
    assert len(got) == 5


def test_render_steps_are_cold_differences(lf):
    rows = [{"case": "a", "mode": "cold", "median_us": 3.0}, {"case": "a", "mode": "hot", "median_us": 2.5},
            {"case": "b", "mode": "cold", "median_us": 4.75}, {"case": "b", "mode": "hot", "median_us": 3.0}]
    lines = lf.render(rows).splitlines()
    assert lines[1].split() == ["a", "3.00", "2.50"]
    assert lines[2].split() == ["b", "4.75", "3.00", "+1.75"]


@pytest.mark.parametrize("argv, message", [
    (["--weights", "100"], "multiple of 16"),
    (["--smem", "1024"], "must fit"),
    (["--grid", "10", "--cluster", "4"], "multiple of --cluster"),
])
def test_bad_arguments_are_refused(lf, capsys, argv, message):
    with pytest.raises(SystemExit) as exc:
        lf.parse(argv)
    assert exc.value.code == 2
    assert message in capsys.readouterr().err


@pytest.mark.build
@pytest.mark.skipif(torch.cuda.is_available(), reason="the no-device exit is for machines without a GPU")
def test_without_a_gpu_it_builds_and_says_so(lf, capsys):
    assert lf.main([]) == 3
    assert "no CUDA device: its kernels are built" in capsys.readouterr().err


@pytest.mark.build
def test_its_kernels_build(lf, tmp_path):
    src = build.ExtensionSource("launch_floor", lf.SOURCE.read_text(), lf.DECLS, ("floor_launch",))
    result = build.build_all([src], cache_root=tmp_path)["launch_floor"]
    assert result.ok, result.message
    assert any("floor_kernel" in k.name and k.spill_stores == 0 for k in result.resources)


@pytest.mark.gpu
def test_it_measures_every_case_on_the_gpu(lf, tmp_path):
    """End to end on a GPU (no speed is asserted): every case, cold and hot, has samples, in a file that says
    where and on what it ran."""
    out = tmp_path / "floor.json"
    assert lf.main(["--grid", "8", "--cluster", "2", "--budget", "0.05", "--json", str(out)]) == 0
    data = __import__("json").loads(out.read_text())
    assert data["env"]["gpu"] and "commit" in data["env"] and "driver" in data["env"]
    cases = ["empty 1x1"] + [n for n, _ in lf.cases(8, 256, 118232, 98304, 4096, 4096, cluster=2)]
    got = {(r["case"], r["mode"]): r for r in data["results"]}
    assert set(got) == {(c, m) for c in cases for m in ("cold", "hot")}
    assert all(r["n"] > 0 and r["median_us"] > 0 for r in got.values())
