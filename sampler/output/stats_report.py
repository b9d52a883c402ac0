"""The sample-stats report for people: a self-contained index.html and a text summary.

The HTML holds its figures as PNG data URIs and its style inline: it opens from
disk, with no network and no JavaScript. Every value on the page comes from files in
the folder (records, schema, run report) and is escaped; a Content-Security-Policy
meta allows nothing but the inline style and data: images. One run, or two side by
side (the same tables with a row per run, histograms overlaid).
"""
from __future__ import annotations

import base64
import datetime
import html

from sampler.output.sketches import QUANTILE_NAMES
from sampler.output.stats import FolderStats
from sampler.output.stats_layout import is_auxiliary
from sampler.output.stats_summary import bytes_text as _bytes_text, fmt
from sampler.output.stats_plots import (COLORS, cap_rate_png, histogram_png, to_png,
                                        value_histogram_figure)

Run = tuple[str, FolderStats, dict]   # (label, stats, stats.as_dict())
# The page needs its inline style and its inline PNGs, nothing else: no script, no request.
# Whatever a crafted value slipped past escaping could do, the browser refuses.
CSP = ("default-src 'none'; img-src data:; style-src 'unsafe-inline'; base-uri 'none'; "
       "form-action 'none'")

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 1.5em 2em; color: #222; max-width: 1400px; }
h1 { font-size: 1.4em; } h2 { font-size: 1.15em; margin-top: 1.6em; border-bottom: 1px solid #ccc; }
h3 { font-size: 1em; margin-bottom: 0.3em; }
table { border-collapse: collapse; font-size: 0.85em; margin: 0.4em 0 1em; }
th, td { border: 1px solid #ddd; padding: 2px 7px; text-align: right; vertical-align: top; }
th { background: #f3f3f3; } td.l, th.l { text-align: left; }
.figs { display: flex; flex-wrap: wrap; gap: 10px; }
.figs img { border: 1px solid #eee; max-width: 100%; }
.note { color: #555; font-size: 0.85em; } .warn { color: #a40; }
code { background: #f6f6f6; padding: 0 3px; }
.swatch { display: inline-block; width: 0.9em; height: 0.9em; vertical-align: middle; }
"""


def _e(value) -> str:
    """Any value as HTML text: every value shown comes from files in the folder (records,
    the run report, the schema), so every one is escaped."""
    return html.escape(str(value), quote=True)


def _n(value) -> str:
    """A number as the reports show it, escaped (a value of the run report may be text)."""
    return _e(fmt(value))


def _img(png: bytes, alt: str) -> str:
    data = base64.b64encode(png).decode("ascii")
    return f'<img src="data:image/png;base64,{data}" alt="{_e(alt)}">'


def _pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "-"


def render_html(runs: list[tuple[str, FolderStats]]) -> str:
    """index.html for one run, or two compared."""
    full: list[Run] = [(label, stats, stats.as_dict()) for label, stats in runs]
    compare = len(full) > 1
    title = ("sample-stats: " + " vs ".join(d["folder"] for _, _, d in full))
    parts = [f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
             f"<meta http-equiv=\"Content-Security-Policy\" content=\"{CSP}\">"
             f"<title>{_e(title)}</title><style>{_STYLE}</style></head><body>",
             f"<h1>{_e(title)}</h1>", _runs_table(full),
             f'<p class="note">Quantiles: {_e(full[0][2]["quantile_method"])}. '
             f"Written {datetime.datetime.now().isoformat(timespec='seconds')}.</p>",
             _subgraphs_section(full),
             _sets_section(full, "nodes", "Nodes per subgraph", "node_sets"),
             _sets_section(full, "edges", "Edges per subgraph", "edge_sets"),
             _bytes_section(full), _ops_section(full), _features_section(full, compare),
             "</body></html>\n"]
    return "\n".join(parts)


def _runs_table(runs: list[Run]) -> str:
    rows = []
    for (label, stats, d), color in zip(runs, COLORS):
        swatch = f'<span class="swatch" style="background:{color}"></span> ' \
            if len(runs) > 1 else ""
        report = "yes" if stats.report is not None else \
            '<span class="warn">none (no sample_report.json)</span>'
        rows.append(f"<tr><td class=l>{swatch}{_e(label)}</td><td class=l><code>"
                    f"{_e(d['folder'])}</code></td><td>{_n(d['files'])}</td>"
                    f"<td>{_n(d['records'])}</td><td>{_e(_bytes_text(d['bytes']))}</td>"
                    f"<td class=l>{report}</td></tr>")
    return ("<table><tr><th class=l>run</th><th class=l>folder</th><th>files</th>"
            "<th>records</th><th>size</th><th class=l>run report</th></tr>"
            + "".join(rows) + "</table>")


def _quantile_header(first: str) -> str:
    cells = "".join(f"<th>{n}</th>" for n in QUANTILE_NAMES)
    return f"<tr><th class=l>{first}</th><th class=l>run</th>{cells}<th>mean</th>" \
        f"<th>total</th><th>records with 0</th></tr>"


def _quantile_row(name: str, label: str, q: dict, records: int) -> str:
    cells = "".join(f"<td>{_n(q.get(n))}</td>" for n in QUANTILE_NAMES)
    return (f"<tr><td class=l>{_e(name)}</td><td class=l>{_e(label)}</td>{cells}"
            f"<td>{_n(q.get('mean'))}</td><td>{_n(q.get('total'))}</td>"
            f"<td>{_n(q.get('zero'))} ({_pct(q.get('zero') or 0, records)})</td></tr>")


def _set_names(runs: list[Run], key: str) -> list[str]:
    names: list[str] = []
    for _, _, d in runs:
        names += [n for n in d[key] if n not in names]
    return names


def _sets_section(runs: list[Run], kind: str, heading: str, key: str) -> str:
    names = _set_names(runs, key)
    rows, figures = [], []
    for name in names:
        for label, _, d in runs:
            if name in d[key]:
                rows.append(_quantile_row(name, label, d[key][name], d["records"]))
            else:
                rows.append(f"<tr><td class=l>{_e(name)}</td><td class=l>{_e(label)}</td>"
                            f"<td class=l colspan=9>not in this run's schema</td></tr>")
        if is_auxiliary(name):
            continue   # always 1: no picture needed
        series = [(label, getattr(stats, kind)(name)) for label, stats, d in runs
                  if name in d[key]]
        set_kind = "node set" if kind == "nodes" else "edge set"
        png = histogram_png(f"{kind} of {set_kind} '{name}' per subgraph",
                            f"{kind} per subgraph (count)", series)
        figures.append(_img(png, f"histogram of {kind} of {name} per subgraph"))
    return (f"<h2>{heading}</h2><table>{_quantile_header(kind[:-1] + ' set')}"
            + "".join(rows) + "</table>" + f'<div class="figs">{"".join(figures)}</div>')


def _subgraphs_section(runs: list[Run]) -> str:
    rows = []
    for label, stats, d in runs:
        s, r = d["subgraphs"], d["run_report"] or {}
        listed = ", ".join(_e(i) for i in s["seed_only_seed_ids"])
        more = s["seed_only"] - len(s["seed_only_seed_ids"])
        listed += f" (+{_n(more)} more)" if more > 0 else ""
        missing = r.get("seeds_missing")
        missing_ids = ", ".join(_e(i) for i in r.get("missing_seed_ids", [])[:20])
        rows.append(
            f"<tr><td class=l>{_e(label)}</td><td>{_n(d['records'])}</td>"
            f"<td>{_n(s['empty'])} ({_pct(s['empty'], d['records'])})</td>"
            f"<td>{_n(s['seed_only'])} ({_pct(s['seed_only'], d['records'])})</td>"
            f"<td class=l>{listed or '-'}</td>"
            f"<td>{_n(r.get('seeds_read'))}</td>"
            f"<td>{_n(missing)}</td><td class=l>{missing_ids or '-'}</td></tr>")
    return ("<h2>Subgraphs</h2><table><tr><th class=l>run</th><th>records</th>"
            "<th>empty</th><th>seed only</th><th class=l>seeds of seed-only subgraphs</th>"
            "<th>seeds read</th><th>seeds missing</th><th class=l>missing seeds</th></tr>"
            + "".join(rows) + "</table>"
            '<p class="note">Empty: no node outside auxiliary sets (names starting with '
            "<code>_</code>). Seed only: nodes, but no sampled edge (every op found nothing "
            "to sample). Seeds missing: absent from the graph, so no record at all (from "
            "the run report).</p>")


def _bytes_section(runs: list[Run]) -> str:
    rows = "".join(_quantile_row("bytes per record", label, d["bytes_per_record"],
                                 d["records"]) for label, _, d in runs)
    png = histogram_png("serialized bytes per record", "size of one tf.train.Example (kB)",
                        [(label, stats.record_bytes) for label, stats, _ in runs],
                        integer=False, scale=1000.0)
    return (f"<h2>Bytes per record</h2><table>{_quantile_header('')}{rows}</table>"
            f'<div class="figs">{_img(png, "histogram of bytes per record")}</div>')


def _ops_section(runs: list[Run]) -> str:
    out = ["<h2>Sampling ops: how often the cap was hit</h2>"]
    rows, series = [], []
    for label, stats, d in runs:
        if d["ops"] is None:
            out.append(f'<p class="warn">{_e(label)}: no <code>sample_report.json</code> '
                       f"with draws per op in <code>{_e(d['folder'])}</code>: the cap-hit "
                       "rate cannot be derived from the records (two ops may sample the "
                       "same edge set), so it is not shown.</p>")
            continue
        series.append((label, d["ops"]))
        for op, o in d["ops"].items():
            rate = "-" if o["cap_hit_rate"] is None else f"{100 * o['cap_hit_rate']:.1f}%"
            rows.append(f"<tr><td class=l>{_e(op)}</td><td class=l>{_e(label)}</td>"
                        f"<td>{_n(o['draws'])}</td><td>{_n(o['draws_at_cap'])}</td>"
                        f"<td>{rate}</td><td>{_n(o['edges_sampled'])}</td></tr>")
    if series:
        out.append("<table><tr><th class=l>op</th><th class=l>run</th><th>draws</th>"
                   "<th>draws at sample_size</th><th>cap-hit rate</th><th>edges sampled</th>"
                   "</tr>" + "".join(rows) + "</table>")
        out.append('<p class="note">A draw is one (subgraph, node) an op sampled from; it hit '
                   "the cap when it returned sample_size edges (the node had at least that "
                   "many; RANDOM_WEIGHTED can return fewer when weights are zero).</p>")
        png = cap_rate_png("share of draws that hit sample_size, per op", series)
        out.append(f'<div class="figs">{_img(png, "cap-hit rate per op")}</div>')
    return "".join(out)


def _features_section(runs: list[Run], compare: bool) -> str:
    out = ["<h2>Features</h2>",
           '<p class="note">Over every value of every item (vectors flattened). Numbers: '
           "mean, std, min and max of the finite values; NaN and inf counted apart. "
           "Strings: distinct count (~ when estimated) and the most frequent values "
           "(counts low by at most the undercount shown, 0 when exact).</p>"]
    groups: list[tuple[str, str]] = []
    for _, _, d in runs:
        for scope in ("context", "node_sets", "edge_sets"):
            sets = {"": d["features"]["context"]} if scope == "context" else \
                d["features"][scope]
            groups += [(scope, s) for s in sets if (scope, s) not in groups and sets[s]]
    for scope, set_name in groups:
        heading = "context" if scope == "context" else \
            f"{'node set' if scope == 'node_sets' else 'edge set'} '{set_name}'"
        numeric, strings = [], []
        for label, _, d in runs:
            features = d["features"]["context"] if scope == "context" else \
                d["features"][scope].get(set_name, {})
            for name, f in features.items():
                (strings if "length_bytes" in f else numeric).append((name, label, f))
        out.append(f"<h3>{_e(heading)}</h3>")
        if numeric:
            out.append(_numeric_table(sorted(numeric, key=lambda x: x[0])))
            out.append(_feature_figures(runs, scope, set_name,
                                        sorted({name for name, _, _ in numeric})))
        if strings:
            out.append(_string_table(sorted(strings, key=lambda x: x[0])))
    return "".join(out)


def _feature_figures(runs: list[Run], scope: str, set_name: str, names: list[str]) -> str:
    """A histogram of every numeric feature's values (from its summary's buckets, or
    exact counts for integers with few distinct values)."""
    figures = []
    prefix = {"context": "context", "node_sets": "nodes", "edge_sets": "edges"}[scope]
    for name in names:
        key = f"context/{name}" if scope == "context" else f"{prefix}/{set_name}.{name}"
        series, integer, dtype = [], True, ""
        for label, stats, _ in runs:
            summary = stats.tally.features.get(key)
            if summary is None:
                continue
            numbers = summary.values
            integer = numbers.top is not None
            dtype = summary.ref.schema_dtype
            if numbers.quantiles_exact:
                series.append((label, numbers.top.values, numbers.top.counts))
            else:
                series.append((label, *numbers.histogram.bins()))
        where = "context" if scope == "context" else f"{set_name}"
        figure = value_histogram_figure(f"values of {where} feature '{name}'",
                                        f"value ({dtype}, every item and dimension)",
                                        series, integer=integer)
        figures.append(_img(to_png(figure), f"histogram of values of {key}"))
    return f'<div class="figs">{"".join(figures)}</div>'



def _shape(f: dict) -> str:
    return f"{f['dtype']} [{', '.join('?' if d == -1 else str(d) for d in f['shape'])}]"


def _numeric_table(rows: list) -> str:
    head = ("<tr><th class=l>feature</th><th class=l>run</th><th class=l>dtype [shape]</th>"
            "<th>values</th><th>mean</th><th>std</th>"
            + "".join(f"<th>{n}</th>" for n in QUANTILE_NAMES)
            + "<th>NaN</th><th>inf</th><th class=l>ragged row lengths (p50 / p95 / max)</th>"
              "<th class=l>top values</th></tr>")
    body = []
    for name, label, f in rows:
        q = f["quantiles"]
        approx = "" if f["quantiles_exact"] else "~"
        cells = "".join(
            f"<td>{'' if n in ('min', 'max') else approx}{_n(q.get(n))}</td>"
            for n in QUANTILE_NAMES)
        ragged = "; ".join(f"{d}: {fmt(r['p50'])} / {fmt(r['p95'])} / {fmt(r['max'])}"
                           for d, r in f.get("row_lengths", {}).items())
        top = ", ".join(f"{_e(v)} ({_n(c)})" for v, c in f.get("top_values", [])[:5])
        if "distinct" in f:
            top = f"{'' if f['distinct_exact'] else '~'}{_n(f['distinct'])} distinct: {top}"
        bad = "warn" if f["nan"] or f["inf"] else ""
        body.append(f"<tr><td class=l>{_e(name)}</td><td class=l>{_e(label)}</td>"
                    f"<td class=l>{_e(_shape(f))}</td><td>{_n(f['values'])}</td>"
                    f"<td>{_n(f['mean'])}</td><td>{_n(f['std'])}</td>{cells}"
                    f"<td class='{bad}'>{_n(f['nan'])}</td><td class='{bad}'>{_n(f['inf'])}</td>"
                    f"<td class=l>{_e(ragged) or '-'}</td>"
                    f"<td class=l>{top if 'top_values' in f else '-'}</td></tr>")
    return "<table>" + head + "".join(body) + "</table>"


def _string_table(rows: list) -> str:
    head = ("<tr><th class=l>feature</th><th class=l>run</th><th class=l>dtype [shape]</th>"
            "<th>values</th><th>distinct</th><th class=l>length in bytes (min / p50 / max)"
            "</th><th class=l>top values (count)</th><th>undercount</th></tr>")
    body = []
    for name, label, f in rows:
        lengths = f["length_bytes"]
        distinct = ("" if f["distinct_exact"] else "~") + _n(f["distinct"])
        top = ", ".join(f"<code>{_e(_short(v))}</code> ({_n(c)})" for v, c in f["top_values"])
        body.append(f"<tr><td class=l>{_e(name)}</td><td class=l>{_e(label)}</td>"
                    f"<td class=l>{_e(_shape(f))}</td><td>{_n(f['values'])}</td>"
                    f"<td>{distinct}</td><td class=l>{_n(lengths['min'])} / "
                    f"{_n(lengths['p50'])} / {_n(lengths['max'])}</td>"
                    f"<td class=l>{top or '-'}</td>"
                    f"<td>{_n(f['top_values_max_undercount'])}</td></tr>")
    return "<table>" + head + "".join(body) + "</table>"


def _short(text: str, width: int = 40) -> str:
    return text if len(text) <= width else text[:width - 1] + "…"
