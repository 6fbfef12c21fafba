"""Every kernels/* variant builds (CUDA: compiles, links and imports; Python: imports) through the harness's
own build path (CPU is enough), with ptxas's resource report kept for each CUDA build.

Tuning axes multiply builds; CI (this test) builds every combination of a variant with at most
axes.CI_ALL_COMBINATIONS_UP_TO combinations, and only the first combination of a variant with more."""
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
