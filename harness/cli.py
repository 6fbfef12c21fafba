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
import time
from collections.abc import Callable
from pathlib import Path

from harness import compare, discover, render, schedule
from harness.errors import ToolchainError, UsageError
from harness.records import ALWAYS_RUN, BUILTIN_ROWS, CacheMode, Device, Kind, Settings, Task
from harness.resultfile import ResultFile, load_result, parse_result, write_result_file
from harness.schedule import Shard
from harness.shapes import DEFAULT_TOKENS, parse_dtypes, parse_shapes, parse_tokens
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
                "`run_bench.py plot RESULT` draws its speedups; `run_bench.py merge A B ... --out ALL` joins shards; "
                "`new NAME`, `list`, `resources` and `breakdown` are the kernel author's commands (each has --help).")
    p.add_argument("--variant", default="all", help="'all' or a comma list of kernel names (file stems)")
    p.add_argument("--shape", action="append", help="presets (comma list) or b=..,s=..,d=..,rank=..,heads=..,"
                   "head_dim=..; repeat the flag for several explicit shapes (default: seed)")
    p.add_argument("--tokens", default=str(DEFAULT_TOKENS),
                   help="tokens (b=1, s=N) of the model presets; a comma list runs each preset at each count")
    p.add_argument("--dtype", default="float32", help="comma list of float32, bfloat16, float16")
    p.add_argument("--baselines", default="all",
                   help=f"built-in rows to run besides the kernels: 'all' (default) or a comma list of "
                        f"{', '.join(BUILTIN_ROWS)}; {' and '.join(ALWAYS_RUN)} always run (every speedup is "
                        f"relative to eager; the empty kernel is the launch floor)")
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
    p.add_argument("--devices", help="GPUs to spread the (shape, dtype) groups over: 'all' or a comma list of "
                   "indices (default: 0); each GPU runs whole groups, in worker processes pinned to it")
    p.add_argument("--shard", metavar="I/N", help="run only shard I of N of the (shape, dtype) groups (one job of "
                   "a CI matrix or Slurm array); `run_bench.py merge` joins the shards' result files")
    p.add_argument("--allow-failures", action="store_true", help="exit 0 even if a variant fails")
    p.add_argument("--compare", type=Path, metavar="BASELINE", help="after the run, compare against this file")
    p.add_argument("--allow-missing", action="store_true",
                   help="with --compare: pass although rows of the baseline were not run")
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
    p.add_argument("--allow-missing", action="store_true",
                   help="pass the gate although rows of the baseline are missing from the current file")
    return p


def merge_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="run_bench.py merge", description="Merge the result files of shards (disjoint (shape, dtype) "
                "groups, one commit and settings) into one result file (no GPU needed).")
    p.add_argument("files", type=Path, nargs="+", help="result files, e.g. one per shard")
    p.add_argument("--out", type=Path, required=True, help="the merged result file")
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
    result = compare.compare_files(args.baseline, args.current, floor=args.floor, force=args.force,
                                   allow_missing=args.allow_missing)
    print(render.comparison_table(result))
    if args.markdown:
        args.markdown.write_text(render.comparison_markdown(result))
    return result.exit_code


def run_merge(argv: list[str]) -> int:
    from harness.merge import merge_files
    args = merge_parser().parse_args(argv)
    _check_writable(args.out, "--out")
    merged = merge_files(args.files)
    write_result_file(args.out, merged.data)
    result = parse_result(merged.data, str(args.out))
    print(render.result_table(result))
    for note in merged.notes:
        print(f"note: {note}")
    print(f"merged {len(args.files)} file(s), {len(result.rows)} row(s): {args.out}")
    return EXIT_OK


def plot_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="run_bench.py plot", description="Plot a result file's speedups over eager (PNG).")
    p.add_argument("result", type=Path)
    p.add_argument("--out", type=Path, help="image path (default: the result file with .png for .json or .json.gz)")
    return p


def run_plot(argv: list[str]) -> int:
    from harness.plot import plot_speedups
    args = plot_parser().parse_args(argv)
    result = load_result(args.result)
    stem = args.result.with_suffix("") if args.result.suffix == ".gz" else args.result  # x.json.gz -> x.png
    out = args.out or stem.with_suffix(".png")
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
    tokens: list[int]
    paths: list[Path]                 # the selected kernels/*.cu
    baselines: tuple[str, ...]        # the built-in rows that run
    baseline: ResultFile | None       # --compare's file, read up front so a bad one fails fast
    shard: Shard | None = None        # --shard: `tasks` are this shard's groups
    sweep: str = ""                   # names the whole sweep's groups (schedule.sweep_id)
    sweep_groups: int = 0             # how many (shape, dtype) groups the whole sweep has


def check_request(args: argparse.Namespace) -> Request:
    for name in ("rounds", "budget", "noise", "trials", "timeout"):
        _positive(name, getattr(args, name))
    tokens = parse_tokens(args.tokens)
    shapes = [s for spec in (args.shape or ["seed"]) for s in parse_shapes(spec, tokens)]
    tasks = [Task(shape, dtype) for shape in dict.fromkeys(shapes) for dtype in parse_dtypes(args.dtype)]
    shard = schedule.parse_shard(args.shard) if args.shard else None
    sweep, sweep_groups = schedule.sweep_id(tasks), len(tasks)
    tasks = schedule.shard_tasks(tasks, shard) if shard else tasks
    if not args.kernels.is_dir():
        raise UsageError(f"--kernels {args.kernels}: not a folder")
    paths = discover.select(discover.discover(args.kernels), args.variant)
    baselines = discover.select_baselines(args.baselines)
    _check_writable(args.json, "--json")
    _check_writable(args.markdown, "--markdown")
    baseline = load_result(args.compare) if args.compare else None
    return Request(tasks, tokens, paths, baselines, baseline, shard, sweep, sweep_groups)


def make_settings(args: argparse.Namespace, request: Request) -> Settings:
    return Settings(trials=args.trials, seed=args.seed, cache=CacheMode(args.cache), rounds=args.rounds,
                    rule=StoppingRule(noise_target=args.noise, budget_s=args.budget),
                    call_rule=StoppingRule(noise_target=2 * args.noise, min_samples=20, budget_s=args.budget),
                    baselines=request.baselines)


def settings_record(settings: Settings, request: Request, arch: str) -> dict:
    """The result file's `settings`: what a reader needs to know the numbers were taken alike, and which
    rows were left out by choice (`baselines`, `variants`)."""
    return {"cache": str(settings.cache), "rounds": settings.rounds, "trials": settings.trials,
            "seed": settings.seed, "arch": arch, "input_sets": settings.input_sets, "tokens": request.tokens,
            "gpu_rule": dataclasses.asdict(settings.rule), "call_rule": dataclasses.asdict(settings.call_rule),
            "baselines": list(settings.baselines), "variants": [p.stem for p in request.paths]}


def run_record(request: Request, devices: list[Device]) -> dict:
    """The result file's `run`: where this run's rows ran and which part of which sweep they are (merge
    reads it); the wall times are added when the rows are done."""
    return {"devices": [d.index for d in devices], "sweep": request.sweep, "sweep_groups": request.sweep_groups,
            "shard": dataclasses.asdict(request.shard) if request.shard else None, "groups": len(request.tasks)}


def check_same_gpu(baseline: ResultFile | None, path: Path | None, machine: dict) -> None:
    if baseline is not None and machine["gpu"] and baseline.env.get("gpu") != machine["gpu"]:
        raise UsageError(f"--compare {path}: its GPU is {baseline.env.get('gpu')}, this one is "
                         f"{machine['gpu']}; compare other models with `run_bench.py compare --force`")


class ResultSink:
    """Collects rows as they finish and rewrites the result file as they arrive, so an interrupted run keeps
    its finished rows (marked incomplete): Ctrl-C writes every one of them. A rewrite costs time that grows with
    the file (≈ 0.1 s at 140 rows: every row's dict and percentiles again), so it happens when a row or breakdown
    arrives at least `every_s` seconds after the last one, not for each: once per row and breakdown made a
    sweep's cost grow with the square of its rows and, with several GPUs, queued every GPU's rows and breakdowns
    behind one process's rewrites. A row that arrives sooner is written with the next one, on Ctrl-C, or at
    the end."""

    def __init__(self, path: Path, machine: dict, settings: dict, every_s: float = 2.0,
                 clock: Callable[[], float] = time.monotonic):
        self.path, self.machine, self.settings = path, machine, settings
        self.every_s, self.clock = every_s, clock
        self.saved_at: float | None = None  # when the file was last written (None: not yet)
        self.builds: dict[str, str] = {}  # kernel name -> build (module) name, once built
        self.rows: list = []
        self.ceilings = None
        self.device_ceilings: dict = {}   # Device -> its ceilings (None where they could not be measured)
        self.run_info: dict = {}          # the file's `run`: devices, shard, sweep, wall times
        self.breakdowns: dict = {}        # (shape, dtype, variant) -> breakdown.Breakdown
        self.resources: dict = {}         # variant -> resources.VariantResources

    def add_ceilings(self, device, ceilings) -> None:
        if device is not None:
            self.device_ceilings[device] = ceilings
            ceilings = self.device_ceilings[min(self.device_ceilings, key=lambda d: d.index)]
        self.ceilings = ceilings  # older readers' `ceilings`: the lowest-numbered GPU's

    def add(self, row) -> None:
        self.rows.append(row)
        self._save_if_due()

    def add_breakdown(self, breakdown) -> None:
        self.breakdowns[breakdown.key()] = breakdown
        self._save_if_due()

    def _save_if_due(self) -> None:
        if self.saved_at is None or self.clock() - self.saved_at >= self.every_s:
            self.save(complete=False)

    def save(self, complete: bool) -> dict:
        self.saved_at = self.clock()
        from harness.report import result_dict
        result = result_dict(self.rows, self.machine, self.settings, self.ceilings, complete, self.builds,
                             devices=self.device_ceilings, breakdowns=self.breakdowns,
                             variant_resources=self.resources)
        result = {**{k: v for k, v in result.items() if k != "rows"}, "run": self.run_info, "rows": result["rows"]}
        write_result_file(self.path, result)
        return result


def build_and_run(request: Request, settings: Settings, sink: ResultSink, jobs: int | None, has_gpu: bool,
                  row_timeout_s: float, devices: list[Device] = (), breakdowns: bool = True) -> None:
    from harness import rowloop, runner
    built = time.monotonic()
    if has_gpu:
        runner.start_worker_server()
    plan = runner.plan(request.paths, request.tasks, jobs=jobs, baselines=settings.baselines)
    sink.run_info["build_s"] = round(time.monotonic() - built, 1)
    sink.builds = {t.name: t.module_name for t in plan.targets if t.kind == Kind.KERNEL}
    sink.resources = rowloop.build_resources(plan, sink.builds, has_gpu)
    timing = plan.targets[0]  # the empty-kernel row's extension holds the blocking kernel too
    settings = dataclasses.replace(settings, timing_so=timing.so_path, timing_module=timing.module_name)
    if has_gpu:
        shares = rowloop.run(plan, request.tasks, settings, sink, row_timeout_s, list(devices), breakdowns)
        for field in ("busy_s", "startup_s", "ceilings_s", "profile_s", "profile_start_s", "profile_first_row_s"):
            sink.run_info[field] = {str(s.device.index): round(getattr(s, field), 1) for s in shares if s.device}
    else:
        for row in plan.rows + runner.not_run_rows(plan.targets, request.tasks, "no CUDA device"):
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
    print(wall_time_line(sink.run_info))
    code = EXIT_OK if args.allow_failures or not any(r.failed for r in sink.rows) else EXIT_FAILED
    if baseline is not None:
        comparison = compare.compare_results(baseline, result, allow_missing=args.allow_missing)
        print("\n" + render.comparison_table(comparison))
        code = max(code, comparison.exit_code)
    return code


def wall_time_line(run: dict) -> str:
    startup, ceilings, profile, p_start, p_first = (run.get(k, {}) for k in (
        "startup_s", "ceilings_s", "profile_s", "profile_start_s", "profile_first_row_s"))

    def profiling(index: str) -> str:
        if index not in p_start:  # a file from before the split was recorded
            return f"{profile.get(index, 0):.1f} s profiling"
        return (f"{profile.get(index, 0):.1f} s profiling: {p_start[index]:.1f} s its start, "
                f"{p_first.get(index, 0):.1f} s its first row")
    busy = ", ".join(f"GPU {index} busy {s:.1f} s ({startup.get(index, 0):.1f} s starting workers, "
                     f"{ceilings.get(index, 0):.1f} s ceilings, {profiling(index)})"
                     for index, s in run.get("busy_s", {}).items())
    return (f"wall time {run['wall_s']:.1f} s with builds, {run['wall_without_build_s']:.1f} s without "
            f"(builds {run.get('build_s', 0):.1f} s)" + (f"; {busy}" if busy else ""))


def run_bench(argv: list[str]) -> int:
    started = time.monotonic()
    args = bench_parser().parse_args(argv)
    _configure_logging(args.verbose)
    request = check_request(args)

    import torch  # after argument checks: a usage error should not wait for torch to import
    from harness import build, env
    from harness.devices import visible_devices
    has_gpu = torch.cuda.is_available()
    if not has_gpu:
        print("no CUDA device: building every selected variant, running none")
    devices = schedule.select_devices(args.devices or "0", visible_devices()) if has_gpu else []
    if request.shard:
        log.info("shard %s: %d of the sweep's %d (shape, dtype) group(s)", request.shard, len(request.tasks),
                 request.sweep_groups)
    machine = env.describe()
    check_same_gpu(request.baseline, args.compare, machine)
    settings = make_settings(args, request)
    sink = ResultSink(args.json or default_json_path(machine["gpu_key"]), machine,
                      settings_record(settings, request, " ".join(build.arch_flags())))
    sink.run_info = run_record(request, devices)
    try:  # the build too: Ctrl-C at any point leaves a result file marked incomplete
        build_and_run(request, settings, sink, args.jobs, has_gpu, args.timeout, devices, not args.no_breakdown)
        wall_s = time.monotonic() - started
        sink.run_info.update(wall_s=round(wall_s, 1), wall_without_build_s=round(wall_s - sink.run_info["build_s"], 1))
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
        if argv[:1] == ["merge"]:
            return run_merge(argv[1:])
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
