"""Facts about the machine a result came from, and the SM clock read through NVML while timing."""
from __future__ import annotations

import contextlib
import datetime
import logging
import os
import platform
import re
import statistics
import subprocess
import threading
from pathlib import Path

import torch

from harness.records import Clocks

log = logging.getLogger(__name__)
REPO = Path(__file__).resolve().parent.parent


def gpu_key(name: str | None) -> str | None:
    """'NVIDIA H200' -> 'h200': the folder name of a GPU model's baseline."""
    if not name:
        return None
    short = re.sub(r"^nvidia\s+", "", name.strip(), flags=re.I).lower()
    return re.sub(r"[^a-z0-9]+", "-", short).strip("-")


def git_commit(project: Path = REPO) -> tuple[str | None, bool]:
    """KVBENCH_COMMIT (and KVBENCH_DIRTY) when set: whoever copied the tree names its commit, and a copy can
    carry a `.git` whose HEAD is not the tree's (the GPU machine's did). Else HEAD and whether tracked files
    differ from it, read from git only where git's top level is the project folder itself: a copy of the
    project inside another repository would otherwise record that repository's commit. Else none."""
    if os.environ.get("KVBENCH_COMMIT"):
        return os.environ["KVBENCH_COMMIT"], os.environ.get("KVBENCH_DIRTY", "") not in ("", "0")
    try:
        top = _git(project, "rev-parse", "--show-toplevel")
        if Path(top).resolve() == Path(project).resolve():
            dirty = bool(_git(project, "status", "--porcelain", "--untracked-files=no"))
            return _git(project, "rev-parse", "HEAD"), dirty
    except (OSError, subprocess.CalledProcessError):
        pass
    return None, False


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True).stdout.strip()


def _nvml():
    """The NVML module, initialised, or None where it is missing or finds no driver."""
    try:
        import pynvml
        pynvml.nvmlInit()
        return pynvml
    except Exception as exc:  # missing package, no driver: clocks are simply not reported
        log.debug("NVML unavailable: %s", exc)
        return None


def _nvml_handle(nvml, device_index: int):
    try:
        uuid = str(torch.cuda.get_device_properties(device_index).uuid)
        return nvml.nvmlDeviceGetHandleByUUID(uuid if uuid.startswith("GPU-") else f"GPU-{uuid}")
    except Exception:
        return nvml.nvmlDeviceGetHandleByIndex(device_index)


def describe() -> dict:
    """The `env` block of a result file."""
    commit, dirty = git_commit()
    info = {"gpu": None, "gpu_key": None, "driver": None, "cuda": torch.version.cuda,
            "torch": torch.__version__, "python": platform.python_version(), "commit": commit,
            "dirty": dirty, "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "host": platform.node()}
    if torch.cuda.is_available():
        props = torch.cuda.get_device_properties(0)
        info.update(gpu=props.name, gpu_key=gpu_key(props.name), sm_count=props.multi_processor_count,
                    l2_bytes=props.L2_cache_size, memory_bytes=props.total_memory,
                    capability=f"{props.major}.{props.minor}")
        info.update(_nvml_facts())
    return info


def _nvml_facts() -> dict:
    nvml = _nvml()
    if nvml is None:
        return {}
    facts = {}
    handle = _nvml_handle(nvml, 0)
    for key, read in (("driver", nvml.nvmlSystemGetDriverVersion),
                      ("sm_clock_max_mhz", lambda: nvml.nvmlDeviceGetMaxClockInfo(handle, nvml.NVML_CLOCK_SM)),
                      ("sm_clock_app_mhz", lambda: nvml.nvmlDeviceGetApplicationsClock(handle, nvml.NVML_CLOCK_SM)),
                      ("power_limit_w", lambda: nvml.nvmlDeviceGetEnforcedPowerLimit(handle) / 1000)):
        try:
            facts[key] = read()
        except nvml.NVMLError as exc:  # some boards do not report every value
            log.debug("NVML %s: %s", key, exc)
    return facts


# NVML's clock-event reasons (nvmlClocksEventReason*): which limit held the SM clock down at a reading.
POWER_REASONS = 0x4 | 0x80           # software power cap, hardware power brake
THERMAL_REASONS = 0x20 | 0x40 | 0x8  # software and hardware thermal slowdown, hardware slowdown


def clocks_from_readings(readings: list[tuple], max_mhz: float, limit_w: float | None = None) -> Clocks | None:
    """Readings of (SM MHz, board watts or None, clock-event reason bits or None) -> the row's Clocks. A value
    the board did not report in every reading is left out (None), not guessed."""
    if not readings:
        return None
    mhz = [r[0] for r in readings]
    watts = [r[1] for r in readings]
    reasons = [r[2] for r in readings]
    power = statistics.median(watts) if None not in watts else None
    capped = sum(bool(x & POWER_REASONS) for x in reasons) / len(reasons) if None not in reasons else None
    thermal = sum(bool(x & THERMAL_REASONS) for x in reasons) / len(reasons) if None not in reasons else None
    return Clocks(sm_mhz_median=statistics.median(mhz), sm_mhz_min=min(mhz), sm_mhz_max_supported=max_mhz,
                  power_w_median=power, power_limit_w=limit_w, power_capped_share=capped, thermal_share=thermal)


class ClockSampler(contextlib.AbstractContextManager):
    """Reads the SM clock, the board's power draw and why the clock is held down (NVML's clock-event reasons)
    every `period_s` on a thread while the block runs (never sets any of them)."""

    def __init__(self, device_index: int = 0, period_s: float = 0.005):
        self.nvml = _nvml()
        self.handle = _nvml_handle(self.nvml, device_index) if self.nvml else None
        self.period_s = period_s
        self.readings: list[tuple] = []
        self._power_ok = self._reasons_ok = True  # cleared for good at the first NVMLError: not every board has them
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _power_w(self) -> float | None:
        if not self._power_ok:
            return None
        nvml = self.nvml
        try:  # the instantaneous reading; nvmlDeviceGetPowerUsage is a one-second average on recent boards
            value = nvml.nvmlDeviceGetFieldValues(self.handle, [nvml.NVML_FI_DEV_POWER_INSTANT])[0]
            if value.nvmlReturn == nvml.NVML_SUCCESS:
                return _field_number(value) / 1000
            return nvml.nvmlDeviceGetPowerUsage(self.handle) / 1000
        except (nvml.NVMLError, AttributeError, IndexError) as exc:
            log.debug("NVML power: %s", exc)
            self._power_ok = False
            return None

    def _reasons(self) -> int | None:
        if not self._reasons_ok:
            return None
        nvml = self.nvml
        read = getattr(nvml, "nvmlDeviceGetCurrentClocksEventReasons", None) or \
            getattr(nvml, "nvmlDeviceGetCurrentClocksThrottleReasons", None)
        try:
            return int(read(self.handle))
        except (nvml.NVMLError, TypeError) as exc:
            log.debug("NVML clock-event reasons: %s", exc)
            self._reasons_ok = False
            return None

    def _read(self) -> None:
        mhz = self.nvml.nvmlDeviceGetClockInfo(self.handle, self.nvml.NVML_CLOCK_SM)
        self.readings.append((mhz, self._power_w(), self._reasons()))

    def _run(self) -> None:
        while not self._stop.wait(self.period_s):
            self._read()

    def __enter__(self):
        if self.nvml:
            self._read()
            self._thread.start()
        return self

    def __exit__(self, *exc):
        if self.nvml:
            self._stop.set()
            self._thread.join()
            self._read()
        return False

    def clocks(self) -> Clocks | None:
        if not self.nvml or not self.readings:
            return None
        top = self.nvml.nvmlDeviceGetMaxClockInfo(self.handle, self.nvml.NVML_CLOCK_SM)
        try:
            limit = self.nvml.nvmlDeviceGetEnforcedPowerLimit(self.handle) / 1000
        except self.nvml.NVMLError:
            limit = None
        return clocks_from_readings(self.readings, top, limit)


def _field_number(value) -> float:
    """An nvmlFieldValue_t's number, whichever member its valueType names (power is an unsigned int, mW)."""
    kinds = {0: "dVal", 1: "uiVal", 2: "ulVal", 3: "ullVal", 4: "sllVal", 5: "siVal", 6: "usVal"}
    return float(getattr(value.value, kinds.get(value.valueType, "uiVal")))
