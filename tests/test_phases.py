"""KVBENCH_PHASES (harness/phases.py) and its sums (scripts/phases_summary.py), without a GPU."""
import json
import sys
from pathlib import Path

from harness import phases

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
import phases_summary  # noqa: E402


def test_marks_are_written_only_when_asked(tmp_path, monkeypatch):
    path = tmp_path / "phases.jsonl"
    monkeypatch.delenv("KVBENCH_PHASES", raising=False)
    phases.mark("worker x", "inputs", 0.0)
    assert not path.exists()
    monkeypatch.setenv("KVBENCH_PHASES", str(path))
    t = phases.mark("worker x", "inputs", 0.0)
    phases.mark("worker x", "check", t)
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [(e["process"], e["phase"]) for e in lines] == [("worker x", "inputs"), ("worker x", "check")]
    assert lines[0]["s"] > 0 and lines[1]["s"] >= 0


def test_the_summary_keeps_each_process_first_row_apart():
    """A process's first row is everything before its second 'inputs': its start-up costs land there."""
    entries = [{"pid": pid, "process": "worker t", "phase": phase, "s": s} for pid, phase, s in [
        (1, "cuda_init", 0.2), (1, "inputs", 0.1), (1, "check", 0.3), (1, "inputs", 0.01), (1, "check", 0.02),
        (2, "cuda_init", 0.2), (2, "inputs", 0.1), (2, "check", 0.3), (2, "inputs", 0.01), (2, "check", 0.02)]]
    table = {(kind, phase): rest for kind, phase, *rest in phases_summary.summarize(entries)}
    assert table[("worker", "cuda_init")] == [2, 0.4, 0, 0.0]
    assert table[("worker", "check")] == [2, 0.6, 2, 0.04]
