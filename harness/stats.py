"""Statistics of timing samples and the rule that decides when to stop sampling. Pure functions."""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

import numpy as np

# Standard error of the median of a normal sample is 1.2533 * sigma / sqrt(n), and sigma is about
# IQR / 1.349; the ratio estimates the median's error from the IQR without assuming the mean.
_SE_MEDIAN_PER_IQR = 1.2533 / 1.349


def median(xs: Sequence[float]) -> float:
    return float(np.median(xs))


def iqr(xs: Sequence[float]) -> float:
    q1, q3 = np.percentile(xs, [25, 75])
    return float(q3 - q1)


def rel_se_median(xs: Sequence[float]) -> float:
    """Relative standard error of the median: our noise measure (inf with fewer than 2 samples)."""
    if len(xs) < 2:
        return math.inf
    m = median(xs)
    return _SE_MEDIAN_PER_IQR * iqr(xs) / math.sqrt(len(xs)) / m if m > 0 else math.inf


def spread(values: Sequence[float]) -> float:
    """(max - min) / median of round medians: how far apart repeated rounds of one row landed."""
    if len(values) < 2:
        return 0.0
    return (max(values) - min(values)) / median(values)


@dataclasses.dataclass(frozen=True)
class StoppingRule:
    """Sample until the median is known to `noise_target` (relative SE) after a minimum of samples and
    time, or until the budget ends; a row that ends on the budget above the target is noisy."""
    noise_target: float = 0.005
    min_samples: int = 30
    min_time_s: float = 0.05
    budget_s: float = 1.5
    max_samples: int = 20000

    def should_stop(self, samples: Sequence[float], elapsed_s: float) -> bool:
        if elapsed_s >= self.budget_s or len(samples) >= self.max_samples:
            return True
        if len(samples) < self.min_samples or elapsed_s < self.min_time_s:
            return False
        return self.converged(samples)

    def converged(self, samples: Sequence[float]) -> bool:
        return rel_se_median(samples) <= self.noise_target


@dataclasses.dataclass(frozen=True)
class Summary:
    median: float
    iqr: float
    n: int
    rel_se: float
    noisy: bool
    rounds: tuple[float, ...] = ()
    spread: float = 0.0


def summarize(rounds: Sequence[Sequence[float]], rule: StoppingRule) -> Summary:
    """Pool the samples of all rounds; keep each round's median to show run-to-run spread."""
    pooled = [x for r in rounds for x in r]
    if not pooled:
        raise ValueError("no valid samples")
    round_medians = tuple(median(r) for r in rounds if r)
    noisy = any(not rule.converged(r) for r in rounds if r)
    return Summary(median=median(pooled), iqr=iqr(pooled), n=len(pooled), rel_se=rel_se_median(pooled),
                   noisy=noisy, rounds=round_medians, spread=spread(round_medians))
