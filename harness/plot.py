"""Plot a result file: speedup over eager per variant, one panel per (shape, dtype). Renders only."""
from __future__ import annotations

import math
from pathlib import Path

from harness.resultfile import ResultFile
from harness.shapes import display_labels

METRICS = (("gpu", "GPU time"), ("call", "call latency"))


def speedup_groups(result: ResultFile) -> dict[tuple[str, str], list[tuple[str, float | None, float | None]]]:
    """(shape label, dtype) -> [(variant, ×eager on GPU time, ×eager on call latency)] for ok rows."""
    groups: dict[tuple[str, str], list] = {}
    labels = display_labels(row.shape for row in result.rows)
    for row in result.rows:
        if not row.ok or row.variant in ("eager", "empty-kernel"):
            continue
        vs = row.speedup("eager")
        groups.setdefault((labels[row.shape], row.dtype), []).append((row.variant, vs.gpu, vs.call))
    return groups


def _minor_label(x: float, _pos) -> str:
    """Label 2x and 5x (and 0.2x, 0.5x, ...) between the decades; leave the other minor ticks bare."""
    if x <= 0:
        return ""
    lead = x / 10 ** math.floor(math.log10(x))
    return f"{x:g}×" if round(lead, 6) in (2.0, 5.0) else ""


def plot_speedups(result: ResultFile, out: Path) -> Path:
    import matplotlib
    matplotlib.use("Agg")  # files only; no display needed
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter

    groups = speedup_groups(result)
    if not groups:
        raise ValueError("no timed rows to plot")
    fig, axes = plt.subplots(len(groups), 1, figsize=(8, 2.2 * len(groups) + 0.8), squeeze=False)
    for ax, ((shape, dtype), rows) in zip(axes[:, 0], groups.items()):  # result-file order: small shapes first
        names = [r[0] for r in rows]
        ys = range(len(rows))
        for offset, (index, label) in zip((-0.2, 0.2), enumerate(METRICS)):
            values = [r[index + 1] or 1.0 for r in rows]
            # Bars grow from 1x (eager) to the speedup: right is faster, left is slower, on a log axis.
            ax.barh([y + offset for y in ys], [v - 1.0 for v in values], left=1.0, height=0.4, label=label[1])
        ax.axvline(1.0, color="black", linewidth=0.8)
        ax.set_yticks(list(ys), names)
        spans = [r[i] for r in rows for i in (1, 2) if r[i]] + [1.0]
        if max(spans) / min(spans) >= 8:  # a log axis only where the speedups span about a decade
            ax.set_xscale("log")
            ax.xaxis.set_minor_formatter(FuncFormatter(_minor_label))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x:g}×"))
        ax.set_title(f"{shape}, {dtype}: speedup over eager (same run)", fontsize=9)
    axes[0, 0].legend(loc="lower right", fontsize=8)
    env = result.env
    fig.suptitle(f"{env.get('gpu') or 'no GPU'} · torch {env.get('torch')} · {env.get('date')}", fontsize=9)
    fig.tight_layout()
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out
