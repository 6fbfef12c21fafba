# summary: adversarial Python variant: its Triton kernel uses an undefined name, so the first call fails to compile (expect build-failed)

import torch
import triton
import triton.language as tl


@triton.jit
def broken_kernel(out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    tl.store(out_ptr + offsets, undefined_value, mask=offsets < n)  # noqa: F821 (the bug under test)


def forward(hidden, w_down, w_up_k, w_up_v, kv_heads):
    b, s, _ = hidden.shape
    out = torch.empty((b, s, 2, kv_heads, w_up_k.shape[1] // kv_heads), dtype=hidden.dtype, device=hidden.device)
    broken_kernel[(triton.cdiv(out.numel(), 1024),)](out, out.numel(), BLOCK=1024)
    return out
