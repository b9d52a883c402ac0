"""sample-stats' text summary: the numbers of one run (or two side by side) in a few
lines. Plain text only, so the summary needs nothing beyond the base install (the
HTML report, stats_report.py, needs matplotlib: the [stats] extra)."""
from __future__ import annotations

import numpy as np

from sampler.output.stats_layout import is_auxiliary


def fmt(value, digits: int = 3) -> str:
    """A number as the reports show it: ints with thousands separators, others to
    `digits` places or significant digits; None as "-"."""
    if value is None:
        return "-"
    if isinstance(value, str):
        return value
    if isinstance(value, (int, np.integer)) or (isinstance(value, float) and value.is_integer()
                                                 and abs(value) < 1e15):
        return f"{int(value):,}"
    if value == 0 or 1e-3 <= abs(value) < 1e6:
        return f"{value:,.{digits}f}".rstrip("0").rstrip(".")
    return f"{value:.{digits}g}"


def format_summary(runs: list[tuple[str, dict]]) -> str:
    """A short text summary of one run's numbers (stats.as_dict()), or two side by side."""
    lines = []
    for label, d in runs:
        prefix = f"{label}: " if len(runs) > 1 else ""
        lines.append(f"{prefix}{d['folder']}: {d['records']:,} records in {d['files']} files, "
                     f"{bytes_text(d['bytes'])}, {fmt(d['bytes_per_record']['p50'])} bytes "
                     f"per record (p50); {d['subgraphs']['seed_only']:,} seed-only and "
                     f"{d['subgraphs']['empty']:,} empty subgraphs")
    labels = [label for label, _ in runs]
    head = "  ".join(f"{n:>8}" for n in ("p5", "p50", "p95", "max"))
    for kind, key in (("nodes", "node_sets"), ("edges", "edge_sets")):
        names = [n for n in _ordered(runs, key) if not is_auxiliary(n)]
        if not names:
            continue
        lines.append(f"{kind} per subgraph" + (" (" + " | ".join(labels) + ")"
                                               if len(runs) > 1 else "") + ":")
        lines.append(f"  {'':24s}" + " | ".join(head for _ in runs))
        for name in names:
            cells = []
            for _, d in runs:
                q = d[key].get(name)
                cells.append("  ".join(f"{fmt(q[n], 1):>8}" for n in ("p5", "p50", "p95", "max"))
                             if q else f"{'(absent)':>38}")
            lines.append(f"  {name[:24]:24s}" + " | ".join(cells))
    for label, d in runs:
        prefix = f"{label}: " if len(runs) > 1 else ""
        if d["ops"] is None:
            lines.append(f"{prefix}cap-hit rate per op: unknown (no sample_report.json)")
            continue
        rates = ", ".join(f"{op} {100 * o['cap_hit_rate']:.0f}%" if o["cap_hit_rate"] is not None
                          else f"{op} -" for op, o in d["ops"].items())
        lines.append(f"{prefix}draws that hit sample_size: {rates}")
    return "\n".join(lines)


def bytes_text(count: int) -> str:
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if count >= size:
            return f"{count / size:,.1f} {unit}"
    return f"{count} bytes"


def _ordered(runs: list[tuple[str, dict]], key: str) -> list[str]:
    names: list[str] = []
    for _, d in runs:
        names += [n for n in d[key] if n not in names]
    return names
