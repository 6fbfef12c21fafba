"""A variant that rebinds what the timing relies on fails its row (`tampered`), and the originals come back."""
import time

import pytest
import torch

from harness import timing, worker
from harness.guard import Guard
from harness.records import Kind, Row, Status
from harness.shapes import SEED
from harness.stats import StoppingRule, summarize


class FakeHelper:
    """The timing extension's L2 functions, without a GPU."""

    def __init__(self, state=(0, 0)):
        self.state = list(state)

    def persisting_l2_state(self):
        return self.state

    def reset_persisting_l2(self):
        self.state[:] = [0, 0]  # in place: the guard watches the helper's attributes too
        return True


def tools(helper=None):
    helper = helper or FakeHelper()
    return worker.Instruments(helper, gpu=None, gpu_warm=None, guard=Guard(helper),
                              l2_start=worker.l2_baseline(helper))


def timed_row():
    t = worker.Timing(summarize([[1.0, 1.0]], StoppingRule()), "blocked-events", (1.0, 1.0))
    return Row("mine", Kind.KERNEL, SEED, "float32", Status.OK, gpu=t, call=t, gpu_warm=t)


def quarter_time(self, end):
    return 0.25


@pytest.mark.parametrize("owner, name, replacement", [
    (torch.cuda.Event, "elapsed_time", quarter_time),
    (time, "perf_counter", lambda: 0.0),
    (torch.cuda, "synchronize", lambda *a: None),
    (timing, "measure", lambda *a, **k: None),
    (timing.GpuTime, "sample_batch", lambda self, call: [0.1]),
])
def test_a_rebound_function_fails_the_row_and_is_restored(owner, name, replacement, monkeypatch):
    instruments = tools()
    original = vars(owner)[name] if isinstance(owner, type) else getattr(owner, name)
    monkeypatch.setattr(owner, name, replacement)
    row = worker.judge_tampering(timed_row(), instruments)
    assert row.status == Status.TAMPERED and name in row.message and "(restored)" in row.message
    assert row.gpu is None and row.call is None and row.gpu_warm is None
    current = vars(owner)[name] if isinstance(owner, type) else getattr(owner, name)
    assert current is original
    assert worker.judge_tampering(timed_row(), instruments).status == Status.OK  # the next row is clean


def test_an_added_tensor_method_fails_the_row():
    """torch.Tensor's own dict overrides the C methods: adding `item` there is a rebinding too."""
    instruments = tools()
    torch.Tensor.item = lambda self: 0.0
    try:
        row = worker.judge_tampering(timed_row(), instruments)
    finally:
        if "item" in vars(torch.Tensor):
            del torch.Tensor.item
    assert row.status == Status.TAMPERED and "torch.Tensor.item" in row.message
    assert torch.ones(1).item() == 1.0


def test_a_persisting_l2_window_fails_the_row():
    helper = FakeHelper(state=(0, 0))
    instruments = tools(helper)
    helper.state[:] = [1 << 20, 4096]  # set during the row
    row = worker.judge_tampering(timed_row(), instruments)
    assert row.status == Status.TAMPERED and "persisting-L2" in row.message
    assert helper.state == [0, 0]


class StuckLimitHelper(FakeHelper):
    """A device whose persisting-L2 limit cannot be cleared (it refuses the limit, as under MIG)."""

    def reset_persisting_l2(self):
        self.state[1] = 0
        return False


def test_a_context_that_starts_with_a_persisting_limit_is_cleared_first():
    """A new context need not start at zero: a row that never reached the timing's reset (one that failed its
    check) is judged by what it changed, not by the device's starting state."""
    helper = FakeHelper(state=(1 << 20, 0))
    instruments = tools(helper)
    assert instruments.l2_start == (0, 0) and helper.state == [0, 0]
    assert worker.judge_tampering(timed_row(), instruments).status == Status.OK
    stuck = StuckLimitHelper(state=(1 << 20, 0))
    instruments = tools(stuck)
    assert instruments.l2_start == (1 << 20, 0)
    assert worker.judge_tampering(timed_row(), instruments).status == Status.OK
    stuck.state[1] = 4096  # a window set during the row still counts
    assert worker.judge_tampering(timed_row(), instruments).status == Status.TAMPERED


def test_an_untouched_row_passes():
    assert worker.judge_tampering(timed_row(), tools()) == timed_row()


def test_timing_uses_the_event_methods_taken_before_the_variant(monkeypatch):
    """GpuTime binds the event methods when made (before any variant is imported): a later patch of the class
    does not change what it measures."""
    from test_timing_logic import FakeBlocker, FakeDevice, fake_event_type

    device = FakeDevice()
    event_type = fake_event_type(device)
    kind = timing.GpuTime(FakeBlocker(device), flush=None, event_type=event_type)
    monkeypatch.setattr(event_type, "elapsed_time", quarter_time)

    def call():
        device.launch(8.0)
    assert kind.sample_batch(call) == pytest.approx([8.0] * 16)


def test_pickling_a_row_is_not_tampering():
    """The worker pickles each row it sends back, and pickling caches `__slotnames__` on every class it meets
    (harness.records' included): that is Python's doing, not a variant's, and must not fail the next row."""
    import pickle

    from harness import records
    for cls in vars(records).values():
        if isinstance(cls, type) and "__slotnames__" in vars(cls):
            delattr(cls, "__slotnames__")
    guard = Guard(FakeHelper())
    pickle.dumps(timed_row())
    assert "__slotnames__" in vars(Row)
    assert guard.replaced() == []
    Row.__slotnames__ = ["gpu"]  # a variant's rebinding of it still counts
    assert guard.replaced() == ["harness.records.Row.__slotnames__"]
    guard.restore()
    assert guard.replaced() == []
