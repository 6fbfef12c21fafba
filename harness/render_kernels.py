"""Renderers for a kernel author's views: the variants found (list), each build's kernel resources, one row's
per-kernel breakdown, and the fastest combination of a variant's tuning axes. They format records and decide
nothing (harness/catalog.py, resources.py, breakdown.py and axes.py decide)."""
from __future__ import annotations

import textwrap
from collections.abc import Mapping

from tabulate import tabulate

from harness.axes import Best
from harness.breakdown import Breakdown
from harness.render import _clip, _fmt
from harness.resources import KernelResources, VariantResources, short_name
from harness.shapes import display_labels


def _occupancy(x: float | None) -> str:
    return "" if x is None else f"{x * 100:.3g}%"  # 12.5%, 100%


# ---- list --------------------------------------------------------------------------------------------

LIST_COLUMNS = ("variant", "file", "dtypes", "axes", "build", "summary")


def variants_table(entries) -> str:
    """entries: catalog.Entry records."""
    rows = [[e.name, e.file, ",".join(e.dtypes), e.axes, e.build, _clip(e.summary, 70)] for e in entries]
    return tabulate(rows, headers=LIST_COLUMNS, tablefmt="simple", disable_numparse=True)


# ---- resources ---------------------------------------------------------------------------------------

RESOURCE_COLUMNS = ("variant", "kernel", "arch", "regs", "smem B", "stack B", "spill st B", "spill ld B",
                    "max threads", "occupancy", "from", "")


def _resource_cells(variant: str, k: KernelResources) -> list[str]:
    return [variant, short_name(k.name), k.arch, str(k.registers), str(k.static_smem), str(k.stack),
            str(k.spill_stores) if k.source == "ptxas" else "", str(k.spill_loads) if k.source == "ptxas" else "",
            _fmt(k.max_threads, "d"), _occupancy(k.occupancy), k.source, "SPILLS" if k.spills else ""]


def resources_table(entries: Mapping[str, VariantResources], failed: Mapping[str, str] | None = None) -> str:
    """Per variant and kernel: ptxas's report, then the driver's view of the same kernel where a GPU read it.
    `failed`: variant -> why it has no resources (a failed build)."""
    rows = []
    for variant, entry in entries.items():
        driver = {k.name: k for k in entry.driver or ()}
        if not entry.kernels:
            rows.append([variant, "(no ptxas report: rebuild to get one)"] + [""] * (len(RESOURCE_COLUMNS) - 2))
        for k in entry.kernels:
            rows.append(_resource_cells(variant, k))
            if k.name in driver:
                rows.append(_resource_cells("", driver.pop(k.name)))
        rows += [_resource_cells(variant, k) for k in driver.values()]
    for variant, why in (failed or {}).items():
        rows.append([variant, _clip(why, 90)] + [""] * (len(RESOURCE_COLUMNS) - 2))
    note = ("regs: registers per thread; smem: static shared memory per block; stack and spills: bytes per thread "
            "(local memory); max threads per block: the kernel's launch bound, else the register file's limit "
            "(ptxas rows: from the build's cubin; driver rows: read from the loaded module); occupancy: "
            "theoretical, at that block size with no dynamic shared memory (a launch's own is in its breakdown).")
    table = tabulate(rows, headers=RESOURCE_COLUMNS, tablefmt="simple", disable_numparse=True)
    return table + "\n" + textwrap.fill(note, 110)


# ---- breakdown ---------------------------------------------------------------------------------------

OVERLAP_SHOWN = 0.01  # overlap, as a share of the summed kernel times, from which the table's head names it
BREAKDOWN_COLUMNS = ("kernel", "kind", "count", "device µs", "share", "grid", "block", "regs", "smem B", "occupancy")


def breakdown_table(b: Breakdown) -> str:
    head = (f"{b.variant} {display_labels([b.shape])[b.shape]} {b.dtype}: {b.launches} launch(es) per call, "
            f"{b.device_us:.4g} µs of device time (median of {b.calls} profiled calls)")
    if b.overlap_us > OVERLAP_SHOWN * b.device_us:
        head += (f"; the launches overlap (a programmatic dependent launch waits inside for the one before): the "
                 f"device was busy {b.busy_us:.4g} µs, and the overlapping kernels' times include their waits")
    if not b.kernels:
        return head + (f"\n{b.note}" if b.note else "")
    total = b.device_us or 1.0
    rows = [[short_name(k.name, 70), k.kind, str(k.count), f"{k.device_us:.4g}", f"{k.device_us / total:.0%}",
             _dims(k.grid), _dims(k.block), _fmt(k.registers, "d"), _fmt(k.smem, "d"), _occupancy(k.occupancy)]
            for k in b.kernels]
    table = tabulate(rows, headers=BREAKDOWN_COLUMNS, tablefmt="simple", disable_numparse=True)
    return "\n".join([head, table] + ([f"note: {b.note}"] if b.note else []))


def _dims(dims) -> str:
    return "" if not dims else "x".join(str(d) for d in dims)


# ---- tuning axes -------------------------------------------------------------------------------------

BEST_COLUMNS = ("variant", "shape", "dtype", "fastest correct combination", "GPU µs", "correct / combinations")


def best_table(bests: list[Best]) -> str:
    labels = display_labels(b.shape for b in bests)
    rows = [[b.variant, labels[b.shape], b.dtype, b.best, f"{b.gpu_us:.4g}",
             f"{b.ok_combinations} / {b.combinations}"] for b in bests]
    return tabulate(rows, headers=BEST_COLUMNS, tablefmt="simple", disable_numparse=True)
