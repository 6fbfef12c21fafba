"""Cold instruction fetch, measured alone: GPU time of straight-line kernels of 1k / 4k / 8k FFMAs
(scripts/code_fetch.cu; 16 bytes of code each) on 1 and 132 blocks, in scripts/cache_states.py's three cache
states (cold: L2 flushed, so the code comes from DRAM; warm-code: flushed, then one launch of the same kernel;
hot), with and without the kernel first hinting its own code into L2 from its entry address. The questions: how
much of a cold-timed row is the fetch of its instructions, and can a kernel take that off its critical path?
Measured on an H100 (2026-12-05, results/NOTES.md): cold fetch costs +17 to +23 us for 64 KB of straight-line code,
and `--read-entry` faults, so `&kernel` in device code is not an address the code can be read (or prefetched)
from: the "+prefetch" cases hint other memory, and the kernels' KV_CODE_PREFETCH knob that asked the second
question was removed.
    python3 scripts/code_fetch.py --json code-fetch.json
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import cache_states  # noqa: E402

SOURCE = Path(__file__).resolve().parent / "code_fetch.cu"
DECLS = ("void code_fetch(at::Tensor out, int64_t instructions, int64_t prefetch, int64_t blocks);\n"
         "at::Tensor read_entry();\n")
FIRST_INSTRUCTION = 0x00000A00FF017B82  # LDC R1, c[0x0][0x28]: how every kernel of code_fetch.cu begins
INSTRUCTIONS = (1024, 4096, 8192)
BLOCKS = (1, 132)


def extension():
    from harness import build
    return build.ExtensionSource("code_fetch", SOURCE.read_text(), DECLS, ("code_fetch", "read_entry"),
                                 ("-gencode", "arch=compute_90a,code=sm_90a"))


def cases():
    """(label, instructions, prefetch, blocks), the prefetching form right after the plain one."""
    return [(f"{n} FFMA x {b} blocks{' +prefetch' if p else ''}", n, p, b)
            for n in INSTRUCTIONS for b in BLOCKS for p in (0, 1)]


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--budget", type=float, default=0.3, help="seconds of sampling per case and state")
    ap.add_argument("--json")
    ap.add_argument("--read-entry", action="store_true",
                    help="only read the 16 bytes at a kernel's &kernel address as data and say whether they are its "
                         "first instruction (a fault there ends the process: run it in one of its own)")
    args = ap.parse_args(argv)
    import torch

    from harness import baselines, env, timing
    ready = cache_states.build_for_timing("code_fetch", [extension()])
    if isinstance(ready, int):
        return ready
    built, helper = ready
    mod = baselines.import_extension(built["code_fetch"].so_path, built["code_fetch"].module_name)
    if args.read_entry:
        words = [int(w) & (2**64 - 1) for w in mod.read_entry().tolist()]
        print(f"code_fetch: at &kernel: {words[0]:#018x} {words[1]:#018x}; the kernel's first instruction is "
              f"{FIRST_INSTRUCTION:#018x}: {'the same' if words[0] == FIRST_INSTRUCTION else 'NOT the same'}")
        return 0 if words[0] == FIRST_INSTRUCTION else 5
    l2 = timing.L2Flush("read")
    out = torch.zeros(max(BLOCKS) * 128, device="cuda")
    rows = [{"row": "empty-kernel", "dtype": "-",
             "states": cache_states.measure_states(helper, helper.empty_launch, helper.empty_launch, l2, args.budget)}]
    for label, n, p, b in cases():
        call = lambda n=n, p=p, b=b: mod.code_fetch(out, n, p, b)  # noqa: E731
        rows.append({"row": label, "dtype": "-", "instructions": n, "prefetch": p, "blocks": b,
                     "states": cache_states.measure_states(helper, call, call, l2, args.budget)})
        print(cache_states.render(rows[-1:]).splitlines()[1], flush=True)
    print(cache_states.render(rows))
    if args.json:
        Path(args.json).write_text(json.dumps({"env": env.describe(), "method": "blocked events; cold: L2 flush "
                                               "(read) before each call; warm-code: the flush, then one launch of "
                                               "the same kernel; hot: none", "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
