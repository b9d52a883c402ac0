"""What is wrong with a graph, and what it looks like: one pass over every table.

Every table is read once with the readers `sample` uses (unigraph.tables.read_set, so
a value the sampler would refuse is the same one-line error here), one set at a time:

  node sets   rows, distinct ids, duplicate ids (an error: `sample` refuses them), nodes
              no edge set names (isolated), rows whose float features hold NaN or
              infinity, the timestamp column's range
  edge sets   rows, edges whose source or target is absent from its node set's table
              (an error: `sample` drops them), self-loops, parallel edges, out- and
              in-degree distributions (percentiles and the hubs), rows of float features
              with NaN, the timestamps' range, edges older than a node they touch
              (their effective time is the node's: docs/time.md)

A timestamp is out of range when it lies outside `time_range` if one is given, else
when it is negative or later than now in the unit its magnitude suggests (years,
seconds, milliseconds, microseconds or nanoseconds since 1970).

An edge set reading another's table backwards (`edge_type: reversed`) is the same
edges: it is counted once, under the set that reads the table forwards. Findings carry
a level: `error` (what `sample` refuses or drops), `warning` (what it samples but a
model may not want), `note`. Examples name the table's file and line or row.
"""
from __future__ import annotations

import dataclasses
import time
from typing import Callable

import numpy as np

from unigraph.columnar.ragged import Ragged
from unigraph.schema import LoadedSchema, has_table, is_link_readout
from unigraph.tables import read_set, row_location, table_locations
from unigraph.tables.columns import set_columns
from unigraph.tables.layout import TimeColumn, is_reversed
from unigraph.timestamps import find_timestamp_column, time_dtype

ERROR, WARNING, NOTE = "error", "warning", "note"
HUBS = 5            # the highest-degree nodes listed per direction
EXAMPLES = 3        # ids or rows shown per finding
PERCENTILES = (50, 90, 99)


@dataclasses.dataclass
class Finding:
    level: str
    where: str              # "edge set 'cites'"
    what: str               # a short kind: "missing sources", "duplicate ids", ...
    count: int
    message: str            # one line, with examples

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


@dataclasses.dataclass
class GraphCheck:
    graph: str
    node_sets: dict = dataclasses.field(default_factory=dict)
    edge_sets: dict = dataclasses.field(default_factory=dict)
    findings: list[Finding] = dataclasses.field(default_factory=list)

    @property
    def errors(self) -> int:
        return sum(f.level == ERROR for f in self.findings)

    @property
    def warnings(self) -> int:
        return sum(f.level == WARNING for f in self.findings)

    def as_dict(self) -> dict:
        return {"graph": self.graph, "node_sets": self.node_sets, "edge_sets": self.edge_sets,
                "findings": [f.as_dict() for f in self.findings],
                "errors": self.errors, "warnings": self.warnings}


def _show(ids) -> str:
    return ", ".join(repr(i.decode("utf-8", "replace") if isinstance(i, bytes) else i)
                     for i in list(ids)[:EXAMPLES])


def _time_unit(values: np.ndarray) -> tuple[str, float] | None:
    """(unit, units per second) that the largest magnitude suggests; None for small numbers."""
    largest = float(np.max(np.abs(values))) if len(values) else 0.0
    for unit, per_second, low in (("nanoseconds", 1e9, 1e17), ("microseconds", 1e6, 1e14),
                                  ("milliseconds", 1e3, 1e11), ("seconds", 1.0, 1e8)):
        if largest >= low:
            return unit, per_second
    if 1000 <= largest <= 3000:
        return "years", 0.0
    return None


def time_summary(values: np.ndarray, time_range: tuple[float, float] | None,
                 now: float) -> dict:
    """min, max, the unit guessed and how many values are out of range (module docstring)."""
    if not len(values):
        return {"rows": 0}
    summary = {"min": values.min().item(), "max": values.max().item()}
    finite = np.isfinite(values) if values.dtype.kind == "f" else np.ones(len(values), bool)
    if time_range is not None:
        low, high = time_range
        out = ~finite | (values < low) | (values > high)
        summary["range"] = [low, high]
    else:
        unit = _time_unit(values[finite])
        summary["unit"] = unit[0] if unit else "unknown"
        latest = None
        if unit is not None:
            latest = time.gmtime(now).tm_year if unit[0] == "years" else now * unit[1]
        out = ~finite | (values < 0)
        if latest is not None:
            out |= values > latest
    summary["out_of_range"] = int(np.count_nonzero(out))
    return summary


def _nan_rows(values) -> np.ndarray:
    """Rows of a feature with a NaN or infinity anywhere (float features only)."""
    rows = None
    while isinstance(values, Ragged):  # each innermost item's outermost row
        counts = np.diff(values.row_splits)
        rows = np.repeat(np.arange(len(counts)) if rows is None else rows, counts)
        values = values.values
    if values.dtype.kind != "f" or not len(values):
        return np.zeros(0, np.int64)
    bad = np.flatnonzero(~np.isfinite(values.reshape(len(values), -1)).all(axis=1))
    return bad if rows is None else np.unique(rows[bad])


class _Collector:
    """Reads a set's batches, keeping its keys and counting NaN rows per feature."""

    def __init__(self, loaded: LoadedSchema, kind: str, name: str):
        self.loaded, self.kind, self.name = loaded, kind, name
        column = find_timestamp_column(loaded, kind, name, set_columns(loaded, kind, name))
        self.time_column = column
        self.timestamp = TimeColumn(column, time_dtype(loaded, [(kind, name)]).name) \
            if column else None
        self.keys: list[list[np.ndarray]] = []
        self.rows: list[np.ndarray] = []
        self.times: list[np.ndarray] = []
        self.nan: dict[str, list[np.ndarray]] = {}

    def read(self, keys: Callable) -> int:
        count = 0
        for batch in read_set(self.loaded, self.kind, self.name, timestamp=self.timestamp):
            self.keys.append(keys(batch))
            self.rows.append(batch.rows)
            if batch.timestamps is not None:
                self.times.append(batch.timestamps)
            for feature, values in batch.features.items():
                bad = _nan_rows(values)
                if len(bad):
                    self.nan.setdefault(feature, []).append(batch.rows[bad])
            count += len(batch)
        return count

    def key(self, i: int) -> np.ndarray:
        parts = [k[i] for k in self.keys]
        return np.concatenate(parts) if parts else np.zeros(0, "S1")

    def all_rows(self) -> np.ndarray:
        return np.concatenate(self.rows) if self.rows else np.zeros(0, np.int64)

    def all_times(self) -> np.ndarray | None:
        return np.concatenate(self.times) if self.times else None


def _degrees(ids: np.ndarray, codes: np.ndarray) -> dict:
    """The degree distribution of the nodes an end names (`ids`, each edge's code)."""
    if not len(codes):
        return {"nodes": 0}
    counts = np.bincount(codes, minlength=len(ids))
    top = np.argsort(-counts, kind="stable")[:HUBS]
    summary = {"nodes": int(len(ids)), "max": int(counts.max()),
               "mean": round(float(counts.mean()), 3)}
    for p in PERCENTILES:
        summary[f"p{p}"] = float(np.percentile(counts, p))
    summary["hubs"] = [[ids[i].decode("utf-8", "replace"), int(counts[i])] for i in top]
    return summary


def check_graph(loaded: LoadedSchema, *, time_range: tuple[float, float] | None = None,
                now: float | None = None, log: Callable[[str], None] | None = None
                ) -> GraphCheck:
    """Every finding and summary of the graph (module docstring)."""
    now = time.time() if now is None else now
    schema = loaded.schema
    report = GraphCheck(loaded.path)
    ids: dict[str, np.ndarray] = {}        # node set -> its table's ids, sorted
    node_times: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for name, node_set in sorted(schema.node_sets.items()):
        if is_link_readout("node set", name):
            continue
        if not has_table(node_set.metadata):
            report.node_sets[name] = {"table": False}
            continue
        if log:
            log(f"reading node set '{name}'")
        collector = _Collector(loaded, "nodes", name)
        rows = collector.read(lambda b: [b.ids])
        node_ids, row_ids = collector.key(0), collector.all_rows()
        order = np.argsort(node_ids, kind="stable")
        sorted_ids = node_ids[order]
        repeated = np.flatnonzero(sorted_ids[1:] == sorted_ids[:-1]) + 1 if rows else \
            np.zeros(0, np.int64)
        summary = {"table": True, "rows": rows, "ids": int(rows - len(repeated))}
        where = f"node set '{name}'"
        if len(repeated):
            first = int(order[repeated[0]])
            locations = table_locations(loaded, "nodes", name)
            report.findings.append(Finding(
                ERROR, where, "duplicate ids", int(len(repeated)),
                f"{where}: {len(repeated):,} rows repeat an id (e.g. "
                f"{_show(np.unique(sorted_ids[repeated]))}; "
                f"{row_location(locations, int(row_ids[first]))})"))
        times = _values_and_times(report, collector, summary, where, time_range, now)
        if times is not None:
            node_times[name] = (node_ids, times)
        ids[name] = np.unique(node_ids)
        report.node_sets[name] = summary
    named: dict[str, list[np.ndarray]] = {name: [] for name in ids}
    forward = {}
    for name, edge_set in sorted(schema.edge_sets.items(), key=lambda i: (is_reversed(i[1]), i[0])):
        if is_link_readout("edge set", name):
            continue
        table = edge_set.metadata.filename or name
        if table in forward:
            report.edge_sets[name] = {"reads_backwards": forward[table]}
            continue
        forward[table] = name
        if log:
            log(f"reading edge set '{name}'")
        report.edge_sets[name] = _check_edges(report, loaded, name, edge_set, ids, named,
                                              node_times, time_range, now)
    for name, node_ids in ids.items():
        seen = np.unique(np.concatenate(named[name])) if named[name] else np.zeros(0, "S1")
        isolated = node_ids[~np.isin(node_ids, seen)]
        report.node_sets[name]["isolated"] = int(len(isolated))
        if len(isolated):
            report.findings.append(Finding(
                NOTE, f"node set '{name}'", "isolated nodes", int(len(isolated)),
                f"node set '{name}': {len(isolated):,} of {len(node_ids):,} nodes are in no edge "
                f"set (e.g. {_show(isolated)}); only a seed reaches them"))
    return report


def _check_edges(report: GraphCheck, loaded: LoadedSchema, name: str, edge_set, ids, named,
                 node_times, time_range, now) -> dict:
    where = f"edge set '{name}'"
    collector = _Collector(loaded, "edges", name)
    rows = collector.read(lambda b: [b.sources, b.targets])
    sources, targets = collector.key(0), collector.key(1)
    row_ids = collector.all_rows()
    locations = table_locations(loaded, "edges", name)
    summary = {"rows": rows, "source": edge_set.source, "target": edge_set.target}
    codes = {}
    for end, values, node_set in (("source", sources, edge_set.source),
                                  ("target", targets, edge_set.target)):
        distinct, inverse = np.unique(values, return_inverse=True)
        codes[end] = (distinct, inverse.reshape(-1))
        if node_set in ids:
            known = np.isin(distinct, ids[node_set])
            named[node_set].append(distinct[known])
            missing = np.flatnonzero(~known[inverse.reshape(-1)])
            summary[f"missing_{end}s"] = int(len(missing))
            if len(missing):
                report.findings.append(Finding(
                    ERROR, where, f"missing {end}s", int(len(missing)),
                    f"{where}: {len(missing):,} edges name a {end} absent from node set "
                    f"'{node_set}' (e.g. {_show(np.unique(values[missing]))}; "
                    f"{row_location(locations, int(row_ids[missing[0]]))}); `sample` drops "
                    f"them"))
    if edge_set.source == edge_set.target and rows:
        loops = np.flatnonzero(sources == targets)
        summary["self_loops"] = int(len(loops))
        if len(loops):
            report.findings.append(Finding(
                WARNING, where, "self-loops", int(len(loops)),
                f"{where}: {len(loops):,} self-loops (e.g. {_show(np.unique(sources[loops]))}); "
                f"they are sampled like any edge"))
    if rows:
        width = np.int64(len(codes["target"][0]))
        pairs = codes["source"][1].astype(np.int64) * width + codes["target"][1]
        parallel = rows - len(np.unique(pairs))
        summary["parallel_edges"] = int(parallel)
        if parallel:
            report.findings.append(Finding(
                NOTE, where, "parallel edges", int(parallel),
                f"{where}: {parallel:,} edges repeat a (source, target) pair"))
    summary["out_degree"] = _degrees(*codes["source"])
    summary["in_degree"] = _degrees(*codes["target"])
    times = _values_and_times(report, collector, summary, where, time_range, now)
    if times is not None:
        for end, values, node_set in (("source", sources, edge_set.source),
                                      ("target", targets, edge_set.target)):
            if node_set in node_times:
                node_ids, node_time = node_times[node_set]
                order = np.argsort(node_ids, kind="stable")
                at = np.searchsorted(node_ids[order], values)
                at = np.minimum(at, max(len(order) - 1, 0))
                known = node_ids[order][at] == values if len(order) else np.zeros(len(values), bool)
                older = known & (times < node_time[order][at]) if len(order) else known
                count = int(np.count_nonzero(older))
                summary[f"older_than_{end}"] = count
                if count:
                    report.findings.append(Finding(
                        NOTE, where, f"older than their {end}", count,
                        f"{where}: {count:,} edges are older than their {end} node; under a "
                        f"cut-off they count from the node's time (docs/time.md)"))
    return summary


def _values_and_times(report: GraphCheck, collector: _Collector, summary: dict, where: str,
                      time_range, now: float) -> np.ndarray | None:
    """The set's NaN findings and its timestamps' summary; its timestamps, if it has any."""
    _nan_findings(report, collector, where)
    times = collector.all_times()
    if times is not None:
        summary["timestamps"] = time_summary(times, time_range, now)
        summary["timestamps"]["column"] = collector.time_column
        _time_finding(report, where, summary["timestamps"])
    return times


def _nan_findings(report: GraphCheck, collector: _Collector, where: str) -> None:
    locations = table_locations(collector.loaded, collector.kind, collector.name)
    for feature, parts in sorted(collector.nan.items()):
        rows = np.concatenate(parts)
        report.findings.append(Finding(
            WARNING, where, "NaN features", int(len(rows)),
            f"{where}: feature '{feature}' holds NaN or infinity in {len(rows):,} rows (e.g. "
            f"{row_location(locations, int(rows[0]))})"))


def _time_finding(report: GraphCheck, where: str, summary: dict) -> None:
    out = summary.get("out_of_range", 0)
    if out:
        bound = (f"outside {summary['range']}" if "range" in summary
                 else f"negative or later than now, read as {summary.get('unit')}")
        report.findings.append(Finding(
            WARNING, where, "timestamps out of range", out,
            f"{where}: {out:,} timestamps in '{summary.get('column')}' are {bound} "
            f"(min {summary['min']}, max {summary['max']})"))
