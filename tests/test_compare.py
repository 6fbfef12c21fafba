"""The regression gate on doctored copies of one result file.

Every case is derived from the `base_result` fixture, not from hard-coded numbers, so
the placeholder tests/data/result_small.json can be swapped for a real H200 run.
"""
import copy
from pathlib import Path

import pytest

from harness.compare import DEFAULT_FLOOR, NOT_COMPARED, Verdict, compare_files, compare_results
from harness.errors import CompareRefused
from harness.render import comparison_markdown as render_markdown, comparison_table as render_table
from harness.resultfile import parse_result, read_result_file, write_result_file

DATA_DIR = Path(__file__).parent / "data"
BASE_RESULT_FILE = DATA_DIR / "h200_run1.json"  # a real H200 run
REAL_RUNS = (DATA_DIR / "h200_run1.json", DATA_DIR / "h200_run2.json")


@pytest.fixture
def base_result() -> dict:
    return read_result_file(BASE_RESULT_FILE)


def compare(baseline: dict, current: dict, **kw):
    """The gate on two result dicts (doctored copies of a real file), read as compare reads files."""
    return compare_results(parse_result(baseline), parse_result(current), **kw)


# --- doctoring helpers -----------------------------------------------------------------

def same_key(row, other):
    return (row["variant"], row["shape"], row["dtype"]) == (other["variant"], other["shape"], other["dtype"])


def eager_of(result, row):
    return next(r for r in result["rows"] if r["variant"] == "eager"
                and r["shape"] == row["shape"] and r["dtype"] == row["dtype"])


def comparable(result, row):
    """An ok, quiet, compared row whose eager row is ok and quiet too."""
    if row["variant"] in NOT_COMPARED or row["status"] != "ok":
        return False
    eager = eager_of(result, row)
    timed = [row[k] for k in ("gpu_us", "call_us")] + [eager[k] for k in ("gpu_us", "call_us")]
    speedups = (row.get("speedup") or {}).get("vs_eager") or {}
    return all(t and not t["noisy"] for t in timed) and all(speedups.get(m) for m in ("gpu", "call"))


def gpu_noise(result, row):
    return (row["gpu_us"]["spread"] or 0) + (eager_of(result, row)["gpu_us"]["spread"] or 0)


def pick_row(result):
    """The comparable row with the least recorded gpu noise: doctored changes stand out."""
    candidates = [r for r in result["rows"] if comparable(result, r)]
    assert candidates, "the base result file has no comparable row"
    return min(candidates, key=lambda r: gpu_noise(result, r))


def find(result, row):
    return next(r for r in result["rows"] if same_key(r, row))


def scale_gpu_time(result, row, factor):
    """A copy of `result` whose `row` took `factor` times the gpu time, speedups recomputed."""
    result = copy.deepcopy(result)
    target = find(result, row)
    timing = target["gpu_us"]
    timing["median"] *= factor
    timing["rounds"] = [x * factor for x in timing["rounds"]]
    for reference, speedups in target["speedup"].items():
        ref_variant = reference.removeprefix("vs_")
        ref_row = next((r for r in result["rows"] if r["variant"] == ref_variant
                        and r["shape"] == row["shape"] and r["dtype"] == row["dtype"]), None)
        if speedups and ref_row and ref_row["gpu_us"]:
            speedups["gpu"] = ref_row["gpu_us"]["median"] / timing["median"]
    return result


def verdicts_of(comparison, row):
    return {r.metric: r for r in comparison.rows
            if (r.variant, r.shape_name, r.dtype) == (row["variant"], row["shape"]["name"], row["dtype"])}


def without_noisy_flags(result):
    result = copy.deepcopy(result)
    for row in result["rows"]:
        for key in ("gpu_us", "call_us"):
            if row.get(key):
                row[key]["noisy"] = False
    return result


# --- verdicts --------------------------------------------------------------------------

def test_unchanged_run_passes_all_same(base_result):
    comparison = compare(base_result, copy.deepcopy(base_result))
    assert comparison.exit_code == 0
    assert {r.verdict for r in comparison.rows} <= {Verdict.SAME, Verdict.NOISY}
    quiet = without_noisy_flags(base_result)
    rows = compare(quiet, copy.deepcopy(quiet)).rows
    compared = [r for r in base_result["rows"] if r["variant"] not in NOT_COMPARED]
    assert len(rows) == 2 * len(compared)
    assert {r.verdict for r in rows if r.metric == "gpu"} == {Verdict.SAME}
    # call latency is judged only where the device dominates it; host-bound rows say so
    for r in rows:
        if r.metric == "call":
            assert r.verdict == Verdict.SAME or (r.verdict == Verdict.NOISY and r.note.startswith("host-bound")), r


def test_eager_and_floor_rows_are_not_compared(base_result):
    variants = {r.variant for r in compare(base_result, base_result).rows}
    assert not variants & NOT_COMPARED
    assert {"compile", "torch-2gemm"} <= variants


def test_slower_row_fails_the_gate(base_result):
    row = pick_row(base_result)
    comparison = compare(base_result, scale_gpu_time(base_result, row, 1.30))
    gpu = verdicts_of(comparison, row)["gpu"]
    assert gpu.verdict == Verdict.SLOWER
    assert gpu.change == pytest.approx(1 / 1.30 - 1, rel=1e-2)  # speedups are stored to 3 digits
    assert verdicts_of(comparison, row)["call"].verdict == Verdict.SAME
    assert comparison.exit_code == 1
    assert [r.verdict for r in comparison.rows].count(Verdict.SLOWER) == 1


def test_faster_row_passes(base_result):
    row = pick_row(base_result)
    comparison = compare(base_result, scale_gpu_time(base_result, row, 1 / 1.30))
    gpu = verdicts_of(comparison, row)["gpu"]
    assert gpu.verdict == Verdict.FASTER
    assert gpu.change == pytest.approx(0.30, rel=1e-2)
    assert comparison.exit_code == 0


def test_threshold_is_floor_or_recorded_spread(base_result):
    row = pick_row(base_result)
    gpu = verdicts_of(compare(base_result, base_result), row)["gpu"]
    assert gpu.threshold == pytest.approx(max(DEFAULT_FLOOR, gpu_noise(base_result, row)))
    wide = verdicts_of(compare(base_result, base_result, floor=0.5), row)["gpu"]
    assert wide.threshold == 0.5


def test_change_within_recorded_spread_is_same(base_result):
    row = pick_row(base_result)
    current = scale_gpu_time(base_result, row, 1.20)
    find(current, row)["gpu_us"]["spread"] = 0.5  # that row's rounds disagreed by 50 %
    gpu = verdicts_of(compare(base_result, current), row)["gpu"]
    assert gpu.change < -DEFAULT_FLOOR
    assert gpu.threshold >= 0.5
    assert gpu.verdict == Verdict.SAME


def test_larger_floor_accepts_a_slower_row(base_result):
    row = pick_row(base_result)
    comparison = compare(base_result, scale_gpu_time(base_result, row, 1.30), floor=0.5)
    assert verdicts_of(comparison, row)["gpu"].verdict == Verdict.SAME
    assert comparison.exit_code == 0


def test_missing_and_new_rows(base_result):
    row = pick_row(base_result)
    without_row = copy.deepcopy(base_result)
    without_row["rows"] = [r for r in without_row["rows"] if not same_key(r, row)]
    missing = compare(base_result, without_row)
    assert {r.verdict for r in verdicts_of(missing, row).values()} == {Verdict.MISSING}
    assert missing.exit_code == 1  # a row the baseline has and the run lost fails the gate...
    assert compare(base_result, without_row, allow_missing=True).exit_code == 0  # ...unless allowed
    new = compare(without_row, base_result)
    assert {r.verdict for r in verdicts_of(new, row).values()} == {Verdict.NEW}
    assert new.exit_code == 0


def test_row_that_now_crashes_is_failed(base_result):
    row = pick_row(base_result)
    current = copy.deepcopy(base_result)
    find(current, row).update(status="crashed", message="CUDA error: an illegal memory access",
                              gpu_us=None, call_us=None, speedup=None, error=None)
    comparison = compare(base_result, current)
    rows = verdicts_of(comparison, row).values()
    assert {r.verdict for r in rows} == {Verdict.FAILED}
    assert all("crashed" in r.note for r in rows)
    assert comparison.exit_code == 1


def test_row_not_ok_in_both_files_is_same_with_its_status(base_result):
    row = pick_row(base_result)
    unsupported = copy.deepcopy(base_result)
    find(unsupported, row).update(status="unsupported", gpu_us=None, call_us=None, speedup=None)
    comparison = compare(unsupported, copy.deepcopy(unsupported))
    rows = verdicts_of(comparison, row).values()
    assert {r.verdict for r in rows} == {Verdict.SAME}
    assert all("unsupported" in r.note for r in rows)
    assert comparison.exit_code == 0
    now_ok = verdicts_of(compare(unsupported, base_result), row).values()
    assert {r.verdict for r in now_ok} == {Verdict.NEW}


def test_noisy_row_within_its_threshold_is_same(base_result):
    row = pick_row(base_result)
    current = copy.deepcopy(base_result)
    find(current, row)["gpu_us"]["noisy"] = True
    comparison = compare(base_result, current)
    verdicts = verdicts_of(comparison, row)
    assert verdicts["gpu"].verdict == Verdict.SAME
    assert "noisy: current" in verdicts["gpu"].note
    assert comparison.exit_code == 0


def test_noisy_row_much_slower_fails_the_gate(base_result):
    """A noisy flag widens the threshold; it does not excuse a 3x slowdown."""
    row = pick_row(base_result)
    current = scale_gpu_time(base_result, row, 3.0)
    find(current, row)["gpu_us"]["noisy"] = True
    comparison = compare(base_result, current)
    gpu = verdicts_of(comparison, row)["gpu"]
    assert gpu.verdict == Verdict.SLOWER and "noisy: current" in gpu.note
    assert comparison.exit_code == 1


def test_a_power_capped_row_is_judged_and_its_note_says_which_side_was_capped(base_result):
    """The flag explains a verdict; it does not excuse one: a 3x slowdown still fails the gate."""
    row = pick_row(base_result)
    assert "power-capped" not in verdicts_of(compare(base_result, base_result), row)["gpu"].note
    current = scale_gpu_time(base_result, row, 3.0)
    find(current, row)["flags"] = [*find(current, row).get("flags", []), "power-capped"]
    eager_of(base_result, row)["flags"] = [*eager_of(base_result, row).get("flags", []), "power-capped"]
    comparison = compare(base_result, current)
    gpu = verdicts_of(comparison, row)["gpu"]
    assert gpu.verdict == Verdict.SLOWER and "power-capped: baseline eager, current" in gpu.note
    assert comparison.exit_code == 1


def test_noisy_row_between_its_threshold_and_twice_that_is_noisy(base_result):
    row = pick_row(base_result)
    threshold = verdicts_of(compare(base_result, base_result), row)["gpu"].threshold
    current = scale_gpu_time(base_result, row, 1 / (1 - 1.5 * threshold))  # change = -1.5 x threshold
    eager_of(current, row)["gpu_us"]["noisy"] = True
    gpu = verdicts_of(compare(base_result, current), row)["gpu"]
    assert gpu.verdict == Verdict.NOISY and "current eager" in gpu.note
    quiet = verdicts_of(compare(base_result, scale_gpu_time(base_result, row, 1 / (1 - 1.5 * threshold))), row)
    assert quiet["gpu"].verdict == Verdict.SLOWER  # the same change on quiet rows fails


def test_missing_speedup_of_an_ok_row_is_noisy(base_result):
    row = pick_row(base_result)
    current = copy.deepcopy(base_result)
    find(current, row)["speedup"]["vs_eager"]["gpu"] = None
    comparison = compare(base_result, current)
    assert verdicts_of(comparison, row)["gpu"].verdict == Verdict.NOISY
    assert comparison.exit_code == 0


# --- environment -----------------------------------------------------------------------

def test_different_gpu_is_refused_unless_forced(base_result):
    current = copy.deepcopy(base_result)
    current["env"]["gpu"] = "NVIDIA H100 80GB HBM3"
    with pytest.raises(CompareRefused) as refused:
        compare(base_result, current)
    message = str(refused.value)
    assert base_result["env"]["gpu"] in message and "NVIDIA H100 80GB HBM3" in message
    assert "\n" not in message
    forced = compare(base_result, current, force=True)
    assert forced.exit_code == 0
    assert any("NVIDIA H100 80GB HBM3" in note for note in forced.notes)


def test_version_changes_are_noted_not_refused(base_result):
    current = copy.deepcopy(base_result)
    current["env"].update(driver="590.10.01", torch="2.12.0+cu130")
    notes = compare(base_result, current).notes
    assert f"driver {base_result['env']['driver']} -> 590.10.01" in notes
    assert f"torch {base_result['env']['torch']} -> 2.12.0+cu130" in notes
    assert not any(note.startswith("cuda") for note in notes)


def test_interrupted_baseline_is_noted_and_interrupted_current_is_refused(base_result):
    interrupted = copy.deepcopy(base_result)
    interrupted["complete"] = False
    assert any("interrupted" in note for note in compare(interrupted, base_result).notes)
    with pytest.raises(CompareRefused, match="the current run is incomplete"):
        compare(base_result, interrupted)


def test_files_with_no_row_in_common_are_refused(base_result):
    """A run at another --tokens shares no row with the baseline: the gate would compare nothing."""
    other_tokens = copy.deepcopy(base_result)
    for row in other_tokens["rows"]:
        if row["shape"]["name"] != "seed":
            row["shape"]["s"] = 512
    only_large = copy.deepcopy(base_result)
    only_large["rows"] = [r for r in only_large["rows"] if r["shape"]["name"] != "seed"]
    with pytest.raises(CompareRefused, match="no row in common") as refused:
        compare(only_large, {**other_tokens, "rows": [r for r in other_tokens["rows"] if r["shape"]["s"] == 512]})
    assert "deepseek-v2-lite s=4096" in str(refused.value) and "deepseek-v2-lite s=512" in str(refused.value)
    assert compare(base_result, other_tokens, allow_missing=True).exit_code == 0  # the seed rows are shared


def test_compare_files_reads_both_files(base_result, tmp_path):
    row = pick_row(base_result)
    write_result_file(tmp_path / "base.json", base_result)
    write_result_file(tmp_path / "slow.json", scale_gpu_time(base_result, row, 1.30))
    assert compare_files(tmp_path / "base.json", tmp_path / "base.json").exit_code == 0
    assert compare_files(tmp_path / "base.json", tmp_path / "slow.json").exit_code == 1


# --- rendering -------------------------------------------------------------------------

def test_render_table_and_markdown_show_verdicts_and_change(base_result):
    row = pick_row(base_result)
    comparison = compare(base_result, scale_gpu_time(base_result, row, 1.30))
    slower = verdicts_of(comparison, row)["gpu"]
    change = f"{slower.change * 100:+.1f}"
    for text in (render_table(comparison), render_markdown(comparison)):
        assert "SLOWER" in text and "SAME" in text
        assert change in text
        assert "gate FAILED" in text
    markdown = render_markdown(comparison)
    assert "1 SLOWER" in markdown
    assert base_result["env"]["gpu"] in markdown
    assert markdown.index("| SLOWER") < markdown.index("| SAME")  # worst rows first
    assert "| variant" in markdown


def test_render_markdown_escapes_pipes_in_notes(base_result):
    row = pick_row(base_result)
    current = copy.deepcopy(base_result)
    find(current, row).update(status="error", message="bad | value\nsecond line",
                              gpu_us=None, call_us=None, speedup=None)
    markdown = render_markdown(compare(base_result, current))
    assert "error: bad \\| value second line" in markdown


# --- real runs (once tests/data/h200_run*.json exist) ----------------------------------

@pytest.mark.skipif(not all(p.exists() for p in REAL_RUNS), reason="no real H200 runs in tests/data yet")
def test_two_real_runs_of_the_same_code_pass():
    comparison = compare_files(*REAL_RUNS)
    assert comparison.exit_code == 0, render_table(comparison)


def test_a_changed_source_is_noted(base_result):
    row = pick_row(base_result)
    before, after = copy.deepcopy(base_result), scale_gpu_time(base_result, row, 1.30)
    for data, build in ((before, "v_aaaa"), (after, "v_bbbb")):
        for r in data["rows"]:
            r["build"] = build
    gpu = verdicts_of(compare(before, after), row)["gpu"]
    assert gpu.verdict == Verdict.SLOWER and gpu.note == "source changed"
    same = verdicts_of(compare(before, before), row)["gpu"]
    assert same.note == ""


# --- eager, host-bound call latency, rows left out by choice -----------------------------

def test_eager_that_fails_now_fails_the_gate(base_result):
    """Without eager no speedup exists: a timed-out eager must not turn a 3x slowdown into NOISY, exit 0."""
    row = pick_row(base_result)
    current = scale_gpu_time(base_result, row, 3.0)
    eager = eager_of(current, row)
    eager.update(status="timed-out", message="no answer within 600 s (hang?)", gpu_us=None, call_us=None)
    for other in current["rows"]:
        if (other["shape"], other["dtype"]) == (row["shape"], row["dtype"]):
            other["speedup"] = {"vs_eager": {"gpu": None, "call": None}}
    comparison = compare(base_result, current)
    assert comparison.exit_code == 1
    failed = [r for r in comparison.rows if r.variant == "eager"]
    assert [(r.metric, r.verdict) for r in failed] == [("status", Verdict.FAILED)]
    assert "timed-out: no answer within 600 s" in failed[0].note
    assert "FAILED" in render_table(comparison)


def test_eager_missing_beside_its_rows_fails_the_gate(base_result):
    row = pick_row(base_result)
    current = copy.deepcopy(base_result)
    current["rows"] = [r for r in current["rows"] if r is not eager_of(current, row)]
    comparison = compare(base_result, current, allow_missing=True)
    assert comparison.exit_code == 1
    assert any(r.variant == "eager" and r.verdict == Verdict.FAILED and "missing" in r.note for r in comparison.rows)


def device_bound_row(result):
    """A comparable row whose call latency and its eager row's are both device-bound."""
    def bound(r):
        return r["call_us"]["median"] <= 1.25 * r["gpu_us"]["median"]
    rows = [r for r in result["rows"] if comparable(result, r) and bound(r) and bound(eager_of(result, r))]
    assert rows, "the base result file has no device-bound row"
    return rows[0]


def test_host_noise_in_eager_is_not_a_speedup(base_result):
    """eager's call latency rose (host-bound on a busier CPU) while the row's own times did not move: the
    row's call speedup rises with it, but that is the host, not the kernel: NOISY, not FASTER."""
    row = device_bound_row(base_result)
    current = copy.deepcopy(base_result)
    eager = eager_of(current, row)
    eager["call_us"]["median"] = eager["gpu_us"]["median"] * 1.65
    mine = find(current, row)
    mine["speedup"]["vs_eager"]["call"] = eager["call_us"]["median"] / mine["call_us"]["median"]
    call = verdicts_of(compare(base_result, current), row)["call"]
    assert call.change > 0.3
    assert call.verdict == Verdict.NOISY and "current eager" in call.note


def test_call_latency_judged_against_warm_gpu_time(base_result):
    """Call latency runs with a warm L2: the device-bound test uses the warm GPU time where recorded."""
    row = device_bound_row(base_result)
    current = copy.deepcopy(base_result)
    mine = find(current, row)
    mine["speedup"]["vs_eager"]["call"] *= 0.5  # a real call-latency regression...
    assert verdicts_of(compare(base_result, current), row)["call"].verdict == Verdict.SLOWER
    mine["gpu_warm_us"] = dict(mine["gpu_us"], median=mine["call_us"]["median"] / 2)  # ...but host-bound when warm
    assert verdicts_of(compare(base_result, current), row)["call"].verdict == Verdict.NOISY


def test_host_part_of_a_device_bound_call_widens_its_threshold(base_result):
    """Two runs of one commit on one H200: the host's part of a device-bound call (call - warm GPU time) went from
    8 % to 19 % of the call and the call speedup moved 14 %, beyond the 10 % floor. That is the host, judged
    against the host shares of the row and its eager row; a change beyond those shares is still SLOWER."""
    row = device_bound_row(base_result)
    baseline, current = copy.deepcopy(base_result), copy.deepcopy(base_result)
    for data, mine_share, eager_share in ((baseline, 0.08, 0.13), (current, 0.19, 0.11)):
        mine, eager = find(data, row), eager_of(data, row)
        for r, share in ((mine, mine_share), (eager, eager_share)):
            warm = (r.get("gpu_warm_us") or r["gpu_us"])["median"]
            r["call_us"] = dict(r["call_us"], median=warm / (1 - share), spread=0.0)
        eager["call_us"] = dict(eager["call_us"], spread=0.0)
        mine["speedup"]["vs_eager"]["call"] = eager["call_us"]["median"] / mine["call_us"]["median"]
    call = verdicts_of(compare(baseline, current), row)["call"]
    assert -0.2 < call.change < -0.1 and call.threshold >= 0.19 + 0.11 - 1e-9
    assert call.verdict == Verdict.SAME
    find(current, row)["speedup"]["vs_eager"]["call"] *= 0.6  # the call 1.7x slower than the host shares allow
    assert verdicts_of(compare(baseline, current), row)["call"].verdict == Verdict.SLOWER


def test_rows_left_out_by_choice_are_skipped(base_result):
    """--baselines / --variant leave rows out on purpose: SKIPPED, not MISSING, and the kernel rows are judged."""
    row = pick_row(base_result)
    current = copy.deepcopy(base_result)
    current["rows"] = [r for r in current["rows"] if r["variant"] not in ("compile", "two_stage")]
    kernels = sorted({r["variant"] for r in current["rows"] if r["kind"] == "kernel"})
    current["settings"].update(variants=kernels, baselines=["empty-kernel", "eager", "torch-2gemm"])
    comparison = compare(base_result, current)
    verdicts = {(r.variant, r.verdict) for r in comparison.rows}
    assert ("compile", Verdict.SKIPPED) in verdicts and ("two_stage", Verdict.SKIPPED) in verdicts
    assert Verdict.MISSING not in {r.verdict for r in comparison.rows}
    if row["variant"] not in ("compile", "two_stage"):
        assert verdicts_of(comparison, row)["gpu"].verdict == Verdict.SAME
    assert comparison.exit_code == 0
    del current["settings"]["variants"]  # a file that does not say what it selected: the rows are missing
    assert compare(base_result, current).exit_code == 1
def test_a_combination_of_a_selected_file_is_missing_not_skipped(base_result):
    """`settings.variants` lists files; a row of one combination of a file's tuning axes, NAME[TILE=16],
    belongs to the file NAME: missing from a run that selected NAME, it is MISSING; from one that did not,
    SKIPPED."""
    baseline = copy.deepcopy(base_result)
    for row in baseline["rows"]:
        if row["variant"] == "two_stage":
            row["variant"] = "two_stage[TILE=16]"
    current = copy.deepcopy(baseline)
    current["rows"] = [r for r in current["rows"] if r["variant"] != "two_stage[TILE=16]"]
    kernels = sorted({r["variant"] for r in current["rows"] if r["kind"] == "kernel"})
    baselines = sorted({r["variant"] for r in current["rows"] if r["kind"] != "kernel"})
    current["settings"].update(variants=[*kernels, "two_stage"], baselines=baselines)
    verdicts = {r.verdict for r in compare(baseline, current).rows if r.variant == "two_stage[TILE=16]"}
    assert verdicts == {Verdict.MISSING}
    current["settings"]["variants"] = kernels
    verdicts = {r.verdict for r in compare(baseline, current).rows if r.variant == "two_stage[TILE=16]"}
    assert verdicts == {Verdict.SKIPPED}


# --- spills (schema 2 resource reports) ------------------------------------------------------------------

def with_resources(result, spills: dict[str, int]):
    """A schema-2 copy whose `resources` has one kernel per variant, spilling `spills[variant]` bytes."""
    result = copy.deepcopy(result)
    result["schema"] = 2
    result["resources"] = {name: {"build": f"{name}_abc", "driver": None, "kernels": [
        {"name": f"_Z6{name[:6]:<6}v", "arch": "sm_90a", "registers": 255 if n else 96, "static_smem": 0,
         "stack": n, "spill_stores": n, "spill_loads": n}]} for name, n in spills.items()}
    return result


def test_a_variant_that_newly_spills_is_flagged_not_gated(base_result):
    base = with_resources(base_result, {"two_stage": 0, "fused_tiled": 64})
    current = with_resources(base_result, {"two_stage": 32, "fused_tiled": 64})
    comparison = compare(base, current)
    assert len(comparison.spills) == 1 and comparison.spills[0].startswith("two_stage newly spills: ")
    assert "32 B stores, 32 B loads per thread" in comparison.spills[0]
    assert comparison.exit_code == 0  # the timing decides the gate
    assert f"SPILLS: {comparison.spills[0]}" in render_table(comparison)
    assert "**spills**: two_stage newly spills" in render_markdown(comparison)


def test_spills_against_a_baseline_without_resource_reports(base_result):
    comparison = compare(base_result, with_resources(base_result, {"two_stage": 16, "fused_tiled": 0}))
    assert comparison.spills == (
        "two_stage spills (the baseline has no resource report): two_st (sm_90a): 16 B stores, 16 B loads per thread",)
    assert compare(base_result, with_resources(base_result, {"two_stage": 0})).spills == ()


def test_committed_schema_1_baselines_still_compare():
    for path in (*REAL_RUNS, Path(__file__).resolve().parent.parent / "results" / "h200" / "baseline.json"):
        comparison = compare_files(path, REAL_RUNS[0])
        assert comparison.rows and comparison.spills == ()
