"""Timeline of the tensor-core engine's phases (kernels/mla_tc.cuh built with -DMLA_TRACE): per CTA, one thread per
role stamps %globaltimer at each phase boundary (entry, loads issued, first data landed, main loop done, partial
stored, split-k wait done, reduction done, GEMM2 ready, store issued, exit). Prints, per launch and event, the
earliest / median / latest CTA in µs after the first CTA's entry, as the median over cold runs, and writes the raw
stamps as JSON. A profiling aid for where a decode call's time goes, not a measurement of record: the trace stores
add a little time, and run_bench.py times the untraced kernels.
    python3 scripts/trace_tc.py two_stage,fused_tiled bfloat16 deepseek-v3:64 deepseek-v3:512 --runs 5 --json t.json
"""
import argparse
import json
import re
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from cache_states import STATES as CACHE_STATES  # noqa: E402
from harness import baselines, build, discover, runner  # noqa: E402
from harness.problem import DTYPES, make_inputs  # noqa: E402
from harness.shapes import parse_one  # noqa: E402

EVENTS = ("entry", "P g1 issued", "P g2 B pre-issued", "P g2 latent ready", "P g2 issued",
          "C g1 first data", "C g1 main done", "C g1 partial stored", "C g1 split wait done", "C g1 reduced",
          "C g2 first data", "C g2 main done", "C g2 store issued", "C exit",
          "P barriers set", "P tensormaps prefetched", "P first TMA issued", "C start")
SMID = len(EVENTS)  # mla::EV_SMID
TRACE_CTAS, TRACE_EVENTS = 160, len(EVENTS) + 1

READER = r"""
at::Tensor mla_trace_read() {
    auto out = at::empty({2, mla::TRACE_CTAS, mla::TRACE_EVENTS}, at::kLong);
    C10_CUDA_CHECK(cudaDeviceSynchronize());
    C10_CUDA_CHECK(cudaMemcpyFromSymbol(out.data_ptr(), mla::trace_buf, sizeof(mla::trace_buf)));
    static unsigned long long zero[2][mla::TRACE_CTAS][mla::TRACE_EVENTS] = {};
    C10_CUDA_CHECK(cudaMemcpyToSymbol(mla::trace_buf, zero, sizeof(zero)));
    return out;
}
"""


def traced_extension(spec, defines=()):
    plain = runner.variant_extension(spec)
    tag = "".join("_" + re.sub(r"\W", "", d) for d in defines)  # each knob and value: its own build folder
    return build.ExtensionSource(plain.name + "_trace" + tag, plain.cuda_source + READER,
                                 plain.declarations + "at::Tensor mla_trace_read();\n",
                                 (*plain.functions, "mla_trace_read"),
                                 (*plain.nvcc_flags, "-DMLA_TRACE", *("-D" + d for d in defines)),
                                 plain.ldflags, plain.include_dirs, plain.header_libraries)


def one_run(mod, args, flush, cache="cold", other_args=None):
    """One traced call. cold: L2 flushed (data and code, as run_bench.py times). warm-code: flushed, then one call of
    the same shape on other tensors, so the kernels' code (and whatever else does not depend on the inputs) is in L2
    while this call's inputs are not; its output is kept alive so this call writes other lines. hot: no flush."""
    mod.mla_trace_read()  # zero the stamps
    torch.cuda._sleep(2_000_000)  # the GPU waits while the host queues flush, events and call: no launch gap timed
    keep = None
    if cache != "hot":
        flush.sum()
    if cache == "warm-code":
        keep = mod.forward(*other_args)
        mod.mla_trace_read()  # that call's stamps are not this run's
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a.record()
    mod.forward(*args)
    b.record()
    torch.cuda.synchronize()
    del keep
    return mod.mla_trace_read().numpy(), a.elapsed_time(b) * 1e3


def summarize(runs):
    """{(launch, event): (min, median, max) µs after the run's first entry}, each the median over runs."""
    per = {}
    for stamps, _ in runs:
        t0 = min(int(v) for v in stamps[:, :, 0].ravel() if v)
        for launch in range(2):
            for ev in range(len(EVENTS)):
                vals = sorted((int(v) - t0) / 1e3 for v in stamps[launch, :, ev] if v)
                if vals:
                    per.setdefault((launch, ev), []).append((vals[0], vals[len(vals) // 2], vals[-1], len(vals)))
    med = lambda xs: sorted(xs)[len(xs) // 2]  # noqa: E731
    return {k: tuple(med([r[i] for r in v]) for i in range(4)) for k, v in per.items()}


def resolution_ns(runs):
    """Smallest non-zero difference between two stamps: the timer's step (it ticks in 32 ns or 1 µs steps)."""
    vals = sorted({int(v) for stamps, _ in runs for v in stamps[:, :, :SMID].ravel() if v})
    diffs = [b - a for a, b in zip(vals, vals[1:]) if b > a]
    return min(diffs) if diffs else 0


def report(name, defines, shape, dt, cache, runs):
    """Print one traced configuration's per-event table; return its JSON record."""
    ev_us = sorted(r[1] for r in runs)[len(runs) // 2]
    s = summarize(runs)
    print(f"\n{name} {' '.join(defines)}  {shape.label()}/{shape.tokens}  {dt}: event-timed call "
          f"{ev_us:.2f} µs (median of {len(runs)} {cache} runs), timer step {resolution_ns(runs)} ns")
    print(f"  {'launch':6s} {'event':22s} {'CTAs':>5s} {'first':>8s} {'median':>8s} {'last':>8s}")
    for (launch, ev), (lo, mid, hi, n) in sorted(s.items(), key=lambda kv: (kv[0][0], kv[1][1])):
        print(f"  {launch:<6d} {EVENTS[ev]:22s} {n:5d} {lo:8.2f} {mid:8.2f} {hi:8.2f}")
    return {"variant": name, "defines": list(defines), "shape": f"{shape.label()}/{shape.tokens}", "dtype": dt,
            "cache": cache, "event_timed_us": ev_us, "events": list(EVENTS), "stamps_ns": [r[0].tolist() for r in runs]}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("variants")
    ap.add_argument("dtypes")
    ap.add_argument("shapes", nargs="+")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--json")
    ap.add_argument("--define", action="append", default=[], metavar="NAME=VALUE",
                    help="a -D define for every traced build (a knob of the kernel, e.g. MLA_DECODE_BN1=128)")
    ap.add_argument("--cache", default="cold", help="comma list of " + ", ".join(CACHE_STATES) + " (see one_run)")
    a = ap.parse_args(argv)
    caches = a.cache.split(",")
    if any(c not in CACHE_STATES for c in caches):
        ap.error(f"--cache takes {', '.join(CACHE_STATES)}, got {a.cache}")
    root = Path(__file__).resolve().parent.parent
    specs = [discover.load_variant(root / "kernels" / f"{n}.cu") for n in a.variants.split(",")]
    exts = {s.name: traced_extension(s, tuple(a.define)) for s in specs}
    built = build.build_all(list(exts.values()))
    flush = torch.empty(int(2 * torch.cuda.get_device_properties(0).L2_cache_size // 4) + 1, device="cuda")
    flush.fill_(1.0)
    record = []
    for spec in specs:
        b = built[exts[spec.name].name]
        if not b.ok:
            print(f"{spec.name}: BUILD FAILED {b.message}")
            return 1
        mod = baselines.import_extension(b.so_path, b.module_name)
        for text in a.shapes:
            shape = parse_one(text)
            for dt in a.dtypes.split(","):
                inp = make_inputs(shape, DTYPES[dt], seed=1)
                args = (*inp.tensors(), shape.heads)
                other = (*make_inputs(shape, DTYPES[dt], seed=2).tensors(), shape.heads) if "warm-code" in caches else None
                for cache in caches:
                    for _ in range(2):
                        one_run(mod, args, flush, cache, other)  # warm-up: build-time allocations, counters
                    runs = [one_run(mod, args, flush, cache, other) for _ in range(a.runs)]
                    record.append(report(spec.name, a.define, shape, dt, cache, runs))
    if a.json:
        env = {"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__}
        Path(a.json).write_text(json.dumps({"env": env, "traces": record}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
