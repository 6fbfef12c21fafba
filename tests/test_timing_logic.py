"""The sampling loop and statistics on synthetic samples, with a fake clock: no GPU."""
import random

import pytest

from harness import stats, timing


class FakeClock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


class FakeKind:
    """Each batch advances the fake clock by the sum of its samples, like real time would."""
    name, method = "gpu", "fake"

    def __init__(self, clock, draw, batch=8):
        self.clock, self.draw, self.batch = clock, draw, batch

    def sample_batch(self, call):
        xs = [self.draw() for _ in range(self.batch)]
        self.clock.t += sum(xs) * 1e-6 + 20e-6
        return xs


def run(draw, rule):
    clock = FakeClock()
    return timing.measure(FakeKind(clock, draw), lambda: None, rule, clock=clock)


def test_stable_series_stops_early():
    rng = random.Random(0)
    rule = stats.StoppingRule(noise_target=0.005, min_samples=30, min_time_s=0.0, budget_s=10.0)
    m = run(lambda: 100.0 + rng.gauss(0, 0.5), rule)
    assert 30 <= len(m.samples_us) <= 40 and m.elapsed_s < 0.01
    s = stats.summarize([m.samples_us], rule)
    assert not s.noisy and abs(s.median - 100) < 0.5


def test_noisy_series_runs_to_budget_and_is_flagged():
    rng = random.Random(1)
    rule = stats.StoppingRule(noise_target=0.001, min_samples=30, min_time_s=0.0, budget_s=0.05)
    m = run(lambda: rng.choice([50.0, 100.0, 200.0]), rule)
    assert m.elapsed_s >= 0.05
    assert stats.summarize([m.samples_us], rule).noisy


def test_min_time_is_respected():
    rule = stats.StoppingRule(noise_target=0.5, min_samples=1, min_time_s=0.02, budget_s=1.0)
    m = run(lambda: 10.0, rule)
    assert m.elapsed_s >= 0.02


def test_invalid_batches_are_counted_and_bounded():
    class Timeouts(FakeKind):
        def sample_batch(self, call):
            self.clock.t += 1e-3
            return None
    clock = FakeClock()
    m = timing.measure(Timeouts(clock, None), lambda: None, stats.StoppingRule(budget_s=5), clock=clock, max_invalid=3)
    assert m.invalid_batches == 3 and m.samples_us == ()


def test_statistics():
    xs = [1.0, 2.0, 3.0, 4.0, 100.0]
    assert stats.median(xs) == 3.0
    assert stats.iqr(xs) == pytest.approx(2.0)
    assert stats.rel_se_median([5.0]) == float("inf")
    assert stats.spread([10.0, 11.0]) == pytest.approx(1 / 10.5)
    s = stats.summarize([[1.0, 1.0, 1.0], [2.0, 2.0, 2.0]], stats.StoppingRule())
    assert s.rounds == (1.0, 2.0) and s.n == 6 and s.spread == pytest.approx(1 / 1.5)
    with pytest.raises(ValueError):
        stats.summarize([[]], stats.StoppingRule())


@pytest.mark.parametrize("mode", ["read", "write"])
def test_l2_flush_runs(mode):
    flush = timing.L2Flush(mode, nbytes=4096, device="cpu")
    flush()
    assert flush.buffer.numel() == 1024


# ---- the blocking kernel, on a simulated device ----

class FakeDevice:
    """One stream on a clock the host advances: an op starts once the host has queued it and the op before
    it has finished; while a blocker is held, everything queued waits until the host releases it."""

    def __init__(self):
        self.host_us, self.free_at, self.held = 0.0, 0.0, None

    def launch(self, duration_us, on_done=None):
        op = (self.host_us, duration_us, on_done)
        if self.held is None:
            self._run(op)
        else:
            self.held.append(op)

    def _run(self, op, not_before=0.0):
        queued, duration, on_done = op
        self.free_at = max(queued, self.free_at, not_before) + duration
        if on_done:
            on_done(self.free_at)

    def hold(self):
        self.held = []

    def release(self):
        ops, self.held = self.held or [], None
        for op in ops:
            self._run(op, not_before=self.host_us)


def fake_event_type(device):
    class FakeEvent:
        def __init__(self, enable_timing=True):
            self.at_us = None

        def record(self):
            device.launch(0.0, on_done=lambda t: setattr(self, "at_us", t))

        def synchronize(self):
            assert self.at_us is not None, "an event behind a blocker that was never released"

        def elapsed_time(self, end):  # milliseconds, like torch.cuda.Event
            return (end.at_us - self.at_us) / 1e3
    return FakeEvent


class FakeBlocker:
    def __init__(self, device):
        self.device = device

    def blocker_create(self):
        return 1

    def blocker_hold(self, handle, timeout_s):
        self.device.hold()

    def blocker_release(self, handle):
        self.device.release()

    def blocker_timed_out(self, handle):
        return False


class NoOpBlocker(FakeBlocker):
    """blocker_hold and blocker_release stubbed out."""

    def blocker_hold(self, handle, timeout_s):
        pass

    def blocker_release(self, handle):
        pass


HOST_US, KERNEL_US, FLUSH_US = 50.0, 2.0, 100.0


def gpu_times(blocker_type, flush_us=None):
    device = FakeDevice()

    def host_heavy_call():  # 50 us of Python and dispatch, then a 2 us kernel
        device.host_us += HOST_US
        device.launch(KERNEL_US)

    flush = (lambda: device.launch(flush_us)) if flush_us else None
    kind = timing.GpuTime(blocker_type(device), flush=flush, event_type=fake_event_type(device))
    return kind.sample_batch(host_heavy_call)


def test_blocking_kernel_hides_host_time_when_the_l2_is_hot():
    """Hot (no flush) and a host-heavy call: only a held-then-released blocker makes the events bracket the
    kernel alone; stubbed out, every sample carries the host's 50 us."""
    assert gpu_times(FakeBlocker) == pytest.approx([KERNEL_US] * 16)
    assert min(gpu_times(NoOpBlocker)) >= HOST_US


def test_a_flush_longer_than_the_host_hides_a_missing_blocker():
    """Why a cold-mode test cannot tell a working blocker from a stub: the flush before each call keeps
    the device busy while the host queues the call."""
    assert gpu_times(FakeBlocker, FLUSH_US) == pytest.approx([KERNEL_US] * 16)
    assert gpu_times(NoOpBlocker, FLUSH_US) == pytest.approx([KERNEL_US] * 16)
