"""Merging shards' result files, on a recorded H200 run cut into shards: the merge gives back the very rows of
the unsharded run, reads like any result file, and refuses what would mix runs, with one line and exit 2."""
import copy
import json
import subprocess
import sys
from pathlib import Path

import pytest

from harness import cli, schedule
from harness.records import Task
from harness.resultfile import parse_result
from harness.schedule import Shard

WHOLE = json.loads((Path(__file__).parent / "data" / "h200_run1.json").read_text())
WHOLE["env"]["commit"] = "0123456789abcdef"
for row in WHOLE["rows"]:
    if row["kind"] == "kernel":
        row["build"] = f"{row['variant']}_1a2b3c"
GROUPS = list(dict.fromkeys(Task(r.shape, r.dtype) for r in parse_result(WHOLE).rows))


def shards(count: int) -> list[dict]:
    """The run cut as `--shard i/count` would have cut it, one file per host."""
    out = []
    for i in range(1, count + 1):
        mine = set(schedule.shard_tasks(GROUPS, Shard(i, count)))
        data = copy.deepcopy(WHOLE)
        data["rows"] = [raw for raw, row in zip(data["rows"], parse_result(WHOLE).rows) if Task(row.shape, row.dtype) in mine]
        data["env"]["host"] = f"host{i}"
        data["run"] = {"shard": {"index": i, "count": count}, "sweep": schedule.sweep_id(GROUPS)}
        out.append(data)
    return out


def write(tmp_path, name: str, data: dict) -> str:
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return str(path)


def merge(tmp_path, *files: dict, capsys=None) -> tuple[int, Path]:
    out = tmp_path / "all.json"
    paths = [write(tmp_path, f"part{i}.json", data) for i, data in enumerate(files, start=1)]
    return cli.main(["merge", *paths, "--out", str(out)]), out


@pytest.mark.parametrize("count", [2, 3])
def test_merged_shards_are_the_unsharded_rows(tmp_path, count, capsys):
    parts = shards(count)
    assert all(part["rows"] for part in parts) and sum(len(p["rows"]) for p in parts) == len(WHOLE["rows"])
    code, out = merge(tmp_path, *reversed(parts))  # in any order
    assert code == 0
    merged = json.loads(out.read_text())
    assert merged["rows"] == WHOLE["rows"]  # every field of every row, in the table's order
    assert merged["complete"] is True and merged["settings"] == WHOLE["settings"]
    assert merged["env"]["host"] == ", ".join(f"host{i}" for i in range(count, 0, -1))
    assert [m["shard"]["index"] for m in merged["run"]["merged"]] == list(range(count, 0, -1))
    assert f"merged {count} file(s), {len(WHOLE['rows'])} row(s)" in capsys.readouterr().out


def test_the_merged_file_reads_like_any_other(tmp_path, capsys):
    code, out = merge(tmp_path, *shards(2))
    assert code == 0
    whole = write(tmp_path, "whole.json", WHOLE)
    assert cli.main(["compare", whole, str(out)]) == 0
    text = capsys.readouterr().out
    assert "gate passed" in text and "SLOWER" not in text and "FAILED" not in text and "MISSING" not in text
    assert cli.main(["plot", str(out), "--out", str(tmp_path / "all.png")]) == 0
    assert (tmp_path / "all.png").stat().st_size > 0


def test_a_missing_shard_is_noted_and_the_file_marked_incomplete(tmp_path, capsys):
    first, _, third = shards(3)
    code, out = merge(tmp_path, first, third)
    assert code == 0
    assert "note: shard 2/3 missing" in capsys.readouterr().out
    assert json.loads(out.read_text())["complete"] is False


def _edited(data: dict, edit) -> dict:
    data = copy.deepcopy(data)
    edit(data)
    return data


def _unsharded(data: dict) -> dict:
    return _edited(data, lambda d: d.pop("run", None))


def _one_row(data: dict, edit) -> dict:
    """A file holding only the second row of `data`, edited (a re-run of that row, say)."""
    return _unsharded(_edited(data, lambda d: (d.update(rows=d["rows"][1:2]), edit(d["rows"][0]))))


A, B = shards(2)


@pytest.mark.parametrize("files, message", [
    ([A, _edited(B, lambda d: d["env"].update(commit="fedcba9876543210"))],
     "come from different commits (0123456789ab and fedcba987654)"),
    ([A, _edited(B, lambda d: d["env"].update(commit=None))], "records no commit"),
    ([A, _edited(B, lambda d: d["env"].update(dirty=True))], "ran a modified tree of 0123456789ab"),
    ([A, _edited(B, lambda d: d["settings"].update(rounds=1))], "ran with different settings: rounds 2 vs 1"),
    ([A, _edited(B, lambda d: d["env"].update(gpu="NVIDIA H100"))], "ran on different gpu (NVIDIA H200 and NVIDIA H100)"),
    ([A, _edited(B, lambda d: d["env"].update(torch="2.14.1"))], "ran on different torch"),
    ([A, _edited(B, lambda d: d["rows"][-1].update(build="two_stage_ffffff"))],
     "was built from different sources"),
    ([A, _edited(B, lambda d: d.update(resources={"two_stage": {"build": "two_stage_ffffff", "kernels": []}}))],
     "two_stage was built from different sources in"),
    ([A, A], "are both shard 1/2"),
    ([A, _edited(B, lambda d: d["run"].update(sweep="000000000000"))], "are shards of different sweeps"),
    ([A, _edited(B, lambda d: d["run"]["shard"].update(count=3))], "one of 2 shards and"),
    ([A, _unsharded(WHOLE)], "is a shard and"),
    ([_unsharded(A), _unsharded(A)], "duplicate row"),
    ([_unsharded(WHOLE), _one_row(A, lambda row: row.update(status="crashed"))],
     "conflicting rows eager seed bfloat16 in"),
    ([_unsharded(WHOLE), _one_row(A, lambda row: row.update(status="crashed"))], "ok in one, crashed in the other"),
    ([_unsharded(WHOLE), _one_row(A, lambda row: row["gpu_us"].update(median=1.0))], "different measurements"),
    ([_unsharded(_edited(A, lambda d: d["rows"].pop(0))), _unsharded(_edited(A, lambda d: d.update(rows=d["rows"][:1])))],
     "must come whole from one run"),
])
def test_refusals_are_one_line_and_exit_2(tmp_path, capsys, files, message):
    code, out = merge(tmp_path, *files)
    err = capsys.readouterr().err
    assert code == cli.EXIT_USAGE, err
    assert message in err and err.count("\n") == 1, err
    assert not out.exists()


def test_each_variants_resource_report_is_kept_once(tmp_path):
    """Each shard's file holds the resource report of every build (they all built everything): the merged
    file holds each once."""
    report = {"build": "two_stage_1a2b3c", "driver": None, "kernels": [
        {"name": "_Z5gemm1v", "arch": "sm_90a", "registers": 96, "static_smem": 0}]}
    parts = [_edited(part, lambda d: d.update(resources={"two_stage": report})) for part in shards(2)]
    code, out = merge(tmp_path, *parts)
    assert code == 0 and json.loads(out.read_text())["resources"] == {"two_stage": report}


def test_a_file_with_a_row_twice_is_refused(tmp_path, capsys):
    twice = _unsharded(_edited(A, lambda d: d["rows"].append(copy.deepcopy(d["rows"][0]))))
    code, _ = merge(tmp_path, twice, _unsharded(B))
    assert code == cli.EXIT_USAGE and "duplicate row" in capsys.readouterr().err


def test_usage(tmp_path, capsys):
    assert cli.main(["merge", write(tmp_path, "a.json", A)]) == cli.EXIT_USAGE
    assert "the following arguments are required: --out" in capsys.readouterr().err
    assert cli.main(["merge", str(tmp_path / "nope.json"), "--out", str(tmp_path / "o.json")]) == cli.EXIT_USAGE
    assert "no such result file" in capsys.readouterr().err


def test_merge_does_not_import_torch(tmp_path):
    """A CI job that only merges and compares the shards' files need not install torch."""
    a, b = write(tmp_path, "a.json", A), write(tmp_path, "b.json", B)
    argv = ["merge", a, b, "--out", str(tmp_path / "all.json")]
    code = ("import sys; from harness import cli; code = cli.main(%r); "
            "assert 'torch' not in sys.modules, 'torch was imported'; sys.exit(code)" % argv)
    proc = subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).parent.parent, capture_output=True,
                          text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
