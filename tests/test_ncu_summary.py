"""scripts/ncu_summary.py: Nsight Compute's CSV details page read into one line per kernel."""
import importlib.util
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "ncu_summary.py"
HEADER = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size",'
          '"Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"')


def _script():
    spec = importlib.util.spec_from_file_location("ncu_summary", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _row(kid, kernel, section, metric, unit, value):
    return f'"{kid}","1","python3","h","{kernel}","1","7","(384, 1, 1)","(132, 1, 1)","0","9.0","{section}",' \
           f'"{metric}","{unit}","{value}"'


def test_one_line_per_kernel_with_its_metrics_and_largest_stalls():
    text = "\n".join(["==PROF== Connected to process 1", HEADER,
                      _row(0, "gemm1", "GPU Speed Of Light Throughput", "Duration", "us", "12.5"),
                      _row(0, "gemm1", "GPU Speed Of Light Throughput", "DRAM Throughput", "%", "81.0"),
                      _row(0, "gemm1", "Warp State Statistics", "Stall Barrier", "cycle", "1,204.5"),
                      _row(0, "gemm1", "Warp State Statistics", "Stall Wait", "cycle", "3.0"),
                      _row(1, "gemm2", "GPU Speed Of Light Throughput", "Duration", "us", "40.1")])
    ncu = _script()
    lines = ncu.table(ncu.read(text)).splitlines()
    assert len(lines) == 3 and lines[0].split()[:3] == ["id", "kernel", "duration"]
    assert "12.5 us" in lines[1] and "81.0" in lines[1] and lines[1].endswith("Stall Barrier 1204.5, Stall Wait 3")
    assert "40.1 us" in lines[2] and lines[2].endswith("-")  # no stall rows for it


def test_input_without_a_csv_header_is_refused_in_one_line():
    with pytest.raises(SystemExit, match="no ncu CSV header"):
        _script().read("==ERROR== the profiler could not read the counters")
