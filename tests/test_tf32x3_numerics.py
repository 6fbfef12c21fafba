"""kernels/tf32x3.cu's 3xTF32 method, emulated on the CPU: it must land well inside the float32 tolerance at
DeepSeek's d = 7168 where plain TF32 does not, also under a tensor-core accumulator that truncates.

The emulation mirrors the kernel: TF32 by clearing the low 13 mantissa bits through an int32 view (hi), lo as
the nearest TF32 to x - hi, K cut into slices of the kernel's kSliceK (read from the .cu), each slice's terms in
the kernel's order lo*hi, hi*lo, hi*hi, slice partials added in fp32. Accumulator models: "rn" (fp32 round to
nearest) and "rz" (each step adds 8 exact products and truncates toward zero, as measured on earlier NVIDIA
tensor cores; the reason for the slices)."""
import re
from pathlib import Path

import pytest
import torch

from harness.check import TOLERANCES, error_stats
from harness.problem import Shape, make_inputs, reference_float64

KERNEL = Path(__file__).resolve().parent.parent / "kernels" / "tf32x3.cu"
TF32_LOW_BITS = 0x1FFF  # TF32 keeps 10 of fp32's 23 mantissa bits: the low 13 are what it drops
SHIPPED_TERMS = (("lo", "hi"), ("hi", "lo"), ("hi", "hi"))    # small products first, as the kernel lays them out
BIG_FIRST_TERMS = (("hi", "hi"), ("hi", "lo"), ("lo", "hi"))  # [Ahi | Ahi | Alo] @ [Bhi; Blo; Bhi]
DEEPSEEK_LIKE = Shape("deepseek-like", b=1, s=24, d=7168, rank=512, heads=8, head_dim=128)
FLOAT32 = TOLERANCES["float32"]


def kernel_constant(name: str) -> int:
    return int(re.search(rf"constexpr \w+ {name} = (0x[0-9A-Fa-f]+|\d+)u?;", KERNEL.read_text()).group(1), 0)


def kernel_slice_k() -> int:
    return kernel_constant("kSliceK")


TF32_MASK = kernel_constant("kTf32Mask") - (1 << 32)  # the kernel's uint32 mask as an int32


def tf32_truncate(x: torch.Tensor) -> torch.Tensor:
    return (x.contiguous().view(torch.int32) & TF32_MASK).view(torch.float32)


def tf32_nearest(x: torch.Tensor) -> torch.Tensor:
    return ((x.contiguous().view(torch.int32) + 0x1000) & TF32_MASK).view(torch.float32)


def split(x: torch.Tensor) -> dict[str, torch.Tensor]:
    hi = tf32_truncate(x)
    return {"hi": hi, "lo": tf32_nearest(x - hi)}


def round_toward_zero(exact: torch.Tensor) -> torch.Tensor:
    """float64 -> float32, truncating."""
    f = exact.float()
    over = f.double().abs() > exact.abs()
    return torch.where(over, torch.nextafter(f, torch.zeros_like(f)), f)


def accumulate(a: torch.Tensor, b: torch.Tensor, model: str) -> torch.Tensor:
    """One accumulator chain over all of a's columns / b's rows (fp32 operands that are exact TF32)."""
    if model == "rn":
        return a @ b
    acc = torch.zeros(a.shape[0], b.shape[1], dtype=torch.float32)
    a64, b64 = a.double(), b.double()
    for k0 in range(0, a.shape[1], 8):
        acc = round_toward_zero(acc.double() + a64[:, k0:k0 + 8] @ b64[k0:k0 + 8])
    return acc


def matmul_3xtf32(a: torch.Tensor, b: torch.Tensor, slice_k: int, model: str, terms=SHIPPED_TERMS) -> torch.Tensor:
    """a (m, k) @ b (k, n): per slice of slice_k, the concatenated terms in one chain; slices added in fp32."""
    sa, sb = split(a), split(b)
    out = torch.zeros(a.shape[0], b.shape[1], dtype=torch.float32)
    for k0 in range(0, a.shape[1], slice_k):
        cols = slice(k0, k0 + slice_k)
        a_cat = torch.cat([sa[ta][:, cols] for ta, _ in terms], dim=1)
        b_cat = torch.cat([sb[tb][cols] for _, tb in terms], dim=0)
        out = out + accumulate(a_cat, b_cat, model)
    return out


def matmul_tf32(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return tf32_nearest(a) @ tf32_nearest(b)


def kv_forward(inputs, shape: Shape, matmul) -> torch.Tensor:
    latent = matmul(inputs.hidden.reshape(shape.tokens, shape.d), inputs.w_down)
    out = matmul(latent, torch.cat([inputs.w_up_k, inputs.w_up_v], dim=1))  # (M, 2N): the stacked layout
    return out.view(shape.out_shape)


@pytest.fixture(autouse=True)
def one_thread():
    """The truncating model runs thousands of tiny sequential steps: thread hand-offs cost more than they save."""
    saved = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(saved)


@pytest.fixture(scope="module")
def problem():
    inputs = make_inputs(DEEPSEEK_LIKE, torch.float32, seed=3, device="cpu")
    return inputs, reference_float64(DEEPSEEK_LIKE, inputs)


def test_split_is_two_exact_tf32_numbers():
    x = torch.randn(100_000, dtype=torch.float32) * torch.logspace(-20, 20, 100_000)
    parts = split(x)
    for part in parts.values():
        assert bool(((part.view(torch.int32) & TF32_LOW_BITS) == 0).all())  # exact TF32 numbers
    residual = (x.double() - parts["hi"].double() - parts["lo"].double()).abs()
    assert bool((residual <= x.double().abs() * 2.0 ** -21).all())
    assert bool((parts["lo"].abs() <= parts["hi"].abs() * 2.0 ** -10).all())


def test_plain_tf32_misses_the_float32_tolerance(problem):
    inputs, ref = problem
    stats = error_stats(kv_forward(inputs, DEEPSEEK_LIKE, matmul_tf32), ref)
    assert not stats.within(FLOAT32), stats


@pytest.mark.parametrize("model", ["rn", "rz"])
def test_shipped_3xtf32_lands_well_inside_the_float32_tolerance(problem, model):
    inputs, ref = problem
    slice_k = kernel_slice_k()
    stats = error_stats(kv_forward(inputs, DEEPSEEK_LIKE, lambda a, b: matmul_3xtf32(a, b, slice_k, model)), ref)
    assert stats.rel <= FLOAT32.rel / 4 and stats.max_scaled <= FLOAT32.elem / 4, stats


def test_one_long_chain_fails_under_a_truncating_accumulator(problem):
    """Why the kernel slices K: the brief's single concatenated GEMM, big products first, over all of d."""
    inputs, ref = problem
    unsliced = lambda a, b: matmul_3xtf32(a, b, a.shape[1], "rz", BIG_FIRST_TERMS)  # noqa: E731
    stats = error_stats(kv_forward(inputs, DEEPSEEK_LIKE, unsliced), ref)
    assert not stats.within(FLOAT32), stats
