"""Tuning axes: the header value, the combinations and their names, CI's choice, the fastest combination."""
import pytest

from harness import axes, discover
from harness.errors import HeaderError
from harness.resultfile import ResultRow, TimingStats
from harness.shapes import SEED, preset


def test_parse_and_expand_in_header_order():
    parsed = axes.parse_axes("BM=64,128; STAGES=3,4", "f.cu:3")
    assert parsed == (("BM", ("64", "128")), ("STAGES", ("3", "4")))
    combos = axes.combinations("tiled", parsed)
    assert [c.name for c in combos] == ["tiled[BM=64,STAGES=3]", "tiled[BM=64,STAGES=4]",
                                         "tiled[BM=128,STAGES=3]", "tiled[BM=128,STAGES=4]"]
    assert combos[1].defines == ("-DBM=64", "-DSTAGES=4")
    assert combos[1].build_name == "tiled__BM64_STAGES4" and combos[1].build_name.isidentifier()
    assert axes.combinations("plain", ()) == [axes.Combination("plain")]
    assert axes.Combination("plain").name == "plain" and axes.Combination("plain").defines == ()


def test_values_that_are_not_identifiers_still_make_module_names():
    (combo,) = axes.combinations("v", axes.parse_axes("SCALE=1.5", "x"))
    assert combo.name == "v[SCALE=1.5]" and combo.defines == ("-DSCALE=1.5",)
    assert combo.build_name.isidentifier()


@pytest.mark.parametrize("value, fragment", [
    ("BM", "must be NAME=v1,v2"),
    ("9BM=1", "must be NAME=v1,v2"),
    ("BM=", "needs values"),
    ("BM=1,$x", "bad '$x'"),
    ("BM=1,1", "repeats a value"),
    ("BM=1; BM=2", "given twice"),
    (" ; ", "axes is empty"),
])
def test_bad_axes_name_the_line(value, fragment):
    with pytest.raises(HeaderError) as err:
        axes.parse_axes(value, "k.cu:3")
    assert str(err.value).startswith("k.cu:3: ") and fragment in str(err.value)


def test_header_key_reaches_the_spec(tmp_path):
    path = tmp_path / "tiled.cu"
    path.write_text("// summary: s\n// axes: TILE=16,32\n\nint x;\n")
    assert discover.load_variant(path).axes == (("TILE", ("16", "32")),)
    bad = tmp_path / "bad.cu"
    bad.write_text("// axes: TILE\n")
    with pytest.raises(HeaderError, match="bad.cu:1: axis 'TILE'"):
        discover.load_variant(bad)


def test_ci_builds_every_combination_only_when_few():
    few = axes.parse_axes("A=1,2; B=3,4", "x")                 # 4 combinations
    many = axes.parse_axes("A=1,2,3; B=3,4", "x")              # 6 combinations
    assert len(axes.ci_combinations("v", few)) == 4
    assert [c.name for c in axes.ci_combinations("v", many)] == ["v[A=1,B=3]"]
    assert axes.describe(many) == "A=1,2,3; B=3,4 (6 builds)"


def test_split_row_name():
    assert axes.split_row_name("tiled[BM=64,STAGES=3]") == ("tiled", {"BM": "64", "STAGES": "3"})
    assert axes.split_row_name("torch-2gemm") == ("torch-2gemm", {})
    assert axes.split_row_name("eager") == ("eager", {})


def _row(name, status="ok", gpu=None, shape=SEED, dtype="float32"):
    return ResultRow(name, "kernel", shape, dtype, status, gpu=None if gpu is None else TimingStats(median=gpu))


def test_best_combination_is_the_fastest_correct_one_per_shape_and_dtype():
    big = preset("deepseek-v2-lite")
    rows = [_row("t[BM=64]", gpu=10.0), _row("t[BM=128]", gpu=8.0), _row("t[BM=256]", status="wrong"),
            _row("t[BM=64]", gpu=50.0, shape=big), _row("t[BM=128]", gpu=70.0, shape=big),
            _row("t[BM=256]", status="build-failed", shape=big),
            _row("plain", gpu=1.0), _row("eager", gpu=0.5)]
    best = {(b.variant, b.shape.name): b for b in axes.best_combinations(rows)}
    assert set(best) == {("t", "seed"), ("t", "deepseek-v2-lite")}
    assert best["t", "seed"].best == "t[BM=128]" and best["t", "seed"].gpu_us == 8.0
    assert (best["t", "seed"].ok_combinations, best["t", "seed"].combinations) == (2, 3)
    assert best["t", "deepseek-v2-lite"].best == "t[BM=64]"


def test_no_best_when_no_combination_is_correct():
    assert axes.best_combinations([_row("t[BM=64]", status="wrong"), _row("t[BM=128]", status="crashed")]) == []
