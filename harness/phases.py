"""Where a process's seconds go, to find a run's fixed costs: with KVBENCH_PHASES=PATH set, the worker, ceilings
and profiling processes append one JSON line per phase ({"pid", "process", "phase", "s"}) to PATH
(scripts/phases_summary.py adds them up). Unset (the default), a mark costs one environment lookup."""
from __future__ import annotations

import json
import os
import time


def mark(process: str, phase: str, since: float) -> float:
    """Record that `phase` of `process` took from `since` (a time.perf_counter() value) until now; returns now."""
    now = time.perf_counter()
    path = os.environ.get("KVBENCH_PHASES")
    if path:
        line = json.dumps({"pid": os.getpid(), "process": process, "phase": phase, "s": round(now - since, 4)})
        with open(path, "a") as f:  # one short append per line: lines of concurrent processes do not interleave
            f.write(line + "\n")
    return now
