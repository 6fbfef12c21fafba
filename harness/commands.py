"""The kernel author's commands: `new`, `list`, `resources`, `breakdown` (the benchmark run, `compare` and `plot`
are in cli.py). Each parses its arguments, calls the stage that does the work, prints, and returns an exit code."""
from __future__ import annotations

from pathlib import Path

from harness import axes, catalog, discover, render_kernels, scaffold
from harness.cli import EXIT_FAILED, EXIT_OK, REPO, _Parser, _configure_logging
from harness.errors import ToolchainError, UsageError
from harness.records import BUILTIN_ROWS, CacheMode, Kind, Settings, Status, Task
from harness.shapes import parse_dtypes, parse_shapes

KERNELS = REPO / "kernels"


def _kernels_arg(p) -> None:
    p.add_argument("--kernels", type=Path, default=KERNELS, help="folder of variant files (default: kernels/)")


# ---- new ----------------------------------------------------------------------------------------------

def new_parser() -> _Parser:
    p = _Parser(prog="run_bench.py new", description="Write kernels/NAME.cu from a short commented template "
                "(two tiled GEMMs, a TILE tuning axis) that builds and passes as written.")
    p.add_argument("name", help="the variant's name: a C identifier, not taken")
    _kernels_arg(p)
    return p


def run_new(argv: list[str]) -> int:
    args = new_parser().parse_args(argv)
    path = scaffold.write_variant(args.name, args.kernels)
    where = "" if args.kernels.resolve() == KERNELS.resolve() else f" --kernels {args.kernels}"
    print(f"wrote {path}\nnext: edit it, then `run_bench.py --variant {args.name}{where}` (builds every TILE, "
          f"checks, times)")
    return EXIT_OK


# ---- list ---------------------------------------------------------------------------------------------

def list_parser() -> _Parser:
    p = _Parser(prog="run_bench.py list", description="Every variant: summary, dtypes, tuning axes, build status "
                "in the cache (for this machine's target architecture), file.")
    _kernels_arg(p)
    return p


def run_list(argv: list[str]) -> int:
    args = list_parser().parse_args(argv)
    if not args.kernels.is_dir():
        raise UsageError(f"--kernels {args.kernels}: not a folder")
    print(render_kernels.variants_table(catalog.catalog(args.kernels)))
    return EXIT_OK


# ---- resources ----------------------------------------------------------------------------------------

def resources_parser() -> _Parser:
    p = _Parser(prog="run_bench.py resources", description="Build the selected variants (the cache applies) and "
                "show each kernel's registers, shared memory, spills, max threads per block and occupancy: from "
                "ptxas (no GPU needed) and, with a GPU, from the loaded module.")
    p.add_argument("--variant", default="all", help="'all' or a comma list of variant names")
    _kernels_arg(p)
    p.add_argument("--jobs", type=int, help="parallel builds (default: CPU count)")
    p.add_argument("-v", "--verbose", action="store_true")
    return p


def build_resources(paths: list[Path], jobs: int | None = None):
    """Build every combination of the CUDA variants: ({name: VariantResources}, {name: why it has none})."""
    from harness import build, resources
    from harness.runner import variant_extension

    entries, failed, sources = {}, {}, []
    for path in paths:
        try:
            spec = discover.load_variant(path)
        except UsageError as exc:
            failed[path.stem] = f"bad header: {exc}"
            continue
        if spec.language == "python":
            failed[spec.name] = "Python: compiled at run time (registers, smem: see its rows' breakdown)"
            continue
        sources += [(c.name, variant_extension(spec, c)) for c in axes.combinations(spec.name, spec.axes)]
    built = build.build_all([src for _, src in sources], jobs=jobs) if sources else {}
    for name, src in sources:
        result = built[src.name]
        if result.ok:
            entries[name] = resources.VariantResources(result.module_name, result.resources or ())
        else:
            failed[name] = f"build failed: {result.message}"
    return entries, failed, {name: built[src.name].so_path for name, src in sources if built[src.name].ok}


def run_resources(argv: list[str]) -> int:
    args = resources_parser().parse_args(argv)
    _configure_logging(args.verbose)
    if not args.kernels.is_dir():
        raise UsageError(f"--kernels {args.kernels}: not a folder")
    paths = discover.select(discover.discover(args.kernels), args.variant)
    import torch
    entries, failed, so_paths = build_resources(paths, args.jobs)
    if torch.cuda.is_available():
        from harness.resources import with_driver_view
        entries = with_driver_view(entries, so_paths)
    print(render_kernels.resources_table(entries, failed))
    return EXIT_FAILED if any(why.startswith(("build failed", "bad header")) for why in failed.values()) else EXIT_OK


# ---- breakdown ----------------------------------------------------------------------------------------

def breakdown_parser() -> _Parser:
    p = _Parser(prog="run_bench.py breakdown", description="The kernels one call launches, how many, and each "
                "one's device time (torch.profiler), for one variant, shape and dtype: profiled now on the GPU "
                "(after the correctness check), or read from a result file with --result.")
    p.add_argument("--variant", required=True, help="a variant, an axes combination NAME[A=1,B=2], or a built-in "
                   f"row ({', '.join(BUILTIN_ROWS)})")
    p.add_argument("--shape", default="seed", help="one preset or b=..,s=..,d=..,rank=..,heads=..,head_dim=..")
    p.add_argument("--tokens", type=int, default=4096, help="tokens (b=1, s=N) of the model presets")
    p.add_argument("--dtype", default="float32", help="one of float32, bfloat16, float16")
    p.add_argument("--result", type=Path, help="print the breakdown stored in this result file instead")
    _kernels_arg(p)
    p.add_argument("--cache", choices=[str(m) for m in CacheMode], default=str(CacheMode.COLD_READ),
                   help="L2 state before each profiled call, as in the timing")
    p.add_argument("--timeout", type=float, default=600.0)
    p.add_argument("-v", "--verbose", action="store_true")
    return p


def _one(what: str, values: list):
    if len(values) != 1:
        raise UsageError(f"breakdown takes one {what}, got {len(values)}")
    return values[0]


def run_breakdown(argv: list[str]) -> int:
    args = breakdown_parser().parse_args(argv)
    _configure_logging(args.verbose)
    shape = _one("shape", parse_shapes(args.shape, args.tokens))
    dtype = _one("dtype", list(parse_dtypes(args.dtype)))
    if args.result:
        return _print_stored(args.result, args.variant, shape, dtype)
    import torch
    if not torch.cuda.is_available():
        raise ToolchainError("no CUDA device: breakdown profiles on the GPU (read a stored one with --result FILE)")
    return _profile_now(args, shape, dtype)


def _print_stored(path: Path, variant: str, shape, dtype: str) -> int:
    from harness.resultfile import load_result
    result = load_result(path)
    row = next((r for r in result.rows if (r.variant, r.shape, r.dtype) == (variant, shape, dtype)), None)
    if row is None:
        raise UsageError(f"{path}: no row {variant} {shape.label()} {dtype}")
    if row.kernels is None:
        raise UsageError(f"{path}: row {variant} {shape.label()} {dtype} has no kernel breakdown "
                         f"(status {row.status}; schema {result.schema})")
    print(render_kernels.breakdown_table(row.kernels))
    return EXIT_OK


def _profile_now(args, shape, dtype: str) -> int:
    from harness import runner

    family, _ = axes.split_row_name(args.variant)
    builtin = args.variant in discover.RESERVED
    paths = [] if builtin else discover.select(discover.discover(args.kernels), family)
    task = Task(shape, dtype)
    plan = runner.plan(paths, [task])
    for row in plan.rows:
        if row.variant == args.variant:
            print(f"{row.variant}: {row.status}: {row.message}")
            return EXIT_FAILED
    target = next((t for t in plan.targets if t.name == args.variant), None)
    if target is None:
        known = ", ".join(t.name for t in plan.targets)
        raise UsageError(f"no target '{args.variant}'; built: {known}")
    if dtype not in target.dtypes:
        print(f"{target.name}: unsupported: header dtypes: {', '.join(target.dtypes)}")
        return EXIT_FAILED
    helper = plan.targets[0]  # the empty-kernel row's extension holds the blocking kernel
    settings = Settings(time=False, cache=CacheMode(args.cache), timing_so=helper.so_path,
                        timing_module=helper.module_name)
    if target.kind != Kind.FLOOR:
        checked = []
        runner.run_target(target, [task], settings, checked.append, args.timeout)
        row = checked[0]
        print(f"{target.name} {shape.label()} {dtype}: {row.status}{': ' + row.message if row.message else ''}")
        if row.status != Status.OK:
            return EXIT_FAILED
    found = []
    runner.profile_target(target, [task], settings, found.append, args.timeout)
    if not found:
        print(f"{target.name}: the profiling process ended without a breakdown")
        return EXIT_FAILED
    print(render_kernels.breakdown_table(found[0]))
    return EXIT_OK


COMMANDS = {"new": run_new, "list": run_list, "resources": run_resources, "breakdown": run_breakdown}
