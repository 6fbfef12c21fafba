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


# ---- behaviour checks on CPU, with fake forwards: caches, static buffers, another stream ----

from harness.records import CheckResult  # noqa: E402
from harness.shapes import Shape  # noqa: E402

SMALL = Shape("t", b=2, s=8, d=16, rank=8, heads=2, head_dim=4)


def honest(inputs):
    return reference_float64(SMALL, inputs).float()


def memo_by_address(honest_calls):
    """Computes honestly for the first `honest_calls` calls on an address, then returns the cached tensor."""
    cache = {}

    def forward(inputs):
        calls, out = cache.get(inputs.hidden.data_ptr(), (0, None))
        if calls < honest_calls:
            out = honest(inputs)
        cache[inputs.hidden.data_ptr()] = (calls + 1, out)
        return out
    return forward


def static_buffer():
    """Right values, but always written into the one buffer it returns."""
    buffer = torch.empty(SMALL.out_shape)

    def forward(inputs):
        buffer.copy_(honest(inputs))
        return buffer
    return forward


def check_small(forward, **kw):
    return check.check_variant(forward, SMALL, "float32", trials=3, seed=5, graph_check=False, device="cpu", **kw)


def test_honest_forward_passes():
    result = check_small(honest)
    assert result.status == Status.OK and result.error.rel < 1e-6


@pytest.mark.parametrize("honest_calls", [1, 2])
def test_output_cached_by_address_is_stale(honest_calls):
    """The trials refill the same tensors in place: an address-keyed cache returns the previous values' output."""
    result = check_small(memo_by_address(honest_calls))
    assert result.status == Status.STALE_OUTPUT, result
    assert result.message.startswith(f"trial {honest_calls + 1}: ") and "previous values" in result.message


def test_static_output_buffer_is_bad_output():
    result = check_small(static_buffer())
    assert result.status == Status.BAD_OUTPUT and "shares memory with the previous call's output" in result.message
    assert check_small(static_buffer(), fresh_output=False).status == Status.OK  # the graph baselines' rule


def test_output_overlapping_an_input_is_bad_output():
    inputs = make_inputs(SMALL, torch.float32, seed=1, device="cpu")
    view = inputs.w_up_k.view(-1)[:4]
    assert check.not_new_memory(view, None, inputs).message == "the output overlaps input 'w_up_k'"
    assert check.not_new_memory(torch.empty(4), torch.empty(4), inputs) is None


def test_cache_with_many_honest_calls_is_caught_after_timing():
    """A cache honest for the first 10 calls on an address passes the trials; after timing (many calls on
    the timed sets' addresses) the timed sets refilled in place catch it."""
    forward = memo_by_address(10)
    assert check_small(forward).status == Status.OK
    sets = [make_inputs(SMALL, torch.float32, seed=100 + i, device="cpu") for i in range(4)]
    out = None
    for call in range(40):  # the timing's rotation
        out = forward(sets[call % 4])
    result = check.check_after_timing(forward, SMALL, "float32", sets, out, sets[39 % 4], seed=5)
    assert result.status == Status.STALE_OUTPUT, result
    assert result.message.startswith("after timing, input set 1 refilled in place: ")
    assert check.check_after_timing(honest, SMALL, "float32", sets, honest(sets[3]), sets[3]).status == Status.OK


class SlowStream:
    """Work queued where the caller's stream does not wait: it lands only when the whole device synchronizes."""

    def __init__(self):
        self.pending = []

    def forward(self, inputs):
        out = torch.zeros(SMALL.out_shape)
        self.pending.append((out, honest(inputs)))
        return out

    def synchronize(self, inputs):
        for out, value in self.pending:
            out.copy_(value)
        self.pending.clear()


def test_other_stream_and_stale_output_are_told_apart_by_a_device_synchronize(monkeypatch):
    """Right after the whole device synchronized: the work was on another stream. Still wrong, but right for
    the inputs' previous values: a cached output (it launched nothing, so nothing could land)."""
    stream = SlowStream()
    monkeypatch.setattr(check, "synchronize_device", stream.synchronize)
    result = check_small(stream.forward)
    assert result.status == Status.OTHER_STREAM and "whole device synchronized" in result.message
    assert check_small(memo_by_address(1)).status == Status.STALE_OUTPUT


def test_a_skipped_graph_check_is_named_and_the_refill_still_runs(monkeypatch):
    skipped = CheckResult(Status.OK, "not checked under graph replay: capture failed (RuntimeError)",
                          unchecked=(check.GRAPH_REPLAY,))
    monkeypatch.setattr(check, "check_graph_replay", lambda *a, **k: skipped)
    ok = check.check_variant(honest, SMALL, "float32", trials=3, seed=5, graph_check=True, device="cpu")
    assert ok.status == Status.OK and ok.unchecked == ("graph-replay",)
    cached = check.check_variant(memo_by_address(1), SMALL, "float32", trials=3, graph_check=True, device="cpu")
    assert cached.status == Status.STALE_OUTPUT
