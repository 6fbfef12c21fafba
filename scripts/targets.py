"""Issue 9's targets, read from result files the harness wrote: each target's measured ratio, the bar, and which
row met it or came closest. Nothing is measured here; rows come from the files as they are.
    python3 scripts/targets.py results/2026-11-30-h200-sweep-16bit.json results/2026-11-30-h200-sweep-fp32.json
Files ending in .gz are read through gzip. A file that cannot be read: one line on stderr, exit code 2.
Hand-written variants are the kernels/ variants other than the library designs (cuBLAS: cublas_stack, tf32x3;
CUTLASS: cutlass_2gemm); the targets' ratios are of GPU time (median, cold L2), within one file.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from harness.errors import ResultFileError  # noqa: E402
from harness.resultfile import parse_json, read_text  # noqa: E402
from harness.shapes import MODEL_PRESETS, SEED  # noqa: E402

LIBRARY_VARIANTS = {"cublas_stack", "cutlass_2gemm", "tf32x3"}


def shape_name(shape):
    dims = (shape["d"], shape["rank"], shape["heads"], shape["head_dim"])
    if shape["b"] == SEED.b and shape["s"] == SEED.s and dims == (SEED.d, SEED.rank, SEED.heads, SEED.head_dim):
        return "seed", None
    for name, preset_dims in MODEL_PRESETS.items():
        if dims == preset_dims and shape["b"] == 1:
            return name, shape["s"]
    return None, None


def read_rows(path):
    """The file's rows, each with the ceilings its floor was computed from (the file's, or those of the device the
    row ran on) under "_ceilings", and whether the file is complete (false: an interrupted run wrote it)."""
    data = parse_json(Path(path), read_text(path))
    if not isinstance(data, dict) or not isinstance(data.get("rows"), list):
        raise ResultFileError(f"{path}: not a result file (no JSON object with rows)")
    by_device = {d.get("index"): d.get("ceilings") for d in data.get("devices") or () if isinstance(d, dict)}
    rows = []
    for row in data["rows"]:
        device = (row.get("device") or {}).get("index")
        rows.append({**row, "_ceilings": by_device.get(device) or data.get("ceilings")})
    return rows, data.get("complete") is not False


def ceilings_note(row):
    """The measured ceilings behind a row's floor: the floor moves with them (the matmul rate by several % between
    runs of one GPU model), so a verdict near its bar names them."""
    c = row.get("_ceilings") or {}
    rate = (c.get("matmul_tflops") or {}).get(row["dtype"])
    if not rate or not c.get("copy_gbps"):
        return ""
    return f" at this run's {rate:.0f} TFLOP/s and {c['copy_gbps']:.0f} GB/s"


def clock_note(row):
    """How the row's clock ran (NVML, while it was timed): at prefill the boards run at their power limit, the
    clock then varies by 15 % or more between runs and between variants, and a verdict near its bar depends on it."""
    c = row.get("clocks") or {}
    if not c.get("sm_mhz_median"):
        return ""
    note = f", clock {c['sm_mhz_median']:.0f} MHz"
    if c.get("power_w_median") is not None:
        note += f" at {c['power_w_median']:.0f} W"
    if c.get("power_capped_share") is not None:
        # NVML names the cap even one clock step under the maximum: the share says how often, not how hard
        note += f", power cap named in {100 * c['power_capped_share']:.0f} % of readings"
    return note


def load(paths, incomplete=None):
    """{(preset, tokens, dtype): {variant: row}} of the rows with a GPU time; a group comes whole from one file (the
    last file that has it), so no ratio mixes two runs. `incomplete`, a list, receives the paths of files an
    interrupted run wrote."""
    groups = {}
    for path in paths:
        in_file = {}
        rows, complete = read_rows(path)
        if not complete and incomplete is not None:
            incomplete.append(str(path))
        for row in rows:
            name, tokens = shape_name(row["shape"])
            if name is None or row["status"] != "ok" or not row.get("gpu_us"):
                continue
            in_file.setdefault((name, tokens, row["dtype"]), {})[row["variant"]] = row
        groups.update(in_file)
    return groups


def us(row):
    return row["gpu_us"]["median"]


def hand_written(rows):
    return {v: r for v, r in rows.items() if r["kind"] == "kernel" and v not in LIBRARY_VARIANTS}


def best(rows):
    variant = min(rows, key=lambda v: us(rows[v]))
    return variant, rows[variant]


def launches(row):
    """Launches per call from the row's per-kernel breakdown (kernels, copies and memsets); None when the run had
    no breakdown (--no-breakdown)."""
    kernels = row.get("kernels")
    if not isinstance(kernels, dict) or not kernels.get("calls"):  # no breakdown, or one that recorded no call
        return None
    return kernels.get("launches")


def launches_missing(row):
    """Why a row has no launch count: no breakdown in the run, or the breakdown's own note (it failed)."""
    kernels = row.get("kernels")
    if isinstance(kernels, dict) and kernels.get("note"):
        return f"no launch count: the breakdown says {kernels['note']!r}"
    return "launches per call not in the file (a run without --no-breakdown has them)"


def floor_target(groups, number, preset, tokens, bar, one_launch=False):
    """The best kernel row's GPU time against the roofline floor. one_launch (target 4: "one launch, weights read
    once"): only a row whose breakdown shows one launch per call can meet the bar; when the best row is not one,
    the best one-launch row is named and decides."""
    rows = groups.get((preset, tokens, "bfloat16"))
    if not rows:
        return f"{number}. {preset} {tokens} bf16: not in these files"
    kernels = {v: r for v, r in rows.items() if r["kind"] == "kernel"}
    if not kernels:  # an interrupted run can leave a group with its baselines only
        return f"{number}. {preset} {tokens} bf16: no kernel row timed in these files"
    variant, row = best(kernels)
    floor = row["roofline"]["floor_us"]
    ratio = us(row) / floor
    met = ratio <= bar
    hand = hand_written(rows)
    hand_variant, hand_row = best(hand) if hand else (None, None)
    others = ", ".join(f"{n} {us(rows[n]):.1f}" for n in ("eager", "torch-2gemm") if n in rows)
    if hand_row is not None and hand_variant != variant:
        others += f"; best hand-written {hand_variant} {us(hand_row):.1f} = {us(hand_row) / floor:.2f}x"
    launch_note = ""
    if one_launch:
        n = launches(row)
        if n == 1:
            launch_note = ", one launch per call"
        else:
            met = False
            launch_note = ", " + (launches_missing(row) if n is None else f"{n} launches per call (bar: one)")
            single = {v: r for v, r in kernels.items() if launches(r) == 1}
            if single:
                one_variant, one_row = best(single)
                one_ratio = us(one_row) / floor
                met = one_ratio <= bar  # the target is met by its best one-launch row
                launch_note += (f"; best one-launch kernel {one_variant} {us(one_row):.1f} us = {one_ratio:.2f}x"
                                f" ({'meets' if met else 'misses'} the bar)")
    return (f"{number}. {preset} {tokens} bf16: best kernel {variant} {us(row):.1f} us{clock_note(row)} = {ratio:.2f}x floor "
            f"({floor:.1f} us{ceilings_note(row)}){launch_note}, bar <= {bar}x: {'MET' if met else 'not met'} "
            f"({others})")


def sweep_target(groups):
    lines, misses = [], 0
    for (preset, tokens, dtype), rows in sorted(groups.items(), key=lambda kv: (kv[0][2], kv[0][0], kv[0][1] or 0)):
        if dtype == "float32" or "torch-2gemm" not in rows or "eager" not in rows:
            continue
        hand = hand_written(rows)
        if not hand:
            continue
        variant, row = best(hand)
        beats = us(row) < us(rows["torch-2gemm"])
        slowest = max((v for v in rows if rows[v]["kind"] == "kernel"), key=lambda v: us(rows[v]))
        worst = us(rows[slowest]) / us(rows["eager"])
        ok = beats and worst <= 2.0
        misses += not ok
        lines.append(f"   {'ok  ' if ok else 'MISS'} {preset:16} {tokens or '':>5} {dtype:8}: fastest hand-written "
                     f"{variant} {us(row):.1f} us vs torch-2gemm {us(rows['torch-2gemm']):.1f} "
                     f"({us(rows['torch-2gemm']) / us(row):.2f}x); slowest kernel {slowest} {worst:.2f}x eager")
    head = f"5. every preset x tokens in bf16 and fp16: {len(lines) - misses} of {len(lines)} groups meet it"
    return [head, *lines]


def fp32_targets(groups):
    out = []
    rows = groups.get(("deepseek-v3", 4096, "float32"))
    fp32_kernels = {v: r for v, r in (rows or {}).items() if r["kind"] == "kernel"}
    if rows and "eager" in rows and fp32_kernels:
        variant, row = best(fp32_kernels)
        ratio = us(rows["eager"]) / us(row)
        out.append(f"6. deepseek-v3 4096 fp32: best kernel {variant} {us(row):.0f} us, {ratio:.2f}x eager "
                   f"({us(rows['eager']):.0f} us), bar >= 1.5x: {'MET' if ratio >= 1.5 else 'not met'}")
    else:
        out.append("6. deepseek-v3 4096 fp32: not in these files")
    rows = groups.get(("seed", None, "float32"))
    if rows and {"fused_tiled", "empty-kernel", "eager"} <= rows.keys():
        fused = us(rows["fused_tiled"])
        x_empty = fused / us(rows["empty-kernel"])
        x_eager = us(rows["eager"]) / fused
        met = x_empty <= 1.5 and x_eager >= 5
        out.append(f"7. seed fp32: fused_tiled {fused:.2f} us = {x_empty:.2f}x the empty kernel (bar <= 1.5), "
                   f"{x_eager:.2f}x eager (bar >= 5): {'MET' if met else 'not met'}")
    else:
        out.append("7. seed fp32: not in these files")
    return out


def main(paths):
    try:
        partial = []
        groups = load(paths, partial)
    except ResultFileError as error:
        print(f"targets.py: {error}", file=sys.stderr)
        sys.exit(2)
    for path in partial:
        print(f"note: {path} is marked incomplete (an interrupted run): a target its rows lack says so")
    print(floor_target(groups, 1, "deepseek-v3", 4096, 1.15))
    print(floor_target(groups, 2, "deepseek-v2-lite", 4096, 1.3))
    print(floor_target(groups, 3, "deepseek-v3", 512, 1.3))
    print(floor_target(groups, 4, "deepseek-v3", 64, 1.5, one_launch=True))
    print("\n".join(sweep_target(groups)))
    print("\n".join(fp32_targets(groups)))


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: targets.py RESULT.json [RESULT.json ...]")
    main(sys.argv[1:])
