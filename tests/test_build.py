"""Every kernels/*.cu compiles, links and imports through the harness's own build path (CPU is enough)."""
import subprocess
import sys
from pathlib import Path

import pytest

from harness import build, discover, runner

REPO = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.build


def test_every_kernel_builds():
    specs = [discover.load_variant(p) for p in discover.discover(REPO / "kernels")]
    assert specs, "no kernels/*.cu found"
    sources = [runner.timing_extension()] + [runner.variant_extension(s) for s in specs]
    results = build.build_all(sources)
    failed = {name: r.message for name, r in results.items() if not r.ok}
    assert not failed, f"build failed: {failed}"
    for r in results.values():
        assert Path(r.so_path).exists()


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
