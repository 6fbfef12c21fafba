"""The rows every table has besides the kernels: the empty-kernel floor and the torch rows a user would
reach for without writing a kernel: eager, eager replayed in a CUDA graph, torch.compile (default and
max-autotune), and a two-GEMM rewrite."""
from __future__ import annotations

import importlib.util
import time
from collections.abc import Callable
from pathlib import Path

import torch

from harness import pyvariant
from harness.problem import Inputs, KVDecompress
from harness.records import BUILTIN_ROWS, FLOOR_ROW, Kind, Target
from harness.shapes import DTYPE_NAMES, Shape

Forward = Callable[[Inputs], object]
# Rows whose output is a CUDA graph's static buffer, rewritten by the next replay: what a user of CUDA
# graphs gets. The check's "returns a new tensor" rule does not apply to them.
GRAPH_OUTPUT_ROWS = ("eager-graph", "compile-max-autotune")


def two_gemm(kv_heads: int, head_dim: int):
    """latent @ [w_up_k | w_up_v] is already the stacked layout: no k, v or stack copy."""
    def forward(hidden, w_down, w_up_k, w_up_v):
        b, s, d = hidden.shape
        latent = hidden.reshape(b * s, d) @ w_down
        return (latent @ torch.cat((w_up_k, w_up_v), dim=1)).view(b, s, 2, kv_heads, head_dim)
    return forward


def baseline_targets(floor_so: str, floor_module: str, names: tuple[str, ...] = BUILTIN_ROWS) -> list[Target]:
    """The selected built-in rows, in table order."""
    return [Target(name, Kind.FLOOR, DTYPE_NAMES, floor_so, floor_module) if name == FLOOR_ROW else
            Target(name, Kind.BASELINE, DTYPE_NAMES, fresh_output=name not in GRAPH_OUTPUT_ROWS)
            for name in BUILTIN_ROWS if name in names]


def import_extension(so_path: str, module_name: str):
    spec = importlib.util.spec_from_file_location(module_name, so_path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _timed_first_call(forward: Forward, sample: Inputs) -> float:
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    forward(sample)
    torch.cuda.synchronize()
    return time.perf_counter() - t0


def _graph_replay(module) -> Forward:
    """`module` captured in a CUDA graph once per input set (keyed by its tensors' addresses, which the
    graph reads) and replayed: one graph launch per call."""
    graphs: dict[tuple[int, ...], tuple[torch.cuda.CUDAGraph, torch.Tensor]] = {}

    def capture(inputs: Inputs):
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):  # warm-up off the capturing stream, as graph capture wants
            module(*inputs.tensors())
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            out = module(*inputs.tensors())
        return graph, out

    def forward(inputs: Inputs):
        key = tuple(t.data_ptr() for t in inputs.tensors())
        if key not in graphs:
            graphs[key] = capture(inputs)
        graph, out = graphs[key]
        graph.replay()
        return out
    return forward


def prepare(target: Target, shape: Shape, sample: Inputs) -> tuple[Forward, float | None]:
    """The callable for one (target, shape), and for the compiled, graph and Python rows their setup time in
    seconds (compilation, the first capture, or a Python variant's first call: Triton's compile and
    autotuning), measured on `sample`."""
    heads, hd = shape.heads, shape.head_dim
    if target.kind == Kind.KERNEL and pyvariant.is_python(target.so_path):
        module = pyvariant.load(Path(target.so_path), target.module_name)
        forward = (lambda inputs: module.forward(*inputs.tensors(), heads))
        with pyvariant.compile_errors():
            return forward, _timed_first_call(forward, sample)
    if target.kind in (Kind.KERNEL, Kind.FLOOR):
        module = import_extension(target.so_path, target.module_name)
        if target.kind == Kind.FLOOR:
            return (lambda inputs: module.empty_launch()), None
        return (lambda inputs: module.forward(*inputs.tensors(), heads)), None
    if target.name == "eager":
        ref = KVDecompress(heads, hd)
        return (lambda inputs: ref(*inputs.tensors())), None
    if target.name == "torch-2gemm":
        fn = two_gemm(heads, hd)
        return (lambda inputs: fn(*inputs.tensors())), None
    if target.name == "eager-graph":
        forward = _graph_replay(KVDecompress(heads, hd))
        return forward, _timed_first_call(forward, sample)
    if target.name in ("compile", "compile-max-autotune"):
        torch._dynamo.reset()  # a fresh compile per shape: honest compile time, no recompile limit
        mode = "max-autotune" if target.name == "compile-max-autotune" else None  # max-autotune: CUDA graphs too
        compiled = torch.compile(KVDecompress(heads, hd), mode=mode, dynamic=False)
        forward = lambda inputs: compiled(*inputs.tensors())  # noqa: E731
        return forward, _timed_first_call(forward, sample)
    raise ValueError(f"unknown baseline {target.name}")
