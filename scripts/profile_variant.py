"""Call one variant a few times at one shape, for a profiler to watch (ncu, compute-sanitizer):
    ncu --clock-control none --profile-from-start off --metrics gpu__time_duration.sum \
        python3 scripts/profile_variant.py fused_tiled seed float32
Only the calls after a first, unprofiled one fall inside the profiler's range (cudaProfilerStart / Stop).
The variant is a name in kernels/ or the path of a .cu file (a copy with other -D defines written into it). The
shape is a preset, a preset at a token count (deepseek-v3:64) or an explicit shape; an optional fourth argument is
the number of calls (default 5).
"""
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from harness import baselines, build, discover, runner  # noqa: E402
from harness.problem import DTYPES, make_inputs  # noqa: E402
from harness.shapes import parse_one  # noqa: E402


def main(name: str, shape_spec: str, dtype: str, calls: str = "5") -> None:
    path = Path(name) if name.endswith(".cu") else Path(__file__).resolve().parent.parent / "kernels" / f"{name}.cu"
    spec = discover.load_variant(path)
    built = build.build_all([runner.variant_extension(spec)])[spec.name]
    if not built.ok:
        sys.exit(built.message)
    module = baselines.import_extension(built.so_path, built.module_name)
    shape = parse_one(shape_spec)
    inputs = make_inputs(shape, DTYPES[dtype], seed=0)
    # one call outside the profiled range: input generation and first-call set-up (workspace, counters) stay out
    # of a profiler started with --profile-from-start off
    module.forward(*inputs.tensors(), shape.heads)
    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    for _ in range(int(calls)):
        module.forward(*inputs.tensors(), shape.heads)
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()


if __name__ == "__main__":
    main(*sys.argv[1:5])
