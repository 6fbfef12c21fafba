"""The operation's shapes: presets, parsing, and cost (bytes and FLOPs). Plain Python, no torch:
the result-file readers (compare, plot) use these without importing it."""
from __future__ import annotations

import dataclasses
import re

from harness.errors import UsageError

DTYPE_NAMES = ("float32", "bfloat16", "float16")
ELEMENT_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}
DEFAULT_TOKENS = 4096  # a realistic prefill chunk for the model presets


@dataclasses.dataclass(frozen=True)
class Shape:
    name: str
    b: int
    s: int
    d: int
    rank: int
    heads: int
    head_dim: int

    @property
    def tokens(self) -> int:
        return self.b * self.s

    @property
    def n_up(self) -> int:
        """Width of one up-projection: heads * head_dim."""
        return self.heads * self.head_dim

    @property
    def out_shape(self) -> tuple[int, ...]:
        return (self.b, self.s, 2, self.heads, self.head_dim)

    def dims(self) -> dict[str, int]:
        return {k: getattr(self, k) for k in _FIELDS}

    def label(self) -> str:
        return self.name if self.name != "custom" else "b{b}s{s}d{d}r{rank}h{heads}x{head_dim}".format(**self.dims())


# Model presets: (d, rank, heads, head_dim). The seed problem is fixed at b=4, s=96.
MODEL_PRESETS = {
    "deepseek-v2-lite": (2048, 512, 16, 128),
    "deepseek-v2": (5120, 512, 128, 128),
    "deepseek-v3": (7168, 512, 128, 128),
    "kimi-k2": (7168, 512, 64, 128),
    "minicpm3": (2560, 256, 40, 64),
}
SEED = Shape("seed", b=4, s=96, d=256, rank=48, heads=4, head_dim=32)
PRESET_NAMES = ("seed", *MODEL_PRESETS)
_FIELDS = ("b", "s", "d", "rank", "heads", "head_dim")


def preset(name: str, tokens: int = DEFAULT_TOKENS) -> Shape:
    if name == "seed":
        return SEED
    if name not in MODEL_PRESETS:
        raise UsageError(f"unknown shape '{name}'; presets: {', '.join(PRESET_NAMES)}, "
                         f"or explicit b=4,s=96,d=256,rank=48,heads=4,head_dim=32")
    d, rank, heads, head_dim = MODEL_PRESETS[name]
    return Shape(name, b=1, s=tokens, d=d, rank=rank, heads=heads, head_dim=head_dim)


def parse_explicit(text: str) -> Shape:
    """Parse 'b=4,s=96,d=256,rank=48,heads=4,head_dim=32' (all six keys, positive integers)."""
    values: dict[str, int] = {}
    for part in text.split(","):
        m = re.fullmatch(r"\s*(\w+)\s*=\s*(\d+)\s*", part)
        if not m:
            raise UsageError(f"malformed shape '{text}': '{part}' is not key=positive-integer")
        key, value = m.group(1), int(m.group(2))
        if key not in _FIELDS:
            raise UsageError(f"malformed shape '{text}': unknown key '{key}' (keys: {', '.join(_FIELDS)})")
        if key in values:
            raise UsageError(f"malformed shape '{text}': '{key}' given twice")
        if value < 1:
            raise UsageError(f"malformed shape '{text}': '{key}' must be at least 1")
        values[key] = value
    missing = [k for k in _FIELDS if k not in values]
    if missing:
        raise UsageError(f"malformed shape '{text}': missing {', '.join(missing)}")
    return Shape("custom", **values)


def parse_tokens(spec: str) -> list[int]:
    """'64,512,4096': the token counts (s at b=1) the model presets are run at."""
    counts = []
    for part in spec.split(","):
        part = part.strip()
        if not part.isdigit() or int(part) < 1:
            raise UsageError(f"--tokens '{spec}': '{part}' is not a positive integer")
        counts.append(int(part))
    return list(dict.fromkeys(counts))


def parse_shapes(spec: str, tokens: int | list[int] = DEFAULT_TOKENS) -> list[Shape]:
    """Comma-separated presets; an explicit shape (it contains '=') is separated from others by ';'.
    Each model preset gives one shape per token count; the seed and explicit shapes are fixed."""
    counts = [tokens] if isinstance(tokens, int) else list(tokens)
    shapes: list[Shape] = []
    for group in spec.split(";"):
        group = group.strip()
        if not group:
            continue
        if "=" in group:
            shapes.append(parse_explicit(group))
        else:
            shapes.extend(preset(name.strip(), n) for name in group.split(",") if name.strip() for n in counts)
    if not shapes:
        raise UsageError("no shape given")
    return list(dict.fromkeys(shapes))


def parse_one(spec: str) -> Shape:
    """One shape, as the scripts take it: a preset ('seed', 'deepseek-v3' at the default tokens), a preset at a
    token count ('deepseek-v3:64') or an explicit shape ('b=1,s=1,d=256,rank=48,heads=4,head_dim=32')."""
    name, sep, tokens = spec.partition(":")
    if sep and "=" not in spec:
        if not tokens.strip().isdigit() or int(tokens) < 1:
            raise UsageError(f"shape '{spec}': '{tokens}' is not a positive token count")
        return preset(name.strip(), int(tokens))
    return parse_shapes(spec)[0]


def parse_dtypes(spec: str) -> list[str]:
    names = [n.strip() for n in spec.split(",") if n.strip()]
    for n in names:
        if n not in DTYPE_NAMES:
            raise UsageError(f"unknown dtype '{n}'; known: {', '.join(DTYPE_NAMES)}")
    if not names:
        raise UsageError("no dtype given")
    return list(dict.fromkeys(names))


def display_labels(shapes) -> dict[Shape, str]:
    """A short label per shape: the preset's name, with its token count where one name has several
    shapes (a --tokens list); explicit shapes by their dimensions."""
    shapes = list(dict.fromkeys(shapes))
    names = [s.name for s in shapes]
    labels = {}
    for s in shapes:
        if s.name == "custom":
            labels[s] = "b{b} s{s} d{d} r{rank} h{heads}x{head_dim}".format(**s.dims())
        else:
            labels[s] = s.name if names.count(s.name) == 1 else f"{s.name} s={s.s}"
    return labels


def min_bytes(shape: Shape, dtype_name: str) -> int:
    """Fewest bytes through device memory: each input read once, the output written once."""
    m, n = shape.tokens, shape.n_up
    elements = m * shape.d + shape.d * shape.rank + 2 * shape.rank * n + m * 2 * n
    return elements * ELEMENT_BYTES[dtype_name]


def flops(shape: Shape) -> int:
    m, n = shape.tokens, shape.n_up
    return 2 * m * shape.d * shape.rank + 2 * m * shape.rank * 2 * n
