"""The operation in torch: the reference module, random inputs, and the float64 reference.
Shapes, presets and cost are in harness.shapes (no torch there)."""
from __future__ import annotations

import dataclasses

import torch
from torch import nn

from harness.shapes import DTYPE_NAMES, Shape

DTYPES = {name: getattr(torch, name) for name in DTYPE_NAMES}


class KVDecompress(nn.Module):
    """The reference: MLA KV decompression, k and v stacked on dim 2."""

    def __init__(self, kv_heads: int, head_dim: int):
        super().__init__()
        self.kv_heads = kv_heads
        self.head_dim = head_dim

    def forward(self, hidden, w_down, w_up_k, w_up_v):
        b, s, d = hidden.shape
        latent = hidden.reshape(b * s, d) @ w_down
        k = (latent @ w_up_k).view(b, s, self.kv_heads, self.head_dim)
        v = (latent @ w_up_v).view(b, s, self.kv_heads, self.head_dim)
        return torch.stack((k, v), dim=2)


@dataclasses.dataclass(frozen=True)
class Inputs:
    hidden: torch.Tensor
    w_down: torch.Tensor
    w_up_k: torch.Tensor
    w_up_v: torch.Tensor

    def tensors(self) -> tuple[torch.Tensor, ...]:
        return (self.hidden, self.w_down, self.w_up_k, self.w_up_v)


def make_inputs(shape: Shape, dtype: torch.dtype, seed: int, device="cuda") -> Inputs:
    """Fresh random inputs; weights scaled by 1/sqrt(fan_in) as in a real model, so values stay O(1)."""
    gen = torch.Generator(device=device).manual_seed(seed)

    def randn(*size, scale=1.0):
        return (torch.randn(*size, generator=gen, device=device, dtype=torch.float32) * scale).to(dtype)

    return Inputs(
        hidden=randn(shape.b, shape.s, shape.d),
        w_down=randn(shape.d, shape.rank, scale=shape.d ** -0.5),
        w_up_k=randn(shape.rank, shape.n_up, scale=shape.rank ** -0.5),
        w_up_v=randn(shape.rank, shape.n_up, scale=shape.rank ** -0.5),
    )


def reference_float64(shape: Shape, inputs: Inputs) -> torch.Tensor:
    return KVDecompress(shape.heads, shape.head_dim)(*(t.double() for t in inputs.tensors()))
