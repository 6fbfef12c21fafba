"""Discover variants: kernels/<name>.cu (CUDA C++) and kernels/<name>.py (Python, e.g. Triton) files and their
optional header of `// key: value` (`# key: value` in Python) lines."""
from __future__ import annotations

import dataclasses
import re
import shlex
from pathlib import Path

from harness.axes import Axes, parse_axes
from harness.errors import HeaderError, UsageError
from harness.includes import KNOWN_LIBRARIES
from harness.records import ALWAYS_RUN, BUILTIN_ROWS
from harness.shapes import DTYPE_NAMES

HEADER_KEYS = ("summary", "dtypes", "nvcc-flags", "ldflags", "includes", "axes")
PYTHON_KEYS = ("summary", "dtypes")   # a Python variant has no build flags, header libraries or axes
SUFFIXES = (".cu", ".py")             # CUDA C++ and Python variants; Python files named _*.py are helpers
RESERVED = BUILTIN_ROWS               # rows of every table, not files
_HEADER_LINE = {".cu": re.compile(r"//\s*([A-Za-z][\w-]*)\s*:\s*(.*?)\s*"),
                ".py": re.compile(r"#\s*([A-Za-z][\w-]*)\s*:\s*(.*?)\s*")}
_COMMENT = {".cu": "//", ".py": "#"}
VARIANT_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")  # a C identifier: it names the extension module


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
    axes: Axes = ()

    @property
    def language(self) -> str:
        return "python" if self.path.suffix == ".py" else "cuda"


def parse_header(path: Path, source: str) -> dict:
    """The header is the run of comment lines (`//` in .cu, `#` in .py) at the top of the file; each must be a
    known `key: value`."""
    suffix = ".py" if path.suffix == ".py" else ".cu"
    comment, keys = _COMMENT[suffix], PYTHON_KEYS if suffix == ".py" else HEADER_KEYS
    fields: dict = {}
    for lineno, line in enumerate(source.splitlines(), start=1):
        if not line.startswith(comment):
            break
        m = _HEADER_LINE[suffix].fullmatch(line)
        where = f"{path}:{lineno}"
        if not m:
            raise HeaderError(f"{where}: malformed header line {line!r}; expected '{comment} key: value' "
                              f"(keys: {', '.join(keys)}); put other comments after a blank line")
        key, value = m.group(1).lower(), m.group(2)
        if key not in keys:
            known = f"known: {', '.join(keys)}"
            if key in HEADER_KEYS:
                known = f"{key} applies to .cu variants; a Python variant knows {', '.join(keys)}"
            raise HeaderError(f"{where}: unknown header key '{key}' ({known})")
        if key in fields:
            raise HeaderError(f"{where}: header key '{key}' given twice")
        fields[key] = _parse_value(key, value, where)
    return fields


def _parse_value(key: str, value: str, where: str):
    if key == "summary":
        return value
    if key == "axes":
        return parse_axes(value, where)
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
    if not VARIANT_NAME.fullmatch(name):
        raise HeaderError(f"{path}: variant name '{name}' must be a C identifier (letters, digits, _)")
    if name in RESERVED:
        raise HeaderError(f"{path}: '{name}' is a built-in row's name; rename the file")
    source = path.read_text()
    fields = parse_header(path, source)
    return VariantSpec(name=name, path=path, source=source, summary=fields.get("summary", ""),
                       dtypes=fields.get("dtypes", ("float32",)), nvcc_flags=fields.get("nvcc-flags", ()),
                       ldflags=fields.get("ldflags", ()), includes=fields.get("includes", ()),
                       axes=fields.get("axes", ()))


def discover(kernels_dir: Path) -> list[Path]:
    """Every variant file of the folder; two files of one name (a.cu and a.py) are a usage error."""
    paths = sorted(p for suffix in SUFFIXES for p in Path(kernels_dir).glob(f"*{suffix}")
                   if not (p.suffix == ".py" and p.name.startswith("_")))
    by_name: dict[str, Path] = {}
    for path in paths:
        if path.stem in by_name:
            raise UsageError(f"{by_name[path.stem]} and {path}: two variants named '{path.stem}'; rename one")
        by_name[path.stem] = path
    return sorted(paths, key=lambda p: p.stem)


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
