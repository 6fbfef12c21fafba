"""GPU tests: every variant in kernels/ is correct on every preset and on odd shapes (run on the H200)."""
from pathlib import Path

import pytest

from harness import discover, runner
from harness.records import Kind, Settings, Status, Task
from harness.shapes import PRESET_NAMES, parse_shapes, preset
from harness.stats import StoppingRule

REPO = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.gpu
ODD_SHAPES = [
    "b=1,s=1,d=7,rank=1,heads=1,head_dim=24",        # one token, rank 1
    "b=3,s=37,d=129,rank=33,heads=3,head_dim=24",    # nothing a multiple of 8 or 16
    "b=2,s=5,d=1,rank=17,heads=5,head_dim=13",       # d 1, odd head_dim
    "b=5,s=77,d=300,rank=1,heads=2,head_dim=64",     # rank 1 with many rows
    "b=1,s=1,d=7168,rank=512,heads=128,head_dim=128",  # one token at DeepSeek-V3 size
    "b=7,s=129,d=520,rank=72,heads=6,head_dim=40",
]
SHAPES = [preset(n) for n in PRESET_NAMES] + [s for spec in ODD_SHAPES for s in parse_shapes(spec)]
SMALL = [preset("seed"), preset("deepseek-v2-lite")] + [s for spec in ODD_SHAPES[:3] for s in parse_shapes(spec)]
KERNEL_NAMES = [p.stem for p in discover.discover(REPO / "kernels")]


@pytest.fixture(scope="session")
def plan():
    return runner.plan(discover.discover(REPO / "kernels"), [])


@pytest.fixture(scope="session")
def rows(plan):
    """Check-only run of every kernel: float32 on all shapes; bf16/fp16 on a few where supported."""
    settings = Settings(time=False, timing_so=plan.targets[0].so_path, timing_module=plan.targets[0].module_name)
    tasks = [Task(s, "float32") for s in SHAPES] + [Task(s, d) for s in SMALL for d in ("bfloat16", "float16")]
    collected = []
    kernels = runner.Plan([t for t in plan.targets if t.kind == Kind.KERNEL], plan.rows)
    runner.run(kernels, tasks, settings, collected.append, row_timeout_s=300)
    return collected


@pytest.mark.parametrize("name", KERNEL_NAMES)
def test_variant_correct_everywhere(rows, name):
    mine = [r for r in rows if r.variant == name and r.status != "unsupported"]
    assert any(r.dtype == "float32" for r in mine)
    bad = [f"{r.shape.label()} {r.dtype}: {r.status} {r.message}" for r in mine if r.status != Status.OK]
    assert not bad, "\n".join(bad)


def test_float32_covers_every_shape(rows):
    for name in KERNEL_NAMES:
        covered = {r.shape for r in rows if r.variant == name and r.dtype == "float32"}
        assert covered == set(SHAPES), name


def test_empty_kernel_gpu_time_is_device_time_not_launch_cost(plan):
    """Events around a lone call measure the host's launch too (~19 us on the H200); in the default cold mode
    the same events see only the device's few microseconds. (The flush alone keeps the device ahead of the
    host here, so this passes without the blocker too: the hot-mode test below is the blocker's.)"""
    import torch
    from harness import baselines, timing
    from harness.stats import StoppingRule, median

    floor = next(t for t in plan.targets if t.kind == Kind.FLOOR)
    helper = baselines.import_extension(floor.so_path, floor.module_name)
    rule = StoppingRule(budget_s=0.3)
    naive = timing.GpuTime(helper, flush=None, batch=1)
    naive.blocked = False
    blocked = timing.GpuTime(helper, flush=timing.L2Flush())
    blocked.warm_up(helper.empty_launch)
    naive_us = median(timing.measure(naive, helper.empty_launch, rule).samples_us)
    blocked_us = median(timing.measure(blocked, helper.empty_launch, rule).samples_us)
    torch.cuda.synchronize()
    assert blocked_us < 6.0 and blocked_us < 0.5 * naive_us, (blocked_us, naive_us)


class NoOpBlocker:
    """The timing extension with blocker_hold and blocker_release stubbed out."""

    def __init__(self, helper):
        self.helper = helper

    def __getattr__(self, name):
        return getattr(self.helper, name)

    def blocker_hold(self, handle, timeout_s):
        pass

    def blocker_release(self, handle):
        pass


def test_blocking_kernel_hides_a_host_heavy_call_when_the_l2_is_hot(plan):
    """Where the blocker matters: no flush between calls, and a call that spends 50 us on the host before it
    launches an empty kernel. Behind the blocker the events see the kernel alone; with hold/release stubbed
    out they see the host's 50 us. (In the cold modes the flush keeps the device busy instead, so a stub
    would not show there.)"""
    import time

    from harness import baselines, timing
    from harness.stats import StoppingRule, median

    floor = next(t for t in plan.targets if t.kind == Kind.FLOOR)
    helper = baselines.import_extension(floor.so_path, floor.module_name)
    host_us = 50.0

    def host_heavy_call():
        until = time.perf_counter() + host_us * 1e-6
        while time.perf_counter() < until:
            pass
        helper.empty_launch()

    rule = StoppingRule(budget_s=0.3)
    blocked, stubbed = timing.GpuTime(helper, flush=None), timing.GpuTime(NoOpBlocker(helper), flush=None)
    blocked.warm_up(host_heavy_call)
    blocked_us = median(timing.measure(blocked, host_heavy_call, rule).samples_us)
    stubbed_us = median(timing.measure(stubbed, host_heavy_call, rule).samples_us)
    assert blocked.blocked, "the blocker timed out"
    assert blocked_us < 0.3 * host_us < 0.8 * host_us < stubbed_us, (blocked_us, stubbed_us)


def test_persisting_l2_is_reset_before_timing(plan):
    """A persisting-L2 window keeps lines through the flush; the reset the worker does before timing clears
    the stream's window and the limit."""
    import torch
    from harness import baselines

    floor = next(t for t in plan.targets if t.kind == Kind.FLOOR)
    helper = baselines.import_extension(floor.so_path, floor.module_name)
    data = torch.empty(1 << 20, dtype=torch.uint8, device="cuda")
    with torch.cuda.stream(torch.cuda.Stream()):
        helper.set_persisting_l2(data.numel(), data.data_ptr(), data.numel())  # 1 MiB: under any device's maximum
        assert helper.persisting_l2_state()[1] == data.numel() and helper.persisting_l2_state()[0] > 0
        assert helper.reset_persisting_l2()
        assert list(helper.persisting_l2_state()) == [0, 0]


def test_torch_baselines_check_and_time(plan):
    """eager in a CUDA graph and torch.compile in both modes, through the worker's own row function: checked
    ok (their graph outputs exempt from the new-memory rule), timed (cold, warm, call), with their setup
    times, and not taken for tampering. In this process, so that max-autotune can be limited to cuBLAS
    here (its Triton autotuning takes minutes; the CUDA graphs it adds are what the harness must handle)."""
    import torch
    from torch._inductor import config as inductor_config
    from harness import baselines, worker

    targets = [t for t in plan.targets if t.name in ("eager-graph", "compile", "compile-max-autotune")]
    assert len(targets) == 3
    floor = next(t for t in plan.targets if t.kind == Kind.FLOOR)
    settings = Settings(rounds=1, rule=StoppingRule(budget_s=0.1), call_rule=StoppingRule(min_samples=20, budget_s=0.1))
    helper = baselines.import_extension(floor.so_path, floor.module_name)
    with worker.exact_float32(), torch.cuda.stream(torch.cuda.Stream()), \
            inductor_config.patch(max_autotune_gemm_backends="ATEN"):
        tools = worker.make_instruments(helper, settings)
        for target in targets:
            row = worker.run_task(target, Task(preset("seed"), "float32"), settings, tools)
            row = worker.judge_tampering(row, tools)
            assert row.status == Status.OK, (row.variant, row.message)
            assert row.compile_s > 0 and row.gpu.summary.median > 0 and row.gpu_warm.summary.median > 0
            assert row.call.calls_per_sample >= 1


def test_floor_row_through_the_runner(plan):
    floor = next(t for t in plan.targets if t.kind == Kind.FLOOR)
    settings = Settings(rounds=1, timing_so=floor.so_path, timing_module=floor.module_name)
    got = []
    runner.run_target(floor, [Task(preset("seed"), "float32")], settings, got.append, row_timeout_s=120)
    (row,) = got
    assert row.status == Status.OK and row.gpu.method.startswith("blocked"), row
    assert row.gpu.summary.n >= 30 and row.call.summary.n >= 20
