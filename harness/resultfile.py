"""Read and write the JSON result file of one benchmark run.

Reading validates just enough for the compare gate to trust the file: every error is
a ResultFileError with one line that names the file and what is wrong with it. A name ending in `.gz` is read
through gzip (the committed H200 files are stored that way).
`load_result` / `parse_result` turn a file into typed rows (ResultFile, ResultRow) for the readers
(compare, plot, the renderers); older schemas read with defaults for what they lack. No torch here.
"""
from __future__ import annotations

import dataclasses
import gzip
import json
import os
import tempfile
import zlib
from collections.abc import Mapping
from pathlib import Path

from harness import breakdown, resources
from harness.errors import ResultFileError
from harness.records import Status
from harness.shapes import Shape

# Schema 2 added, every field optional for a reader (schema 1 files read with defaults, parse_result):
# - per row `gpu_warm_us`, `call_us.calls_per_sample`, `speedup.vs_torch_best`, `torch_best` and `unchecked`,
#   and to `settings` the list forms of `tokens`, `baselines` and `variants`, and one `cache` mode;
# - top-level `resources` (per built variant, its kernels' registers, shared memory, spills, max threads,
#   occupancy), and per row `axes` (a tuning-axes combination's values) and `kernels` (the per-kernel
#   breakdown of one call).
# Optional in any schema, and absent from older files: per row `device` ({index, uuid}: the GPU it ran on),
# and top-level `devices` (each GPU with its ceilings) and `run` (GPUs, shard, sweep, wall times). Readers
# that do not know them ignore them; merge keeps them.
SCHEMA = 2                 # what this harness writes
READABLE_SCHEMAS = (1, 2)  # what it reads
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
    data = parse_json(path, read_text(path))
    _validate(path, data)
    return data


def read_text(path) -> str:
    """The text of a result file, gunzipped when its name ends in `.gz`; errors as one-line ResultFileErrors."""
    path = Path(path)
    try:
        if path.suffix == ".gz":
            with gzip.open(path, "rt", encoding="utf-8") as f:
                return f.read()
        return path.read_text(encoding="utf-8")
    except (gzip.BadGzipFile, EOFError, zlib.error):
        raise ResultFileError(f"{path}: not a gzip file, or a truncated one (the name ends in .gz)") from None
    except FileNotFoundError:
        raise ResultFileError(f"{path}: no such result file") from None
    except UnicodeDecodeError:
        raise ResultFileError(f"{path}: not a result file (not UTF-8 text)") from None
    except OSError as e:
        raise ResultFileError(f"{path}: cannot read result file: {e.strerror or e}") from None


def parse_json(path: Path, text: str):
    """The JSON value of a result file's text; an empty or malformed text is a one-line ResultFileError."""
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
    readable = f"schema {READABLE_SCHEMAS[0]} to {SCHEMA}"
    if "schema" not in data:
        raise ResultFileError(f"{path}: no 'schema' key, this harness reads {readable}")
    if type(schema) is not int or schema not in READABLE_SCHEMAS:  # type check: True == 1 in Python
        raise ResultFileError(f"{path}: schema {schema!r}, this harness reads {readable}")
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


# ---- typed rows ---------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class TimingStats:
    """One timing entry of a row (`gpu_us`, `call_us`): statistics over its samples, in microseconds."""
    median: float | None
    iqr: float | None = None
    n: int = 0
    rel_se: float | None = None
    noisy: bool = False
    rounds: tuple[float, ...] = ()
    spread: float = 0.0
    method: str = ""
    percentiles: Mapping[str, float | None] = dataclasses.field(default_factory=dict)
    calls_per_sample: int = 1   # call latency: a sample is the mean of this many back-to-back calls


@dataclasses.dataclass(frozen=True)
class Speedup:
    """A reference row's median over this row's, same shape and dtype, same run."""
    gpu: float | None = None
    call: float | None = None


@dataclasses.dataclass(frozen=True)
class ResultRow:
    variant: str
    kind: str
    shape: Shape
    dtype: str
    status: str
    message: str = ""
    build: str | None = None            # <name>_<hash>: which code produced the row (None before it existed)
    max_abs_error: float | None = None
    rel_error: float | None = None
    gpu: TimingStats | None = None
    call: TimingStats | None = None
    gpu_warm: TimingStats | None = None  # GPU time with a warm L2 (cold-mode files of schema 2)
    speedups: Mapping[str, Speedup] = dataclasses.field(default_factory=dict)  # "eager" -> Speedup
    gbps: float | None = None
    tflops: float | None = None
    x_floor: float | None = None
    compile_s: float | None = None
    flags: tuple[str, ...] = ()
    unchecked: tuple[str, ...] = ()
    torch_best: Mapping[str, str | None] = dataclasses.field(default_factory=dict)  # metric -> row name
    kernels: breakdown.Breakdown | None = None  # per-kernel breakdown of one call

    @property
    def ok(self) -> bool:
        return self.status == Status.OK

    def speedup(self, reference: str) -> Speedup:
        return self.speedups.get(reference) or Speedup()

    def key(self) -> tuple:
        """Rows match across files on the whole shape, not its name: a resized shape is another row."""
        return (self.variant, self.shape, self.dtype)


@dataclasses.dataclass(frozen=True)
class ResultFile:
    schema: int
    complete: bool
    env: Mapping
    settings: Mapping
    rows: tuple[ResultRow, ...]
    source: str = ""
    resources: Mapping[str, resources.VariantResources] = dataclasses.field(default_factory=dict)


def load_result(path) -> ResultFile:
    """Read, validate and type a result file; every error is one line naming the file."""
    return parse_result(read_result_file(path), str(path))


def parse_result(data: dict, source: str = "result") -> ResultFile:
    """Typed rows from a result dict (as written by report.result_dict or read by read_result_file)."""
    _validate(Path(source), data)
    rows = []
    for index, row in enumerate(data["rows"]):
        try:
            rows.append(_parse_row(row))
        except (TypeError, ValueError, KeyError, AttributeError) as exc:
            raise ResultFileError(f"{source}: row {index} is malformed ({type(exc).__name__}: {exc})") from None
    try:
        built = {str(name): resources.from_dict(entry) for name, entry in (data.get("resources") or {}).items()}
    except (TypeError, ValueError, KeyError, AttributeError) as exc:
        raise ResultFileError(f"{source}: 'resources' is malformed ({type(exc).__name__}: {exc})") from None
    return ResultFile(schema=data["schema"], complete=data.get("complete") is not False, env=data["env"],
                      settings=_settings(data.get("settings") or {}), rows=tuple(rows), source=source,
                      resources=built)


def _settings(settings: Mapping) -> dict:
    """Schema 1 wrote the cache mode as `cache: cold|hot` plus `flush: read|write` (now one `cache` value),
    and one token count (now a list)."""
    out = dict(settings)
    if isinstance(out.get("tokens"), int):
        out["tokens"] = [out["tokens"]]
    if out.get("cache") == "cold" and "flush" in out:
        out["cache"] = f"cold-{out.pop('flush')}"
    elif out.get("cache") == "hot":
        out.pop("flush", None)
    return out


def _number(value) -> float | None:
    """Numbers are floats; a non-finite one was written as a string ("inf")."""
    if value is None or isinstance(value, bool):
        return None
    return float(value)


def _timing(entry) -> TimingStats | None:
    if not entry:
        return None
    return TimingStats(median=_number(entry.get("median")), iqr=_number(entry.get("iqr")), n=int(entry.get("n") or 0),
                       rel_se=_number(entry.get("rel_se")), noisy=bool(entry.get("noisy")),
                       rounds=tuple(_number(x) for x in entry.get("rounds") or ()),
                       spread=_number(entry.get("spread")) or 0.0, method=str(entry.get("method") or ""),
                       percentiles={k: _number(v) for k, v in (entry.get("percentiles") or {}).items()},
                       calls_per_sample=int(entry.get("calls_per_sample") or 1))


def _speedups(entry) -> dict[str, Speedup]:
    out = {}
    for name, value in (entry or {}).items():  # "vs_eager": {"gpu": .., "call": ..}
        value = value or {}
        out[name.removeprefix("vs_")] = Speedup(gpu=_number(value.get("gpu")), call=_number(value.get("call")))
    return out


def _parse_row(row: dict) -> ResultRow:
    error, roof = row.get("error") or {}, row.get("roofline") or {}
    shape = Shape(**row["shape"])
    kernels = row.get("kernels")
    return ResultRow(
        variant=str(row["variant"]), kind=str(row.get("kind") or ""), shape=shape,
        dtype=str(row["dtype"]), status=str(row["status"]), message=str(row.get("message") or ""),
        build=row.get("build"), max_abs_error=_number(error.get("max_abs")), rel_error=_number(error.get("rel")),
        gpu=_timing(row.get("gpu_us")), call=_timing(row.get("call_us")), gpu_warm=_timing(row.get("gpu_warm_us")),
        speedups=_speedups(row.get("speedup")),
        gbps=_number(roof.get("gbps")), tflops=_number(roof.get("tflops")), x_floor=_number(roof.get("x_floor")),
        compile_s=_number(row.get("compile_s")), flags=tuple(str(f) for f in row.get("flags") or ()),
        unchecked=tuple(str(c) for c in row.get("unchecked") or ()), torch_best=dict(row.get("torch_best") or {}),
        kernels=breakdown.from_dict(str(row["variant"]), shape, str(row["dtype"]), kernels) if kernels else None)
