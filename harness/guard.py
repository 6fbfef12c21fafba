"""What the timing and the check rely on, taken before any variant is imported, and a test after each row
that none of it was replaced.

A variant runs in the process that times it, so it can rebind Python attributes the harness uses (public
leaderboards have seen `torch.cuda.Event.elapsed_time` patched to report a fraction of the time). The
timing binds its functions before a variant is imported (timing.py), so such a patch does not change the
numbers; the row that made it still fails (`tampered`), and the originals are put back for the next row.
"""
from __future__ import annotations

import copyreg
import dataclasses
import time

import numpy
import torch

# Attributes of torch, time and numpy that the check and the timing call, by owner.
WATCHED_NAMES = {
    "time": (time, ("perf_counter", "perf_counter_ns", "monotonic", "time")),
    "numpy": (numpy, ("median", "percentile")),
    "torch": (torch, ("isfinite", "equal", "full", "empty", "zeros", "ones", "stack", "cat", "randn",
                      "Generator", "linalg", "Tensor", "no_grad")),
    "torch.linalg": (torch.linalg, ("vector_norm",)),
    "torch.cuda": (torch.cuda, ("Event", "Stream", "CUDAGraph", "graph", "synchronize", "current_stream",
                                "stream", "get_device_properties", "current_device", "memory_reserved",
                                "memory_allocated")),
    "torch.cuda.Event": (torch.cuda.Event, ("record", "elapsed_time", "synchronize", "query", "wait")),
    "torch.cuda.Stream": (torch.cuda.Stream, ("synchronize", "wait_stream", "wait_event", "record_event", "query")),
    "torch.cuda.CUDAGraph": (torch.cuda.CUDAGraph, ("replay", "capture_begin", "capture_end")),
}
# Owners watched whole: every entry of their namespace, added or replaced. torch.Tensor's own dict
# overrides the C methods below it (`torch.Tensor.item = ...` would), so it is watched whole too.
HARNESS_MODULES = ("harness.timing", "harness.stats", "harness.check", "harness.problem", "harness.worker",
                   "harness.baselines", "harness.guard", "harness.records")


@dataclasses.dataclass(frozen=True)
class _Entry:
    owner: object
    label: str
    name: str
    value: object   # the object the name was bound to, or _ABSENT


_ABSENT = object()


def _namespaces(helper) -> list[tuple[str, object, tuple[str, ...] | None]]:
    """(label, owner, names or None for all) of everything watched."""
    import importlib
    spaces = [(label, owner, names) for label, (owner, names) in WATCHED_NAMES.items()]
    spaces.append(("torch.Tensor", torch.Tensor, None))
    for module_name in HARNESS_MODULES:
        module = importlib.import_module(module_name)
        spaces.append((module_name, module, None))
        for name, value in vars(module).items():
            if isinstance(value, type) and value.__module__ == module_name:
                spaces.append((f"{module_name}.{name}", value, None))
    if helper is not None:
        spaces.append((getattr(helper, "__name__", "timing_kernels"), helper, None))
    return spaces


class Guard:
    """A snapshot of the watched attributes; `replaced()` names those rebound, added or deleted since."""

    def __init__(self, helper=None):
        self._entries: list[_Entry] = []
        self._whole: list[tuple[str, object, frozenset[str]]] = []
        for label, owner, names in _namespaces(helper):
            if isinstance(owner, type):
                # Pickling an instance caches the class's slot names in its dict (`__slotnames__`, copyreg), and
                # the worker pickles every row it sends back: cache them now, so the snapshot holds Python's own
                # value and only a rebinding of it counts.
                copyreg._slotnames(owner)
            if names is None:
                names = _watched_names(owner)
                self._whole.append((label, owner, frozenset(names)))
            self._entries += [_Entry(owner, label, name, vars(owner).get(name, _ABSENT))
                              if isinstance(owner, type) else
                              _Entry(owner, label, name, getattr(owner, name, _ABSENT)) for name in names]

    @staticmethod
    def _current(entry: _Entry):
        if isinstance(entry.owner, type):
            return vars(entry.owner).get(entry.name, _ABSENT)
        return getattr(entry.owner, entry.name, _ABSENT)

    def replaced(self) -> list[str]:
        changed = [f"{e.label}.{e.name}" for e in self._entries if self._current(e) is not e.value]
        for label, owner, names in self._whole:
            changed += [f"{label}.{name}" for name in sorted(set(_watched_names(owner)) - names)]
        return changed

    def restore(self) -> None:
        """Put every watched attribute back as it was taken, and remove what was added."""
        for e in self._entries:
            if self._current(e) is e.value:
                continue
            if e.value is _ABSENT:
                delattr(e.owner, e.name)
            else:
                setattr(e.owner, e.name, e.value)
        for _, owner, names in self._whole:
            for name in set(_watched_names(owner)) - names:
                delattr(owner, name)


def _watched_names(owner) -> tuple[str, ...]:
    """A class's whole dict; a module's public and private names, not its dunders (Python adds
    `__warningregistry__` to a module that warns)."""
    names = tuple(vars(owner))
    return names if isinstance(owner, type) else tuple(n for n in names if not n.startswith("__"))
