"""Discover variants: kernels/<name>.cu files and their optional `// key: value` headers."""
from __future__ import annotations

import dataclasses
import re
import shlex
from pathlib import Path

from harness.errors import HeaderError, UsageError
from harness.includes import KNOWN_LIBRARIES
from harness.records import ALWAYS_RUN, BUILTIN_ROWS
from harness.shapes import DTYPE_NAMES

HEADER_KEYS = ("summary", "dtypes", "nvcc-flags", "ldflags", "includes")
RESERVED = BUILTIN_ROWS  # rows of every table, not files
_HEADER_LINE = re.compile(r"//\s*([A-Za-z][\w-]*)\s*:\s*(.*?)\s*")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclasses.dataclass(frozen=True)
class VariantSpec:
    """One kernel file as its author wrote it."""
    name: str
    path: Path
    source: str
    summary: str = ""
    dtypes: tuple[str, ...] = ("float32",)
    nvcc_flags: tuple[str, ...] = ()
    ldflags: tuple[str, ...] = ()
    includes: tuple[str, ...] = ()  # header libraries (harness/includes.py resolves them at build time)


def parse_header(path: Path, source: str) -> dict:
    """The header is the run of `//` lines at the top of the file; each must be a known `key: value`."""
    fields: dict = {}
    for lineno, line in enumerate(source.splitlines(), start=1):
        if not line.startswith("//"):
            break
        m = _HEADER_LINE.fullmatch(line)
        where = f"{path}:{lineno}"
        if not m:
            raise HeaderError(f"{where}: malformed header line {line!r}; expected '// key: value' "
                              f"(keys: {', '.join(HEADER_KEYS)}); put other comments after a blank line")
        key, value = m.group(1).lower(), m.group(2)
        if key not in HEADER_KEYS:
            raise HeaderError(f"{where}: unknown header key '{key}' (known: {', '.join(HEADER_KEYS)})")
        if key in fields:
            raise HeaderError(f"{where}: header key '{key}' given twice")
        fields[key] = _parse_value(key, value, where)
    return fields


def _parse_value(key: str, value: str, where: str):
    if key == "summary":
        return value
    if key == "dtypes":
        names = tuple(n.strip() for n in value.split(",") if n.strip())
        unknown = [n for n in names if n not in DTYPE_NAMES]
        if unknown or not names:
            raise HeaderError(f"{where}: dtypes '{value}' must be a comma list of {', '.join(DTYPE_NAMES)}")
        return names
    if key == "includes":
        names = tuple(n.strip() for n in value.split(",") if n.strip())
        unknown = [n for n in names if n not in KNOWN_LIBRARIES]
        if unknown or not names:
            raise HeaderError(f"{where}: includes '{value}' must be a comma list of {', '.join(KNOWN_LIBRARIES)}")
        return names
    try:
        return tuple(shlex.split(value))
    except ValueError as exc:
        raise HeaderError(f"{where}: cannot split {key} '{value}': {exc}") from None


def load_variant(path: Path) -> VariantSpec:
    name = path.stem
    if not _NAME.fullmatch(name):
        raise HeaderError(f"{path}: variant name '{name}' must be a C identifier (letters, digits, _)")
    if name in RESERVED:
        raise HeaderError(f"{path}: '{name}' is a built-in row's name; rename the file")
    source = path.read_text()
    fields = parse_header(path, source)
    return VariantSpec(name=name, path=path, source=source, summary=fields.get("summary", ""),
                       dtypes=fields.get("dtypes", ("float32",)), nvcc_flags=fields.get("nvcc-flags", ()),
                       ldflags=fields.get("ldflags", ()), includes=fields.get("includes", ()))


def discover(kernels_dir: Path) -> list[Path]:
    return sorted(Path(kernels_dir).glob("*.cu"))


def select(paths: list[Path], wanted: str) -> list[Path]:
    """`all` or a comma list of variant names (file stems). Baseline names are accepted and skipped."""
    if wanted.strip() == "all":
        return paths
    by_name = {p.stem: p for p in paths}
    names = list(dict.fromkeys(n.strip() for n in wanted.split(",") if n.strip()))  # `a,a` is `a` once
    unknown = [n for n in names if n not in by_name and n not in RESERVED]
    if unknown or not names:
        raise UsageError(f"unknown variant '{','.join(unknown) or wanted}'; known: "
                         f"{', '.join(['all', *by_name])} (built-in rows are chosen with --baselines)")
    return [by_name[n] for n in names if n in by_name]


def select_baselines(wanted: str) -> tuple[str, ...]:
    """`all` or a comma list of built-in rows; eager and the empty kernel run whatever the list says."""
    names = [n.strip() for n in wanted.split(",") if n.strip()]
    if names == ["all"]:
        return BUILTIN_ROWS
    unknown = [n for n in names if n not in BUILTIN_ROWS]
    if unknown or not names:
        raise UsageError(f"--baselines: unknown row '{','.join(unknown) or wanted}'; known: all, "
                         f"{', '.join(BUILTIN_ROWS)}")
    return tuple(n for n in BUILTIN_ROWS if n in names or n in ALWAYS_RUN)
