"""Cold instruction fetch, measured alone: GPU event time of straight-line kernels of 1k / 4k / 8k FFMAs
(scripts/code_fetch.cu; ≈ 16 bytes of code each) on 1 and 132 blocks, under trace_tc's cache states (cold: L2
flushed, so the code comes from DRAM; warm-code: flushed, then one launch of the same kernel; hot), with and
without the kernel prefetching its own code into L2 from its entry address. The question: how much of a
cold-timed row is the fetch of its instructions, and whether a kernel can take that off its critical path.
    python3 scripts/code_fetch.py --runs 21
"""
import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from harness import baselines, build  # noqa: E402
from trace_tc import CACHE_STATES, one_run  # noqa: E402

SOURCE = Path(__file__).resolve().parent / "code_fetch.cu"


class Launch:
    """forward(*args) for one_run: one launch of the chosen kernel."""
    def __init__(self, mod, out, n, prefetch, blocks):
        self.mod, self.out, self.n, self.prefetch, self.blocks = mod, out, n, prefetch, blocks

    def forward(self, *args):
        self.mod.code_fetch(self.out, self.n, self.prefetch, self.blocks)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=21)
    a = ap.parse_args(argv)
    ext = build.ExtensionSource("code_fetch", SOURCE.read_text(),
                                "void code_fetch(torch::Tensor out, int64_t instructions, int64_t prefetch, int64_t blocks);\n",
                                ("code_fetch",), ("-gencode", "arch=compute_90a,code=sm_90a"))
    b = build.build_all([ext])["code_fetch"]
    if not b.ok:
        print("BUILD FAILED", b.message)
        return 1
    mod = baselines.import_extension(b.so_path, b.module_name)
    flush = torch.empty(int(2 * torch.cuda.get_device_properties(0).L2_cache_size // 4) + 1, device="cuda")
    flush.fill_(1.0)
    out = torch.zeros(132 * 128, device="cuda")
    print(f"{'FFMAs':>6s} {'blocks':>6s} {'prefetch':>8s} " + " ".join(f"{c:>10s}" for c in CACHE_STATES)
          + "   (GPU µs, median)", flush=True)
    for n in (1024, 4096, 8192):
        for blocks in (1, 132):
            for prefetch in (0, 1):
                k = Launch(mod, out, n, prefetch, blocks)
                cols = []
                for cache in CACHE_STATES:
                    for _ in range(2):
                        one_run(k, (), flush, cache, (), traced=False)
                    cols.append(sorted(one_run(k, (), flush, cache, (), traced=False)[1] for _ in range(a.runs))[a.runs // 2])
                print(f"{n:6d} {blocks:6d} {prefetch:8d} " + " ".join(f"{c:10.2f}" for c in cols), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
