"""`run_bench.py list`: every variant file of a folder, what its header says, and its build status in the cache
(computed from the same build key a run would use, so "cached" means a run will not rebuild it)."""
from __future__ import annotations

import dataclasses
from pathlib import Path

from harness import axes, build, discover
from harness.errors import HeaderError, HeaderLibraryMissing


@dataclasses.dataclass(frozen=True)
class Entry:
    name: str
    file: str
    language: str       # cuda, python, or "" for a file whose header does not parse
    dtypes: tuple[str, ...]
    axes: str           # as the header says, with the number of builds
    build: str          # cached / not built / failed / no headers (per combination) / python / bad header
    summary: str


def build_status(src: build.ExtensionSource, cache_root: Path, archs: tuple[str, ...]) -> str:
    """cached (a run reuses it), failed (the last attempt's log is there), not built, or no headers (a header
    library it includes is not on this machine: a run would fail its build)."""
    try:
        libraries = build.resolve_libraries(src)
    except HeaderLibraryMissing:
        return "no headers"
    folder = Path(cache_root) / f"{src.name}_{build.build_key(src, archs, libraries)}"
    if any(folder.glob("*.so")):
        return "cached"
    if (folder / "build.log").exists():
        return "failed"
    return "not built"


def _summarize(statuses: list[str]) -> str:
    if len(statuses) == 1:
        return statuses[0]
    counts = {s: statuses.count(s) for s in ("cached", "failed", "not built", "no headers") if s in statuses}
    return ", ".join(f"{n}/{len(statuses)} {s}" for s, n in counts.items())


def catalog(kernels_dir: Path, cache_root: Path = build.DEFAULT_CACHE) -> list[Entry]:
    from harness.runner import variant_extension  # the exact extension (flags, defines) a run builds

    archs = build.arch_flags()
    entries = []
    for path in discover.discover(kernels_dir):
        try:
            spec = discover.load_variant(path)
        except HeaderError as exc:
            entries.append(Entry(path.stem, str(path), "", (), "", f"bad header: {exc}", ""))
            continue
        if spec.language == "python":
            status = "python: imported and compiled at run time"
        else:
            status = _summarize([build_status(variant_extension(spec, c), cache_root, archs)
                                 for c in axes.combinations(spec.name, spec.axes)])
        entries.append(Entry(spec.name, str(path), spec.language, spec.dtypes, axes.describe(spec.axes), status,
                             spec.summary))
    return entries
