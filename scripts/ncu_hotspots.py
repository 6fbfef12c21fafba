"""The instructions that hold a kernel's warp-state samples, from Nsight Compute's SASS source page
(`ncu --import R.ncu-rep --csv --page source --print-source sass > R-sass.csv`): per kernel, its total samples and
the TOP instructions with the most, each with its index in the listing, how often it executed and its largest
stall reasons. That page is megabytes; this is the part results/NOTES.md quotes.
    python3 scripts/ncu_hotspots.py ncu-two_stage-deepseek-v3-64-bfloat16-sass.csv [TOP]
The page has a block per profiled launch (some twice over); launches of one kernel whose first instruction ran
on as many warps (the same grid) are listed once, from the first of them."""
import csv
import sys

SAMPLES = "Warp Stall Sampling (All Samples)"


def read_blocks(lines) -> list[tuple[str, list[dict[str, str]]]]:
    """(kernel name, instruction rows) per block of the page; a block starts at a "Kernel Name" row."""
    blocks: list[tuple[str, list[dict[str, str]]]] = []
    header: list[str] | None = None
    for row in csv.reader(lines):
        if not row:
            continue
        if row[0] == "Kernel Name":
            blocks.append((row[1] if len(row) > 1 else "?", []))
            header = None
        elif row[0] == "Address":
            header = row
        elif blocks and header is not None:
            blocks[-1][1].append(dict(zip(header, row)))
    return blocks


def as_int(text: str | None) -> int:
    try:
        return int(float(text or 0))
    except ValueError:
        return 0


def hotspots(rows: list[dict[str, str]], top: int) -> tuple[int, list[tuple[int, int, str, str, str]]]:
    """Total samples and the `top` rows by samples: (index, samples, executed, source, reasons)."""
    stalls = [k for k in (rows[0] if rows else {}) if k.startswith("stall_") and "Not Issued" not in k]
    total = sum(as_int(r.get(SAMPLES)) for r in rows)
    ranked = sorted(range(len(rows)), key=lambda i: -as_int(rows[i].get(SAMPLES)))[:top]
    out = []
    for i in sorted(ranked):
        r = rows[i]
        n = as_int(r.get(SAMPLES))
        if n == 0:
            continue
        reasons = sorted(((as_int(r[k]), k[len("stall_"):]) for k in stalls), reverse=True)[:3]
        out.append((i, n, r.get("Instructions Executed", ""), " ".join(r.get("Source", "").split()),
                    " ".join(f"{name} {v}" for v, name in reasons if v)))
    return total, out


def render(blocks, top: int) -> str:
    lines, seen = [], set()
    for name, rows in blocks:
        signature = (name, rows[0].get("Instructions Executed", "") if rows else "")
        if signature in seen:
            continue
        seen.add(signature)
        total, spots = hotspots(rows, top)
        grid_warps = rows[0].get("Instructions Executed", "?") if rows else "?"
        lines.append(f"== {name[:110]}  (first instruction executed by {grid_warps} warps)")
        lines.append(f"   {len(rows)} instructions, {total} samples; the {len(spots)} with the most:")
        lines.append(f"   {'index':>5} {'samples':>7} {'share':>6} {'executed':>8}  instruction  (stall reasons)")
        for i, n, ex, src, why in spots:
            share = f"{100 * n / total:.1f}%" if total else "-"
            lines.append(f"   {i:>5} {n:>7} {share:>6} {ex:>8}  {src[:64]}  ({why})")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    if not 2 <= len(argv) <= 3:
        print("usage: ncu_hotspots.py SASS.csv [TOP]", file=sys.stderr)
        return 2
    top = int(argv[2]) if len(argv) == 3 else 25
    with open(argv[1], newline="") as f:
        blocks = read_blocks(f)
    if not blocks:
        print(f"ncu_hotspots: {argv[1]}: no \"Kernel Name\" block (not a --page source CSV?)", file=sys.stderr)
        return 1
    print(render(blocks, top))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
