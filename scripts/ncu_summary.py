"""A compact table from Nsight Compute's CSV details page (`ncu --csv --page details ...`): per profiled kernel,
its duration, SM and memory throughput (% of peak), DRAM throughput, achieved occupancy, registers and the
largest warp stall reasons, so a profile reads in a few lines (results/NOTES.md quotes them).
    python3 scripts/ncu_summary.py ncu-two_stage-deepseek-v3-64-bfloat16.csv
Columns are found by their header names; a metric the CSV lacks prints as '-'."""
import csv
import io
import sys
from collections import defaultdict

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
        kernels[(row["ID"], row["Kernel Name"])][row["Metric Name"]] = (row["Metric Value"], row.get("Metric Unit", ""))
    return kernels


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
        rows.append([kid, name[:60], *cells, stalls(metrics)])
    header = ["id", "kernel", *(label for _, label in WANTED), "top stalls"]
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    return "\n".join("  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip() for r in [header, *rows])


if __name__ == "__main__":
    for path in sys.argv[1:]:
        with open(path) as f:
            print(f"== {path}\n{table(read(f.read()))}")
