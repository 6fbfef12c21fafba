"""Progress of a loop of items (builds, rows): a live tqdm bar on a terminal, plain log lines otherwise (CI logs).

Both show what is in flight, how many are done of how many, and an ETA (mean time per finished item times
the items left; tqdm computes its own on a terminal). Finished items are reported as lines in both modes:
above the bar on a terminal (through tqdm.write, so the bar is not torn), as log lines otherwise.
While a bar is live, log records go through tqdm.write too (tqdm swaps the root logger's console handler);
the handlers are put back when the progress ends.
"""
from __future__ import annotations

import contextlib
import logging
import sys
import time
from collections.abc import Callable

log = logging.getLogger("harness.progress")


def is_terminal(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def format_eta(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"


class Progress:
    """`with Progress("rows", total) as p: p.start(label); ...; p.finish(label, outcome)`."""

    def __init__(self, what: str, total: int, stream=None, interactive: bool | None = None,
                 clock: Callable[[], float] = time.monotonic):
        self.what, self.total = what, total
        self.stream = stream if stream is not None else sys.stderr
        self.interactive = is_terminal(self.stream) if interactive is None else interactive
        self.clock = clock
        self.done = 0
        self.active: list[str] = []
        self._bar = None
        self._stack = contextlib.ExitStack()
        self._t0 = clock()

    def __enter__(self) -> Progress:
        self._t0 = self.clock()
        if self.interactive and self.total > 0:
            self._bar = self._open_bar()
        return self

    def __exit__(self, *exc) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None
        self._stack.close()

    def _open_bar(self):
        try:
            from tqdm import tqdm
            from tqdm.contrib.logging import logging_redirect_tqdm
        except ImportError:  # tqdm is in requirements.txt; without it, plain lines
            self.interactive = False
            return None
        self._stack.enter_context(logging_redirect_tqdm())
        return tqdm(total=self.total, desc=self.what, file=self.stream, dynamic_ncols=True, leave=True,
                    bar_format="{desc} {n_fmt}/{total_fmt} |{bar}| {elapsed}<{remaining} {postfix}")

    # ---- events ----
    def start(self, label: str) -> None:
        self.active.append(label)
        if self._bar is not None:
            self._bar.set_postfix_str(", ".join(self.active), refresh=True)

    def finish(self, label: str, outcome: str = "") -> None:
        if label in self.active:
            self.active.remove(label)
        self.done += 1
        line = f"[{self.done}/{self.total}] {label}{': ' + outcome if outcome else ''}"
        if self._bar is not None:
            self._bar.write(line, file=self.stream)
            self._bar.update(1)
            self._bar.set_postfix_str(", ".join(self.active), refresh=True)
        else:
            log.info("%s (%s left, ETA %s)", line, self.total - self.done, format_eta(self.eta_s()))

    def heartbeat(self) -> None:
        """Plain mode only: a line saying what is still running (a bar shows it live)."""
        if self._bar is None and self.active:
            log.info("still %s: %s (%s elapsed)", self.what, ", ".join(self.active),
                     format_eta(self.clock() - self._t0))

    def eta_s(self) -> float | None:
        if self.done == 0:
            return None
        return (self.clock() - self._t0) / self.done * (self.total - self.done)
