"""Print, on one line, the nvcc flags the harness's build gives a variant (everything but the architecture), for
nvcc runs outside load_inline: scripts/ptxas_report.sh and scripts/cutlass_subset.sh take theirs from here.
  python scripts/nvcc_flags.py kernels/two_stage.cu
A header the build cannot resolve (`// includes: cutlass` with no CUTLASS here) exits 2 with the build's message."""
from __future__ import annotations

import shlex
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from harness import build, discover, runner  # noqa: E402
from harness.errors import HeaderLibraryMissing, UsageError  # noqa: E402


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: nvcc_flags.py VARIANT.cu", file=sys.stderr)
        return 2
    try:
        spec = discover.load_variant(Path(argv[0]))
        print(shlex.join(build.standalone_nvcc_flags(runner.variant_extension(spec))))
    except (UsageError, HeaderLibraryMissing, OSError) as exc:
        print(f"nvcc_flags.py: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
