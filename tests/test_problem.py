import pytest
import torch

from harness import problem, shapes
from harness.errors import UsageError


def test_presets():
    seed = shapes.preset("seed")
    assert (seed.b, seed.s, seed.d, seed.rank, seed.heads, seed.head_dim) == (4, 96, 256, 48, 4, 32)
    v3 = shapes.preset("deepseek-v3", tokens=128)
    assert (v3.b, v3.s, v3.d, v3.rank, v3.heads, v3.head_dim) == (1, 128, 7168, 512, 128, 128)
    assert [s.name for s in shapes.parse_shapes("seed,kimi-k2,minicpm3")] == ["seed", "kimi-k2", "minicpm3"]


def test_explicit_and_mixed():
    parsed = shapes.parse_shapes("seed;b=1,s=1,d=7,rank=1,heads=2,head_dim=24")
    assert parsed[1] == shapes.Shape("custom", 1, 1, 7, 1, 2, 24)
    assert parsed[1].out_shape == (1, 1, 2, 2, 24)


@pytest.mark.parametrize("spec, message", [
    ("seeed", "unknown shape 'seeed'"),
    ("b=1,s=1,d=7,rank=1,heads=2", "missing head_dim"),
    ("b=1,s=1,d=7,rank=1,heads=2,head_dim=x", "'head_dim=x' is not key=positive-integer"),
    ("b=0,s=1,d=7,rank=1,heads=2,head_dim=3", "'b' must be at least 1"),
    ("b=1,s=1,d=7,rank=1,heads=2,head_dim=3,q=1", "unknown key 'q'"),
    ("", "no shape given"),
])
def test_bad_shapes(spec, message):
    with pytest.raises(UsageError, match=message):
        shapes.parse_shapes(spec)


def test_dtypes():
    assert shapes.parse_dtypes("float32,bfloat16") == ["float32", "bfloat16"]
    with pytest.raises(UsageError, match="unknown dtype 'fp8'"):
        shapes.parse_dtypes("float32,fp8")


def test_reference_module_matches_definition():
    shape = shapes.Shape("t", 2, 3, 5, 4, 2, 3)
    inputs = problem.make_inputs(shape, torch.float64, seed=1, device="cpu")
    out = problem.reference_float64(shape, inputs)
    latent = inputs.hidden.reshape(6, 5) @ inputs.w_down
    assert out.shape == (2, 3, 2, 2, 3)
    torch.testing.assert_close(out[:, :, 0].reshape(6, 6), latent @ inputs.w_up_k)
    torch.testing.assert_close(out[:, :, 1].reshape(6, 6), latent @ inputs.w_up_v)


def test_inputs_fresh_and_seeded():
    shape = shapes.SEED
    a = problem.make_inputs(shape, torch.float32, seed=1, device="cpu")
    b = problem.make_inputs(shape, torch.float32, seed=1, device="cpu")
    c = problem.make_inputs(shape, torch.float32, seed=2, device="cpu")
    assert torch.equal(a.hidden, b.hidden) and not torch.equal(a.hidden, c.hidden)
    assert a.hidden.abs().min() > 0 or a.hidden.std() > 0.5  # random, not zeros


def test_cost_counts():
    s = shapes.SEED
    m, n = 384, 128
    assert shapes.flops(s) == 2 * m * 256 * 48 + 2 * m * 48 * 2 * n
    assert shapes.min_bytes(s, "float32") == 4 * (m * 256 + 256 * 48 + 2 * 48 * n + m * 2 * n)
    assert shapes.min_bytes(s, "bfloat16") * 2 == shapes.min_bytes(s, "float32")


def test_token_list_expands_each_model_preset():
    counts = shapes.parse_tokens("64,512,4096,64")
    assert counts == [64, 512, 4096]
    parsed = shapes.parse_shapes("seed,deepseek-v3;b=1,s=2,d=3,rank=4,heads=5,head_dim=6", counts)
    assert [(s.name, s.s) for s in parsed] == [("seed", 96), ("deepseek-v3", 64), ("deepseek-v3", 512),
                                               ("deepseek-v3", 4096), ("custom", 2)]
    labels = shapes.display_labels(parsed)
    assert [labels[s] for s in parsed] == ["seed", "deepseek-v3 s=64", "deepseek-v3 s=512", "deepseek-v3 s=4096",
                                           "b1 s2 d3 r4 h5x6"]
    assert shapes.display_labels([shapes.preset("kimi-k2")]) == {shapes.preset("kimi-k2"): "kimi-k2"}


@pytest.mark.parametrize("spec", ["0", "64,x", "", "-5"])
def test_bad_token_lists(spec):
    with pytest.raises(UsageError, match="is not a positive integer"):
        shapes.parse_tokens(spec)
