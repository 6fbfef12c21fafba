from pathlib import Path

import pytest

from harness import discover
from harness.errors import HeaderError, UsageError

REPO = Path(__file__).resolve().parent.parent


def write(tmp_path, name, text):
    path = tmp_path / f"{name}.cu"
    path.write_text(text)
    return path


def test_good_header(tmp_path):
    spec = discover.load_variant(write(tmp_path, "mine", "// summary: a tiled kernel\n// dtypes: float32, bfloat16\n"
                                       "// nvcc-flags: -Xptxas -v --use_fast_math\n// ldflags: -lcublas\n\nint x;\n"))
    assert spec.name == "mine"
    assert spec.summary == "a tiled kernel"
    assert spec.dtypes == ("float32", "bfloat16")
    assert spec.nvcc_flags == ("-Xptxas", "-v", "--use_fast_math")
    assert spec.ldflags == ("-lcublas",)


def test_no_header_defaults_to_float32(tmp_path):
    spec = discover.load_variant(write(tmp_path, "bare", "#include <x>\n// summary: not a header line any more\n"))
    assert spec.dtypes == ("float32",) and spec.summary == ""


@pytest.mark.parametrize("text, expected", [
    ("// sumary: typo\n", ":1: unknown header key 'sumary'"),
    ("// summary: ok\n// just a comment\n", ":2: malformed header line"),
    ("// dtypes: float64\n", ":1: dtypes 'float64' must be a comma list"),
    ("// summary: a\n// summary: b\n", ":2: header key 'summary' given twice"),
    ("// nvcc-flags: -DX='unclosed\n", ":1: cannot split nvcc-flags"),
])
def test_bad_header_names_file_and_line(tmp_path, text, expected):
    path = write(tmp_path, "bad", text)
    with pytest.raises(HeaderError) as err:
        discover.load_variant(path)
    assert str(path) in str(err.value) and expected in str(err.value)


def test_reserved_and_invalid_names(tmp_path):
    with pytest.raises(HeaderError, match="built-in row"):
        discover.load_variant(write(tmp_path, "eager", ""))
    with pytest.raises(HeaderError, match="C identifier"):
        discover.load_variant(write(tmp_path, "my-kernel", ""))


def test_select(tmp_path):
    paths = [write(tmp_path, n, "") for n in ("a", "b", "c")]
    assert discover.discover(tmp_path) == sorted(paths)
    assert discover.select(paths, "all") == paths
    assert [p.stem for p in discover.select(paths, "c,a,eager")] == ["c", "a"]
    assert [p.stem for p in discover.select(paths, "a,b,a")] == ["a", "b"]  # one build and one row each
    with pytest.raises(UsageError, match="unknown variant 'zz'; known: all, a, b, c"):
        discover.select(paths, "a,zz")


def test_shipped_kernels_have_valid_headers():
    for path in discover.discover(REPO / "kernels"):
        spec = discover.load_variant(path)
        assert spec.summary, f"{path} has no summary line"


def test_build_key_follows_shared_headers(tmp_path):
    from harness import build
    header = tmp_path / "common.cuh"
    header.write_text("#define TILE 16\n")
    src = build.ExtensionSource("v", '#include "common.cuh"\n', "", ("forward",), include_dirs=(str(tmp_path),))
    before = build.build_key(src, ("-gencode=arch=compute_90,code=sm_90",))
    header.write_text("#define TILE 32\n")
    after = build.build_key(src, ("-gencode=arch=compute_90,code=sm_90",))
    assert before != after
    (tmp_path / "notes.txt").write_text("not a header")
    assert build.build_key(src, ("-gencode=arch=compute_90,code=sm_90",)) == after


def test_python_variant_header_and_keys(tmp_path):
    path = tmp_path / "tri.py"
    path.write_text("# summary: a Triton kernel\n# dtypes: bfloat16\n\nimport torch\n")
    spec = discover.load_variant(path)
    assert (spec.name, spec.language, spec.summary, spec.dtypes) == ("tri", "python", "a Triton kernel", ("bfloat16",))
    cuda_only = tmp_path / "flags.py"
    cuda_only.write_text("# nvcc-flags: -O2\n")
    with pytest.raises(HeaderError, match="flags.py:1: unknown header key 'nvcc-flags' .*applies to .cu variants"):
        discover.load_variant(cuda_only)
    typo = tmp_path / "typo.py"
    typo.write_text("# sumary: x\n")
    with pytest.raises(HeaderError, match="typo.py:1: unknown header key 'sumary'"):
        discover.load_variant(typo)


def test_discover_finds_cuda_and_python_but_not_helpers(tmp_path):
    for name in ("a.cu", "b.py", "_shared.py", "common.cuh", "notes.txt"):
        (tmp_path / name).write_text("")
    assert [p.name for p in discover.discover(tmp_path)] == ["a.cu", "b.py"]


def test_two_files_of_one_name_are_a_usage_error(tmp_path):
    (tmp_path / "dup.cu").write_text("")
    (tmp_path / "dup.py").write_text("")
    with pytest.raises(UsageError, match="two variants named 'dup'"):
        discover.discover(tmp_path)
