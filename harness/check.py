"""Check: a variant's output against the float64 reference on fresh random inputs.

Each failure mode has its own status, decided by behaviour (never by matching error text):
  bad-output    not a tensor, or wrong shape, dtype, device or layout
  unwritten     elements still hold the poison the allocator's free memory was filled with
  nan           NaN or Inf that a second poison shows the variant computed
  wrong         outside the dtype's tolerance, or constant
  stale-output  wrong for these inputs but right for the previous trial's (output reuse)
  wrote-input   an input changed during the call
  other-stream  a CUDA graph captured from the current stream does not write the output: the work
                runs on some other stream, so it is not ordered after the caller's stream
"""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

import torch

from harness.problem import DTYPES, Inputs, make_inputs, reference_float64
from harness.records import CheckResult, ErrorStats, Status
from harness.shapes import Shape


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


def run_poisoned(forward: Forward, inputs: Inputs, shape: Shape, dtype: torch.dtype, value: float):
    poison_free_memory(math.prod(shape.out_shape), dtype, value)
    out = forward(inputs)
    torch.cuda.current_stream().synchronize()
    return out


def check_once(forward: Forward, shape: Shape, dtype_name: str, inputs: Inputs, ref: torch.Tensor,
               previous_ref: torch.Tensor | None) -> CheckResult:
    dtype = DTYPES[dtype_name]
    before = [t.clone() for t in inputs.tensors()]
    out = run_poisoned(forward, inputs, shape, dtype, float("nan"))
    layout = judge_layout(out, shape, dtype_name, inputs.hidden.device)
    if layout is not None:
        return layout
    for name, old, new in zip(("hidden", "w_down", "w_up_k", "w_up_v"), before, inputs.tensors()):
        if not torch.equal(old, new):
            return CheckResult(Status.WROTE_INPUT, f"the call changed input '{name}'")
    verdict = judge_values(out, ref, dtype_name)
    if verdict.status == Status.NAN:
        # Same inputs under a finite poison: elements that now hold it were never written.
        nan_mask = ~torch.isfinite(out)
        out2 = run_poisoned(forward, inputs, shape, dtype, 1234.5)
        if isinstance(out2, torch.Tensor) and out2.shape == out.shape and bool((out2[nan_mask] == 1234.5).all()):
            return CheckResult(Status.UNWRITTEN, f"{int(nan_mask.sum())} of {out.numel()} output elements were "
                                          f"never written (they keep the allocator poison)")
    if verdict.status == Status.WRONG and previous_ref is not None:
        if judge_values(out, previous_ref, dtype_name).status == Status.OK:
            return CheckResult(Status.STALE_OUTPUT, "output matches the previous call's inputs, not these (cached output?)",
                               verdict.error)
    return verdict


def check_graph_replay(forward: Forward, shape: Shape, dtype_name: str, seed: int) -> CheckResult:
    """Capture one call from the current stream in a CUDA graph, replay it on fresh inputs, check.

    Work launched on another stream during capture runs once, eagerly, and is not in the graph, so
    the replayed output keeps the poison it was filled with. A call that cannot be captured at all
    (it synchronizes, or allocates with cudaMalloc) is not judged here: the result says so and passes.
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
        return CheckResult(Status.OK, f"not checked under graph replay: capture failed ({type(exc).__name__})")
    torch.cuda.synchronize()  # anything the capture ran eagerly has finished before the poison
    fresh = make_inputs(shape, dtype, seed=seed + 1)
    for dst, src in zip(static.tensors(), fresh.tensors()):
        dst.copy_(src)
    out.fill_(float("nan"))
    graph.replay()
    caller.synchronize()
    if not bool(torch.isfinite(out).any()):
        return CheckResult(Status.OTHER_STREAM, "a CUDA graph captured from the current stream left the output "
                                         "unwritten: the work runs on another stream")
    verdict = judge_values(out, reference_float64(shape, fresh), dtype_name)
    if verdict.status != Status.OK:
        return dataclasses.replace(verdict, message=f"under CUDA graph replay: {verdict.message}")
    return verdict


def check_variant(forward: Forward, shape: Shape, dtype_name: str, trials: int = 3, seed: int = 0,
                  graph_check: bool = True) -> CheckResult:
    """`trials` fresh random input sets; the first failure decides; error stats are the worst seen."""
    worst: ErrorStats | None = None
    previous_ref = None
    for trial in range(trials):
        inputs = make_inputs(shape, DTYPES[dtype_name], seed=seed + trial)
        ref = reference_float64(shape, inputs)
        result = check_once(forward, shape, dtype_name, inputs, ref, previous_ref)
        if result.status != Status.OK:
            if graph_check and result.status in (Status.WRONG, Status.NAN, Status.UNWRITTEN, Status.STALE_OUTPUT):
                # Work on another stream races the caller's reads and shows as any of these;
                # the graph replay tells that case apart deterministically.
                replay = check_graph_replay(forward, shape, dtype_name, seed=seed + trials)
                if replay.status == Status.OTHER_STREAM:
                    return replay
            return dataclasses.replace(result, message=f"trial {trial + 1}: {result.message}")
        if worst is None or result.error.rel > worst.rel:
            worst = result.error
        previous_ref = ref
    if graph_check:
        replay = check_graph_replay(forward, shape, dtype_name, seed=seed + trials)
        if replay.status != Status.OK:
            return replay
        return CheckResult(Status.OK, replay.message, worst)
    return CheckResult(Status.OK, "", worst)
