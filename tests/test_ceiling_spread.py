"""scripts/ceiling_spread.py: without a GPU it says so (exit 3) and writes nothing; its per-call rates are each
call's own (the measurement itself needs the GPU)."""
import subprocess
import sys
from pathlib import Path

import pytest
import torch

REPO = Path(__file__).resolve().parent.parent


@pytest.mark.skipif(torch.cuda.is_available(), reason="this test is the no-GPU path")
def test_without_a_gpu_it_says_so_and_writes_nothing(tmp_path):
    out = tmp_path / "c.json"
    proc = subprocess.run([sys.executable, "scripts/ceiling_spread.py", "--json", str(out)], cwd=REPO,
                          capture_output=True, text=True)
    assert proc.returncode == 3
    assert proc.stderr.strip() == "ceiling_spread: needs a CUDA GPU"
    assert not out.exists()


def test_an_unknown_dtype_is_refused():
    proc = subprocess.run([sys.executable, "scripts/ceiling_spread.py", "--dtype", "int8"], cwd=REPO,
                          capture_output=True, text=True)
    assert proc.returncode == 2 and "invalid choice" in proc.stderr
