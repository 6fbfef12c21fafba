"""Which SM each block of a persistent GEMM's grid lands on, and which blocks share a GPC: the placement question
of GEMM1's L2 coalescing (results/NOTES.md, 2026-12-07 sixteenth). A probe kernel (scripts/sm_placement.cu)
records %smid per block with one block per SM, all resident at once.

  1. GPCs: grids launched in clusters of 16, 8, 4 and 2 blocks (a cluster's blocks share a GPC); SMs seen in one
     cluster are joined (union-find), so each group lies inside one GPC (a group can be part of one).
  2. Placement: linear block id -> SM for our GEMM1 launch's grid (units, 1, 1) and CUTLASS's persistent (1, SMs, 1),
     each launched --repeat times (is it stable?).
  3. For a GEMM1 of --tiles-m x --tiles-n tiles, under each grid and each tile order (row tile fastest: ours;
     column tile fastest: CUTLASS's raster along N), how many GPC groups the blocks sharing one A row tile and one B
     column tile span (fewer: more requests for one line from one GPC at a time, which its L2 coalescer can merge).

    python3 scripts/sm_placement.py --tiles-m 32 --tiles-n 4 [--json placement.json]
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SOURCE = Path(__file__).resolve().with_suffix(".cu")
DECLS = ("void placement_launch(at::Tensor out, int64_t gx, int64_t gy, int64_t threads, int64_t smem_bytes, "
         "int64_t cluster, int64_t hold_ns);\n")


def extension_source():
    from harness import build

    return build.ExtensionSource("sm_placement", SOURCE.read_text(), DECLS, ("placement_launch",),
                                 include_dirs=(str(ROOT / "kernels"),))


class Groups:
    """Union-find over SM ids."""

    def __init__(self) -> None:
        self.parent: dict[int, int] = {}

    def find(self, a: int) -> int:
        self.parent.setdefault(a, a)
        while self.parent[a] != a:
            self.parent[a] = self.parent[self.parent[a]]
            a = self.parent[a]
        return a

    def join(self, members: list[int]) -> None:
        self.find(members[0])  # a group of one is a group too
        for m in members[1:]:
            self.parent[self.find(m)] = self.find(members[0])

    def label(self) -> dict[int, int]:
        roots = sorted({self.find(a) for a in self.parent})
        return {a: roots.index(self.find(a)) for a in self.parent}


def tile_of(block: int, tiles_m: int, tiles_n: int, n_fastest: bool) -> tuple[int, int]:
    return (block // tiles_n, block % tiles_n) if n_fastest else (block % tiles_m, block // tiles_m)


def spread(placement: list[int], group: dict[int, int], tiles_m: int, tiles_n: int, n_fastest: bool) -> dict:
    """Mean number of GPC groups spanned by the blocks of one row tile (A sharers) and one column tile (B sharers)."""
    rows: dict[int, set] = {}
    cols: dict[int, set] = {}
    for b in range(tiles_m * tiles_n):
        m, n = tile_of(b, tiles_m, tiles_n, n_fastest)
        g = group.get(placement[b], -1 - placement[b])
        rows.setdefault(m, set()).add(g)
        cols.setdefault(n, set()).add(g)
    mean = lambda d: sum(len(s) for s in d.values()) / len(d)  # noqa: E731
    return {"a_sharers_groups": mean(rows), "b_sharers_groups": mean(cols)}


def parse(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tiles-m", type=int, default=32)
    ap.add_argument("--tiles-n", type=int, default=4)
    ap.add_argument("--threads", type=int, default=384)
    ap.add_argument("--smem", type=int, default=200 * 1024, help="dynamic shared memory per block (one block an SM)")
    ap.add_argument("--hold-us", type=float, default=50.0)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    if args.tiles_m < 1 or args.tiles_n < 1:
        ap.error("--tiles-m and --tiles-n must be positive")
    return args


def main(argv: list[str]) -> int:
    args = parse(argv)
    import torch

    from harness import baselines, build

    built = build.build_all([extension_source()])
    if not all(r.ok for r in built.values()):
        print("sm_placement: build FAILED", file=sys.stderr)
        return 4
    if not torch.cuda.is_available():
        print("sm_placement: no CUDA device: its kernel is built, nothing is run", file=sys.stderr)
        return 3
    mod = baselines.import_extension(built["sm_placement"].so_path, built["sm_placement"].module_name)
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    units = args.tiles_m * args.tiles_n
    if units > sms:
        print(f"sm_placement: {units} tiles > {sms} SMs: not one wave", file=sys.stderr)
        return 2
    hold = int(args.hold_us * 1000)

    def run(gx: int, gy: int, cluster: int) -> list[int]:
        out = torch.full((gx * gy,), -1, dtype=torch.int32, device="cuda")
        mod.placement_launch(out, gx, gy, args.threads, args.smem, cluster, hold)
        torch.cuda.synchronize()
        return out.tolist()

    groups = Groups()
    clusters_seen = {}
    for c in (16, 8, 4, 2):
        try:
            for _ in range(args.repeat):
                p = run(c * (sms // c), 1, c)
                for i in range(0, len(p), c):
                    groups.join(p[i:i + c])
            clusters_seen[c] = "ok"
        except RuntimeError as e:  # e.g. a cluster of 16 the board does not allow
            clusters_seen[c] = str(e).splitlines()[0][:120]
    group = groups.label()
    sizes: dict[int, int] = {}
    for g in group.values():
        sizes[g] = sizes.get(g, 0) + 1

    grids = {"ours (units,1,1)": (units, 1), "cutlass (1,SMs,1)": (1, sms)}
    placements = {name: [run(gx, gy, 1) for _ in range(args.repeat)] for name, (gx, gy) in grids.items()}
    result = {"device": torch.cuda.get_device_name(0), "sms": sms, "clusters": clusters_seen,
              "gpc_groups": sorted(sizes.values(), reverse=True), "sm_group": group, "placements": {},
              "tiles": [args.tiles_m, args.tiles_n]}
    print(f"{result['device']}: {sms} SMs; GPC groups (SMs each): {result['gpc_groups']}  clusters: {clusters_seen}")
    first = placements["ours (units,1,1)"][0][:units]
    for name, ps in placements.items():
        stable = all(p == ps[0] for p in ps)
        same = ps[0][:units] == first
        row = {"stable": stable, "first_units_same_as_ours": same, "smid": ps[0]}
        for order, nf in (("row tile fastest", False), ("column tile fastest", True)):
            row[order] = spread(ps[0], group, args.tiles_m, args.tiles_n, nf)
        result["placements"][name] = row
        print(f"{name:20s} stable over {args.repeat}: {stable}; its first {units} blocks on the same SMs as ours: "
              f"{same}")
        for order in ("row tile fastest", "column tile fastest"):
            s = row[order]
            print(f"    {order:20s} A sharers span {s['a_sharers_groups']:.2f} groups, "
                  f"B sharers {s['b_sharers_groups']:.2f}")
        print("    block -> SM:", " ".join(str(x) for x in ps[0][:units]))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
