"""`// includes: cutlass`: header parsing, where the headers are found, and a clear build failure without them."""
from pathlib import Path
from types import SimpleNamespace

import pytest

from harness import build, discover, includes, runner
from harness.errors import HeaderError, HeaderLibraryMissing
from harness.records import Status, Task
from harness.shapes import preset

VERSION_H = "#define CUTLASS_MAJOR {0}\n#define CUTLASS_MINOR {1}\n#define CUTLASS_PATCH {2} \n"


def cutlass_tree(root: Path, version=(4, 2, 0), util=True) -> Path:
    """A fake CUTLASS header tree: include/cutlass/version.h and (optionally) tools/util/include/."""
    (root / "include" / "cutlass").mkdir(parents=True)
    (root / "include" / "cutlass" / "version.h").write_text(VERSION_H.format(*version))
    if util:
        (root / "tools" / "util" / "include").mkdir(parents=True)
    return root


def package_at(package_dir: Path):
    """A find_spec stand-in that finds the nvidia-cutlass package (cutlass_library) at package_dir."""
    def find_spec(name):
        assert name == "cutlass_library"
        return SimpleNamespace(submodule_search_locations=[str(package_dir)])
    return find_spec


def no_package(name):
    return None


def test_header_key_parses_and_rejects_unknown_libraries(tmp_path):
    ok = tmp_path / "v.cu"
    ok.write_text("// summary: s\n// dtypes: bfloat16\n// includes: cutlass\n\nint x;\n")
    assert discover.load_variant(ok).includes == ("cutlass",)
    plain = tmp_path / "p.cu"
    plain.write_text("// summary: s\n")
    assert discover.load_variant(plain).includes == ()
    for bad in ("// includes: cutlas\n", "// includes: cutlass, eigen\n", "// includes:  \n"):
        path = tmp_path / "bad.cu"
        path.write_text(bad)
        with pytest.raises(HeaderError, match=r"bad.cu:1: includes '.*' must be a comma list of cutlass"):
            discover.load_variant(path)


def test_package_found_when_no_variable(tmp_path):
    source = cutlass_tree(tmp_path / "site" / "cutlass_library" / "source", version=(4, 2, 1))
    lib = includes.resolve("cutlass", environ={}, find_spec=package_at(source.parent))
    assert lib.version == "4.2.1"
    assert lib.include_dirs == (str(source / "include"), str(source / "tools" / "util" / "include"))
    assert lib.found_by == "the nvidia-cutlass package"


def test_variable_wins_over_package(tmp_path):
    package = cutlass_tree(tmp_path / "site" / "cutlass_library" / "source")
    carried = cutlass_tree(tmp_path / "carried", version=(3, 9, 2))
    lib = includes.resolve("cutlass", environ={includes.CUTLASS_ENV: str(carried)},
                           find_spec=package_at(package.parent))
    assert lib.version == "3.9.2" and lib.include_dirs[0] == str(carried / "include")


def test_relative_variable_resolves_from_the_working_directory(tmp_path, monkeypatch):
    cutlass_tree(tmp_path / "third_party" / "cutlass")
    monkeypatch.chdir(tmp_path)
    lib = includes.resolve("cutlass", environ={includes.CUTLASS_ENV: "third_party/cutlass"}, find_spec=no_package)
    assert lib.include_dirs[0] == str(tmp_path / "third_party" / "cutlass" / "include")


def test_wrong_variable_is_an_error_not_a_fall_through(tmp_path):
    package = cutlass_tree(tmp_path / "site" / "cutlass_library" / "source")
    (tmp_path / "empty").mkdir()
    with pytest.raises(HeaderLibraryMissing, match="KVBENCH_CUTLASS_DIR=.*empty.*version.h"):
        includes.resolve("cutlass", environ={includes.CUTLASS_ENV: str(tmp_path / "empty")},
                         find_spec=package_at(package.parent))


def test_incomplete_tree_names_what_is_missing(tmp_path):
    root = cutlass_tree(tmp_path / "c", util=False)
    with pytest.raises(HeaderLibraryMissing, match=r"tools/util/include missing"):
        includes.resolve("cutlass", environ={includes.CUTLASS_ENV: str(root)}, find_spec=no_package)


def test_missing_everywhere_says_how_to_install(tmp_path):
    with pytest.raises(HeaderLibraryMissing) as err:
        includes.resolve("cutlass", environ={}, find_spec=no_package)
    message = str(err.value)
    assert "pip install --no-deps nvidia-cutlass==4.2.0.0" in message and "KVBENCH_CUTLASS_DIR" in message
    assert "\n" not in message


def test_version_h_without_version_fields_is_refused():
    with pytest.raises(HeaderLibraryMissing, match="not a CUTLASS header tree"):
        includes.cutlass_version("#define CUTLASS_MAJOR 4\n")


def test_build_key_follows_version_and_folder_not_header_contents(tmp_path):
    src = build.ExtensionSource("v", "int x;", "", ("forward",), header_libraries=("cutlass",))
    archs = ("-gencode=arch=compute_90a,code=sm_90a",)
    root = cutlass_tree(tmp_path / "a")
    lib = includes.resolve("cutlass", environ={includes.CUTLASS_ENV: str(root)}, find_spec=no_package)
    key = build.build_key(src, archs, (lib,))
    (root / "include" / "cutlass" / "gemm.h").write_text("// edited")  # contents are not hashed
    assert build.build_key(src, archs, (lib,)) == key
    newer = includes.HeaderLibrary("cutlass", "4.3.0", lib.include_dirs, lib.found_by)
    moved = includes.HeaderLibrary("cutlass", lib.version, ("/elsewhere/include",), lib.found_by)
    assert len({key, build.build_key(src, archs, (newer,)), build.build_key(src, archs, (moved,)),
                build.build_key(src, archs)}) == 4


def test_missing_headers_make_build_failed_rows_not_a_crash(tmp_path, monkeypatch):
    """Through runner.plan: the variant's rows are build-failed with the one-line install hint; others build."""
    kernels = tmp_path / "kernels"
    kernels.mkdir()
    (kernels / "needs_cutlass.cu").write_text("// summary: s\n// dtypes: bfloat16\n// includes: cutlass\n\n")
    (kernels / "plain.cu").write_text("// summary: s\n\n")
    (tmp_path / "empty").mkdir()
    monkeypatch.setenv(includes.CUTLASS_ENV, str(tmp_path / "empty"))
    real_build_one = build.build_one

    def build_one(src, cache_root):  # compile nothing: everything but the header lookup succeeds
        if src.header_libraries:
            return real_build_one(src, cache_root)
        return build.BuildResult(src.name, ok=True, so_path="/nowhere.so", module_name=src.name)

    monkeypatch.setattr(build, "build_one", build_one)
    monkeypatch.setattr(build, "check_toolchain", lambda cuda_home: None)
    tasks = [Task(preset("seed"), "bfloat16"), Task(preset("seed"), "float32")]
    plan = runner.plan(discover.discover(kernels), tasks, cache_root=tmp_path / "cache")
    assert "plain" in [t.name for t in plan.targets]
    assert [r.variant for r in plan.rows] == ["needs_cutlass", "needs_cutlass"]
    for row in plan.rows:
        assert row.status == Status.BUILD_FAILED and "\n" not in row.message
        assert "needs_cutlass.cu: CUTLASS headers from KVBENCH_CUTLASS_DIR=" in row.message
        assert "pip install --no-deps nvidia-cutlass==4.2.0.0" in row.message
    assert not (tmp_path / "cache").exists() or not any((tmp_path / "cache").iterdir())


def test_list_finds_the_build_of_a_variant_with_header_libraries(tmp_path, monkeypatch):
    """`list` computes the build key a run uses, header libraries included: a cached build is `cached`;
    without the headers the run would fail the build, and the listing says `no headers`."""
    from harness import catalog
    kernels = tmp_path / "kernels"
    kernels.mkdir()
    (kernels / "needs_cutlass.cu").write_text("// summary: s\n// dtypes: bfloat16\n// includes: cutlass\n\n")
    monkeypatch.setenv("TORCH_CUDA_ARCH_LIST", "9.0a")
    monkeypatch.setenv(includes.CUTLASS_ENV, str(cutlass_tree(tmp_path / "cutlass")))
    src = runner.variant_extension(discover.load_variant(kernels / "needs_cutlass.cu"))
    folder = tmp_path / "cache" / f"{src.name}_{build.build_key(src, build.arch_flags(), build.resolve_libraries(src))}"
    (entry,) = catalog.catalog(kernels, tmp_path / "cache")
    assert entry.build == "not built"
    folder.mkdir(parents=True)
    (folder / f"{folder.name}.so").write_bytes(b"")  # what a finished build leaves
    (entry,) = catalog.catalog(kernels, tmp_path / "cache")
    assert entry.build == "cached"
    monkeypatch.setenv(includes.CUTLASS_ENV, str(tmp_path / "nowhere"))
    (entry,) = catalog.catalog(kernels, tmp_path / "cache")
    assert entry.build == "no headers"


def test_standalone_nvcc_flags_carry_everything_the_build_gives_nvcc(tmp_path, monkeypatch):
    """scripts/nvcc_flags.py (ptxas reports, the CUTLASS subset) compiles outside load_inline: its flags hold each
    include folder and nvcc flag the build hands load_inline, the variant's own flags and CUTLASS's folders."""
    kernels = tmp_path / "kernels"
    kernels.mkdir()
    (kernels / "v.cu").write_text("// summary: s\n// dtypes: bfloat16\n// nvcc-flags: -DFOO=3\n"
                                  "// includes: cutlass\n\n")
    monkeypatch.setenv(includes.CUTLASS_ENV, str(cutlass_tree(tmp_path / "cutlass")))
    src = runner.variant_extension(discover.load_variant(kernels / "v.cu"))
    seen = {}

    def load_inline(**kwargs):  # what the build hands torch, captured instead of compiled
        seen.update(kwargs)
        raise RuntimeError("not compiled")

    import torch.utils.cpp_extension as cpp_extension
    monkeypatch.setattr(cpp_extension, "load_inline", load_inline)
    (tmp_path / "cache").mkdir()
    result = build._build_locked(src, ("-gencode=arch=compute_90a,code=sm_90a",), build.resolve_libraries(src),
                                 "v_key", tmp_path / "cache")
    assert not result.ok and seen["extra_include_paths"] and seen["extra_cuda_cflags"]
    flags = build.standalone_nvcc_flags(src)
    for folder in seen["extra_include_paths"]:
        assert f"-I{folder}" in flags
    for flag in seen["extra_cuda_cflags"]:
        assert flag in flags or flag.startswith("-gencode")
    assert str(tmp_path / "cutlass" / "tools" / "util" / "include") in " ".join(flags)
    for flag in (*cpp_extension.COMMON_NVCC_FLAGS, "-DFOO=3", f"-std={build.CXX_STD}"):
        assert flag in flags
    assert not any(f.startswith("-gencode") or f.startswith("-arch") for f in flags)  # the caller's choice


def test_nvcc_flags_script_prints_one_line_or_exits_2(tmp_path, monkeypatch, capsys):
    import script_module
    nvcc_flags = script_module.load("nvcc_flags")
    variant = tmp_path / "v.cu"
    variant.write_text("// summary: s\n// dtypes: bfloat16\n// nvcc-flags: -DFOO=3\n// includes: cutlass\n\n")
    monkeypatch.setenv(includes.CUTLASS_ENV, str(cutlass_tree(tmp_path / "cutlass")))
    assert nvcc_flags.main([str(variant)]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and "-DFOO=3" in out and f"-I{tmp_path}" in out
    monkeypatch.setenv(includes.CUTLASS_ENV, str(tmp_path / "nowhere"))
    assert nvcc_flags.main([str(variant)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("nvcc_flags.py: CUTLASS headers from KVBENCH_CUTLASS_DIR=") and err.count("\n") == 1
    assert nvcc_flags.main([str(tmp_path / "missing.cu")]) == 2
    assert nvcc_flags.main([]) == 2
