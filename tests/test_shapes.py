"""harness.shapes.parse_one: the one-shape form the scripts take (preset, preset:tokens, explicit)."""
import pytest

from harness.errors import UsageError
from harness.shapes import DEFAULT_TOKENS, parse_one, preset


def test_a_preset_at_a_token_count():
    assert parse_one("deepseek-v3:64") == preset("deepseek-v3", 64)
    assert parse_one("deepseek-v3:64").tokens == 64


def test_a_preset_alone_takes_the_default_tokens():
    assert parse_one("deepseek-v3") == preset("deepseek-v3", DEFAULT_TOKENS)
    assert parse_one("seed") == preset("seed")


def test_an_explicit_shape():
    s = parse_one("b=1,s=7,d=256,rank=48,heads=4,head_dim=32")
    assert (s.tokens, s.d, s.rank, s.heads, s.head_dim) == (7, 256, 48, 4, 32)


@pytest.mark.parametrize("spec", ["deepseek-v3:", "deepseek-v3:0", "deepseek-v3:x", "nope:64"])
def test_bad_specs_are_usage_errors(spec):
    with pytest.raises(UsageError):
        parse_one(spec)
