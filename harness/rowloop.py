"""The benchmark's row loop on a GPU, as the command line runs it: each build's resources (ptxas's, and the
driver's view of the loaded modules), then every row with a progress display, each device's ceilings and
each correct row's kernel breakdown handed to the result sink as they arrive. The runner does the work;
this wires its hooks."""
from __future__ import annotations

from harness import resources
from harness.progress import Progress


def build_resources(plan, builds: dict[str, str], has_gpu: bool) -> dict[str, resources.VariantResources]:
    """Per built CUDA target: ptxas's report; with a GPU, the driver's view too (never the end of a run)."""
    entries = {name: resources.VariantResources(builds.get(name), kernels or ())
               for name, kernels in plan.resources.items()}
    if not has_gpu or not entries:
        return entries
    return resources.with_driver_view(entries, {t.name: t.so_path for t in plan.targets if t.name in entries})


def run(plan, tasks, settings, sink, row_timeout_s: float, devices=None, breakdowns: bool = True) -> list:
    """Every row of the plan on the GPU(s), into `sink` (add, add_ceilings, add_breakdown), with a progress
    display; the runner's Shares (what each device ran, and for how long)."""
    from harness import runner
    total = len(plan.rows) + len(plan.targets) * len(tasks)
    with Progress("rows", total) as progress:
        def on_row(row):
            sink.add(row)
            where = f" (GPU {row.device.index})" if row.device is not None and devices and len(devices) > 1 else ""
            progress.finish(f"{row.variant} {row.shape.label()} {row.dtype}",
                            f"{row.status}{where}{' ' + row.message[:100] if row.message else ''}")

        return runner.run(plan, tasks, settings, on_row, row_timeout_s=row_timeout_s, devices=devices,
                          on_ceilings=sink.add_ceilings,
                          on_start=lambda target, task: progress.start(f"{target.name} {task.shape.label()} {task.dtype}"),
                          on_breakdown=sink.add_breakdown if breakdowns else None)
