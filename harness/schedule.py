"""Who runs what where: a sweep's (shape, dtype) groups split over the GPUs of one host (`--devices`) and
over hosts (`--shard I/N`). Plain Python, no torch.

A group is one (shape, dtype) pair with every target's row for it. Groups are the unit of both splits: a
row's speedup is over its group's eager row, and it is a fair ratio only if both ran on the same GPU in the
same run, so a group never straddles two GPUs or two hosts. (Running the baselines on every GPU instead
would repeat eager, compile and the other torch rows once per GPU, about half of all the work, and leave
several eager rows per group.)
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from collections.abc import Callable, Sequence

from harness.errors import UsageError
from harness.records import Device, Task


@dataclasses.dataclass(frozen=True)
class Shard:
    index: int   # 1-based, as in "shard 2 of 4"
    count: int

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def parse_shard(text: str) -> Shard:
    m = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text)
    if not m:
        raise UsageError(f"--shard {text!r}: expected I/N, e.g. 1/4 (shard I of N, counted from 1)")
    index, count = int(m.group(1)), int(m.group(2))
    if not 1 <= index <= count:
        raise UsageError(f"--shard {text}: I must be between 1 and N")
    return Shard(index, count)


def group_key(task: Task) -> tuple:
    """A canonical order of groups that no host, command-line order or build outcome can change: by dtype,
    then shape size, name and dimensions."""
    shape = task.shape
    return (task.dtype, shape.tokens * shape.d, shape.name, tuple(shape.dims().values()))


def shard_tasks(tasks: Sequence[Task], shard: Shard) -> list[Task]:
    """Shard I of N: the groups in canonical order dealt out round-robin. The N shards are disjoint, together
    hold every group, differ in size by at most one group, and depend on the set of groups alone. The run
    keeps the command line's order within its shard."""
    ordered = sorted(set(tasks), key=group_key)
    mine = set(ordered[shard.index - 1::shard.count])
    return [t for t in tasks if t in mine]


def split(tasks: Sequence[Task], parts: int, weight: Callable[[Task], float]) -> list[list[Task]]:
    """`tasks` in `parts` lists of about equal total weight (greedy: heaviest group first, to the lightest
    part; ties in canonical order, to the lower part). Each part keeps the order of `tasks`, and one part
    is `tasks` itself."""
    loads, owner = [0.0] * parts, {}
    for task in sorted(tasks, key=lambda t: (-weight(t), group_key(t))):
        part = min(range(parts), key=lambda p: (loads[p], p))
        owner[task] = part
        loads[part] += weight(task)
    return [[t for t in tasks if owner[t] == p] for p in range(parts)]


def parse_devices(spec: str, count: int) -> list[int]:
    """`all` or a comma list of CUDA device indices (as this process numbers them)."""
    if spec.strip() == "all":
        return list(range(count))
    parts = [p.strip() for p in spec.split(",") if p.strip()]
    if not parts or not all(p.isdigit() for p in parts):
        raise UsageError(f"--devices {spec!r}: expected 'all' or a comma list of GPU indices, e.g. 0,1")
    indices = list(dict.fromkeys(int(p) for p in parts))
    missing = [i for i in indices if i >= count]
    if missing:
        have = f"GPUs 0-{count - 1}" if count > 1 else ("GPU 0" if count else "no GPU")
        raise UsageError(f"--devices {spec}: no GPU {missing[0]} here (this process sees {have})")
    return indices


def select_devices(spec: str, available: Sequence[Device]) -> list[Device]:
    """The devices `spec` names; one GPU model only, since speedups differ between models."""
    chosen = [available[i] for i in parse_devices(spec, len(available))]
    models = list(dict.fromkeys(d.name for d in chosen))
    if len(models) > 1:
        raise UsageError(f"--devices {spec}: GPUs of different models ({', '.join(models)}); run each model "
                         "apart, as speedups differ between models")
    return chosen


def sweep_id(tasks: Sequence[Task]) -> str:
    """A short name for the groups of a whole (unsharded) sweep, which the settings do not list: shards of
    one sweep carry the same id, and merge refuses files of different sweeps."""
    groups = sorted(group_key(t) for t in set(tasks))
    return hashlib.sha256(json.dumps(groups).encode()).hexdigest()[:12]
