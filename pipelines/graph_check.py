"""`unigraph-check`: what is wrong with a graph, and what it looks like, on one screen.

    unigraph-check graphs/mag
    unigraph-check graphs/mag --json > check.json

Reads every table of the graph once with the readers `sample` uses and reports, per
node set: rows, duplicate ids, isolated nodes, NaN features, the timestamps' range; per
edge set: edges whose source or target is absent from its node set, self-loops,
parallel edges, the degree distribution (percentiles, the hubs), NaN features,
timestamps out of range (unigraph.check.graph_check says how each is found). Errors
are what `sample` refuses (duplicate ids) or drops (edges with a missing end); warnings
what it samples but a model may not want. Exit status 1 when there is an error (with
--strict, also a warning), 2 when the graph cannot be read.
"""
from __future__ import annotations

import argparse
import json
import sys

from unigraph.check.graph_check import ERROR, NOTE, WARNING, GraphCheck, check_graph
from unigraph.errors import SamplerError, SchemaError, message_line, one_line, printable
from unigraph.interrupts import interruptible
from unigraph.schema import check_schema, load_schema

SHOWN_FINDINGS = 12


def make_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="unigraph-check", description=__doc__.split("\n\n")[0])
    parser.add_argument("graph", metavar="GRAPH",
                        help="graph schema: a .pbtxt file or a folder holding graph_schema.pbtxt")
    parser.add_argument("--json", action="store_true",
                        help="print every figure and finding as one JSON document instead")
    parser.add_argument("--strict", action="store_true", help="exit 1 on warnings too")
    parser.add_argument("--time-range", metavar="LOW,HIGH",
                        help="timestamps outside [LOW, HIGH] are out of range (default: negative "
                             "or later than now, in the unit their size suggests)")
    parser.add_argument("--data_path", metavar="DIR",
                        help="the folder the schema's table names are relative to (as `sample`)")
    return parser


def _number(value: float) -> str:
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.1f}"


def render(report: GraphCheck) -> list[str]:
    """The report as one screen of text."""
    lines = [f"graph {report.graph}"]
    lines.append(f"  {'node set':<22}{'rows':>12}{'ids':>12}{'isolated':>10}")
    for name, s in report.node_sets.items():
        if not s.get("table"):
            lines.append(f"  {name:<22}{'(no table: the ids its edges name)':>34}")
            continue
        lines.append(f"  {name:<22}{s['rows']:>12,}{s['ids']:>12,}{s.get('isolated', 0):>10,}")
    lines.append(f"  {'edge set':<22}{'rows':>12}{'missing':>9}{'loops':>7}"
                 f"  out-degree mean/p99/max (hub)     in-degree mean/p99/max (hub)")
    for name, s in report.edge_sets.items():
        if "reads_backwards" in s:
            lines.append(f"  {name:<22}{'':>12}  (reads '{s['reads_backwards']}' backwards)")
            continue
        missing = s.get("missing_sources", 0) + s.get("missing_targets", 0)
        degrees = []
        for key in ("out_degree", "in_degree"):
            d = s[key]
            if not d.get("nodes"):
                degrees.append(f"{'-':<33}")
                continue
            hub = d["hubs"][0][0] if d["hubs"] else ""
            hub = hub if len(hub) <= 12 else hub[:11] + "~"
            degrees.append(f"{d['mean']:.1f}/{_number(d['p99'])}/{d['max']:,} ({hub})"[:33]
                           .ljust(33))
        lines.append(f"  {name:<22}{s['rows']:>12,}{missing:>9,}{s.get('self_loops', 0):>7,}"
                     f"  {degrees[0]} {degrees[1]}")
    for kind, sets in (("node set", report.node_sets), ("edge set", report.edge_sets)):
        for name, s in sets.items():
            times = s.get("timestamps")
            if times and times.get("min") is not None:
                unit = f", {times['unit']}" if times.get("unit") not in (None, "unknown") else ""
                lines.append(f"  timestamps of {kind} '{name}' ({times.get('column')}): "
                             f"{times['min']} .. {times['max']}{unit}, "
                             f"{times['out_of_range']:,} out of range")
    shown = sorted(report.findings, key=lambda f: (f.level != ERROR, f.level != WARNING))
    for finding in shown[:SHOWN_FINDINGS]:
        lines.append(f"{finding.level}: {finding.message}")
    if len(shown) > SHOWN_FINDINGS:
        lines.append(f"... {len(shown) - SHOWN_FINDINGS} more findings (--json lists them all)")
    notes = sum(f.level == NOTE for f in report.findings)
    lines.append(f"{report.errors} error(s), {report.warnings} warning(s), {notes} note(s)"
                 if report.findings else "no problems found")
    return lines


def _time_range(text: str | None) -> tuple[float, float] | None:
    if text is None:
        return None
    try:
        low, high = (float(v) for v in text.split(","))
    except ValueError:
        raise SchemaError(f"--time-range {text}: expected LOW,HIGH") from None
    if low > high:
        raise SchemaError(f"--time-range {text}: LOW is above HIGH")
    return low, high


@interruptible("unigraph-check")
def main(argv: list[str] | None = None) -> int:
    args = make_parser().parse_args(argv)
    try:
        loaded = load_schema(args.graph, args.data_path)
        check_schema(loaded)
        if loaded.store is not None:
            raise SchemaError(f"{args.graph} is a graph store: check the tables it was built "
                              f"from (unigraph-convert --verify checks a store)")
        report = check_graph(loaded, time_range=_time_range(args.time_range))
    except SamplerError as e:
        print(f"unigraph-check: error: {message_line(e)}", file=sys.stderr)
        return 2
    except OSError as e:
        print(f"unigraph-check: error: {args.graph}: {one_line(e)}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(report.as_dict(), indent=1))
    else:
        print(printable("\n".join(render(report)), keep="\n"))  # ids from the tables
    failed = report.errors or (args.strict and report.warnings)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
