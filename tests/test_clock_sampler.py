"""What NVML reads while a row is timed (clock, board power, why the clock is held down), on a stand-in NVML:
no GPU needed."""
import types

import pytest

from harness import env, report
from harness.records import CacheMode, Clocks, Kind, Row, Status
from harness.shapes import preset

SW_POWER_CAP, HW_POWER_BRAKE, SW_THERMAL, GPU_IDLE = 0x4, 0x80, 0x20, 0x1


class FakeNvml:
    """The few NVML calls the sampler makes, answering from scripted lists (the last entry repeats)."""
    NVML_CLOCK_SM = 1
    NVML_FI_DEV_POWER_INSTANT = 186
    NVML_SUCCESS = 0

    class NVMLError(Exception):
        pass

    def __init__(self, mhz, milliwatts=None, reasons=None, limit_mw=700_000, power_fails_at=None):
        self.mhz, self.milliwatts, self.reasons = list(mhz), milliwatts, reasons
        self.limit_mw, self.power_fails_at, self.power_reads = limit_mw, power_fails_at, 0

    @staticmethod
    def _next(seq):
        return seq.pop(0) if len(seq) > 1 else seq[0]

    def nvmlDeviceGetClockInfo(self, handle, which):
        return self._next(self.mhz)

    def nvmlDeviceGetMaxClockInfo(self, handle, which):
        return 1980

    def nvmlDeviceGetEnforcedPowerLimit(self, handle):
        return self.limit_mw

    def nvmlDeviceGetFieldValues(self, handle, ids):
        self.power_reads += 1
        if self.milliwatts is None or self.power_reads == self.power_fails_at:
            raise self.NVMLError("not supported")
        value = types.SimpleNamespace(uiVal=self._next(self.milliwatts))
        return [types.SimpleNamespace(nvmlReturn=0, valueType=1, value=value)]

    def nvmlDeviceGetCurrentClocksEventReasons(self, handle):
        if self.reasons is None:
            raise self.NVMLError("not supported")
        return self._next(self.reasons)


def sampled(monkeypatch, nvml, reads=4) -> Clocks:
    monkeypatch.setattr(env, "_nvml", lambda: nvml)
    monkeypatch.setattr(env, "_nvml_handle", lambda nvml, index: "handle")
    sampler = env.ClockSampler()
    for _ in range(reads):  # what the sampling thread does, without the thread's timing
        sampler._read()
    return sampler.clocks()


def test_power_and_the_power_caps_share_of_readings(monkeypatch):
    nvml = FakeNvml(mhz=[1980, 1755, 1740, 1740], milliwatts=[400_000, 690_000, 700_000, 700_000],
                    reasons=[GPU_IDLE, SW_POWER_CAP, SW_POWER_CAP | SW_THERMAL, HW_POWER_BRAKE])
    clocks = sampled(monkeypatch, nvml)
    assert clocks.sm_mhz_median == 1747.5 and clocks.sm_mhz_min == 1740 and clocks.sm_mhz_max_supported == 1980
    assert clocks.power_w_median == 695.0 and clocks.power_limit_w == 700.0
    assert clocks.power_capped_share == 0.75 and clocks.thermal_share == 0.25
    assert clocks.power_capped and not clocks.throttled  # 1747.5 MHz is above 85 % of 1980


def test_a_board_without_power_readings_reports_none_not_zero(monkeypatch):
    clocks = sampled(monkeypatch, FakeNvml(mhz=[1980], milliwatts=None, reasons=None))
    assert clocks.sm_mhz_median == 1980
    assert (clocks.power_w_median, clocks.power_capped_share, clocks.thermal_share) == (None, None, None)
    assert not clocks.power_capped


def test_a_power_reading_that_fails_mid_row_leaves_power_out_of_the_whole_row(monkeypatch):
    """A median over the readings that happened to succeed would describe part of the row as all of it."""
    nvml = FakeNvml(mhz=[1800], milliwatts=[300_000], reasons=[SW_POWER_CAP], power_fails_at=3)
    clocks = sampled(monkeypatch, nvml)
    assert clocks.power_w_median is None and clocks.power_capped_share == 1.0


@pytest.mark.parametrize("mhz, share, flagged", [(1900.0, 0.75, True), (1900.0, 0.5, True), (1900.0, 0.25, False),
                                                  (1900.0, None, False), (1965.0, 0.9, False)])
def test_the_power_capped_flag(mhz, share, flagged):
    """Flagged where the power limit held the clock down in most readings, by 3 % or more; NVML names the cap
    at one clock step under the maximum too (callA of 2026-12-06 eleventh: 64-token rows at 1965 of 1980 MHz)."""
    row = Row("k", Kind.KERNEL, preset("seed"), "float32", Status.OK,
              clocks=Clocks(mhz, 1800.0, 1980.0, 690.0, 700.0, share, 0.0))
    assert (report.POWER_FLAG in report.flags(row, types.SimpleNamespace(x_floor=None), CacheMode.COLD_READ)) == flagged
