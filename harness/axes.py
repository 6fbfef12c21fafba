"""Tuning axes: `// axes: BM=64,128; STAGES=3,4` in a variant's header builds one extension per combination
of values (each passed as -D defines), checked and timed as its own row `NAME[BM=64,STAGES=3]`.

This module parses the header value, expands the combinations (header order, the first axis slowest), names
their rows and builds, and picks per (shape, dtype) the fastest correct combination of a variant. No torch.
"""
from __future__ import annotations

import dataclasses
import itertools
import re
from collections.abc import Iterable

from harness.errors import HeaderError

_AXIS_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_VALUE = re.compile(r"[A-Za-z0-9_.+-]+")
_ROW_NAME = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\[(.*)\]")

Axes = tuple[tuple[str, tuple[str, ...]], ...]  # (("BM", ("64", "128")), ("STAGES", ("3", "4")))

# CI builds every combination of a variant with at most this many, otherwise only the first: a 2-core CI
# machine compiles a combination of a real kernel in about a minute, and axes multiply.
CI_ALL_COMBINATIONS_UP_TO = 4


def parse_axes(value: str, where: str) -> Axes:
    """`BM=64,128; STAGES=3,4` -> (("BM", ("64", "128")), ("STAGES", ("3", "4"))); errors name `where`."""
    axes: list[tuple[str, tuple[str, ...]]] = []
    for part in (p.strip() for p in value.split(";")):
        if not part:
            continue
        name, sep, values_text = (s.strip() for s in part.partition("="))
        if not sep or not _AXIS_NAME.fullmatch(name):
            raise HeaderError(f"{where}: axis '{part}' must be NAME=v1,v2 with NAME a C identifier")
        values = tuple(v.strip() for v in values_text.split(",") if v.strip())
        bad = [v for v in values if not _VALUE.fullmatch(v)]
        if not values or bad:
            raise HeaderError(f"{where}: axis {name} needs values made of letters, digits, '_', '.', '+', '-'"
                              f"{': bad ' + repr(bad[0]) if bad else ''}")
        if len(set(values)) != len(values):
            raise HeaderError(f"{where}: axis {name} repeats a value")
        if name in dict(axes):
            raise HeaderError(f"{where}: axis {name} given twice")
        axes.append((name, values))
    if not axes:
        raise HeaderError(f"{where}: axes is empty; write NAME=v1,v2; NAME2=...")
    return tuple(axes)


@dataclasses.dataclass(frozen=True)
class Combination:
    """One point of a variant's axes (no values: the variant has no axes)."""
    variant: str
    values: tuple[tuple[str, str], ...] = ()

    @property
    def name(self) -> str:
        """The row's name: `NAME[BM=64,STAGES=3]`, or `NAME` without axes."""
        if not self.values:
            return self.variant
        return f"{self.variant}[{','.join(f'{k}={v}' for k, v in self.values)}]"

    @property
    def defines(self) -> tuple[str, ...]:
        return tuple(f"-D{k}={v}" for k, v in self.values)

    @property
    def build_name(self) -> str:
        """A Python identifier for the extension module (its build folder adds a hash of everything)."""
        if not self.values:
            return self.variant
        tail = "_".join(f"{k}{re.sub(r'[^A-Za-z0-9]', '_', v)}" for k, v in self.values)
        return f"{self.variant}__{tail}"


def combinations(variant: str, axes: Axes) -> list[Combination]:
    if not axes:
        return [Combination(variant)]
    names = [name for name, _ in axes]
    return [Combination(variant, tuple(zip(names, values)))
            for values in itertools.product(*(values for _, values in axes))]


def ci_combinations(variant: str, axes: Axes, limit: int = CI_ALL_COMBINATIONS_UP_TO) -> list[Combination]:
    """What CI builds: every combination when there are at most `limit`, else only the first."""
    every = combinations(variant, axes)
    return every if len(every) <= limit else every[:1]


def describe(axes: Axes) -> str:
    """`BM=64,128; STAGES=3,4 (4 builds)` for listings; empty without axes."""
    if not axes:
        return ""
    count = 1
    for _, values in axes:
        count *= len(values)
    return "; ".join(f"{name}={','.join(values)}" for name, values in axes) + f" ({count} builds)"


def split_row_name(name: str) -> tuple[str, dict[str, str]]:
    """`NAME[BM=64,STAGES=3]` -> ("NAME", {"BM": "64", "STAGES": "3"}); a plain name -> (name, {})."""
    m = _ROW_NAME.fullmatch(name)
    if not m:
        return name, {}
    pairs = [p.partition("=") for p in m.group(2).split(",") if p]
    return m.group(1), {k: v for k, _, v in pairs}


@dataclasses.dataclass(frozen=True)
class Best:
    """The fastest correct combination of one variant at one (shape, dtype), by median GPU time."""
    variant: str
    shape: object          # a shapes.Shape
    dtype: str
    best: str              # the row name of the winning combination
    gpu_us: float
    ok_combinations: int   # how many combinations were correct and timed here
    combinations: int      # how many rows the variant has here


def best_combinations(rows: Iterable) -> list[Best]:
    """Per (variant with axes, shape, dtype): the fastest correct combination. Rows are resultfile.ResultRow
    (anything with variant, shape, dtype, ok and gpu.median)."""
    groups: dict[tuple, list] = {}
    for row in rows:
        family, values = split_row_name(row.variant)
        if values:
            groups.setdefault((family, row.shape, row.dtype), []).append(row)
    out = []
    for (family, shape, dtype), members in groups.items():
        timed = [r for r in members if r.ok and r.gpu is not None and r.gpu.median is not None]
        if timed:
            winner = min(timed, key=lambda r: r.gpu.median)
            out.append(Best(family, shape, dtype, winner.variant, winner.gpu.median, len(timed), len(members)))
    return out
