"""README stays true: its results commands are the commands that produced the committed result files."""
import re
import shlex
from pathlib import Path

import pytest

from harness import cli
from harness.resultfile import load_result

REPO = Path(__file__).resolve().parent.parent
README = (REPO / "README.md").read_text()
# Settings that change the numbers; `arch` and `input_sets` are not set on the command line.
COMPARED_SETTINGS = ("cache", "rounds", "trials", "seed", "tokens", "gpu_rule", "call_rule")


def results_commands() -> list[tuple[str, list[str]]]:
    """(command, result files) for each paragraph of README's results section that names both."""
    section = README.split("## Results on the H200", 1)[1].split("\n## ", 1)[0]
    pairs = []
    for paragraph in section.split("\n\n"):
        commands = re.findall(r"`(python3? run_bench\.py [^`]+)`", paragraph)
        files = re.findall(r"`(results/[\w./-]+\.json)`", paragraph)
        pairs += [(" ".join(c.split()), files) for c in commands if files]
    return pairs


def test_readme_names_its_results_commands():
    assert len(results_commands()) >= 2


@pytest.mark.parametrize("command, files", results_commands())
def test_readme_results_command_produced_the_committed_files(command, files):
    args = cli.bench_parser().parse_args(shlex.split(command)[2:])
    request = cli.check_request(args)
    expected = cli.settings_record(cli.make_settings(args, request), request, arch="")
    expected_tasks = {(t.shape, t.dtype) for t in request.tasks}
    for name in files:
        result = load_result(REPO / name)
        for key in COMPARED_SETTINGS:
            assert result.settings.get(key) == expected[key], f"{name}: {key}"
        assert {(r.shape, r.dtype) for r in result.rows} == expected_tasks, name
