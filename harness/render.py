"""Renderers: a result file and a comparison as text tables (terminal and markdown). They format typed
rows and decide nothing: report.py and compare.py decide, and a saved file renders as the live run did."""
from __future__ import annotations

from collections.abc import Mapping

from tabulate import tabulate

from harness.compare import Comparison, CompareRow, Verdict
from harness.resultfile import ResultFile, ResultRow
from harness.shapes import display_labels

RESULT_COLUMNS = ("shape", "dtype", "variant", "status", "max abs err", "rel err", "GPU µs", "IQR",
                  "warm call µs", "kernels", "×eager GPU", "×eager call", "×best torch GPU", "×best torch call",
                  "GB/s", "TFLOP/s", "×floor", "flags")


def _fmt(x: float | None, spec: str = ".3g") -> str:
    return "" if x is None else format(x, spec)


def _clip(text: str, width: int = 70) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def _result_cells(r: ResultRow, label: str) -> list[str]:
    gpu, call = r.gpu, r.call
    eager, best = r.speedup("eager"), r.speedup("torch_best")
    status = r.status if r.ok or not r.message else f"{r.status}: {r.message}"
    return [label, r.dtype, r.variant, _clip(status), _fmt(r.max_abs_error, ".2e"),
            _fmt(r.rel_error, ".2e"), _fmt(gpu and gpu.median, ".4g"), _fmt(gpu and gpu.iqr, ".2g"),
            _fmt(call and call.median, ".4g"), str(r.kernels.launches) if r.kernels and r.kernels.kernels else "",
            _fmt(eager.gpu, ".2f"), _fmt(eager.call, ".2f"), _fmt(best.gpu, ".2f"), _fmt(best.call, ".2f"),
            _fmt(r.gbps, ".4g"), _fmt(r.tflops, ".3g"),
            _fmt(r.x_floor, ".3g"), ",".join(r.flags)]


def result_table(result: ResultFile, fmt: str = "simple") -> str:
    labels = display_labels(r.shape for r in result.rows)
    return tabulate([_result_cells(r, labels[r.shape]) for r in result.rows], headers=RESULT_COLUMNS,
                    tablefmt=fmt, disable_numparse=True)


def result_markdown(result: ResultFile) -> str:
    env, settings = result.env, result.settings
    head = (f"GPU {env.get('gpu') or 'none'}, driver {env.get('driver')}, CUDA {env.get('cuda')}, "
            f"torch {env.get('torch')}, commit {(env.get('commit') or '?')[:10]}"
            f"{' (dirty)' if env.get('dirty') else ''}, {env.get('date')}; "
            f"cache {settings.get('cache')}, {settings.get('rounds')} round(s)")
    return head + "\n\n" + result_table(result, "github") + "\n"


# ---- comparisons ------------------------------------------------------------------------------

COMPARE_COLUMNS = ("variant", "shape", "dtype", "metric", "baseline ×", "current ×",
                   "change %", "threshold %", "verdict", "note")
COMPARE_ALIGN = ("left",) * 4 + ("right",) * 4 + ("left",) * 2
ENV_FIELDS_SHOWN = ("gpu", "driver", "cuda", "torch", "python", "commit", "date")


def _number(value: float | None, spec: str, scale: float = 1.0) -> str:
    return "-" if value is None else format(value * scale, spec)


def _compare_cells(row: CompareRow) -> list[str]:
    return [row.variant, row.shape_name, row.dtype, row.metric,
            _number(row.baseline, ".2f"), _number(row.current, ".2f"),
            _number(row.change, "+.1f", 100), _number(row.threshold, ".1f", 100),
            str(row.verdict), row.note]


def _by_severity(rows) -> list[CompareRow]:
    order = list(Verdict)
    return sorted(rows, key=lambda row: order.index(row.verdict))  # stable: file order within


def _compare_rows(rows, tablefmt: str, escape=lambda cell: cell) -> str:
    # disable_numparse: tabulate would otherwise reformat "+30.0" as "30".
    cells = [[escape(cell) for cell in _compare_cells(row)] for row in rows]
    return tabulate(cells, headers=COMPARE_COLUMNS, tablefmt=tablefmt,
                    disable_numparse=True, colalign=COMPARE_ALIGN)


def headline(comparison: Comparison) -> str:
    counts = ", ".join(f"{n} {verdict}" for verdict, n in comparison.counts().items()) or "no rows"
    gate = "FAILED" if comparison.exit_code else "passed"
    return f"gate {gate}: {counts} (threshold: max({comparison.floor:.0%}, recorded spread; call: also its host share))"


def comparison_table(comparison: Comparison, tablefmt: str = "simple") -> str:
    """Terminal report: the table, worst rows first, then a note per line, then the headline."""
    lines = [_compare_rows(_by_severity(comparison.rows), tablefmt)]
    lines += [f"SPILLS: {line}" for line in comparison.spills]
    lines += [f"note: {note}" for note in comparison.notes]
    lines.append(headline(comparison))
    return "\n".join(lines)


def _markdown_cell(text: str) -> str:
    return text.replace("|", "\\|")


def _env_value(env: Mapping, name: str) -> str:
    value = str(env.get(name, "-"))
    if name == "commit":
        value = value[:12] + (" (dirty)" if env.get("dirty") else "")
    return _markdown_cell(value)


def comparison_markdown(comparison: Comparison) -> str:
    """Pull-request comment: headline, both environments, notes, then the table."""
    env_rows = [[name, _env_value(comparison.baseline_env, name), _env_value(comparison.current_env, name)]
                for name in ENV_FIELDS_SHOWN]
    parts = [f"### Benchmark comparison: {headline(comparison)}",
             tabulate(env_rows, headers=("", "baseline", "current"), tablefmt="github",
                      disable_numparse=True)]
    if comparison.spills:
        parts.append("\n".join(f"- **spills**: {_markdown_cell(line)}" for line in comparison.spills))
    if comparison.notes:
        parts.append("\n".join(f"- {_markdown_cell(note)}" for note in comparison.notes))
    parts.append(_compare_rows(_by_severity(comparison.rows), "github", _markdown_cell))
    return "\n\n".join(parts) + "\n"
