import gzip
from pathlib import Path

import pytest

from harness import cli, plot
from harness.resultfile import load_result

DATA = Path(__file__).resolve().parent / "data"


def test_speedup_groups_from_a_real_run():
    groups = plot.speedup_groups(load_result(DATA / "h200_run1.json"))
    assert set(groups) == {("seed", "float32"), ("seed", "bfloat16"),
                           ("deepseek-v2-lite", "float32"), ("deepseek-v2-lite", "bfloat16")}
    variants = {name for rows in groups.values() for name, _, _ in rows}
    assert "eager" not in variants and "empty-kernel" not in variants and "fused_tiled" in variants


def test_plot_command_writes_a_png(tmp_path):
    out = tmp_path / "speedups.png"
    assert cli.main(["plot", str(DATA / "h200_run1.json"), "--out", str(out)]) == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_plot_of_a_gzipped_file_defaults_to_its_name_with_png(tmp_path):
    gzipped = tmp_path / "run.json.gz"
    gzipped.write_bytes(gzip.compress((DATA / "h200_run1.json").read_bytes()))
    assert cli.main(["plot", str(gzipped)]) == 0
    assert (tmp_path / "run.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_plot_refuses_a_file_with_nothing_timed(tmp_path, capsys):
    empty = tmp_path / "empty.json"
    empty.write_text('{"schema": 1, "env": {}, "rows": []}')
    assert cli.main(["plot", str(empty)]) == cli.EXIT_USAGE
    assert "no timed rows to plot" in capsys.readouterr().err


@pytest.mark.parametrize("x, label", [(2.0, "2×"), (0.5, "0.5×"), (3.0, ""), (50.0, "50×")])
def test_minor_tick_labels(x, label):
    assert plot._minor_label(x, None) == label
