"""scripts/trace_tc.py: the phase timeline's summary, its event names against the kernel's, its traced build."""
import re
from pathlib import Path

import numpy as np
import pytest
import script_module

REPO = Path(__file__).resolve().parent.parent


def _script():
    return script_module.load("trace_tc")


def _stamps(tc):
    return np.zeros((2, tc.TRACE_CTAS, tc.TRACE_EVENTS), dtype=np.int64)


def test_summary_is_relative_to_the_first_entry_and_ignores_ctas_without_a_stamp():
    tc = _script()
    s = _stamps(tc)
    s[0, :3, 0] = [5_000, 5_100, 5_200]            # GEMM1 entries (ns)
    s[0, :3, 5] = [7_000, 8_000, 9_000]            # "C g1 first data"
    s[1, :2, 0] = [6_000, 10_000]                  # GEMM2 entries: two CTAs only
    out = tc.summarize([(s, 1.0)])
    assert out[(0, 0)] == (0.0, 0.1, 0.2, 3)
    assert out[(0, 5)] == (2.0, 3.0, 4.0, 3)
    assert out[(1, 0)] == (1.0, 5.0, 5.0, 2)       # upper median of two
    assert (1, 5) not in out                       # an event no CTA stamped is left out


def test_summary_takes_the_median_over_runs_of_each_statistic():
    tc = _script()
    runs = []
    for shift in (0, 1_000, 10_000):               # the slow run's last CTA must not set the summary
        s = _stamps(tc)
        s[0, :2, 0] = [100, 100]
        s[0, :2, 13] = [1_100, 1_100 + shift]
        runs.append((s, 1.0))
    assert tc.summarize(runs)[(0, 13)] == (1.0, 2.0, 2.0, 2)


def test_timer_step_is_the_smallest_difference_between_stamps():
    tc = _script()
    s = _stamps(tc)
    s[0, :4, 0] = [1_000, 1_032, 1_096, 1_096]
    s[0, 0, tc.SMID] = 1_033                       # an SM id, not a time: not counted
    assert tc.resolution_ns([(s, 1.0)]) == 32


def test_event_names_follow_the_kernels_enum():
    tc = _script()
    text = (REPO / "kernels" / "mla_tc.cuh").read_text()
    body = re.search(r"enum TraceEvent \{(.*?)\};", text, re.S).group(1)
    names = [n.strip() for n in body.replace("\n", " ").split(",") if n.strip()]
    assert names[-2:] == ["EV_SMID", "TRACE_EVENTS"]
    assert len(names) - 2 == len(tc.EVENTS) and tc.SMID == names.index("EV_SMID")
    assert tc.TRACE_EVENTS == len(names) - 1
    assert re.search(rf"constexpr int TRACE_CTAS = {tc.TRACE_CTAS};", text)
    # the script's name of each stamp says what the kernel's enum entry at the same place stamps
    pairs = dict(zip(names, tc.EVENTS))
    assert pairs == {
        "EV_ENTRY": "entry", "EV_P_G1_ISSUED": "P g1 issued", "EV_P_G2_PRE": "P g2 B pre-issued",
        "EV_P_G2_READY": "P g2 latent ready", "EV_P_G2_ISSUED": "P g2 issued", "EV_C_G1_FIRST": "C g1 first data",
        "EV_C_G1_MAIN": "C g1 main done", "EV_C_G1_PART": "C g1 partial stored",
        "EV_C_G1_WAIT": "C g1 split wait done", "EV_C_G1_RED": "C g1 reduced", "EV_C_G2_FIRST": "C g2 first data",
        "EV_C_G2_MAIN": "C g2 main done", "EV_C_G2_STORE": "C g2 store issued", "EV_EXIT": "C exit",
        "EV_P_SETUP": "P barriers set", "EV_P_TMAP": "P tensormaps prefetched",
        "EV_P_FIRST_TMA": "P first TMA issued", "EV_C_START": "C start"}


def test_traced_build_adds_the_trace_define_the_reader_and_the_knobs():
    tc = _script()
    from harness import discover
    spec = discover.load_variant(REPO / "kernels" / "two_stage.cu")
    ext = tc.traced_extension(spec, ("MLA_GEMM1_SPLIT_CAP=16",))
    assert ext.name.endswith("_trace_MLA_GEMM1_SPLIT_CAP16") and ext.functions[-1] == "mla_trace_read"
    assert "-DMLA_TRACE" in ext.nvcc_flags and "-DMLA_GEMM1_SPLIT_CAP=16" in ext.nvcc_flags
    assert "at::Tensor mla_trace_read()" in ext.cuda_source and "mla_trace_read();" in ext.declarations
    names = {tc.traced_extension(spec, d).name for d in ((), ("A=1",), ("B=1",), ("A=1", "B=1"))}
    assert len(names) == 4                         # each knob and value builds in a folder of its own


def test_the_engine_has_no_trace_code_unless_asked():
    text = (REPO / "kernels" / "mla_tc.cuh").read_text()
    assert re.search(r"#else\s*\n#define MLA_MARK\(ev\) \(\(void\)0\)", text)
    # every direct use of the stamp function sits behind the macro or an #ifdef MLA_TRACE block
    assert text.count("trace_mark(") == 2          # its definition and the macro


if __name__ == "__main__":
    pytest.main([__file__])
