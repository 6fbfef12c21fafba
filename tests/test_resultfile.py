"""Result files: atomic writing, and one-line errors for every kind of bad file."""
import gzip
import json
import os
from pathlib import Path

import pytest

from harness.errors import ResultFileError
from harness.resultfile import READABLE_SCHEMAS, SCHEMA, load_result, read_result_file, write_result_file

BASE_RESULT_FILE = Path(__file__).parent / "data" / "h200_run1.json"
running_as_root = hasattr(os, "geteuid") and os.geteuid() == 0


@pytest.fixture
def result() -> dict:
    return json.loads(BASE_RESULT_FILE.read_text())


def rejected(path) -> str:
    """The message read_result_file gives for `path`; it must be one line naming the file."""
    with pytest.raises(ResultFileError) as error:
        read_result_file(path)
    message = str(error.value)
    assert "\n" not in message
    assert str(path) in message
    return message


def write_json(path, data) -> Path:
    path.write_text(json.dumps(data))
    return path


def test_base_file_is_valid(result):
    assert read_result_file(BASE_RESULT_FILE) == result
    assert result["schema"] == 1 and 1 in READABLE_SCHEMAS  # the committed H200 files stay readable


def test_write_round_trips_and_creates_folders(result, tmp_path):
    path = tmp_path / "results" / "h200" / "run.json"
    write_result_file(path, result)
    assert read_result_file(path) == result
    text = path.read_text()
    assert text.endswith("}\n")
    assert text.splitlines()[1].startswith(' "')  # indent=1
    assert os.listdir(path.parent) == ["run.json"]  # no temp file left behind


def test_write_replaces_an_existing_file(result, tmp_path):
    path = tmp_path / "run.json"
    write_result_file(path, {"schema": SCHEMA, "env": {}, "rows": []})
    write_result_file(path, result)
    assert read_result_file(path) == result


def test_write_refuses_a_path_under_a_file(result, tmp_path):
    blocker = tmp_path / "not_a_folder"
    blocker.write_text("")
    path = blocker / "run.json"
    with pytest.raises(ResultFileError, match="cannot write result file") as error:
        write_result_file(path, result)
    assert str(path) in str(error.value) and "\n" not in str(error.value)


def test_write_refuses_a_path_that_is_a_folder(result, tmp_path):
    with pytest.raises(ResultFileError, match="cannot write result file"):
        write_result_file(tmp_path, result)
    assert os.listdir(tmp_path) == []  # the temp file was removed


@pytest.mark.skipif(running_as_root, reason="root ignores folder permissions")
def test_write_refuses_a_read_only_folder(result, tmp_path):
    folder = tmp_path / "read_only"
    folder.mkdir(mode=0o500)
    with pytest.raises(ResultFileError, match="Permission denied"):
        write_result_file(folder / "run.json", result)


def test_write_leaves_no_temp_file_when_data_is_not_json(tmp_path):
    with pytest.raises(TypeError):
        write_result_file(tmp_path / "run.json", {"schema": SCHEMA, "bad": object()})
    assert os.listdir(tmp_path) == []


def test_missing_file(tmp_path):
    assert "no such result file" in rejected(tmp_path / "nowhere.json")


def test_folder_instead_of_file(tmp_path):
    assert "cannot read result file" in rejected(tmp_path)


def test_empty_file(tmp_path):
    path = tmp_path / "empty.json"
    path.write_text("")
    assert "empty result file" in rejected(path)


def test_truncated_file(result, tmp_path):
    text = json.dumps(result, indent=1)
    path = tmp_path / "truncated.json"
    path.write_text(text[: len(text) // 2])
    assert "not valid JSON (truncated?) at line" in rejected(path)


def test_not_utf8(tmp_path):
    path = tmp_path / "binary.json"
    path.write_bytes(b"\xff\xfe\x00garbage")
    assert "not UTF-8" in rejected(path)


def test_gzipped_file_reads_as_the_plain_one(result, tmp_path):
    """The committed H200 files are stored as .json.gz: every reader (compare, merge, plot, targets) takes them."""
    path = tmp_path / "run.json.gz"
    path.write_bytes(gzip.compress(json.dumps(result).encode()))
    assert read_result_file(path) == result
    assert len(load_result(path).rows) == len(result["rows"])


def test_gzip_name_on_a_plain_or_cut_file(result, tmp_path):
    plain = write_json(tmp_path / "plain.json.gz", result)
    assert "not a gzip file, or a truncated one" in rejected(plain)
    cut = tmp_path / "cut.json.gz"
    cut.write_bytes(gzip.compress(json.dumps(result).encode())[:200])
    assert "not a gzip file, or a truncated one" in rejected(cut)


def test_not_an_object(tmp_path):
    assert "expected an object" in rejected(write_json(tmp_path / "list.json", [1, 2]))


def test_old_schema(result, tmp_path):
    result["schema"] = 0
    message = rejected(write_json(tmp_path / "old.json", result))
    assert f"schema 0, this harness reads schema 1 to {SCHEMA}" in message


def test_current_schema_is_readable(result, tmp_path):
    result["schema"] = SCHEMA
    assert read_result_file(write_json(tmp_path / "now.json", result))["schema"] == SCHEMA


def test_newer_schema(result, tmp_path):
    result["schema"] = SCHEMA + 1
    assert f"schema {SCHEMA + 1}, this harness reads" in rejected(write_json(tmp_path / "new.json", result))


def test_no_schema(result, tmp_path):
    del result["schema"]
    assert "no 'schema' key" in rejected(write_json(tmp_path / "noschema.json", result))


def test_schema_must_be_an_integer(result, tmp_path):
    result["schema"] = True  # equal to 1 in Python, still not schema 1
    assert "schema True" in rejected(write_json(tmp_path / "bool.json", result))


@pytest.mark.parametrize("key", ["env", "rows"])
def test_missing_top_level_key(result, tmp_path, key):
    del result[key]
    assert f"no '{key}'" in rejected(write_json(tmp_path / "partial.json", result))


@pytest.mark.parametrize("key", ["variant", "shape", "dtype", "status"])
def test_row_missing_a_key(result, tmp_path, key):
    del result["rows"][2][key]
    assert f"row 2 has no '{key}'" in rejected(write_json(tmp_path / "row.json", result))


def test_row_not_an_object(result, tmp_path):
    result["rows"][1] = "fused_tiled"
    assert "row 1 is not an object" in rejected(write_json(tmp_path / "row.json", result))


COMMITTED_SCHEMA_1 = [BASE_RESULT_FILE, BASE_RESULT_FILE.parent / "h200_run2.json",
                      Path(__file__).resolve().parent.parent / "results" / "h200" / "baseline.json"]


@pytest.mark.parametrize("path", COMMITTED_SCHEMA_1, ids=lambda p: p.name)
def test_schema_1_files_read_with_defaults(path):
    """The committed files stay readable: fields schema 2 added take their defaults."""
    result = load_result(path)
    assert result.schema == 1 and result.rows
    assert result.settings["cache"] == "cold-read" and "flush" not in result.settings
    assert result.settings["tokens"] == [4096]
    for row in result.rows:
        assert row.gpu_warm is None and row.unchecked == () and row.torch_best == {}
        assert row.call is None or row.call.calls_per_sample == 1
    eager = next(r for r in result.rows if r.variant == "eager" and r.ok)
    assert eager.speedup("eager").gpu == 1.0 and eager.speedup("torch_best").gpu is None


def test_schema_2_fields_round_trip(tmp_path):
    """What report.result_dict writes, parse_result reads back: warm GPU time, calls per sample, the
    skipped checks, the best torch row."""
    from harness import report
    from harness.records import Kind, Row, Status, Timing
    from harness.shapes import SEED
    from harness.stats import StoppingRule, summarize

    def timing(us, k=1):
        return Timing(summarize([[us] * 5], StoppingRule(noise_target=1.0)), "m", (us,) * 5, calls_per_sample=k)

    rows = [Row("eager", Kind.BASELINE, SEED, "float32", Status.OK, gpu=timing(30.0), call=timing(90.0, 7),
                gpu_warm=timing(25.0)),
            Row("mine", Kind.KERNEL, SEED, "float32", Status.OK, gpu=timing(3.0), call=timing(9.0, 50),
                gpu_warm=timing(2.5), unchecked=("graph-replay",))]
    data = report.result_dict(rows, {"gpu": "x"}, {"cache": "cold-read", "tokens": [64, 512]}, None, complete=True)
    write_result_file(tmp_path / "r.json", data)
    result = load_result(tmp_path / "r.json")
    assert result.schema == SCHEMA == 2 and result.settings["tokens"] == [64, 512]
    mine = next(r for r in result.rows if r.variant == "mine")
    assert mine.gpu_warm.median == 2.5 and mine.call.calls_per_sample == 50 and mine.unchecked == ("graph-replay",)
    assert mine.torch_best == {"gpu": "eager", "call": "eager"} and mine.speedup("torch_best").call == 10.0
