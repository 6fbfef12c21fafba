"""Run kernels/triton_two_stage.py under Triton's CPU interpreter (TRITON_INTERPRET=1), every autotune config
pinned in turn, against the float64 reference; prints one JSON line per run. Used by test_triton_variant.py.
float16 and float32 only: the interpreter's tl.dot is wrong for bfloat16 (numpy has no bfloat16), so bfloat16
is checked on the GPU."""
import json
import os
import sys
from pathlib import Path

os.environ["TRITON_INTERPRET"] = "1"  # before triton is imported
REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from harness import pyvariant  # noqa: E402
from harness.check import judge_values  # noqa: E402
from harness.problem import DTYPES, make_inputs, reference_float64  # noqa: E402
from harness.shapes import parse_shapes  # noqa: E402

SHAPES = ["b=2,s=5,d=40,rank=24,heads=3,head_dim=8",      # nothing a multiple of the tiles: K masks, wrapped loads
          "b=1,s=3,d=2048,rank=64,heads=2,head_dim=64",   # few rows, long K: split-K and the reduce kernel
          "b=2,s=48,d=128,rank=64,heads=2,head_dim=32"]   # K multiples of the K steps (EVEN_K)


def main() -> None:
    module = pyvariant.load(REPO / "kernels" / "triton_two_stage.py")
    for dtype, latent_configs, up_configs in (("float16", module.LATENT_TC, module.UP_TC),
                                              ("float32", module.LATENT_FP32, module.UP_FP32)):
        for i in range(max(len(latent_configs), len(up_configs))):
            pinned = (latent_configs[i % len(latent_configs)], up_configs[i % len(up_configs)])
            for kernel, config in zip((module.latent_kernel, module.up_stack_kernel), pinned):
                kernel.configs = [config]  # one config: the autotuner runs it without benchmarking
                kernel.cache.clear()
            for spec in SHAPES:
                shape = parse_shapes(spec)[0]
                inputs = make_inputs(shape, DTYPES[dtype], seed=i, device="cpu")
                out = module.forward(*inputs.tensors(), shape.heads)
                verdict = judge_values(out, reference_float64(shape, inputs), dtype)
                split = module.split_k(shape.tokens, shape.rank, shape.d, 132)
                print(json.dumps({"dtype": dtype, "shape": spec, "configs": [str(c) for c in pinned],
                                  "split_k": split, "status": str(verdict.status), "message": verdict.message}),
                      flush=True)


if __name__ == "__main__":
    main()
