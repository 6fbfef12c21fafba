"""Header-only C++ libraries a variant asks for with `// includes: cutlass`, found on this machine.

A library resolves to include folders plus a version; the build adds the folders to nvcc's include
path and puts the version and folders (not the headers: CUTLASS is 27 MB) into the build key.

CUTLASS, in this order:
  1. KVBENCH_CUTLASS_DIR, a folder holding include/ and tools/util/include/ (a CUTLASS checkout, or a
     copy of the nvidia-cutlass package's cutlass_library/source carried to a machine that cannot
     install packages). Set but wrong is an error, never a silent fall-through to another copy.
  2. the installed `nvidia-cutlass` package (cutlass_library/source/...), located without importing it.
"""
from __future__ import annotations

import dataclasses
import importlib.util
import os
import re
from collections.abc import Callable, Mapping
from pathlib import Path

from harness.errors import HeaderLibraryMissing

CUTLASS_ENV = "KVBENCH_CUTLASS_DIR"
CUTLASS_INSTALL = "pip install --no-deps nvidia-cutlass==4.2.0.0"
KNOWN_LIBRARIES = ("cutlass",)
_CUTLASS_SUBDIRS = ("include", "tools/util/include")
_VERSION_FIELD = re.compile(r"#define\s+CUTLASS_(MAJOR|MINOR|PATCH)\s+(\d+)")


@dataclasses.dataclass(frozen=True)
class HeaderLibrary:
    name: str
    version: str
    include_dirs: tuple[str, ...]
    found_by: str  # where it came from, for the build log: the variable or the package

    def key_parts(self) -> tuple[str, ...]:
        return (self.name, self.version, *self.include_dirs)


def resolve(name: str, environ: Mapping[str, str] = os.environ,
            find_spec: Callable = importlib.util.find_spec) -> HeaderLibrary:
    """The library's include folders on this machine, or HeaderLibraryMissing saying how to get them."""
    if name != "cutlass":
        raise HeaderLibraryMissing(f"unknown header library '{name}' (known: {', '.join(KNOWN_LIBRARIES)})")
    return resolve_cutlass(environ, find_spec)


def resolve_cutlass(environ: Mapping[str, str], find_spec: Callable) -> HeaderLibrary:
    configured = environ.get(CUTLASS_ENV, "").strip()
    if configured:
        root = Path(configured).expanduser().resolve()
        return _cutlass_at(root, f"{CUTLASS_ENV}={configured}")
    spec = find_spec("cutlass_library")  # a top-level name: locates the package without running it
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    if locations:
        return _cutlass_at(Path(locations[0]).resolve() / "source", "the nvidia-cutlass package")
    raise HeaderLibraryMissing(f"CUTLASS headers not found: install them with `{CUTLASS_INSTALL}`, or set "
                               f"{CUTLASS_ENV} to a folder holding include/ and tools/util/include/")


def _cutlass_at(root: Path, found_by: str) -> HeaderLibrary:
    dirs = [root / sub for sub in _CUTLASS_SUBDIRS]
    version_h = dirs[0] / "cutlass" / "version.h"
    missing = [str(p) for p in (version_h, dirs[1]) if not p.exists()]
    if missing:
        raise HeaderLibraryMissing(f"CUTLASS headers from {found_by} are incomplete: {' and '.join(missing)} "
                                   f"missing; {CUTLASS_ENV} must name a folder holding include/ and "
                                   f"tools/util/include/, or, unset, the headers come from `{CUTLASS_INSTALL}`")
    return HeaderLibrary("cutlass", cutlass_version(version_h.read_text()), tuple(str(d) for d in dirs), found_by)


def cutlass_version(version_h: str) -> str:
    fields = dict(_VERSION_FIELD.findall(version_h))
    if set(fields) != {"MAJOR", "MINOR", "PATCH"}:
        raise HeaderLibraryMissing("cutlass/version.h does not define CUTLASS_MAJOR, CUTLASS_MINOR and "
                                   "CUTLASS_PATCH: not a CUTLASS header tree")
    return f"{fields['MAJOR']}.{fields['MINOR']}.{fields['PATCH']}"
