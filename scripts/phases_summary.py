"""Adds up a KVBENCH_PHASES file (harness/phases.py): per process kind and phase, the seconds of the first row
each process ran and of the rows after it, so a run's fixed costs (paid once per process) stand apart from
its per-row costs.
  python scripts/phases_summary.py PHASES.jsonl"""
from __future__ import annotations

import json
import sys
from collections import defaultdict


def summarize(lines: list[dict]) -> list[tuple[str, str, int, float, int, float]]:
    """(kind, phase, first-row count, first-row seconds, later count, later seconds) per kind and phase; a
    process's first row is everything it recorded before its second 'inputs' mark."""
    seen_inputs: dict[int, int] = defaultdict(int)
    table: dict[tuple[str, str], list[float]] = defaultdict(lambda: [0, 0.0, 0, 0.0])
    for entry in lines:
        kind = entry["process"].split(" ")[0]
        if entry["phase"] == "inputs":
            seen_inputs[entry["pid"]] += 1
        first = seen_inputs[entry["pid"]] <= 1
        cell = table[(kind, entry["phase"])]
        if first:
            cell[0] += 1
            cell[1] += entry["s"]
        else:
            cell[2] += 1
            cell[3] += entry["s"]
    return [(kind, phase, int(a), b, int(c), d) for (kind, phase), (a, b, c, d) in table.items()]


def main(path: str) -> None:
    lines = [json.loads(line) for line in open(path) if line.strip()]
    print(f"{'process':10} {'phase':12} {'first rows':>16} {'later rows':>16} {'per later row':>14}")
    for kind, phase, n1, s1, n2, s2 in summarize(lines):
        per = f"{s2 / n2:.3f}" if n2 else "-"
        print(f"{kind:10} {phase:12} {n1:5d} {s1:8.2f} s {n2:5d} {s2:8.2f} s {per:>12} s")


if __name__ == "__main__":
    main(sys.argv[1])
