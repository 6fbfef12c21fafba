"""scripts/probe_axis.sh: a copy of a variant with a tuning-axis header, beside the shared headers, handed to
run_bench.py (CPU only: a bad shape stops run_bench.py before anything builds)."""
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from harness import discover

REPO = Path(__file__).resolve().parent.parent
SCRIPT = REPO / "scripts" / "probe_axis.sh"
pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")


def probe(*args, probe_dir=None):
    env = {"PATH": "/usr/bin:/bin", "PYTHON": sys.executable}
    if probe_dir is not None:
        env["PROBE_DIR"] = str(probe_dir)
    return subprocess.run(["bash", str(SCRIPT), *args], cwd=REPO, capture_output=True, text=True, env=env)


def test_the_copy_declares_the_axis_and_finds_its_headers(tmp_path):
    proc = probe("two_stage", "MLA_GEMM1_SPLIT_CAP=8,64", "--shape", "no-such-shape", probe_dir=tmp_path)
    assert proc.returncode == 2 and "unknown shape 'no-such-shape'" in proc.stderr  # run_bench.py's usage error
    spec = discover.load_variant(tmp_path / "two_stage.cu")
    assert spec.axes == (("MLA_GEMM1_SPLIT_CAP", ("8", "64")),)
    original = discover.load_variant(REPO / "kernels" / "two_stage.cu")
    assert spec.dtypes == original.dtypes and spec.summary == original.summary
    assert {p.name for p in (REPO / "kernels").glob("*.cuh")} <= {p.name for p in tmp_path.iterdir()}
    # the rest of the file is the variant, unchanged
    copied = (tmp_path / "two_stage.cu").read_text().splitlines()
    assert [ln for ln in copied if not ln.startswith("// axes:")] == (REPO / "kernels" / "two_stage.cu").read_text().splitlines()


@pytest.mark.parametrize("args, fragment", [
    (("no_such_variant", "X=1"), "kernels/no_such_variant.cu: no such CUDA variant"),
    (("two_stage",), "usage: scripts/probe_axis.sh"),
])
def test_bad_arguments_exit_2_with_one_line(args, fragment):
    proc = probe(*args)
    assert proc.returncode == 2 and fragment in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
