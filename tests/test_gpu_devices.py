"""Several GPUs for real (the two-GPU H200 machine): a pinned process sees its GPU alone, the probe finds a
healthy GPU healthy, and a run over every GPU puts each group on one of them. Skips below two GPUs."""
import json
import subprocess
import sys
from pathlib import Path

import fake_workers
import pytest

from harness import runner
from harness.devices import visible_devices

REPO = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def gpus():
    found = visible_devices()
    if len(found) < 2:
        pytest.skip(f"needs two GPUs, this machine has {len(found)}")
    return found


def test_a_pinned_process_sees_its_gpu_alone(gpus):
    ctx = runner.worker_context()  # as the workers are started: forked from the preloaded server
    for gpu in gpus:
        proc, q = runner._spawn(ctx, "view", fake_workers.reports_its_cuda_view, device=gpu)
        try:
            count, uuid = q.get(timeout=120)[1]
        finally:
            runner._stop(proc)
        assert count == 1 and uuid in gpu.uuid, (gpu, count, uuid)


def test_the_probe_finds_each_gpu_working(gpus):
    assert [runner.probe_device(gpu) for gpu in gpus] == [None] * len(gpus)


def test_a_run_over_every_gpu(gpus, tmp_path):
    out = tmp_path / "all.json"
    cmd = [sys.executable, "run_bench.py", "--kernels", "tests/adversarial", "--variant", "correct_neighbour",
           "--shape", "seed", "--tokens", "64", "--dtype", "float32,bfloat16", "--baselines", "eager",
           "--budget", "0.1", "--rounds", "1", "--devices", "all", "--json", str(out)]
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=1200)
    assert out.exists(), proc.stderr[-3000:]
    result = json.loads(out.read_text())
    ran = [r for r in result["rows"] if r["device"]]
    assert ran and {r["status"] for r in ran} == {"ok"}, proc.stderr[-3000:]
    groups = {}
    for r in ran:
        groups.setdefault((r["shape"]["name"], r["dtype"]), set()).add(r["device"]["uuid"])
    assert all(len(uuids) == 1 for uuids in groups.values())
    assert len(set().union(*groups.values())) == 2  # two groups, two GPUs
    assert {d["uuid"] for d in result["devices"]} == set().union(*groups.values())
    assert all(d["ceilings"] and d["ceilings"]["copy_gbps"] > 0 for d in result["devices"])
    assert "wall time" in proc.stdout
