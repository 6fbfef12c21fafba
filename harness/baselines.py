"""The rows every table has besides the kernels: eager, torch.compile, a two-GEMM rewrite, the floor."""
from __future__ import annotations

import importlib.util
import time
from collections.abc import Callable
from pathlib import Path

import torch

from harness import pyvariant
from harness.problem import Inputs, KVDecompress
from harness.records import Kind, Target
from harness.shapes import DTYPE_NAMES, Shape

Forward = Callable[[Inputs], object]


def two_gemm(kv_heads: int, head_dim: int):
    """latent @ [w_up_k | w_up_v] is already the stacked layout: no k, v or stack copy."""
    def forward(hidden, w_down, w_up_k, w_up_v):
        b, s, d = hidden.shape
        latent = hidden.reshape(b * s, d) @ w_down
        return (latent @ torch.cat((w_up_k, w_up_v), dim=1)).view(b, s, 2, kv_heads, head_dim)
    return forward


def baseline_targets(floor_so: str, floor_module: str) -> list[Target]:
    return [Target("empty-kernel", Kind.FLOOR, DTYPE_NAMES, floor_so, floor_module),
            Target("eager", Kind.BASELINE, DTYPE_NAMES),
            Target("compile", Kind.BASELINE, DTYPE_NAMES),
            Target("torch-2gemm", Kind.BASELINE, DTYPE_NAMES)]


def import_extension(so_path: str, module_name: str):
    spec = importlib.util.spec_from_file_location(module_name, so_path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def prepare(target: Target, shape: Shape, sample: Inputs) -> tuple[Forward, float | None]:
    """The callable for one (target, shape), and for torch.compile its compile time in seconds (for a Python
    variant, its first call's: Triton's compile and autotuning)."""
    heads, hd = shape.heads, shape.head_dim
    if target.kind == Kind.KERNEL and pyvariant.is_python(target.so_path):
        module = pyvariant.load(Path(target.so_path), target.module_name)
        forward = (lambda inputs: module.forward(*inputs.tensors(), heads))
        return forward, pyvariant.first_call(forward, sample)
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
    if target.name == "compile":
        torch._dynamo.reset()  # a fresh compile per shape: honest compile time, no recompile limit
        compiled = torch.compile(KVDecompress(heads, hd), dynamic=False)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        compiled(*sample.tensors())
        torch.cuda.synchronize()
        return (lambda inputs: compiled(*inputs.tensors())), time.perf_counter() - t0
    raise ValueError(f"unknown baseline {target.name}")
