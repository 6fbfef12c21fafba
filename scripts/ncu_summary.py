"""A compact table from Nsight Compute's CSV details page (`ncu --csv --page details ...`): per profiled kernel,
its duration, SM and memory throughput (% of peak), DRAM throughput, achieved occupancy, registers, the share of
elapsed cycles the SMs were active and the largest warp stall reasons (or the one ncu's rule names), so a profile reads in a few lines (results/NOTES.md quotes them).
    python3 scripts/ncu_summary.py ncu-two_stage-deepseek-v3-64-bfloat16.csv
Columns are found by their header names; a metric the CSV lacks prints as '-'."""
import csv
import io
import re
import sys
from collections import defaultdict

# ncu's CPIStall rule names the largest stall when the per-reason metrics are not on the page
STALL_RULE = re.compile(r"spends ([\d.,]+) cycles being stalled (.+?)(?: \(|\. |\.$)")
WANTED = [("Duration", "duration"), ("Compute (SM) Throughput", "SM %"), ("Memory Throughput", "mem %"),
          ("DRAM Throughput", "DRAM %"), ("Achieved Occupancy", "occ %"), ("Registers Per Thread", "regs"),
          ("Warp Cycles Per Issued Instruction", "cyc/issue"), ("Grid Size", "grid"), ("Block Size", "block")]


def read(text: str) -> dict[tuple[str, str], dict[str, tuple[str, str]]]:
    """(kernel id, kernel name) -> metric name -> (value, unit); lines before the CSV header are skipped."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith('"ID"')), None)
    if start is None:
        raise SystemExit("no ncu CSV header (\"ID\",...) in the input")
    kernels: dict[tuple[str, str], dict[str, tuple[str, str]]] = defaultdict(dict)
    for row in csv.DictReader(io.StringIO("\n".join(lines[start:]))):
        metrics = kernels[(row["ID"], row["Kernel Name"])]
        stall = STALL_RULE.search(row.get("Rule Description") or "")
        if stall:  # the rule rows have no metric: the sentence is the stall breakdown's top entry
            metrics.setdefault(f"stalled {stall.group(2)}", (stall.group(1), "cycle"))
        if row["Metric Name"]:
            # first occurrence wins: "Memory Throughput" is a % in Speed Of Light, then a byte rate further down
            metrics.setdefault(row["Metric Name"], (row["Metric Value"], row.get("Metric Unit", "")))
    return kernels


def busy(metrics: dict[str, tuple[str, str]]) -> str:
    """SM active cycles as a % of elapsed: below ~90 the SMs wait for launch, a tail or a dependency."""
    try:
        active = float(metrics["SM Active Cycles"][0].replace(",", ""))
        elapsed = float(metrics["Elapsed Cycles"][0].replace(",", ""))
    except (KeyError, ValueError):
        return "-"
    return f"{100 * active / elapsed:.0f}" if elapsed else "-"


def stalls(metrics: dict[str, tuple[str, str]], top: int = 3) -> str:
    """The largest warp-state samples (ncu's WarpStateStats section names them 'Stall ...' or 'Warp Cycles ...')."""
    found = []
    for name, (value, _) in metrics.items():
        if name.lower().startswith("stall"):
            try:
                found.append((float(value.replace(",", "")), name))
            except ValueError:
                continue
    return ", ".join(f"{name} {value:g}" for value, name in sorted(found, reverse=True)[:top]) or "-"


def table(kernels) -> str:
    rows = []
    for (kid, name), metrics in kernels.items():
        cells = []
        for metric, _ in WANTED:
            value, unit = metrics.get(metric, ("-", ""))
            cells.append(f"{value} {unit}".strip() if metric == "Duration" else value)
        rows.append([kid, name[:60], *cells, busy(metrics), stalls(metrics)])
    header = ["id", "kernel", *(label for _, label in WANTED), "SM busy %", "top stalls"]
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    return "\n".join("  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip() for r in [header, *rows])


if __name__ == "__main__":
    for path in sys.argv[1:]:
        with open(path) as f:
            print(f"== {path}\n{table(read(f.read()))}")
