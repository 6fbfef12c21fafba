import math

import pytest
import torch

from harness import check
from harness.problem import make_inputs, reference_float64
from harness.records import Status
from harness.shapes import SEED


@pytest.fixture(scope="module")
def ref():
    return reference_float64(SEED, make_inputs(SEED, torch.float32, seed=3, device="cpu"))


def test_exact_passes(ref):
    assert check.judge_values(ref.float(), ref, "float32").status == Status.OK


def test_zeros_fail(ref):
    result = check.judge_values(torch.zeros_like(ref).float(), ref, "float32")
    assert result.status == Status.WRONG


def test_constant_fails(ref):
    result = check.judge_values(torch.full_like(ref, 0.5).float(), ref, "float32")
    assert result.status == Status.WRONG and "constant" in result.message


def test_small_perturbation_passes_and_large_fails(ref):
    rms = ref.pow(2).mean().sqrt()
    noise = torch.randn(ref.shape, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    assert check.judge_values((ref + 1e-6 * rms * noise).float(), ref, "float32").status == Status.OK
    assert check.judge_values((ref + 1e-3 * rms * noise).float(), ref, "float32").status == Status.WRONG
    assert check.judge_values((ref + 1e-3 * rms * noise).bfloat16(), ref, "bfloat16").status == Status.OK


def test_tf32_like_error_fails_float32(ref):
    """Rounding the inputs to TF32's 10-bit mantissa gives ~3e-4 relative error: not float32."""
    inputs = make_inputs(SEED, torch.float32, seed=3, device="cpu")
    def tf32(t):
        bits = t.view(torch.int32) & ~0x1FFF
        return bits.view(torch.float32)
    tf = reference_float64(SEED, type(inputs)(*(tf32(t) for t in inputs.tensors())))
    result = check.judge_values(tf.float(), ref, "float32")
    assert result.status == Status.WRONG and result.error.rel > 1e-4


def test_one_wrong_element_fails(ref):
    out = ref.float().clone()
    out.view(-1)[1234] += 0.01 * ref.abs().max()
    assert check.judge_values(out, ref, "float32").status == Status.WRONG


def test_nan_and_inf_fail(ref):
    for bad in (math.nan, math.inf):
        out = ref.float().clone()
        out.view(-1)[7] = bad
        result = check.judge_values(out, ref, "float32")
        assert result.status == Status.NAN and "1 of" in result.message


def test_layout():
    dev = torch.device("cpu")
    good = torch.empty(SEED.out_shape)
    assert check.judge_layout(good, SEED, "float32", dev) is None
    cases = [
        ("x", "returned str"),
        (torch.empty(4, 96, 2, 128), "expected shape (4, 96, 2, 4, 32)"),
        (torch.empty(SEED.out_shape, dtype=torch.float64), "expected dtype torch.float32"),
        (torch.empty(4, 96, 4, 2, 32).transpose(2, 3), "contiguous"),
    ]
    for out, message in cases:
        result = check.judge_layout(out, SEED, "float32", dev)
        assert result.status == Status.BAD_OUTPUT and message in result.message
