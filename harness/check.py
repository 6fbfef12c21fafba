"""Check: a variant's output against the float64 reference on random inputs.

The trials refill the same input tensors in place with new random values (same addresses, new
contents), and after timing every timed input set is refilled and called again: a variant that caches
its output by the inputs' addresses returns the old result and is caught, however its cache decides
when to compute honestly. The output of one call is kept alive across the next: a new call must return
new memory (a caller may still hold the old output).

Each failure mode has its own status, decided by behaviour (never by matching error text):
  bad-output    not a tensor, or wrong shape, dtype, device or layout; or not a new tensor: it shares
                memory with the previous call's output (still held) or with an input
  unwritten     elements still hold the poison the allocator's free memory was filled with
  nan           NaN or Inf that a second poison shows the variant computed
  wrong         outside the dtype's tolerance, or constant
  stale-output  wrong for these inputs, still wrong after the whole device synchronized, but right for
                what the input tensors held before (a cached output)
  wrote-input   an input changed during the call
  other-stream  wrong after the caller's stream synchronized but right once the whole device has: the
                work ran on a stream the caller's does not wait for; or a CUDA graph captured from the
                current stream does not write the output (a race the poison can hide)
A call that refuses CUDA graph capture is not judged under graph replay; the result says so
(`unchecked`), and every other check still runs.
"""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

import torch

from harness.problem import DTYPES, Inputs, make_inputs, reference_float64
from harness.records import CheckResult, ErrorStats, Status
from harness.shapes import Shape

INPUT_NAMES = ("hidden", "w_down", "w_up_k", "w_up_v")
GRAPH_REPLAY = "graph-replay"  # the name of the check a capture-refusing call skips
# Seeds of the values refilled after timing, apart from the trials' (seed + trial) and the timed sets'.
AFTER_TIMING_SEED = 7000


@dataclasses.dataclass(frozen=True)
class Tolerance:
    rel: float    # ||out - ref|| / ||ref||  (Frobenius)
    elem: float   # max |out - ref| / rms(ref): one bad element fails even in a huge output


# float32 means true float32: TF32 lands near 3e-4 relative and fails both bounds.
TOLERANCES = {
    "float32": Tolerance(rel=2e-5, elem=2e-4),
    "bfloat16": Tolerance(rel=1e-2, elem=5e-2),
    "float16": Tolerance(rel=2e-3, elem=1e-2),
}


def error_stats(out: torch.Tensor, ref: torch.Tensor) -> ErrorStats:
    diff = out.double() - ref
    ref_norm = torch.linalg.vector_norm(ref).item()
    rms = ref_norm / math.sqrt(max(ref.numel(), 1))
    max_abs = diff.abs().max().item() if diff.numel() else 0.0
    diff_norm = torch.linalg.vector_norm(diff).item()
    rel = diff_norm / ref_norm if ref_norm > 0 else (0.0 if diff_norm == 0 else math.inf)
    max_scaled = max_abs / rms if rms > 0 else (0.0 if max_abs == 0 else math.inf)
    return ErrorStats(max_abs=max_abs, rel=rel, max_scaled=max_scaled)


def judge_values(out: torch.Tensor, ref: torch.Tensor, dtype_name: str) -> CheckResult:
    """Numbers only (layout is checked before): non-finite, constant, or out of tolerance fails."""
    finite = torch.isfinite(out)
    if not bool(finite.all()):
        bad = int((~finite).sum())
        return CheckResult(Status.NAN, f"{bad} of {out.numel()} elements are NaN or Inf")
    stats = error_stats(out, ref)
    tol = TOLERANCES[dtype_name]
    if out.numel() > 1 and bool((out == out.reshape(-1)[0]).all()) and ref.std().item() > 0:
        return CheckResult(Status.WRONG, f"output is constant ({out.reshape(-1)[0].item():g})", stats)
    if not stats.within(tol):
        return CheckResult(Status.WRONG, f"error rel {stats.rel:.2e} (limit {tol.rel:.0e}), max {stats.max_scaled:.2e}"
                                  f" x rms (limit {tol.elem:.0e})", stats)
    return CheckResult(Status.OK, "", stats)


def judge_layout(out, shape: Shape, dtype_name: str, device: torch.device) -> CheckResult | None:
    if not isinstance(out, torch.Tensor):
        return CheckResult(Status.BAD_OUTPUT, f"returned {type(out).__name__}, expected a torch.Tensor")
    want = {"shape": tuple(shape.out_shape), "dtype": DTYPES[dtype_name], "device": device}
    got = {"shape": tuple(out.shape), "dtype": out.dtype, "device": out.device}
    for key in want:
        if want[key] != got[key]:
            return CheckResult(Status.BAD_OUTPUT, f"expected {key} {want[key]}, got {got[key]}")
    if not out.is_contiguous():
        return CheckResult(Status.BAD_OUTPUT, f"expected a contiguous output, got strides {tuple(out.stride())}")
    return None


def poison_free_memory(numel: int, dtype: torch.dtype, value: float, limit_bytes: int = 4 << 30) -> None:
    """Fill the caching allocator's free blocks of the output's size with `value`, then free them:
    the variant's output allocation gets one of them back, so an element it never writes keeps it."""
    nbytes = max(numel * torch.empty((), dtype=dtype).element_size(), 1)
    free_cached = torch.cuda.memory_reserved() - torch.cuda.memory_allocated()
    count = max(4, min(64, free_cached // nbytes + 1, limit_bytes // nbytes))
    blocks = []
    try:
        for _ in range(count):
            blocks.append(torch.full((numel,), value, dtype=dtype, device="cuda"))
    except torch.cuda.OutOfMemoryError:
        pass
    del blocks


Forward = Callable[[Inputs], object]


def _on_cuda(inputs: Inputs) -> bool:
    return inputs.hidden.device.type == "cuda"


def synchronize_device(inputs: Inputs) -> None:
    """Wait for every stream of the device (the caller's stream alone would not see other streams' work)."""
    if _on_cuda(inputs):
        torch.cuda.synchronize()


def run_poisoned(forward: Forward, inputs: Inputs, shape: Shape, dtype: torch.dtype, value: float):
    """One call, on the caller's current stream, with the allocator's free memory poisoned first (CUDA)."""
    if _on_cuda(inputs):
        poison_free_memory(math.prod(shape.out_shape), dtype, value)
    out = forward(inputs)
    if _on_cuda(inputs):
        torch.cuda.current_stream().synchronize()
    return out


def refill(inputs: Inputs, shape: Shape, dtype_name: str, seed: int) -> None:
    """New random values into the same tensors: same addresses, new contents."""
    fresh = make_inputs(shape, DTYPES[dtype_name], seed=seed, device=inputs.hidden.device)
    for dst, src in zip(inputs.tensors(), fresh.tensors()):
        dst.copy_(src)


def snapshot(inputs: Inputs) -> Inputs:
    return Inputs(*(t.clone() for t in inputs.tensors()))


def _byte_range(t: torch.Tensor) -> tuple[int, int]:
    start = t.data_ptr()
    return start, start + t.numel() * t.element_size()


def overlaps(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Whether two contiguous tensors' memory overlaps."""
    (a0, a1), (b0, b1) = _byte_range(a), _byte_range(b)
    return a0 < b1 and b0 < a1


def not_new_memory(out: torch.Tensor, kept: torch.Tensor | None, inputs: Inputs) -> CheckResult | None:
    """The contract's "returns a new tensor": a caller holding the previous output must not see it
    overwritten, and the output must not alias an input."""
    if kept is not None and overlaps(out, kept):
        return CheckResult(Status.BAD_OUTPUT, "the output shares memory with the previous call's output, which "
                                              "the caller still holds (a static buffer?): return a new tensor")
    for name, tensor in zip(INPUT_NAMES, inputs.tensors()):
        if overlaps(out, tensor):
            return CheckResult(Status.BAD_OUTPUT, f"the output overlaps input '{name}'")
    return None


def explain_wrong(forward: Forward, shape: Shape, dtype_name: str, inputs: Inputs, out: torch.Tensor,
                  ref: torch.Tensor, earlier: Inputs | None, verdict: CheckResult) -> CheckResult:
    """A wrong, NaN or unfinished output: tell work on another stream, a cached output and unwritten
    elements apart, by evidence."""
    synchronize_device(inputs)  # work queued on any stream has landed now
    if judge_values(out, ref, dtype_name).status == Status.OK:
        return CheckResult(Status.OTHER_STREAM, "the output was right only after the whole device synchronized: "
                                                "the work runs on a stream the caller's does not wait for")
    if earlier is not None and judge_values(out, reference_float64(shape, earlier), dtype_name).status == Status.OK:
        return CheckResult(Status.STALE_OUTPUT, "output matches the inputs' previous values, not these "
                                                "(a cached output?)", verdict.error)
    if verdict.status == Status.NAN:
        # Same inputs under a finite poison: elements that now hold it were never written.
        nan_mask = ~torch.isfinite(out)
        out2 = run_poisoned(forward, inputs, shape, DTYPES[dtype_name], 1234.5)
        if isinstance(out2, torch.Tensor) and out2.shape == out.shape and bool((out2[nan_mask] == 1234.5).all()):
            return CheckResult(Status.UNWRITTEN, f"{int(nan_mask.sum())} of {out.numel()} output elements were "
                                                 f"never written (they keep the allocator poison)")
    return verdict


def check_call(forward: Forward, shape: Shape, dtype_name: str, inputs: Inputs, earlier: Inputs | None = None,
               kept: torch.Tensor | None = None) -> tuple[CheckResult, object]:
    """One call on `inputs`, judged; returns the verdict and the output. `earlier`: what these input tensors
    held before (a cached output matches it); `kept`: the previous call's output, still held by the caller."""
    ref = reference_float64(shape, inputs)
    before = snapshot(inputs)
    out = run_poisoned(forward, inputs, shape, DTYPES[dtype_name], float("nan"))
    layout = judge_layout(out, shape, dtype_name, inputs.hidden.device)
    if layout is not None:
        return layout, out
    for name, old, new in zip(INPUT_NAMES, before.tensors(), inputs.tensors()):
        if not torch.equal(old, new):
            return CheckResult(Status.WROTE_INPUT, f"the call changed input '{name}'"), out
    verdict = judge_values(out, ref, dtype_name)
    if verdict.status != Status.OK:
        return explain_wrong(forward, shape, dtype_name, inputs, out, ref, earlier, verdict), out
    aliased = not_new_memory(out, kept, inputs)
    if aliased is not None:
        return dataclasses.replace(aliased, error=verdict.error), out
    return verdict, out


def check_graph_replay(forward: Forward, shape: Shape, dtype_name: str, seed: int) -> CheckResult:
    """Capture one call from the current stream in a CUDA graph, replay it on fresh inputs, check.

    Work launched on another stream during capture runs once, eagerly, and is not in the graph, so
    the replayed output keeps the poison it was filled with. A call that cannot be captured at all
    (it synchronizes, allocates with cudaMalloc, or refuses) is not judged here: the result passes and
    names the check in `unchecked`, which the table shows as a flag.
    """
    dtype = DTYPES[dtype_name]
    static = make_inputs(shape, dtype, seed=seed)
    caller = torch.cuda.current_stream()
    side = torch.cuda.Stream()
    side.wait_stream(caller)
    with torch.cuda.stream(side):  # a warm-up off the caller's stream, as graph capture wants
        forward(static)
    caller.wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    try:
        with torch.cuda.graph(graph):
            out = forward(static)
    except Exception as exc:
        torch.cuda.synchronize()
        return CheckResult(Status.OK, f"not checked under graph replay: capture failed ({type(exc).__name__})",
                           unchecked=(GRAPH_REPLAY,))
    torch.cuda.synchronize()  # anything the capture ran eagerly has finished before the poison
    refill(static, shape, dtype_name, seed + 1)
    out.fill_(float("nan"))
    graph.replay()
    caller.synchronize()
    if not bool(torch.isfinite(out).any()):
        return CheckResult(Status.OTHER_STREAM, "a CUDA graph captured from the current stream left the output "
                                                "unwritten: the work runs on another stream")
    verdict = judge_values(out, reference_float64(shape, static), dtype_name)
    if verdict.status != Status.OK:
        return dataclasses.replace(verdict, message=f"under CUDA graph replay: {verdict.message}")
    return verdict


# Wrong, NaN and unwritten outputs can be a race with work on another stream that the poison hid from the
# device synchronize; the graph replay tells that case apart deterministically.
RACE_LIKE = (Status.WRONG, Status.NAN, Status.UNWRITTEN)


def check_variant(forward: Forward, shape: Shape, dtype_name: str, trials: int = 3, seed: int = 0,
                  graph_check: bool = True, fresh_output: bool = True, device: str = "cuda") -> CheckResult:
    """`trials` calls on one set of input tensors, refilled in place with new random values before each
    call after the first; the first failure decides; error stats are the worst seen. `fresh_output`:
    each output must be new memory (not for the graph baselines, whose output is the graph's buffer)."""
    inputs = make_inputs(shape, DTYPES[dtype_name], seed=seed, device=device)
    worst: ErrorStats | None = None
    earlier, kept = None, None
    for trial in range(trials):
        if trial:
            earlier = snapshot(inputs)
            refill(inputs, shape, dtype_name, seed + trial)
        result, out = check_call(forward, shape, dtype_name, inputs, earlier, kept)
        if result.status != Status.OK:
            if graph_check and result.status in RACE_LIKE:
                replay = check_graph_replay(forward, shape, dtype_name, seed=seed + trials)
                if replay.status == Status.OTHER_STREAM:
                    return replay
            return dataclasses.replace(result, message=f"trial {trial + 1}: {result.message}")
        if worst is None or result.error.rel > worst.rel:
            worst = result.error
        kept = out if fresh_output else None
    del kept
    if graph_check:
        replay = check_graph_replay(forward, shape, dtype_name, seed=seed + trials)
        if replay.status != Status.OK:
            return replay
        return CheckResult(Status.OK, replay.message, worst, replay.unchecked)
    return CheckResult(Status.OK, "", worst)


def check_after_timing(forward: Forward, shape: Shape, dtype_name: str, sets: list[Inputs], last_out,
                       last_set: Inputs, seed: int = 0, fresh_output: bool = True) -> CheckResult:
    """After timing: the last timed output against its own inputs, then every timed input set refilled in
    place (addresses the variant has now seen many times) and called once more. An output cached by
    address during timing is stale now, however many honest calls the cache allowed first."""
    synchronize_device(last_set)
    verdict = judge_layout(last_out, shape, dtype_name, last_set.hidden.device)
    verdict = verdict or judge_values(last_out, reference_float64(shape, last_set), dtype_name)
    if verdict.status != Status.OK:
        return dataclasses.replace(verdict, message=f"output of a timed call: {verdict.message}")
    kept = last_out if fresh_output else None
    for index, inputs in enumerate(sets):
        earlier = snapshot(inputs)
        refill(inputs, shape, dtype_name, seed + AFTER_TIMING_SEED + index)
        result, out = check_call(forward, shape, dtype_name, inputs, earlier, kept)
        if result.status != Status.OK:
            return dataclasses.replace(result, message=f"after timing, input set {index + 1} refilled in place: "
                                                       f"{result.message}")
        kept = out if fresh_output else None
    return CheckResult(Status.OK)
