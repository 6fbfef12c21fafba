"""The Triton variant (kernels/triton_two_stage.py): on the CPU through Triton's interpreter, every autotune
config against the float64 reference (float16 and float32); on the GPU, through the harness (bfloat16 too,
on every shape in test_gpu.py) and with autotuning kept out of the timed samples."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
VARIANT = REPO / "kernels" / "triton_two_stage.py"


@pytest.fixture(scope="module")
def interpreted():
    proc = subprocess.run([sys.executable, str(REPO / "tests" / "interpret_triton_variant.py")], cwd=REPO,
                          capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return [json.loads(line) for line in proc.stdout.splitlines()]


def test_every_config_is_correct_under_the_interpreter(interpreted):
    bad = [r for r in interpreted if r["status"] != "ok"]
    assert not bad, json.dumps(bad[:3], indent=1)


def test_the_interpreter_runs_cover_every_config_split_k_and_both_dtypes(interpreted):
    sys.path.insert(0, str(REPO))
    from harness import pyvariant
    module = pyvariant.load(VARIANT)
    seen = {c for r in interpreted for c in r["configs"]}
    every = {str(c) for c in module.LATENT_TC + module.LATENT_FP32 + module.UP_TC + module.UP_FP32}
    assert every <= seen
    assert {r["dtype"] for r in interpreted} == {"float16", "float32"}
    assert any(r["split_k"] > 1 for r in interpreted) and any(r["split_k"] == 1 for r in interpreted)


def test_split_k_only_when_the_latent_has_few_tiles():
    sys.path.insert(0, str(REPO))
    from harness import pyvariant
    module = pyvariant.load(VARIANT)
    assert module.split_k(4096, 512, 7168, 132) == 1      # DeepSeek-V3 prefill: 256 tiles
    assert module.split_k(1, 512, 7168, 132) == 8         # one token: 4 tiles, K 7168
    assert module.split_k(384, 48, 256, 132) == 1         # the seed: K too short to split
    assert module.split_k(512, 512, 7168, 132) == 4       # 32 tiles


def test_autotuning_benchmarks_each_config_briefly(monkeypatch):
    """Both autotuners time a config with 5 ms of warm-up and 25 ms of repeats (Triton's default 25 + 100 ms made
    a first call cost seconds); the benchmarker is the active driver's, whatever it is."""
    import triton
    sys.path.insert(0, str(REPO))
    from harness import pyvariant
    module = pyvariant.load(VARIANT)
    calls = []

    class Driver:
        def get_benchmarker(self):
            return lambda fn, **kwargs: calls.append(kwargs) or [1.0, 1.0, 1.0]

    monkeypatch.setattr(triton.runtime.driver, "_active", Driver(), raising=False)
    monkeypatch.setattr(type(triton.runtime.driver), "active", property(lambda self: Driver()), raising=False)
    for kernel in (module.latent_kernel, module.up_stack_kernel):
        assert kernel.do_bench(lambda: None, quantiles=(0.5, 0.2, 0.8)) == [1.0, 1.0, 1.0]
    assert calls == [{"warmup": 5, "rep": 25, "quantiles": (0.5, 0.2, 0.8)}] * 2


@pytest.mark.gpu
def test_autotuning_happens_in_the_first_call_not_in_the_timed_samples():
    """The harness's first call (prepare, timed as compile_s) tunes; the check and the timing add no entry to
    any autotuner's cache, so no config is benchmarked inside a timed sample."""
    import torch

    from harness import baselines, check
    from harness.problem import DTYPES, make_inputs
    from harness.records import Kind, Settings, Target
    from harness.shapes import preset
    from harness.worker import Rotation, make_instruments, time_task
    from harness import pyvariant
    module = pyvariant.load(VARIANT)
    target = Target("triton_two_stage", Kind.KERNEL, ("bfloat16",), str(VARIANT), pyvariant.module_name(VARIANT))
    shape = preset("deepseek-v2-lite")
    sets = [make_inputs(shape, DTYPES["bfloat16"], seed=s) for s in range(2)]
    forward, compile_s = baselines.prepare(target, shape, sets[0])
    tuned = {k: dict(k.cache) for k in (module.latent_kernel, module.up_stack_kernel)}
    assert compile_s > 0 and all(tuned.values())
    assert check.check_variant(forward, shape, "bfloat16").status == "ok"
    helper_plan = __import__("harness.runner", fromlist=["plan"]).plan([], [])
    helper = baselines.import_extension(helper_plan.targets[0].so_path, helper_plan.targets[0].module_name)
    settings = Settings(rounds=1)
    time_task(Rotation(forward, sets), make_instruments(helper, settings), settings)  # what a worker times with
    torch.cuda.synchronize()
    assert {k: dict(k.cache) for k in tuned} == tuned
