"""scripts/ncu_summary.py: Nsight Compute's CSV details page read into one line per kernel."""
import pytest
import script_module

HEADER = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size",'
          '"Device","CC","Section Name","Metric Name","Metric Unit","Metric Value","Rule Name","Rule Type",'
          '"Rule Description"')


def _script():
    return script_module.load("ncu_summary")


def _row(kid, kernel, section, metric, unit, value, rule=""):
    return f'"{kid}","1","python3","h","{kernel}","1","7","(384, 1, 1)","(132, 1, 1)","0","9.0","{section}",' \
           f'"{metric}","{unit}","{value}","{"CPIStall" if rule else ""}","{"OPT" if rule else ""}","{rule}"'


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


def test_repeated_metric_names_keep_the_first_and_the_rule_names_the_stall():
    """As ncu 2025 writes it: "Memory Throughput" is a % in Speed Of Light and a byte rate later; with no
    per-reason stall metrics on the page, the CPIStall rule's sentence gives the largest one."""
    rule = ("On average, each warp of this workload spends 15.3 cycles being stalled waiting for a scoreboard "
            "dependency on a L1TEX (local, global, surface, texture) operation. Find the instruction ...")
    text = "\n".join([HEADER,
                      _row(1, "gemm2", "GPU Speed Of Light Throughput", "Elapsed Cycles", "cycle", "26,433"),
                      _row(1, "gemm2", "GPU Speed Of Light Throughput", "Memory Throughput", "%", "51.29"),
                      _row(1, "gemm2", "GPU Speed Of Light Throughput", "SM Active Cycles", "cycle", "19,693.04"),
                      _row(1, "gemm2", "Memory Workload Analysis", "Memory Throughput", "Tbyte/s", "2.46"),
                      _row(1, "gemm2", "WarpStateStats", "", "", "", rule)])
    ncu = _script()
    header, line = ncu.table(ncu.read(text)).splitlines()
    assert " 51.29 " in line and "2.46" not in line
    busy_at = header.index("SM busy %")
    assert line[busy_at:].split()[0] == "75"  # 19,693 of 26,433 cycles
    assert line.endswith("stalled waiting for a scoreboard dependency on a L1TEX 15.3"), line


def test_input_without_a_csv_header_is_refused_in_one_line():
    with pytest.raises(SystemExit, match="no ncu CSV header"):
        _script().read("==ERROR== the profiler could not read the counters")
