"""Merge result files of disjoint (shape, dtype) groups, such as the shards of one sweep run on several
hosts, into one result file that compare, plot and the table read like any other. No torch here.

Refused, with one line naming the files (exit code 2):
- files of different commits, a file with no commit recorded, or a dirty tree and a clean one: the rows
  would not come from one code;
- different settings, schema, GPU model, torch or CUDA: the rows would not have been taken alike;
- a variant built from different sources in two files (its rows' or its resource report's build);
- shards of different sweeps or splits, or one shard twice;
- a row in two files (a duplicate if equal, a conflict if not), or one (shape, dtype) group with rows in
  two files: each row's speedup is over its own run's eager row, so a group comes whole from one run.
Missing shards are not refused: the merged file is marked incomplete and a note names them.
Rows are written as read, every field kept, in the table's order; each variant's resource report is kept once.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

from harness.errors import MergeRefused
from harness.records import table_order
from harness.resultfile import ResultFile, parse_result, read_result_file

SAME_ENV = ("gpu", "torch", "cuda")   # besides the commit: what makes rows of two hosts comparable


@dataclasses.dataclass(frozen=True)
class Source:
    label: str          # the path as given
    data: dict          # the file as read: rows are written back from it unchanged
    result: ResultFile  # the same, typed


@dataclasses.dataclass(frozen=True)
class Merged:
    data: dict
    notes: tuple[str, ...]


def merge_files(paths: Sequence[Path | str]) -> Merged:
    sources = []
    for path in paths:
        data = read_result_file(path)
        sources.append(Source(str(path), data, parse_result(data, str(path))))
    return merge_results(sources)


def merge_results(sources: Sequence[Source]) -> Merged:
    if not sources:
        raise MergeRefused("nothing to merge")
    first = sources[0]
    for other in sources[1:]:
        _check_same_code(first, other)
        _check_same_conditions(first, other)
    _check_builds(sources)
    notes = _check_shards(sources)
    _check_rows(sources)
    return Merged(_merged(sources, complete=not notes and all(s.result.complete for s in sources)), tuple(notes))


# ---- checks -------------------------------------------------------------------------------------

def _check_same_code(a: Source, b: Source) -> None:
    for src in (a, b):
        if not src.result.env.get("commit"):
            raise MergeRefused(f"{src.label} records no commit, so the merge cannot check the files ran the "
                               "same code (where the tree has no .git, set KVBENCH_COMMIT)")
    ca, cb = a.result.env["commit"], b.result.env["commit"]
    if ca != cb:
        raise MergeRefused(f"{a.label} and {b.label} come from different commits ({ca[:12]} and {cb[:12]})")
    da, db = bool(a.result.env.get("dirty")), bool(b.result.env.get("dirty"))
    if da != db:
        dirty, clean = (a, b) if da else (b, a)
        raise MergeRefused(f"{dirty.label} ran a modified tree of {ca[:12]} and {clean.label} a clean one")


def _check_same_conditions(a: Source, b: Source) -> None:
    if a.result.schema != b.result.schema:
        raise MergeRefused(f"{a.label} is schema {a.result.schema} and {b.label} schema {b.result.schema}")
    sa, sb = a.data.get("settings") or {}, b.data.get("settings") or {}
    differ = [f"{k} {sa.get(k)!r} vs {sb.get(k)!r}" for k in sorted(sa.keys() | sb.keys()) if sa.get(k) != sb.get(k)]
    if differ:
        raise MergeRefused(f"{a.label} and {b.label} ran with different settings: {'; '.join(differ)}")
    for key in SAME_ENV:
        va, vb = a.result.env.get(key), b.result.env.get(key)
        if va != vb:
            raise MergeRefused(f"{a.label} and {b.label} ran on different {key} ({va} and {vb})")


def _check_builds(sources: Sequence[Source]) -> None:
    """A variant's rows and its resource report name one build in every file."""
    seen: dict[str, tuple[str, str]] = {}  # variant -> (build, file)
    for src in sources:
        named = [(row.variant, row.build) for row in src.result.rows]
        named += [(variant, entry.build) for variant, entry in src.result.resources.items()]
        for variant, this in named:
            if not this:
                continue
            build, label = seen.setdefault(variant, (this, src.label))
            if build != this:
                raise MergeRefused(f"{variant} was built from different sources in {label} ({build}) and "
                                   f"{src.label} ({this})")


def _shard(src: Source) -> tuple[int, int] | None:
    shard = (src.data.get("run") or {}).get("shard")
    return (int(shard["index"]), int(shard["count"])) if shard else None


def _check_shards(sources: Sequence[Source]) -> list[str]:
    """Shards must be of one sweep and one split, each once; missing ones are noted."""
    shards = [(src, _shard(src)) for src in sources]
    sharded = [(src, shard) for src, shard in shards if shard]
    if not sharded:
        return []
    if len(sharded) < len(sources):
        whole = next(src for src, shard in shards if not shard)
        raise MergeRefused(f"{sharded[0][0].label} is a shard and {whole.label} is not: merge the shards of one sweep")
    first, (_, count) = sharded[0]
    by_index: dict[int, Source] = {}
    for src, (index, n) in sharded:
        if n != count:
            raise MergeRefused(f"{first.label} is one of {count} shards and {src.label} one of {n}: different splits")
        sweep, other = (src.data.get("run") or {}).get("sweep"), (first.data.get("run") or {}).get("sweep")
        if sweep != other:
            raise MergeRefused(f"{first.label} and {src.label} are shards of different sweeps (other shapes, "
                               "dtypes or token counts)")
        if index in by_index:
            raise MergeRefused(f"{by_index[index].label} and {src.label} are both shard {index}/{count}")
        by_index[index] = src
    missing = [f"{i}/{count}" for i in range(1, count + 1) if i not in by_index]
    return [f"shard {', '.join(missing)} missing: the merged file holds part of the sweep (marked incomplete)"] \
        if missing else []


def _row_name(row) -> str:
    return f"{row.variant} {row.shape.label()} {row.dtype}"


def _check_rows(sources: Sequence[Source]) -> None:
    rows: dict[tuple, tuple[Source, dict]] = {}
    groups: dict[tuple, Source] = {}
    for src in sources:
        for raw, row in zip(src.data["rows"], src.result.rows):
            if row.key() in rows:
                _refuse_twice(row, rows[row.key()], (src, raw))
            rows[row.key()] = (src, raw)
            owner = groups.setdefault((row.shape, row.dtype), src)
            if owner is not src:
                raise MergeRefused(f"{row.shape.label()} {row.dtype} has rows in {owner.label} and {src.label}: "
                                   "a (shape, dtype) group must come whole from one run (speedups are over its "
                                   "own eager row)")


def _refuse_twice(row, seen: tuple[Source, dict], again: tuple[Source, dict]) -> None:
    (first, a), (second, b) = seen, again
    where = f"{first.label} twice" if first is second else f"{first.label} and {second.label}"
    if a == b:
        raise MergeRefused(f"duplicate row {_row_name(row)} in {where} (the same shard twice?)")
    what = (f"{a.get('status')} in one, {b.get('status')} in the other" if a.get("status") != b.get("status")
            else "different measurements")
    raise MergeRefused(f"conflicting rows {_row_name(row)} in {where}: {what}")


# ---- the merged file ----------------------------------------------------------------------------

def _merged(sources: Sequence[Source], complete: bool) -> dict:
    first = sources[0]
    env = dict(first.data["env"])
    hosts = list(dict.fromkeys(str(s.result.env.get("host")) for s in sources))
    if len(hosts) > 1:
        env["host"] = ", ".join(hosts)
    devices, resources = [], {}
    for src in sources:
        devices += [d for d in src.data.get("devices") or () if d not in devices]
        for variant, entry in (src.data.get("resources") or {}).items():
            resources.setdefault(variant, entry)  # one build per variant (checked): one report
    typed = [(row, raw) for src in sources for row, raw in zip(src.result.rows, src.data["rows"])]
    run = {"shard": None, "sweep": (first.data.get("run") or {}).get("sweep") if _shard(first) else None,
           "merged": [{"file": s.label, "host": s.result.env.get("host"), "date": s.result.env.get("date"),
                       **{k: v for k, v in (s.data.get("run") or {}).items() if k != "merged"}} for s in sources]}
    out = {"schema": first.result.schema, "complete": complete, "env": env, "settings": first.data.get("settings"),
           "ceilings": first.data.get("ceilings")}
    if devices:
        out["devices"] = devices
    if resources:
        out["resources"] = dict(sorted(resources.items()))
    out["run"] = run
    out["rows"] = [raw for _, raw in sorted(typed, key=lambda pair: table_order(pair[0]))]
    return out
