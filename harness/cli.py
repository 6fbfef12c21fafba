"""Command line: parse, run the stages in order, print, and turn outcomes into exit codes.

torch and the stages that need it are imported only on the benchmark path: `compare` and `plot`
read result files without it."""
from __future__ import annotations

import argparse
import dataclasses
import datetime
import logging
import sys
import tempfile
from pathlib import Path

from harness import compare, discover, render
from harness.errors import ToolchainError, UsageError
from harness.records import CacheMode, Kind, Settings, Task
from harness.resultfile import ResultFile, load_result, parse_result, write_result_file
from harness.shapes import DEFAULT_TOKENS, parse_dtypes, parse_shapes
from harness.stats import StoppingRule

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_TOOLCHAIN, EXIT_INTERRUPTED = 0, 1, 2, 3, 130
REPO = Path(__file__).resolve().parent.parent
log = logging.getLogger("harness")


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit 2
        raise UsageError(message)


def bench_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="run_bench.py", description="Check and time every variant in kernels/ against "
                "the PyTorch reference. `run_bench.py compare BASELINE CURRENT` compares two result files; "
                "`run_bench.py plot RESULT` draws its speedups; `new NAME`, `list`, `resources` and `breakdown` "
                "are the kernel author's commands (each has --help).")
    p.add_argument("--variant", default="all", help="'all' or a comma list of kernel names (file stems)")
    p.add_argument("--shape", action="append", help="presets (comma list) or b=..,s=..,d=..,rank=..,heads=..,"
                   "head_dim=..; repeat the flag for several explicit shapes (default: seed)")
    p.add_argument("--tokens", type=int, default=DEFAULT_TOKENS, help="tokens (b=1, s=N) of the model presets")
    p.add_argument("--dtype", default="float32", help="comma list of float32, bfloat16, float16")
    p.add_argument("--json", type=Path, help="result file (default: results/<date>-<gpu>.json)")
    p.add_argument("--markdown", type=Path, help="also write the table as markdown here")
    p.add_argument("--cache", choices=[str(m) for m in CacheMode], default=str(CacheMode.COLD_READ),
                   help="L2 state before each GPU-time sample: flushed by reading a 2x-L2 buffer (cold-read, "
                        "default), flushed by writing it (cold-write, as triton's do_bench), or kept (hot)")
    p.add_argument("--rounds", type=int, default=2, help="timing rounds per row; their spread is recorded")
    p.add_argument("--budget", type=float, default=1.5, help="seconds of sampling per row, kind and round at most")
    p.add_argument("--noise", type=float, default=0.005, help="stop once the median's relative SE is below this")
    p.add_argument("--trials", type=int, default=3, help="correctness trials on fresh random inputs")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--timeout", type=float, default=600.0, help="seconds a row may take before it is timed out")
    p.add_argument("--kernels", type=Path, default=REPO / "kernels", help="folder of variant .cu and .py files")
    p.add_argument("--jobs", type=int, help="parallel builds (default: CPU count)")
    p.add_argument("--allow-failures", action="store_true", help="exit 0 even if a variant fails")
    p.add_argument("--compare", type=Path, metavar="BASELINE", help="after the run, compare against this file")
    p.add_argument("--save-baseline", action="store_true", help="also write results/<gpu>/baseline.json")
    p.add_argument("--resources", action="store_true", help="also print each build's kernel resources (registers, "
                   "shared memory, spills, occupancy); the result file has them either way")
    p.add_argument("--no-breakdown", action="store_true", help="skip the per-kernel breakdown of each correct row "
                   "(profiled apart from the timing, in a process of its own)")
    p.add_argument("-v", "--verbose", action="store_true")
    return p


def compare_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="run_bench.py compare", description="Compare two result files (no GPU needed).")
    p.add_argument("baseline", type=Path)
    p.add_argument("current", type=Path)
    p.add_argument("--markdown", type=Path, help="write a pull-request comment here")
    p.add_argument("--floor", type=float, default=compare.DEFAULT_FLOOR, help="smallest change that counts")
    p.add_argument("--force", action="store_true", help="compare files from different GPU models")
    return p


def _positive(name: str, value: float) -> None:
    if value <= 0:
        raise UsageError(f"--{name} must be positive, got {value}")


def _check_writable(path: Path | None, flag: str) -> None:
    """Fail before any build if an output cannot be written (creates its folder, like the run would)."""
    if path is None:
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path.parent):
            pass
        if path.is_dir():
            raise IsADirectoryError(path)
    except OSError:
        raise UsageError(f"{flag} {path}: cannot write there") from None


def run_compare(argv: list[str]) -> int:
    args = compare_parser().parse_args(argv)
    result = compare.compare_files(args.baseline, args.current, floor=args.floor, force=args.force)
    print(render.comparison_table(result))
    if args.markdown:
        args.markdown.write_text(render.comparison_markdown(result))
    return result.exit_code


def plot_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="run_bench.py plot", description="Plot a result file's speedups over eager (PNG).")
    p.add_argument("result", type=Path)
    p.add_argument("--out", type=Path, help="image path (default: the result file with .png)")
    return p


def run_plot(argv: list[str]) -> int:
    from harness.plot import plot_speedups
    args = plot_parser().parse_args(argv)
    result = load_result(args.result)
    out = args.out or args.result.with_suffix(".png")
    _check_writable(out, "--out")
    try:
        print(f"plot: {plot_speedups(result, out)}")
    except ValueError as exc:
        raise UsageError(f"{args.result}: {exc}") from None
    return EXIT_OK


def default_json_path(gpu_key: str | None) -> Path:
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%d-%H%M%S")
    return REPO / "results" / f"{stamp}-{gpu_key or 'nogpu'}.json"


@dataclasses.dataclass(frozen=True)
class Request:
    """What the command line asks for, checked before anything is built."""
    tasks: list[Task]
    paths: list[Path]                 # the selected kernels/*.cu
    baseline: ResultFile | None       # --compare's file, read up front so a bad one fails fast


def check_request(args: argparse.Namespace) -> Request:
    for name in ("tokens", "rounds", "budget", "noise", "trials", "timeout"):
        _positive(name, getattr(args, name))
    shapes = [s for spec in (args.shape or ["seed"]) for s in parse_shapes(spec, args.tokens)]
    tasks = [Task(shape, dtype) for shape in dict.fromkeys(shapes) for dtype in parse_dtypes(args.dtype)]
    if not args.kernels.is_dir():
        raise UsageError(f"--kernels {args.kernels}: not a folder")
    paths = discover.select(discover.discover(args.kernels), args.variant)
    _check_writable(args.json, "--json")
    _check_writable(args.markdown, "--markdown")
    baseline = load_result(args.compare) if args.compare else None
    return Request(tasks, paths, baseline)


def make_settings(args: argparse.Namespace, timing_so: str, timing_module: str) -> Settings:
    return Settings(trials=args.trials, seed=args.seed, cache=CacheMode(args.cache), rounds=args.rounds,
                    rule=StoppingRule(noise_target=args.noise, budget_s=args.budget),
                    call_rule=StoppingRule(noise_target=2 * args.noise, min_samples=20, budget_s=args.budget),
                    timing_so=timing_so, timing_module=timing_module)


def settings_record(settings: Settings, args: argparse.Namespace, arch: str) -> dict:
    """The result file's `settings`: what a reader needs to know the numbers were taken alike."""
    return {"cache": str(settings.cache), "rounds": settings.rounds, "trials": settings.trials,
            "seed": settings.seed, "arch": arch, "input_sets": settings.input_sets, "tokens": args.tokens,
            "gpu_rule": dataclasses.asdict(settings.rule), "call_rule": dataclasses.asdict(settings.call_rule)}


def check_same_gpu(baseline: ResultFile | None, path: Path | None, machine: dict) -> None:
    if baseline is not None and machine["gpu"] and baseline.env.get("gpu") != machine["gpu"]:
        raise UsageError(f"--compare {path}: its GPU is {baseline.env.get('gpu')}, this one is "
                         f"{machine['gpu']}; compare other models with `run_bench.py compare --force`")


class ResultSink:
    """Collects rows as they finish and rewrites the result file after each, so an interrupted run keeps
    every finished row (marked incomplete)."""

    def __init__(self, path: Path, machine: dict, settings: dict, builds: dict[str, str]):
        self.path, self.machine, self.settings, self.builds = path, machine, settings, builds
        self.rows: list = []
        self.ceilings = None
        self.breakdowns: dict = {}   # (shape, dtype, variant) -> breakdown.Breakdown
        self.resources: dict = {}    # variant -> resources.VariantResources

    def add(self, row) -> None:
        self.rows.append(row)
        self.save(complete=False)

    def add_breakdown(self, breakdown) -> None:
        self.breakdowns[breakdown.key()] = breakdown
        self.save(complete=False)

    def save(self, complete: bool) -> dict:
        from harness.report import result_dict
        result = result_dict(self.rows, self.machine, self.settings, self.ceilings, complete, self.builds,
                             self.breakdowns, self.resources)
        write_result_file(self.path, result)
        return result


def run_rows(plan, tasks: list[Task], settings: Settings, sink: ResultSink, has_gpu: bool,
             row_timeout_s: float, breakdowns: bool = True) -> None:
    from harness import rowloop, runner
    sink.resources = rowloop.build_resources(plan, sink.builds, has_gpu)
    if has_gpu:
        sink.ceilings = runner.measure_ceilings(sorted({t.dtype for t in tasks}))
        rowloop.run(plan, tasks, settings, sink, row_timeout_s, breakdowns)
    else:
        for row in plan.rows + runner.not_run_rows(plan.targets, tasks, "no CUDA device"):
            sink.add(row)


def finish(args: argparse.Namespace, sink: ResultSink, baseline: ResultFile | None) -> int:
    """Print and write what the run produced; the exit code."""
    from harness import axes, render_kernels
    data = sink.save(complete=True)
    result = parse_result(data, str(sink.path))
    print(render.result_table(result))
    best = axes.best_combinations(result.rows)
    if best:
        print("\n" + render_kernels.best_table(best))
    if args.resources:
        print("\n" + render_kernels.resources_table(result.resources))
    print(f"\nresult file: {sink.path}")
    if args.markdown:
        args.markdown.write_text(render.result_markdown(result))
    if args.save_baseline:
        target = REPO / "results" / (sink.machine["gpu_key"] or "nogpu") / "baseline.json"
        write_result_file(target, data)
        print(f"baseline: {target}")
    code = EXIT_OK if args.allow_failures or not any(r.failed for r in sink.rows) else EXIT_FAILED
    if baseline is not None:
        comparison = compare.compare_results(baseline, result)
        print("\n" + render.comparison_table(comparison))
        code = max(code, comparison.exit_code)
    return code


def run_bench(argv: list[str]) -> int:
    args = bench_parser().parse_args(argv)
    _configure_logging(args.verbose)
    request = check_request(args)

    import torch  # after argument checks: a usage error should not wait for torch to import
    from harness import env, runner
    has_gpu = torch.cuda.is_available()
    if not has_gpu:
        print("no CUDA device: building every selected variant, running none")
    plan = runner.plan(request.paths, request.tasks, jobs=args.jobs)
    settings = make_settings(args, plan.targets[0].so_path, plan.targets[0].module_name)
    machine = env.describe()
    check_same_gpu(request.baseline, args.compare, machine)
    builds = {t.name: t.module_name for t in plan.targets if t.kind == Kind.KERNEL}
    sink = ResultSink(args.json or default_json_path(machine["gpu_key"]), machine,
                      settings_record(settings, args, plan.arch), builds)
    try:
        run_rows(plan, request.tasks, settings, sink, has_gpu, args.timeout, not args.no_breakdown)
    except KeyboardInterrupt:
        sink.save(complete=False)
        print(f"interrupted: {len(sink.rows)} finished row(s) kept in {sink.path} (marked incomplete)",
              file=sys.stderr)
        return EXIT_INTERRUPTED
    return finish(args, sink, request.baseline)


def _configure_logging(verbose: bool) -> None:
    logging.basicConfig(level=logging.DEBUG if verbose else logging.INFO, stream=sys.stderr, format="%(message)s")
    logging.getLogger("torch.utils.cpp_extension").setLevel(logging.ERROR)  # its CUDA guess is ours to fix


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if argv[:1] == ["compare"]:
            return run_compare(argv[1:])
        if argv[:1] == ["plot"]:
            return run_plot(argv[1:])
        from harness import commands  # new, list, resources, breakdown
        if argv[:1] and argv[0] in commands.COMMANDS:
            return commands.COMMANDS[argv[0]](argv[1:])
        return run_bench(argv)
    except UsageError as exc:
        print(f"run_bench.py: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except ToolchainError as exc:
        print(f"run_bench.py: error: {exc}", file=sys.stderr)
        return EXIT_TOOLCHAIN
