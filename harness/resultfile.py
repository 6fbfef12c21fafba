"""Read and write the JSON result file of one benchmark run.

Reading validates just enough for the compare gate to trust the file: every error is
a ResultFileError with one line that names the file and what is wrong with it.
"""
from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from harness.errors import ResultFileError

SCHEMA = 1
REQUIRED_ROW_KEYS = ("variant", "shape", "dtype", "status")


def write_result_file(path, data: dict) -> None:
    """Write `data` as JSON; atomic, so an interrupted run never leaves half a file."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as e:
        raise ResultFileError(f"{path}: cannot write result file: {e.strerror or e}") from None
    try:
        os.fchmod(fd, 0o644)  # mkstemp makes 0600; result files are meant to be shared
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=1)
            f.write("\n")
        os.replace(tmp, path)
    except BaseException as e:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(e, OSError):
            raise ResultFileError(f"{path}: cannot write result file: {e.strerror or e}") from None
        raise


def read_result_file(path) -> dict:
    """Return the parsed result file, or raise ResultFileError saying what is wrong."""
    path = Path(path)
    data = _parse_json(path, _read_text(path))
    _validate(path, data)
    return data


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ResultFileError(f"{path}: no such result file") from None
    except UnicodeDecodeError:
        raise ResultFileError(f"{path}: not a result file (not UTF-8 text)") from None
    except OSError as e:
        raise ResultFileError(f"{path}: cannot read result file: {e.strerror or e}") from None


def _parse_json(path: Path, text: str):
    if not text.strip():
        raise ResultFileError(f"{path}: empty result file (the run was interrupted?)")
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise ResultFileError(
            f"{path}: not valid JSON (truncated?) at line {e.lineno} column {e.colno}") from None


def _validate(path: Path, data) -> None:
    if not isinstance(data, dict):
        raise ResultFileError(f"{path}: not a result file (JSON {type(data).__name__}, expected an object)")
    schema = data.get("schema")
    if "schema" not in data:
        raise ResultFileError(f"{path}: no 'schema' key, this harness reads schema {SCHEMA}")
    if type(schema) is not int or schema != SCHEMA:  # type check: True == 1 in Python
        raise ResultFileError(f"{path}: schema {schema!r}, this harness reads schema {SCHEMA}")
    if not isinstance(data.get("env"), dict):
        raise ResultFileError(f"{path}: no 'env' object")
    if not isinstance(data.get("rows"), list):
        raise ResultFileError(f"{path}: no 'rows' list")
    for index, row in enumerate(data["rows"]):
        _validate_row(path, index, row)


def _validate_row(path: Path, index: int, row) -> None:
    if not isinstance(row, dict):
        raise ResultFileError(f"{path}: row {index} is not an object")
    missing = [key for key in REQUIRED_ROW_KEYS if key not in row]
    if missing:
        raise ResultFileError(f"{path}: row {index} has no {', '.join(repr(k) for k in missing)}")
    if not isinstance(row["shape"], dict):  # rows are matched on the shape's fields
        raise ResultFileError(f"{path}: row {index} has a 'shape' that is not an object")
