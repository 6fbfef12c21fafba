"""Every kernels/* variant builds (CUDA: compiles, links and imports; Python: imports) through the harness's
own build path (CPU is enough), with ptxas's resource report kept for each CUDA build.

Tuning axes multiply builds; CI (this test) builds every combination of a variant with at most
axes.CI_ALL_COMBINATIONS_UP_TO combinations, and only the first combination of a variant with more."""
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from harness import axes, cubin, discover, runner
from harness.records import Kind

REPO = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.build


@pytest.fixture(scope="module")
def kernels_plan():
    return runner.plan(discover.discover(REPO / "kernels"), [], combinations=axes.ci_combinations)


def test_every_kernel_builds(kernels_plan):
    specs = [discover.load_variant(p) for p in discover.discover(REPO / "kernels")]
    assert specs, "no kernels/* variants found"
    expected = {c.name for s in specs for c in
                (axes.ci_combinations(s.name, s.axes) if s.language == "cuda" else [axes.Combination(s.name)])}
    built = {t.name for t in kernels_plan.targets if t.kind == Kind.KERNEL}
    assert not kernels_plan.rows and built == expected
    for target in kernels_plan.targets:
        assert Path(target.so_path).exists()


def test_every_cuda_build_has_a_ptxas_report(kernels_plan):
    """nvcc runs through harness/cuda/nvcc_log.sh, which keeps ptxas -v's report beside the build."""
    cuda = [t for t in kernels_plan.targets if t.kind == Kind.KERNEL and t.so_path.endswith(".so")]
    assert cuda
    for target in cuda:
        kernels = kernels_plan.resources[target.name]
        assert kernels, f"{target.name}: no ptxas report"
        assert all(k.registers > 0 and k.arch.startswith("sm_") for k in kernels), kernels
        (image,) = cubin.fatbins(target.so_path)  # what the driver would load on a GPU
        assert int.from_bytes(image[:4], "little") == cubin.FATBIN_MAGIC


def test_no_cuda_build_keeps_an_object_shared_with_other_extensions(kernels_plan):
    """A function-local static in a non-static inline function of kernels/*.cuh is one object across every
    extension of the process: fused_tiled's cluster-count cache once made a second build of it skip its own
    kernel's shared-memory attribute, and its launch failed in the profiling process (results/NOTES.md,
    2026-12-06 fifth). Such helpers are `static inline` (see kv::dev_info)."""
    cuda = [t for t in kernels_plan.targets if t.kind == Kind.KERNEL and t.so_path.endswith(".so")]
    assert cuda
    shared = {t.name: names for t in cuda if (names := cubin.shared_statics(t.so_path))}
    assert not shared, f"process-wide objects (make their functions static inline): {shared}"


# torch's umbrella headers: the whole C++ frontend, and every ATen operator (README, "Writing a variant")
UMBRELLA_HEADERS = ("torch/extension.h", "torch/all.h", "torch/types.h", "ATen/ATen.h")


def compiled_headers(build_dir: Path) -> set[str]:
    """Every header the build's objects compiled, as ninja recorded them (its `deps` log)."""
    deps = subprocess.run([shutil.which("ninja") or "ninja", "-C", str(build_dir), "-t", "deps"],
                          capture_output=True, text=True, check=True).stdout
    return {line.strip() for line in deps.splitlines() if line.startswith(" ")}


def test_no_cuda_build_compiles_an_umbrella_header(kernels_plan):
    """kernels/ include the tensor API header by header (kernels/kv_common.cuh) and the harness's binding file
    does too (build.BINDING_PRELUDE), so no build compiles torch/extension.h or ATen/ATen.h: they cost each
    build minutes of one core (a variant's main.cpp 48 s against 16 s, a small .cu 153 s against 33 s)."""
    cuda = [t for t in kernels_plan.targets if t.kind == Kind.KERNEL and t.so_path.endswith(".so")]
    assert cuda
    compiled = {t.name: compiled_headers(Path(t.so_path).parent) for t in cuda}
    assert all(compiled.values()), f"ninja recorded no headers: {[n for n, hs in compiled.items() if not hs]}"
    heavy = {name: sorted(h for h in headers if h.endswith(UMBRELLA_HEADERS)) for name, headers in compiled.items()}
    assert not any(heavy.values()), heavy


def test_a_missing_operator_header_gets_a_hint_naming_it():
    """nvcc's words for an ATen name whose header is missing become a hint naming the header; errors of any other
    kind get none (the no-header case is tests/adversarial/no_includes.cu)."""
    from harness.build import include_hint
    source = '#include "kv_common.cuh"\n'
    assert include_hint(source, 'v.cu(9): error: namespace "at" has no member "zeros"') == \
        "hint: at::zeros is declared in <ATen/ops/zeros.h> (README, Writing a variant)"
    torch_name = include_hint(source, 'v.cu(9): error: namespace "torch" has no member "empty"')
    assert "torch::empty is at::empty, declared in <ATen/ops/empty.h>" in torch_name
    assert "<torch/types.h>" in include_hint(source, 'v.cu(9): error: namespace "torch" has no member "Tensor"')
    assert include_hint(source, 'v.cu(9): error: namespace "at" has no member "no_such_op"') == ""
    assert include_hint("at::Tensor forward();\n", "v.cu(1): error: expected an expression") != ""
    assert include_hint(source + "at::Tensor forward();\n", "v.cu(1): error: expected an expression") == ""


def shared_library(tmp_path, source: str):
    """`source` (C++) built by g++ into a shared library, for the process-wide-object detector."""
    src, so = tmp_path / "lib.cpp", tmp_path / "lib.so"
    src.write_text(source)
    subprocess.run(["g++", "-shared", "-fPIC", "-O1", "-o", str(so), str(src)], check=True)
    return so


def test_shared_statics_finds_a_static_of_an_inline_function(tmp_path):
    """The detector itself, on a small library: the inline function's static is found, the static inline
    function's and a library namespace's are not."""
    so = shared_library(tmp_path,
                        "namespace mine { inline int& shared() { static int n = 0; return n; }\n"
                        "static inline int& own() { static int m = 0; return m; } }\n"
                        "namespace std { inline int& lib() { static int k = 0; return k; } }\n"
                        "int use() { return mine::shared() + mine::own() + std::lib(); }\n")
    assert cubin.shared_statics(so) == ["mine::shared()::n"]


def test_shared_statics_judges_a_guard_variable_by_the_object_it_guards(tmp_path):
    """A template's static member with a dynamic initializer comes with a `guard variable for …` symbol: a
    library's (every build on the lent H100s holds 40 of libstdc++'s locale-facet guards) is left out like the
    member itself, and the variant's own member is named once, not once more as its guard."""
    so = shared_library(tmp_path,
                        "namespace std { int init(); template <class T> struct facet { static int id; };\n"
                        "template <class T> int facet<T>::id = init(); }\n"
                        "namespace mine { int init(); template <class T> struct cache { static int id; };\n"
                        "template <class T> int cache<T>::id = init(); }\n"
                        "int use() { return std::facet<char>::id + mine::cache<char>::id; }\n")
    assert cubin.shared_statics(so) == ["mine::cache<char>::id"]


def test_cli_without_gpu_builds_and_reports_not_run(tmp_path):
    import torch
    if torch.cuda.is_available():
        pytest.skip("this test is the no-GPU path")
    out = tmp_path / "r.json"
    cmd = [sys.executable, "run_bench.py", "--kernels", "tests/adversarial", "--variant", "correct_neighbour",
           "--json", str(out)]
    proc = subprocess.run(cmd,
                          cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[0] == "no CUDA device: building every selected variant, running none"
    assert "correct_neighbour" in proc.stdout and "not-run: no CUDA device" in proc.stdout
    assert out.exists()


def test_a_fresh_build_with_a_process_wide_object_is_warned_of(tmp_path, caplog):
    """The build stage says so when a library holds a process-wide object (the author's loop, not only CI)."""
    from harness import build
    so = shared_library(tmp_path,
                        "namespace mine { inline int& shared() { static int n = 0; return n; } }\n"
                        "int use() { return mine::shared(); }\n")
    with caplog.at_level("WARNING", logger=build.log.name):
        build.warn_shared_statics("lib", str(so))
    assert "lib: 1 object(s) one per process" in caplog.text and "mine::shared()::n" in caplog.text
