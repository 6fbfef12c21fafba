"""Progress: plain log lines with counts and an ETA when stderr is not a terminal (CI); a tqdm bar on one."""
import io
import logging

import pytest

from harness.progress import Progress, format_eta


class FakeClock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def test_plain_lines_count_and_estimate(caplog):
    caplog.set_level(logging.INFO, logger="harness.progress")
    clock = FakeClock()
    with Progress("rows", 4, stream=io.StringIO(), clock=clock) as p:
        assert not p.interactive
        p.start("two_stage seed float32")
        clock.now += 10
        p.finish("two_stage seed float32", "ok")
        clock.now += 30
        p.start("two_stage seed bfloat16")
        p.heartbeat()
        p.finish("two_stage seed bfloat16", "wrong")
    lines = [r.getMessage() for r in caplog.records]
    assert lines[0] == "[1/4] two_stage seed float32: ok (3 left, ETA 30 s)"
    assert lines[1] == "still rows: two_stage seed bfloat16 (40 s elapsed)"
    assert lines[2] == "[2/4] two_stage seed bfloat16: wrong (2 left, ETA 40 s)"


def test_eta_format():
    assert format_eta(None) == "?"
    assert format_eta(59.4) == "59 s"
    assert format_eta(61) == "1 min 01 s"
    assert format_eta(3725) == "1 h 02 min"


class FakeTerminal(io.StringIO):
    def isatty(self):
        return True


def test_a_terminal_gets_a_bar_with_what_runs_and_lines_for_what_finished():
    pytest.importorskip("tqdm")
    stream = FakeTerminal()
    with Progress("building", 2, stream=stream) as p:
        assert p.interactive
        p.start("fused_tiled")
        p.start("two_stage")
        p.finish("fused_tiled", "built in 40.0 s")
        text = stream.getvalue()
        assert "building 1/2" in text and "two_stage" in text
    text = stream.getvalue()
    assert "[1/2] fused_tiled: built in 40.0 s" in text


def test_log_records_go_through_the_bar_and_handlers_come_back():
    pytest.importorskip("tqdm")
    root = logging.getLogger()
    before = list(root.handlers)
    with Progress("rows", 1, stream=FakeTerminal()):
        assert root.handlers != before  # tqdm's handler replaced the console one
    assert root.handlers == before
