"""`run_bench.py new`: the template builds as written (both TILE combinations, no spills) and, on the GPU,
passes every check on every shape, with its fastest combination reported."""
import shutil
from pathlib import Path

import pytest

from harness import runner, scaffold
from harness.records import Kind, Settings, Status, Task
from harness.shapes import parse_shapes

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def template_build(tmp_path_factory):
    """The template written into a fresh folder (beside kv_common.cuh) and planned: (plan, folder)."""
    folder = tmp_path_factory.mktemp("kernels")
    shutil.copy(REPO / "kernels" / scaffold.SHARED_HEADER, folder)
    path = scaffold.write_variant("scaffolded", folder)
    return runner.plan([path], []), folder


@pytest.mark.build
def test_the_template_builds_every_combination_without_spills(template_build):
    template_plan, _ = template_build
    kernels = {t.name for t in template_plan.targets if t.kind == Kind.KERNEL}
    assert kernels == {"scaffolded[TILE=16]", "scaffolded[TILE=32]"} and not template_plan.rows
    for name in kernels:
        report = template_plan.resources[name]
        assert len(report) == 5  # two GEMMs x three dtypes; float32's two are one instantiation
        assert not any(k.spills for k in report), report
    smem = {name: {k.static_smem for k in template_plan.resources[name]} for name in kernels}
    assert smem == {"scaffolded[TILE=16]": {2 * 16 * 16 * 4}, "scaffolded[TILE=32]": {2 * 32 * 32 * 4}}
    # __launch_bounds__(TILE * TILE), read from each build's cubin
    threads = {name: {k.max_threads for k in template_plan.resources[name]} for name in kernels}
    assert threads == {"scaffolded[TILE=16]": {256}, "scaffolded[TILE=32]": {1024}}


@pytest.mark.build
def test_list_then_finds_both_builds_in_the_cache(template_build):
    from harness import catalog
    _, folder = template_build
    (entry,) = [e for e in catalog.catalog(folder) if e.name == "scaffolded"]
    assert entry.build == "2/2 cached" and entry.axes == "TILE=16,32 (2 builds)"


@pytest.mark.build
def test_the_same_source_in_another_folder_is_taken_from_the_cache(template_build, tmp_path, monkeypatch):
    """The build cache is keyed by content, not by folder: the template written into a second folder (a fresh
    temporary one, as every test and `new` user has) imports the cached library and compiles nothing (nvcc
    would otherwise rebuild, its -I path being new)."""
    import torch.utils.cpp_extension

    def no_compiler(*args, **kwargs):
        raise AssertionError("load_inline called: the cached build was not used")

    monkeypatch.setattr(torch.utils.cpp_extension, "load_inline", no_compiler)
    shutil.copy(REPO / "kernels" / scaffold.SHARED_HEADER, tmp_path)
    again = runner.plan([scaffold.write_variant("scaffolded", tmp_path)], [])
    first_plan, _ = template_build
    assert not again.rows, [r.message for r in again.rows]
    kernels = {t.name: t.so_path for t in again.targets if t.kind == Kind.KERNEL}
    assert kernels == {t.name: t.so_path for t in first_plan.targets if t.kind == Kind.KERNEL}


@pytest.mark.gpu
def test_the_template_passes_as_written(template_build):
    template_plan, _ = template_build
    from test_gpu import ODD_SHAPES
    shapes = parse_shapes("seed,deepseek-v2-lite") + [s for spec in ODD_SHAPES for s in parse_shapes(spec)]
    tasks = [Task(s, "float32") for s in shapes] + [Task(s, d) for s in shapes[:3] for d in ("bfloat16", "float16")]
    helper = template_plan.targets[0]
    settings = Settings(time=False, timing_so=helper.so_path, timing_module=helper.module_name)
    rows = []
    kernels = runner.Plan([t for t in template_plan.targets if t.kind == Kind.KERNEL], [])
    runner.run(kernels, tasks, settings, rows.append, row_timeout_s=300)
    bad = [f"{r.variant} {r.shape.label()} {r.dtype}: {r.status} {r.message}" for r in rows if r.status != Status.OK]
    assert len(rows) == 2 * len(tasks) and not bad, "\n".join(bad)
