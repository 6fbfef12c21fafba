import json

from harness import breakdown, render, report
from harness.records import Clocks, ErrorStats, Kind, Row, Status, Timing
from harness.resultfile import parse_result, read_result_file, write_result_file
from harness.shapes import SEED
from harness.roofline import Ceilings
from harness.stats import StoppingRule, summarize

CEILINGS = Ceilings(copy_gbps=4000.0, matmul_tflops={"float32": 50.0}, date="2026-11-29")
ENV = {"gpu": "NVIDIA H200", "gpu_key": "h200", "driver": "580", "cuda": "13.0", "torch": "2.11", "python": "3.12",
       "commit": "abc", "dirty": False, "date": "2026-11-29T00:00:00+00:00"}


def timing(values, noisy_rule=None):
    rule = noisy_rule or StoppingRule(noise_target=1.0)
    return Timing(summarize([values, values], rule), "blocked-events+flush", tuple(values * 2))


def row(name, gpu, call, kind=Kind.KERNEL, **kw):
    return Row(name, kind, SEED, "float32", Status.OK, error=ErrorStats(1e-6, 2e-7, 1e-5),
               gpu=timing([gpu] * 5), call=timing([call] * 5), **kw)


def result(rows):
    return report.result_dict(rows, ENV, {"cache": "cold-read", "rounds": 2}, CEILINGS, complete=True)


def test_speedups_against_eager_and_compile():
    res = result([row("eager", 30.0, 100.0, Kind.BASELINE), row("compile", 20.0, 50.0, Kind.BASELINE),
                  row("mine", 3.0, 10.0)])
    mine = next(r for r in res["rows"] if r["variant"] == "mine")
    assert mine["speedup"] == {"vs_eager": {"gpu": 10.0, "call": 10.0}, "vs_compile": {"gpu": 6.67, "call": 5.0},
                               "vs_torch_best": {"gpu": 6.67, "call": 5.0}}
    assert mine["gpu_us"]["median"] == 3.0 and mine["gpu_us"]["n"] == 10
    assert [r["variant"] for r in res["rows"]] == ["eager", "compile", "mine"]


def test_failed_row_has_no_speedup_and_message_in_table():
    bad = Row("broken", Kind.KERNEL, SEED, "float32", Status.WRONG, "error rel 1e-1 (limit 2e-05)")
    res = result([row("eager", 30.0, 100.0, Kind.BASELINE), bad])
    r = res["rows"][1]
    assert r["speedup"]["vs_eager"] == {"gpu": None, "call": None} and r["gpu_us"] is None
    assert "wrong: error rel 1e-1" in render.result_table(parse_result(res))


def test_roofline_and_below_floor_flag():
    res = result([row("eager", 30.0, 100.0, Kind.BASELINE), row("impossible", 0.01, 1.0)])
    r = res["rows"][1]["roofline"]
    assert r["bytes"] == 884736 and r["flops"] == 18874368
    assert r["floor_us"] == round(18874368 / 50e6, 4)  # FLOPs over the rate beat bytes over bandwidth here
    assert "below-floor" in res["rows"][1]["flags"]


def test_noisy_and_throttled_flags():
    noisy = Row("n", Kind.KERNEL, SEED, "float32", Status.OK, gpu=Timing(summarize([[1.0, 5.0, 9.0]], StoppingRule()),
                "blocked-events+flush", (1.0, 5.0, 9.0)), clocks=Clocks(900.0, 800.0, 1980.0))
    flags = result([noisy])["rows"][0]["flags"]
    assert "noisy" in flags and "throttled" in flags


def test_json_round_trip_and_markdown(tmp_path):
    res = result([row("eager", 30.0, 100.0, Kind.BASELINE), row("mine", 3.0, 10.0)])
    path = tmp_path / "r.json"
    write_result_file(path, res)
    back = read_result_file(path)
    assert back == json.loads(json.dumps(res))
    md = render.result_markdown(parse_result(back))
    assert md.startswith("GPU NVIDIA H200") and "| mine" in md and "10.00" in md


def test_torch_best_is_the_fastest_ok_torch_row_per_metric():
    """A kernel's speedup over the best a torch user gets without writing one: per metric, the fastest of
    eager, eager in a CUDA graph, torch.compile (both modes) and the two-GEMM rewrite; failed rows and the
    empty kernel do not count."""
    rows = [row("empty-kernel", 1.0, 2.0, Kind.FLOOR), row("eager", 30.0, 100.0, Kind.BASELINE),
            row("eager-graph", 28.0, 30.0, Kind.BASELINE), row("torch-2gemm", 20.0, 60.0, Kind.BASELINE),
            Row("compile-max-autotune", Kind.BASELINE, SEED, "float32", Status.CRASHED, "x"),
            row("mine", 10.0, 15.0)]
    mine = next(r for r in result(rows)["rows"] if r["variant"] == "mine")
    assert mine["speedup"]["vs_torch_best"] == {"gpu": 2.0, "call": 2.0}
    assert mine["torch_best"] == {"gpu": "torch-2gemm", "call": "eager-graph"}
    assert mine["speedup"]["vs_compile"] == {"gpu": None, "call": None}  # not run


def test_below_the_empty_kernel_is_flagged():
    """A call that launches a kernel cannot beat an empty launch: such a row launched nothing."""
    rows = [row("empty-kernel", 3.2, 4.0, Kind.FLOOR), row("eager", 30.0, 100.0, Kind.BASELINE),
            row("memoised", 1.3, 1.5), row("tiny", 3.1, 5.0)]
    res = {r["variant"]: r for r in result(rows)["rows"]}
    assert "below-floor" in res["memoised"]["flags"]
    assert "below-floor" not in res["tiny"]["flags"]  # within the two medians' noise of the empty kernel
    assert "below-floor" not in res["empty-kernel"]["flags"] and "below-floor" not in res["eager"]["flags"]
    hot = report.result_dict(rows, ENV, {"cache": "hot", "rounds": 2}, CEILINGS, complete=True)
    assert "below-floor" in next(r for r in hot["rows"] if r["variant"] == "memoised")["flags"]


def test_a_skipped_graph_check_shows_as_a_flag():
    res = result([row("eager", 30.0, 100.0, Kind.BASELINE), row("uncapturable", 3.0, 10.0,
                                                                 unchecked=("graph-replay",))])
    r = res["rows"][1]
    assert r["status"] == "ok" and "graph-unchecked" in r["flags"] and r["unchecked"] == ["graph-replay"]
    assert "graph-unchecked" in render.result_table(parse_result(res))


def test_a_call_that_raised_under_the_profiler_shows_as_a_flag():
    """The breakdown's profiled calls are the only ones that run with CUPTI tracing on; a call that raised there
    (a launch the driver refused) is a failure of the variant's, so the row says so, not just an empty cell."""
    rows = [row("eager", 30.0, 100.0, Kind.BASELINE), row("pdl_pair", 3.0, 10.0), row("plain", 3.0, 10.0),
            row("quiet", 3.0, 10.0)]
    one = breakdown.KernelTime("k", "kernel", 1, 2.5)
    breakdowns = {r.key(): b for r, b in zip(rows[1:], (
        breakdown.Breakdown("pdl_pair", SEED, "float32", (), 0,
                            breakdown.NOT_PROFILED + "AcceleratorError: CUDA error: invalid argument"),
        breakdown.Breakdown("plain", SEED, "float32", (one,), 5),
        breakdown.Breakdown("quiet", SEED, "float32", (), 5, "the profiler recorded no device activity")))}
    res = report.result_dict(rows, ENV, {"cache": "cold-read", "rounds": 2}, CEILINGS, complete=True,
                             breakdowns=breakdowns)
    by_name = {r["variant"]: r for r in res["rows"]}
    pair = by_name["pdl_pair"]
    assert "profile-failed" in pair["flags"] and "invalid argument" in pair["kernels"]["note"]
    assert "profile-failed" not in by_name["plain"]["flags"] + by_name["quiet"]["flags"] + by_name["eager"]["flags"]
    assert "profile-failed" in render.result_table(parse_result(res))
