"""The figures of the sample-stats report, as PNG bytes (matplotlib, Agg, no pyplot).

Histograms of per-record numbers (nodes or edges of one set per subgraph,
bytes per record) and of feature values for one run or two overlaid, and bars of
the cap-hit rate per op. They stay readable from 1 to millions of records: integer counts with few
distinct values get one bar per value; wide, skewed ranges get logarithmic bins
on a symlog axis (zero keeps its own bin); the count axis turns logarithmic when
the tallest bar is over 100 times the lowest non-empty one. Two runs of different
sizes are drawn as shares of their own totals, so their shapes compare.
"""
from __future__ import annotations

import io

import matplotlib

matplotlib.use("Agg")  # no display; also keeps pyplot's global state out of it

import numpy as np  # noqa: E402
from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.ticker import FuncFormatter, MaxNLocator  # noqa: E402

COLORS = ("#1f77b4", "#ff7f0e")
UNIT_BINS_MAX = 60     # at most this many distinct integers: one bar each
LOG_BINS = 40
LINEAR_BINS = 50
SKEW = 20              # max over median beyond which the value axis is logarithmic
LOG_COUNTS = 100       # tallest over lowest non-empty bar beyond which counts are log


def histogram_png(title: str, xlabel: str, series: list[tuple[str, np.ndarray]],
                  *, integer: bool = True, scale: float = 1.0) -> bytes:
    """One histogram of per-record values, one outline per (label, values) series.

    `scale` divides the values for display (e.g. 1000 for kB)."""
    return to_png(histogram_figure(title, xlabel, series, integer=integer, scale=scale))


def histogram_figure(title: str, xlabel: str, series: list[tuple[str, np.ndarray]],
                     *, integer: bool = True, scale: float = 1.0) -> Figure:
    return _histogram(title, xlabel, "subgraphs", "records",
                      [(label, np.asarray(v, dtype=np.float64) / scale, None)
                       for label, v in series], integer and scale == 1.0)


def value_histogram_figure(title: str, xlabel: str,
                           series: list[tuple[str, np.ndarray, np.ndarray]],
                           *, integer: bool) -> Figure:
    """A histogram of a feature's values, given as (label, values, counts of each)."""
    return _histogram(title, xlabel, "values", "values",
                      [(label, np.asarray(v, np.float64), np.asarray(c, np.float64))
                       for label, v, c in series], integer)


def _histogram(title: str, xlabel: str, counted: str, unit: str,
               series: list[tuple[str, np.ndarray, np.ndarray | None]],
               integer: bool) -> Figure:
    """Outlines of one or two weighted series over shared bins, p50 and p95 marked."""
    figure = Figure(figsize=(5.6, 3.4), dpi=100)
    axes = figure.add_subplot()
    present = [(v, w) for _, v, w in series if v.size]
    if not present:
        axes.text(0.5, 0.5, f"no {unit}", ha="center", va="center", transform=axes.transAxes)
        return _finish(figure, axes, title, xlabel, counted)
    values = np.concatenate([v for v, _ in present])
    weights = np.concatenate([np.ones(v.size) if w is None else w for v, w in present])
    edges, log_x = _bins(values, integer, weights)
    tallest, lowest = 0, np.inf
    single = len(series) == 1
    totals = [v.size if w is None else w.sum() for _, v, w in series]
    # Runs of different sizes are compared by shape: each as a share of its own total.
    shares = not single and len(set(totals)) > 1
    for (label, values, weights), color, total in zip(series, COLORS, totals):
        counts, _ = np.histogram(values, edges, weights=weights)
        if shares and total:
            counts = counts * (100.0 / total)
        if counts.any():
            tallest = max(tallest, counts.max())
            lowest = min(lowest, counts[counts > 0].min())
        axes.stairs(counts, edges, fill=single, alpha=0.35 if single else 1.0, color=color,
                    linewidth=1.6, label=None if single else f"{label} ({int(total):,} {unit})")
        if values.size:
            for q, style in ((0.5, "--"), (0.95, ":")):
                axes.axvline(weighted_quantile(values, weights, q), color=color,
                             linestyle=style, linewidth=1)
    if log_x and not integer and edges[0] > 0:
        axes.set_xscale("log")
    elif log_x:
        axes.set_xscale("symlog", linthresh=1, linscale=0.3)
        if integer:
            axes.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x:,.0f}"))
    elif integer:
        axes.xaxis.set_major_locator(MaxNLocator(integer=True))
    log_y = tallest > LOG_COUNTS * lowest
    if log_y:
        axes.set_yscale("log")
    axes.plot([], [], color="gray", linestyle="--", linewidth=1, label="p50")
    axes.plot([], [], color="gray", linestyle=":", linewidth=1, label="p95")
    axes.legend(fontsize=7, loc="best")
    ylabel = f"{counted} (% of each run)" if shares else counted
    ylabel = f"{ylabel} (log scale)" if log_y else ylabel
    return _finish(figure, axes, title, xlabel + (" (log scale)" if log_x else ""), ylabel)


def weighted_quantile(values: np.ndarray, weights: np.ndarray | None, q: float) -> float:
    """The q-quantile of values repeated by their weights (numpy's linear rule if unweighted)."""
    if weights is None:
        return float(np.percentile(values, 100 * q))
    order = np.argsort(values, kind="stable")
    cumulative = np.cumsum(weights[order])
    rank = q * (cumulative[-1] - 1)
    return float(values[order][min(np.searchsorted(cumulative, rank, side="right"),
                                   len(values) - 1)])


def _bins(values: np.ndarray, integer: bool, weights: np.ndarray | None = None
          ) -> tuple[np.ndarray, bool]:
    """Bin edges for the values, and whether the value axis should be logarithmic."""
    low, high = float(values.min()), float(values.max())
    if integer and high - low < UNIT_BINS_MAX:
        return np.arange(low - 0.5, high + 1.5), False
    median = weighted_quantile(values, weights, 0.5)
    if low >= 0 and high > SKEW * max(median, 1.0):
        start = max(low, 1.0) if integer else max(low, high / 1e6, 1e-12)
        edges = np.geomspace(start, high * 1.0001 + (1 if integer else 0), LOG_BINS + 1)
        if integer:
            edges = np.unique(np.round(edges))
        if low < start:
            edges = np.concatenate([[low], edges])   # zeros keep a bin of their own
        return edges, True
    if integer:
        step = max(1, int(np.ceil((high - low + 1) / LINEAR_BINS)))
        return np.arange(low - 0.5, high + step + 0.5, step), False
    return np.linspace(low, high if high > low else low + 1, LINEAR_BINS + 1), False


def cap_rate_png(title: str, series: list[tuple[str, dict]]) -> bytes:
    """Horizontal bars: the share of draws that hit sample_size, per op, per run.

    series: (label, {op: {"draws", "draws_at_cap", "cap_hit_rate"}}) pairs."""
    return to_png(cap_rate_figure(title, series))


def cap_rate_figure(title: str, series: list[tuple[str, dict]]) -> Figure:
    ops: list[str] = []
    for _, per_op in series:
        ops += [op for op in per_op if op not in ops]
    height = 0.8 / len(series)
    figure = Figure(figsize=(6.4, 0.9 + 0.45 * max(len(ops), 1) * len(series)), dpi=100)
    axes = figure.add_subplot()
    y = np.arange(len(ops))
    for i, ((label, per_op), color) in enumerate(zip(series, COLORS)):
        rates = [100 * (per_op.get(op, {}).get("cap_hit_rate") or 0) for op in ops]
        bars = axes.barh(y + i * height, rates, height, color=color,
                         label=label if len(series) > 1 else None)
        for bar, op in zip(bars, ops):
            d = per_op.get(op)
            text = (f"{d['draws_at_cap']:,} of {d['draws']:,} draws" if d and d["draws"]
                    else "no draws")
            axes.text(bar.get_width() + 1, bar.get_y() + bar.get_height() / 2, text,
                      va="center", fontsize=7)
    axes.set_yticks(y + height * (len(series) - 1) / 2, [plain(op) for op in ops], fontsize=8)
    axes.invert_yaxis()
    axes.set_xlim(0, 125)
    axes.set_xticks([0, 25, 50, 75, 100])
    if len(series) > 1:
        axes.legend(fontsize=7, loc="lower right")
    return _finish(figure, axes, title, "draws that returned sample_size edges (%)", "op")


def _finish(figure: Figure, axes, title: str, xlabel: str, ylabel: str) -> Figure:
    axes.set_title(plain(title), fontsize=10)
    axes.set_xlabel(plain(xlabel), fontsize=8)
    axes.set_ylabel(plain(ylabel), fontsize=8)
    axes.tick_params(labelsize=7)
    axes.grid(alpha=0.3)
    figure.tight_layout()
    return figure


def plain(text: str) -> str:
    """Text drawn as it is: names come from the folder's schema and report, and matplotlib
    would read `$...$` in them as math (and fail on what does not parse)."""
    return str(text).replace("$", r"\$")


def to_png(figure: Figure) -> bytes:
    buffer = io.BytesIO()
    FigureCanvasAgg(figure).print_png(buffer)
    return buffer.getvalue()
