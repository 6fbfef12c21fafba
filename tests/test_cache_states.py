"""scripts/cache_states.py and scripts/code_fetch.py (what a cold-timed call owes to the fetch of its code): the
three cache states' flushes, the table's differences, refused arguments, the straight-line kernels' build, and
(on a GPU) every case measured in every state; trace_tc's --cache takes the same states."""
import pytest
import torch

import script_module


@pytest.fixture(scope="module")
def cs():
    return script_module.load("cache_states")


@pytest.fixture(scope="module")
def cf():
    return script_module.load("code_fetch")


def test_each_state_has_its_flush(cs):
    calls = []
    l2, warm = (lambda: calls.append("l2")), (lambda: calls.append("warm"))
    assert cs.flush_for("cold", l2, warm) is l2
    assert cs.flush_for("hot", l2, warm) is None
    f = cs.flush_for("warm-code", l2, warm)
    f()
    assert calls == ["l2", "warm"]  # the flush first, then the call that brings the code back
    assert f.mode == "read+warm-code"  # what GpuTime's method string then says
    with pytest.raises(ValueError, match="cache state must be one of"):
        cs.flush_for("lukewarm", l2, warm)


def test_render_gives_what_warm_code_and_hot_data_take_off(cs):
    rows = [{"row": "x", "dtype": "bfloat16",
             "states": {"cold": {"median_us": 10.0}, "warm-code": {"median_us": 7.5}, "hot": {"median_us": 5.25}}}]
    line = cs.render(rows).splitlines()[1].split()
    assert line == ["x", "bfloat16", "10.00", "7.50", "5.25", "2.50", "2.25"]


@pytest.mark.parametrize("argv, message", [
    (["two_stage", "bf16", "seed"], "unknown dtype"),
    (["two_stage", "float32", "no-such-model"], "unknown shape"),
    (["no_such_variant", "float32", "seed"], "no CUDA variant"),
])
def test_bad_arguments_are_refused(cs, capsys, argv, message):
    with pytest.raises(SystemExit) as exc:
        cs.parse(argv)
    assert exc.value.code == 2
    assert message in capsys.readouterr().err


def test_trace_takes_the_same_cache_states(capsys):
    tc = script_module.load("trace_tc")
    assert tc.CACHE_STATES == script_module.load("cache_states").STATES
    with pytest.raises(SystemExit) as exc:
        tc.main(["two_stage", "bfloat16", "deepseek-v3:64", "--cache", "cold,lukewarm"])
    assert exc.value.code == 2
    assert "--cache takes cold, warm-code, hot" in capsys.readouterr().err


def test_code_fetch_cases_pair_each_kernel_with_its_prefetching_form(cf):
    got = cf.cases()
    assert len(got) == len(cf.INSTRUCTIONS) * len(cf.BLOCKS) * 2
    for plain, pref in zip(got[::2], got[1::2]):
        assert plain[1:] == (pref[1], 0, pref[3]) and pref[2] == 1 and pref[0] == plain[0] + " +prefetch"


@pytest.mark.build
def test_code_fetch_kernels_build_as_straight_lines(cf, tmp_path):
    from harness import build
    result = build.build_all([cf.extension()], cache_root=tmp_path)["code_fetch"]
    assert result.ok, result.message
    names = [k.name for k in result.resources]
    for n in cf.INSTRUCTIONS:
        for p in ("Lb0", "Lb1"):
            assert any(f"straight_lineILi{n}E{p}" in name for name in names), (n, p, names)
    assert all(k.spill_stores == 0 for k in result.resources)


@pytest.mark.build
@pytest.mark.skipif(torch.cuda.is_available(), reason="the no-device exit is for machines without a GPU")
def test_code_fetch_without_a_gpu_builds_and_says_so(cf, capsys):
    assert cf.main([]) == 3
    assert "no CUDA device: its kernels are built" in capsys.readouterr().err


@pytest.mark.gpu
def test_code_fetch_measures_every_case_in_every_state(cf, tmp_path):
    """End to end on a GPU (no speed is asserted)."""
    out = tmp_path / "cf.json"
    assert cf.main(["--budget", "0.02", "--json", str(out)]) == 0
    data = __import__("json").loads(out.read_text())
    assert data["env"]["gpu"] and "commit" in data["env"]
    assert [r["row"] for r in data["rows"]] == ["empty-kernel"] + [c[0] for c in cf.cases()]
    assert all(r["states"][s]["n"] > 0 and r["states"][s]["median_us"] > 0
               for r in data["rows"] for s in ("cold", "warm-code", "hot"))
