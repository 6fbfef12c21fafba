"""GPU tests: every variant in kernels/ is correct on every preset and on odd shapes (run on the H200)."""
import concurrent.futures
import os
import threading
from pathlib import Path

import pytest

from harness import discover, runner
from harness.records import Kind, Settings, Status, Task
from harness.shapes import PRESET_NAMES, parse_shapes, preset
from harness.stats import StoppingRule
from selected_kernels import kernels_used

REPO = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.gpu
CHECK_WORKERS = max(1, min(16, os.cpu_count() or 1))  # check-only worker processes per kernel at once
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
# Every dispatch path of the bf16/fp16 tensor-core engine (kernels/mla_tc.cuh): decode tiles (M <= 128: one row
# tile, up to 64 k-splits) and prefill tiles (M > 128: 128-row tiles, few splits), partial row / k / latent tiles,
# rank below one 256-column tile, and the shapes it must decline (N % 256 != 0, d or rank not a multiple of 8).
TC_SHAPES = [preset("deepseek-v3", t) for t in (64, 512, 4096)] + [preset("minicpm3", 64), preset("kimi-k2", 64)] + [
    s for spec in (
        # two_stage's decode GEMM1 split in clusters (two_stage.cuh's g1_cluster_size): DeepSeek-V3 / MiniCPM3 64 and
        # M = 1 below take 8 CTAs a cluster, kimi-k2 64 takes 16; here 33 k-steps in 8 splits of 5 (the last one empty)
        # and a 136-wide latent (the second 128-column tile 8 columns wide)
        "b=1,s=7,d=2056,rank=136,heads=2,head_dim=128",
        "b=1,s=1,d=7168,rank=512,heads=128,head_dim=128",  # M = 1 at DeepSeek-V3 size (the most k-splits)
        "b=3,s=50,d=1000,rank=96,heads=2,head_dim=128",    # M = 150: two row tiles, the second partial
        "b=1,s=200,d=264,rank=40,heads=4,head_dim=64",     # k tails in both products, latent tile mostly empty
        "b=2,s=33,d=512,rank=64,heads=6,head_dim=128",     # N = 768 (k|v boundary inside the list of tiles)
        # two_stage_pp's ping-pong GEMM2 (M > 128, 128 x 128 tiles, 6-stage ring shared by two consumers):
        "b=2,s=2000,d=64,rank=16,heads=16,head_dim=128",   # one k-step per tile (ring wraps over ~8 tiles per CTA);
                                                           # last row tile 32 rows: its lower 64-row boxes skipped
        "b=1,s=1380,d=200,rank=136,heads=16,head_dim=128",  # 3 k-steps with a tail, 2-3 tiles per CTA (odd and
                                                            # even counts); last row tile ends inside its lower half
        # 1252 GEMM2 tiles (313 row tiles x 4 column tiles) on at most 132 CTAs: 9-10 tiles a CTA, so each
        # consumer's turns and its epilogue staging wrap many times (3 k-steps with a tail); GEMM1 unsplit, its
        # latent TMA-stored with the second column tile 8 wide and the last row tile half full (both clipped)
        "b=2,s=20000,d=64,rank=136,heads=2,head_dim=128",
        # its CTA pairs (w_up >= 25 MB: 512 x 32768 here): one pair on two row tiles, the second 72 rows
        "b=1,s=200,d=64,rank=512,heads=128,head_dim=128",
        # fused_tiled's one-launch decode path (mla_decode.cuh, M <= 64): N = 384 (128-column units, k | v inside
        # the unit list; the engine declines N % 256); M = 64 with 17 k-steps in 8 ranks of 3 (the last two empty),
        # a 200-wide latent (4 GEMM1 clusters, the last 8 columns wide) and 10 units on 32 CTAs
        "b=1,s=5,d=512,rank=64,heads=3,head_dim=128",
        "b=4,s=16,d=1032,rank=200,heads=5,head_dim=128",
        "b=1,s=70,d=260,rank=64,heads=2,head_dim=128",     # d % 8 != 0: declined, SIMT path
        "b=1,s=70,d=256,rank=64,heads=3,head_dim=40",      # N % 256 != 0: declined, SIMT path
    ) for s in parse_shapes(spec)]
KERNEL_SOURCES = discover.discover(REPO / "kernels")
KERNEL_NAMES = [p.stem for p in KERNEL_SOURCES]
KERNEL_DTYPES = {p.stem: discover.load_variant(p).dtypes for p in KERNEL_SOURCES}
# Dispatch paths of cutlass_2gemm, tf32x3 and fused_tiled (see their block comments) that the shapes above do
# not take (on a 132-SM H200).
# cutlass_2gemm's others: DeepSeek-V3 at 1/64/512/4096 tokens in TC_SHAPES (stream-K latent with 1, 4, 16, 128
# tiles; 64-row and 2x1-cluster up tiles), odd strides in SMALL (cuBLAS through torch).
PATH_SHAPES = {
    "cutlass_2gemm": [
        "b=3,s=43,d=136,rank=24,heads=3,head_dim=8",          # M = 129: first size past the 64-row up tiles
        "b=7,s=129,d=520,rank=72,heads=6,head_dim=40",        # partial tiles in M, N and K
    ],
    "fused_tiled": [  # SIMT small-M path (DIRECT) at its edges: partial first tile, one block per SM, BM 8
        "b=1,s=3,d=64,rank=16,heads=2,head_dim=8",            # M = 3 < BM = 4
        "b=4,s=132,d=48,rank=16,heads=1,head_dim=8",          # M = 528: 132 blocks of 4 rows, a partial octet
        "b=8,s=132,d=16,rank=16,heads=1,head_dim=8",          # M = 1056: 132 blocks of 8 rows (BM 4: 264 > 132 SMs)
        "b=1,s=7,d=12,rank=32,heads=2,head_dim=24",           # bf16/fp16 too (tensor cores decline d % 8)
    ],
    "tf32x3": [
        "b=2,s=2048,d=6001,rank=1099,heads=2,head_dim=13",    # tensor cores: odd K (scalar split), 2 rank slices
        "b=1,s=64,d=7168,rank=512,heads=128,head_dim=128",    # decode: SGEMM path
    ],
}


@pytest.fixture(scope="session")
def plan(request):
    """Built targets of the kernels the selected tests use (every kernel for the whole suite), plus the baselines."""
    used = kernels_used(request.session.items, KERNEL_NAMES)
    return runner.plan([p for p in KERNEL_SOURCES if p.stem in used], [])


def built_target(plan, name: str):
    """The plan's built target of this kernel; a failed build fails the test with the build's message."""
    target = next((t for t in plan.targets if t.name == name), None)
    assert target is not None, [r.message for r in plan.rows if r.variant == name][:1]
    return target


def check_in_parallel(target, tasks, settings, workers: int = CHECK_WORKERS) -> list:
    """Check-only rows of one target, its tasks dealt to `workers` worker processes at once. Nothing is timed,
    so they may share the GPU; a Triton variant's first call of each (shape, dtype) compiles and autotunes its
    configs on the CPU (~4 s a row on the H200 machine, 46 rows: the suite's longest test when serial)."""
    chunks = [tasks[i::workers] for i in range(workers) if tasks[i::workers]]
    rows, lock = [], threading.Lock()

    def collect(row):
        with lock:
            rows.append(row)

    with concurrent.futures.ThreadPoolExecutor(len(chunks)) as pool:
        for done in [pool.submit(runner.run_target, target, chunk, settings, collect, 300) for chunk in chunks]:
            done.result()
    return rows


@pytest.mark.parametrize("name", KERNEL_NAMES)
def test_variant_correct_everywhere(plan, name):
    """Check-only rows of one kernel (one test per kernel, so the suite's durations say which one is slow):
    float32 on every shape, bf16/fp16 on a few plus the tensor-core paths."""
    target = built_target(plan, name)
    settings = Settings(time=False, timing_so=plan.targets[0].so_path, timing_module=plan.targets[0].module_name)
    tasks = [Task(s, "float32") for s in SHAPES] + [Task(s, d) for s in SMALL + TC_SHAPES
                                                    for d in ("bfloat16", "float16")]
    mine = [t for t in tasks if t.dtype in target.dtypes]
    rows = check_in_parallel(target, mine, settings)
    assert len(rows) == len(mine), f"{name}: {len(mine) - len(rows)} row(s) missing"
    bad = [f"{r.shape.label()} {r.dtype}: {r.status} {r.message}" for r in rows if r.status != Status.OK]
    assert not bad, "\n".join(bad)
    if "float32" in KERNEL_DTYPES[name]:
        assert {r.shape for r in rows if r.dtype == "float32"} == set(SHAPES), name


@pytest.mark.parametrize("name", sorted(PATH_SHAPES))
def test_variant_correct_on_each_dispatch_path(plan, name):
    target = built_target(plan, name)
    settings = Settings(time=False, timing_so=plan.targets[0].so_path, timing_module=plan.targets[0].module_name)
    shapes = [s for spec in PATH_SHAPES[name] for s in parse_shapes(spec)]
    tasks = [Task(s, d) for s in shapes for d in target.dtypes]
    got = []
    runner.run_target(target, tasks, settings, got.append, row_timeout_s=300)
    assert len(got) == len(tasks)
    bad = [f"{r.shape.label()} {r.dtype}: {r.status} {r.message}" for r in got if r.status != Status.OK]
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_cutlass_2gemm_misaligned_inputs_fall_back(plan, dtype):
    """Contiguous views one element into their storage: TMA cannot take them; the result must still be right."""
    import torch
    from harness import baselines
    from harness.check import TOLERANCES, error_stats
    from harness.problem import DTYPES, make_inputs, reference_float64

    target = built_target(plan, "cutlass_2gemm")
    module = baselines.import_extension(target.so_path, target.module_name)
    (shape,) = parse_shapes("b=2,s=100,d=256,rank=64,heads=4,head_dim=32")
    inputs = make_inputs(shape, DTYPES[dtype], seed=5)

    def misaligned(t):
        storage = torch.empty(t.numel() + 1, dtype=t.dtype, device=t.device)
        view = storage[1:].view(t.shape)
        view.copy_(t)
        return view

    args = [misaligned(t) for t in inputs.tensors()]
    assert all(a.is_contiguous() and a.data_ptr() % 16 != 0 for a in args)
    out = module.forward(*args, shape.heads)
    stats = error_stats(out, reference_float64(shape, inputs))
    assert stats.within(TOLERANCES[dtype]), stats


@pytest.mark.parametrize("v_above_k", [True, False], ids=["v-above-k", "v-below-k"])
def test_cutlass_2gemm_up_projection_launches_follow_weight_order(plan, v_above_k):
    """k and v are one batched launch when w_up_v lies above w_up_k in memory (TMA strides are unsigned), two
    launches otherwise; right either way, on the small (M <= 128) and the large up-projection path."""
    import torch
    from harness import baselines, breakdown
    from harness.check import TOLERANCES, error_stats
    from harness.problem import DTYPES, make_inputs, reference_float64

    target = built_target(plan, "cutlass_2gemm")
    module = baselines.import_extension(target.so_path, target.module_name)
    for spec in ("b=1,s=64,d=512,rank=64,heads=4,head_dim=64", "b=2,s=300,d=512,rank=64,heads=4,head_dim=64"):
        (shape,) = parse_shapes(spec)
        inputs = make_inputs(shape, DTYPES["bfloat16"], seed=11)
        pair = torch.empty((2, *inputs.w_up_k.shape), dtype=inputs.w_up_k.dtype, device=inputs.w_up_k.device)
        k_slot, v_slot = (0, 1) if v_above_k else (1, 0)
        pair[k_slot].copy_(inputs.w_up_k)
        pair[v_slot].copy_(inputs.w_up_v)
        args = (inputs.hidden, inputs.w_down, pair[k_slot], pair[v_slot], shape.heads)
        stats = error_stats(module.forward(*args), reference_float64(shape, inputs))
        assert stats.within(TOLERANCES["bfloat16"]), (spec, stats)
        (launches,) = breakdown.parse_trace(breakdown.profile_calls(lambda: module.forward(*args), None, calls=1), 1)
        kernels = [launch.name for launch in launches if launch.kind == "kernel"]
        assert len(kernels) == (2 if v_above_k else 3), (spec, kernels)  # the latent GEMM, then k and v


@pytest.mark.parametrize("spec", [
    "b=1,s=64,d=4096,rank=512,heads=8,head_dim=128",    # decode: split-K latent, programmatic up-projection
    "b=1,s=1,d=7168,rank=512,heads=16,head_dim=128",    # one token, the longest split-K latent
    "b=1,s=600,d=2048,rank=256,heads=4,head_dim=64",    # M > 128: stream order (and 2x1-cluster up tiles)
], ids=["decode", "one-token", "mid"])
def test_cutlass_2gemm_up_projection_reads_this_calls_latent(plan, spec):
    """At decode sizes the up-projection starts before the latent GEMM ends (programmatic dependent launch): three
    calls on different inputs, back to back with no synchronization between them, each match their own
    reference. An up-projection that read the latent before this call's GEMM1 wrote it would see the previous
    call's (the allocator hands the same block to each), or garbage."""
    import torch
    from harness import baselines
    from harness.check import TOLERANCES, error_stats
    from harness.problem import DTYPES, make_inputs, reference_float64

    target = built_target(plan, "cutlass_2gemm")
    module = baselines.import_extension(target.so_path, target.module_name)
    (shape,) = parse_shapes(spec)
    calls = [make_inputs(shape, DTYPES["bfloat16"], seed=seed) for seed in (21, 22, 23)]
    torch.cuda.synchronize()
    outs = [module.forward(*inputs.tensors(), shape.heads) for inputs in calls]
    for inputs, out in zip(calls, outs):
        stats = error_stats(out, reference_float64(shape, inputs))
        assert stats.within(TOLERANCES["bfloat16"]), (spec, stats)


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


def test_clock_sampler_reads_power_and_clock_event_reasons_on_this_board():
    """Each row's clocks carry the board's power draw and how often the power limit held the clock down (the
    'power-capped' flag). On a Hopper board NVML reports both; a reading that silently came back None would
    leave every row without them."""
    import torch
    from harness.env import ClockSampler

    a = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    with ClockSampler(period_s=0.002) as sampler:
        for _ in range(200):
            a @ a
        torch.cuda.synchronize()
    clocks = sampler.clocks()
    assert clocks is not None and len(sampler.readings) >= 5, "NVML gave no readings"
    assert clocks.power_limit_w and clocks.power_limit_w > 100, clocks
    assert clocks.power_w_median is not None and 20 < clocks.power_w_median < 1.5 * clocks.power_limit_w, clocks
    assert clocks.power_capped_share is not None and 0 <= clocks.power_capped_share <= 1, clocks
    assert clocks.thermal_share is not None and 0 <= clocks.thermal_share <= 1, clocks
