"""Regression gate: compare two result files, row by row, on speedup over eager.

The compared quantity is each row's speedup over the eager row of the same file,
not its raw time, so that a GPU running a little faster or slower as a whole
between the two runs cancels out.

A gate must compare something: an incomplete current file, or two files with no row in
common (another --tokens, another shape), is refused (exit code 2), as are files from
different GPU models unless forced.

Verdicts, per row and metric ("gpu" time, "call" latency):
  threshold = max(floor, spread of the row + spread of its eager row), the larger of
  baseline's and current's; change = current/baseline - 1.
  SAME |change| <= threshold; FASTER change > threshold; SLOWER change < -threshold.
  A row flagged power-capped (or its eager row) is judged as any other, with the sides that were named in
  its note: its time followed the board's power limit as much as its work.
  A row flagged noisy (or its eager row), in either file, is judged against twice the
  threshold: NOISY when |change| falls between the two, SLOWER or FASTER beyond it.
  Call latency is judged only where it is device-bound: call <= 1.25 x warm GPU time for
  the row and its eager row, in both files; otherwise NOISY (host-bound: it measures the CPU).
  Even device-bound, a call is partly host time (call - warm GPU time), which moves between runs
  of one commit on one GPU: a call's threshold is at least the host's share of the row's call
  plus that of its eager row's, the larger of the two files'.
  NEW only in current (or ok now, not ok in baseline); FAILED ok in baseline, not ok now;
  a row not ok in both files is SAME, with its status as the note.
  MISSING only in baseline; SKIPPED only in baseline and left out by choice in current
  (its settings' `variants` or `baselines` do not list it).
  eager itself: FAILED (metric "status") where it is not ok in current, or missing while
  rows of its shape and dtype are there: no speedup can be judged without it.
SLOWER, FAILED and MISSING (unless allowed) fail the gate (exit code 1).
Spills: a build whose kernels spill to local memory in current and did not in baseline is listed in
`spills` (a kernel that spilled in both is not); without a resource report in baseline (a schema 1 file),
every spilling kernel of current is listed, saying so. Spills are reported, not gated: the timing decides.
Rendering is in harness/render.py.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from functools import partial
from typing import Mapping

from harness.axes import split_row_name
from harness.errors import CompareRefused
from harness.records import POWER_FLAG
from harness.resources import short_name
from harness.resultfile import ResultFile, ResultRow, TimingStats, load_result
from harness.shapes import display_labels


# Smallest change called a regression, whatever the recorded spread. Two runs of one commit on two
# H200 machines (results/NOTES.md) moved GPU-time speedups by up to 6.3 %: the eager row itself moved
# 5.3 %, and a speedup inherits that. A 5 % floor failed that pair; 10 % leaves a margin.
DEFAULT_FLOOR = 0.10
# Call latency is judged only where it is device-bound (call <= 1.25 x warm GPU time, for the row and its
# eager row, in both files). Where the host dominates, it measures the machine's CPU, not the kernel:
# between those two machines the empty kernel's call latency moved 51 % and small-shape rows up to 95 %;
# eager's own call latency moved 62 % while the rows it divides did not move, which a row's own test misses.
HOST_BOUND_RATIO = 1.25
# The host's part of a device-bound call (call - warm GPU time) is not steady either: in two runs of one commit on
# one H200, one after the other (results/2026-11-30-h200-multi-gpu-2/), it went from 38 to 107 us on a 450 us GPU
# call (cublas_stack, MiniCPM3 4096 fp32) and moved three call speedups by 11-14 %. Those shares widen the threshold.
# A row flagged noisy ended sampling above its noise target: it is still judged, on a wider threshold.
NOISY_WIDENING = 2.0
REFERENCE_VARIANT = "eager"  # speedups are relative to it, so it is not compared itself
FLOOR_VARIANT = "empty-kernel"  # launch-overhead floor: informative, not a product
NOT_COMPARED = frozenset({REFERENCE_VARIANT, FLOOR_VARIANT})
METRICS = ("gpu", "call")
ENV_FIELDS_NOTED = ("driver", "cuda", "torch", "python")


class Verdict(StrEnum):
    # Declaration order is report order: what needs attention first.
    FAILED = "FAILED"
    SLOWER = "SLOWER"
    NOISY = "NOISY"
    FASTER = "FASTER"
    MISSING = "MISSING"
    NEW = "NEW"
    SKIPPED = "SKIPPED"
    SAME = "SAME"


GATE_FAILING = frozenset({Verdict.FAILED, Verdict.SLOWER, Verdict.MISSING})


@dataclass(frozen=True)
class CompareRow:
    variant: str
    shape_name: str
    dtype: str
    metric: str  # "gpu" or "call"; "status" for an eager row that fails the gate
    baseline: float | None  # speedup vs eager in the baseline file
    current: float | None  # speedup vs eager in the current file
    change: float | None  # current / baseline - 1
    threshold: float | None  # |change| up to this is SAME
    verdict: Verdict
    note: str = ""


@dataclass(frozen=True)
class Comparison:
    rows: tuple[CompareRow, ...]
    notes: tuple[str, ...]  # environment differences and warnings, a line each
    baseline_env: Mapping
    current_env: Mapping
    floor: float = DEFAULT_FLOOR
    allow_missing: bool = False
    spills: tuple[str, ...] = ()  # builds that newly spill to local memory, a line each

    @property
    def failing(self) -> frozenset[Verdict]:
        return GATE_FAILING - {Verdict.MISSING} if self.allow_missing else GATE_FAILING

    @property
    def exit_code(self) -> int:
        return int(any(row.verdict in self.failing for row in self.rows))

    def counts(self) -> dict[Verdict, int]:
        """Number of rows of each verdict present, in report order."""
        counts = {verdict: sum(row.verdict == verdict for row in self.rows) for verdict in Verdict}
        return {verdict: n for verdict, n in counts.items() if n}


def compare_files(baseline_path, current_path, **kw) -> Comparison:
    return compare_results(load_result(baseline_path), load_result(current_path), **kw)


def compare_results(baseline: ResultFile, current: ResultFile, *, floor: float = DEFAULT_FLOOR,
                    force: bool = False, allow_missing: bool = False) -> Comparison:
    """Compare two result files; floor is a fraction (0.05 = 5 %)."""
    notes = _environment_notes(baseline, current, force)
    base_index = _index_rows(baseline, "baseline", notes)
    cur_index = _index_rows(current, "current", notes)
    _refuse_empty_comparison(current, base_index, cur_index)
    keys = list(base_index) + [key for key in cur_index if key not in base_index]
    labels = display_labels(key[1] for key in keys)
    left_out = _left_out_by_choice(current.settings)
    rows = [_compare_eager(key, base_index, cur_index, labels[key[1]])
            for key in keys if key[0] == REFERENCE_VARIANT]
    rows += [_compare_metric(key, metric, base_index, cur_index, floor, labels[key[1]], left_out)
             for key in keys if key[0] not in NOT_COMPARED for metric in METRICS]
    return Comparison(tuple(r for r in rows if r is not None), tuple(notes), baseline.env, current.env, floor,
                      allow_missing, new_spills(baseline, current))


def _refuse_empty_comparison(current: ResultFile, base_index: dict, cur_index: dict) -> None:
    if not current.complete:
        raise CompareRefused(f"{current.source}: the current run is incomplete (complete: false); "
                             "a gate compares a finished run")
    if not base_index.keys() & cur_index.keys():
        shapes = {label: sorted({f"{k[1].name} s={k[1].s}" for k in index})
                  for label, index in (("baseline", base_index), ("current", cur_index))}
        raise CompareRefused(f"no row in common (baseline: {', '.join(shapes['baseline']) or 'none'}; current: "
                             f"{', '.join(shapes['current']) or 'none'}): nothing to compare")


def _left_out_by_choice(settings: Mapping):
    """A predicate: was this variant not selected in the run that wrote `settings`? Files that do not
    record their selection (schema 1) selected everything. `variants` lists files: a row of one combination
    of a file's tuning axes, NAME[BM=64], was selected with its file NAME."""
    chosen = set(settings.get("variants") or ()) | set(settings.get("baselines") or ())
    recorded = "variants" in settings and "baselines" in settings
    return lambda variant: recorded and split_row_name(variant)[0] not in chosen


def new_spills(baseline: ResultFile, current: ResultFile) -> tuple[str, ...]:
    """A line per build of current whose kernels spill where baseline's did not (see the module docstring)."""
    lines = []
    for name, entry in sorted(current.resources.items()):
        before = baseline.resources.get(name)
        spilled_before = {(k.name, k.arch) for k in before.spilling()} if before else set()
        new = [k for k in entry.spilling() if (k.name, k.arch) not in spilled_before]
        if not new:
            continue
        what = "; ".join(f"{short_name(k.name)} ({k.arch}): {k.spill_stores} B stores, {k.spill_loads} B loads "
                         f"per thread" for k in new)
        why = ("newly spills" if before else
               "spills (the baseline has no resource report)" if not baseline.resources else
               "spills (not in the baseline)")
        lines.append(f"{name} {why}: {what}")
    return tuple(lines)


# --- matching and numbers --------------------------------------------------------------

Index = dict[tuple, ResultRow]


def _index_rows(result: ResultFile, label: str, notes: list[str]) -> Index:
    index = {row.key(): row for row in result.rows}  # a repeated row: the last one wins
    if len(index) < len(result.rows):
        notes.append(f"{label}: {len(result.rows) - len(index)} repeated rows, the last of each is used")
    return index


def _eager_row(index: Index, key: tuple) -> ResultRow | None:
    return index.get((REFERENCE_VARIANT, *key[1:]))


def _timing(row: ResultRow | None, metric: str) -> TimingStats | None:
    return None if row is None else getattr(row, metric)


def _speedup(row: ResultRow | None, metric: str) -> float | None:
    value = None if row is None else getattr(row.speedup(REFERENCE_VARIANT), metric)
    return value if value is not None and value > 0 else None


def _spread(row: ResultRow | None, metric: str) -> float:
    timing = _timing(row, metric)
    return timing.spread if timing else 0.0


def _noise(index: Index, key: tuple, metric: str) -> float:
    # A speedup is a ratio of two timings, so both of their spreads add up.
    return _spread(index[key], metric) + _spread(_eager_row(index, key), metric)


def _noisy(row: ResultRow | None, metric: str) -> bool:
    timing = _timing(row, metric)
    return bool(timing and timing.noisy)


def _flagged_sides(key: tuple, base_index: Index, cur_index: Index, flagged) -> list[str]:
    """Which of the row and its eager row, in the baseline and the current file, `flagged(row)` holds for."""
    sides = []
    for label, index in (("baseline", base_index), ("current", cur_index)):
        for name, row in ((label, index[key]), (f"{label} eager", _eager_row(index, key))):
            if row is not None and flagged(row):
                sides.append(name)
    return sides


def _noisy_sides(key: tuple, metric: str, base_index: Index, cur_index: Index) -> list[str]:
    return _flagged_sides(key, base_index, cur_index, lambda row: _noisy(row, metric))


def _power_capped_sides(key: tuple, base_index: Index, cur_index: Index) -> list[str]:
    return _flagged_sides(key, base_index, cur_index, lambda row: POWER_FLAG in row.flags)


def _status_note(row: ResultRow) -> str:
    message = " ".join(row.message.split())  # one line
    return f"{row.status}: {message}" if message else row.status


def _compare_eager(key: tuple, base_index: Index, cur_index: Index, shape_label: str) -> CompareRow | None:
    """eager is the reference, so it is judged on its status only: without it, nothing is."""
    cur_row = cur_index.get(key)
    make = partial(CompareRow, key[0], shape_label, key[2], "status", None, None, None, None, Verdict.FAILED)
    if cur_row is not None and not cur_row.ok:
        return make(f"{_status_note(cur_row)}: no speedup of this shape and dtype can be judged")
    others = [k for k in cur_index if k[1:] == key[1:] and k[0] not in NOT_COMPARED]
    if cur_row is None and key in base_index and others:
        return make("eager missing from current: no speedup of this shape and dtype can be judged")
    return None


def _compare_metric(key: tuple, metric: str, base_index: Index, cur_index: Index,
                    floor: float, shape_label: str, left_out) -> CompareRow:
    base_row, cur_row = base_index.get(key), cur_index.get(key)
    base_x, cur_x = _speedup(base_row, metric), _speedup(cur_row, metric)
    make = partial(CompareRow, key[0], shape_label, key[2], metric, base_x, cur_x)
    if base_row is None:
        return make(None, None, Verdict.NEW)
    if cur_row is None:
        if left_out(key[0]):
            return make(None, None, Verdict.SKIPPED, "not selected in current (--variant / --baselines)")
        return make(None, None, Verdict.MISSING)
    if not cur_row.ok:
        if base_row.ok:
            return make(None, None, Verdict.FAILED, _status_note(cur_row))
        was = "" if base_row.status == cur_row.status else f" (was {base_row.status})"
        return make(None, None, Verdict.SAME, _status_note(cur_row) + was)
    if not base_row.ok:
        return make(None, None, Verdict.NEW, f"was {base_row.status}")
    threshold = max(floor, _noise(base_index, key, metric), _noise(cur_index, key, metric))
    if base_x is None or cur_x is None:
        side = "baseline" if base_x is None else "current"
        return make(None, threshold, Verdict.NOISY, f"no speedup vs eager in {side}")
    change = cur_x / base_x - 1
    if metric == "call":
        host_bound = _host_bound_sides(key, base_index, cur_index)
        if host_bound:
            return make(change, threshold, Verdict.NOISY,
                        f"host-bound ({', '.join(host_bound)}): call latency > {HOST_BOUND_RATIO} x GPU time "
                        "varies with the host's CPU")
        threshold = max(threshold, _host_share_sum(base_index, key), _host_share_sum(cur_index, key))
    # Rows of files older than the "build" field compare as unchanged sources.
    changed = base_row.build and cur_row.build and base_row.build != cur_row.build
    notes = ["source changed"] if changed else []
    noisy = _noisy_sides(key, metric, base_index, cur_index)
    if noisy:
        notes.append("noisy: " + ", ".join(noisy))
    capped = _power_capped_sides(key, base_index, cur_index)
    if capped:  # its clock followed the board's power limit, which moves with temperature and board
        notes.append("power-capped: " + ", ".join(capped))
    note = "; ".join(notes)
    if abs(change) <= threshold:
        return make(change, threshold, Verdict.SAME, note)
    if noisy and abs(change) <= NOISY_WIDENING * threshold:
        return make(change, threshold, Verdict.NOISY, note + f" (within {NOISY_WIDENING:g} x threshold)")
    return make(change, threshold, Verdict.FASTER if change > 0 else Verdict.SLOWER, note)


def _call_and_gpu(row: ResultRow | None) -> tuple[float, float] | None:
    """A row's call latency and the GPU time it runs against: a warm L2's (call latency runs warm); files
    without a warm GPU time (schema 1) offer the cold one. None where either is missing."""
    gpu = row and (row.gpu_warm or row.gpu)
    call = row and row.call
    return (call.median, gpu.median) if call and gpu and call.median and gpu.median else None


def _device_bound(row: ResultRow | None) -> bool:
    """Call latency within 1.25 x the GPU time."""
    times = _call_and_gpu(row)
    return bool(times and times[0] <= HOST_BOUND_RATIO * times[1])


def _host_share(row: ResultRow | None) -> float:
    """The fraction of a call's latency that is not GPU time."""
    times = _call_and_gpu(row)
    return max(0.0, 1.0 - times[1] / times[0]) if times else 0.0


def _host_share_sum(index: Index, key: tuple) -> float:
    # A call speedup divides eager's call by the row's: the host parts of both move it.
    return _host_share(index[key]) + _host_share(_eager_row(index, key))


def _host_bound_sides(key: tuple, base_index: Index, cur_index: Index) -> list[str]:
    """A speedup on call latency is a ratio of the row's call and eager's: both must be device-bound."""
    sides = []
    for label, index in (("baseline", base_index), ("current", cur_index)):
        if not _device_bound(index[key]):
            sides.append(label)
        if not _device_bound(_eager_row(index, key)):
            sides.append(f"{label} eager")
    return sides


def _environment_notes(baseline: ResultFile, current: ResultFile, force: bool) -> list[str]:
    base_env, cur_env = baseline.env, current.env
    notes = []
    if base_env.get("gpu") != cur_env.get("gpu"):
        if not force:
            raise CompareRefused(
                f"baseline ran on {base_env.get('gpu')}, current on {cur_env.get('gpu')}: "
                "speedups differ between GPU models (force to compare anyway)")
        notes.append(f"gpu {base_env.get('gpu')} -> {cur_env.get('gpu')} (compared by force)")
    notes += [f"{name} {base_env.get(name)} -> {cur_env.get(name)}"
              for name in ENV_FIELDS_NOTED if base_env.get(name) != cur_env.get(name)]
    base_settings, cur_settings = baseline.settings, current.settings
    notes += [f"settings.{name} {base_settings.get(name)} -> {cur_settings.get(name)}"
              for name in sorted(base_settings.keys() | cur_settings.keys())
              if base_settings.get(name) != cur_settings.get(name)]
    if not baseline.complete:
        notes.append("baseline run was interrupted (complete: false)")
    return notes
