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
