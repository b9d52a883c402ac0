"""The run report: the counts users need to trust a run, merged across workers.

Every stage emits small RunStats values; a CombineFn merges them into one,
which the CLI prints and writes as JSON beside the output. The same counts go
to Beam metrics so they also show on Dataflow's job page.
"""
from __future__ import annotations

import dataclasses
import json

MAX_LISTED_IDS = 100  # missing seeds listed by id in the report; all are counted


@dataclasses.dataclass
class Distribution:
    count: int = 0
    total: int = 0
    min: int | None = None
    max: int | None = None

    def add_all(self, values: list[int]) -> None:
        if not values:
            return
        self.count += len(values)
        self.total += sum(values)
        lo, hi = min(values), max(values)
        self.min = lo if self.min is None else min(self.min, lo)
        self.max = hi if self.max is None else max(self.max, hi)

    def merge(self, other: "Distribution") -> None:
        self.count += other.count
        self.total += other.total
        for attr, pick in (("min", min), ("max", max)):
            mine, theirs = getattr(self, attr), getattr(other, attr)
            setattr(self, attr, theirs if mine is None else mine if theirs is None
                    else pick(mine, theirs))

    def as_dict(self) -> dict:
        mean = self.total / self.count if self.count else 0.0
        return {"min": self.min or 0, "mean": round(mean, 3), "max": self.max or 0,
                "total": self.total}


@dataclasses.dataclass
class RunStats:
    seeds_read: int = 0
    subgraphs_written: int = 0
    seeds_missing: int = 0
    missing_seed_ids: list[str] = dataclasses.field(default_factory=list)
    nodes_per_subgraph: dict[str, Distribution] = dataclasses.field(default_factory=dict)
    edges_per_subgraph: dict[str, Distribution] = dataclasses.field(default_factory=dict)
    edges_sampled_per_op: dict[str, int] = dataclasses.field(default_factory=dict)
    dangling_edges_dropped: dict[str, int] = dataclasses.field(default_factory=dict)
    nodes_missing_from_tables: dict[str, int] = dataclasses.field(default_factory=dict)
    bytes_written: int = 0

    def merge(self, other: "RunStats") -> "RunStats":
        self.seeds_read += other.seeds_read
        self.subgraphs_written += other.subgraphs_written
        self.seeds_missing += other.seeds_missing
        self.missing_seed_ids = sorted(self.missing_seed_ids + other.missing_seed_ids)[
            :MAX_LISTED_IDS]
        for mine, theirs in ((self.nodes_per_subgraph, other.nodes_per_subgraph),
                             (self.edges_per_subgraph, other.edges_per_subgraph)):
            for key, dist in theirs.items():
                mine.setdefault(key, Distribution()).merge(dist)
        for mine, theirs in ((self.edges_sampled_per_op, other.edges_sampled_per_op),
                             (self.dangling_edges_dropped, other.dangling_edges_dropped),
                             (self.nodes_missing_from_tables, other.nodes_missing_from_tables)):
            for key, count in theirs.items():
                mine[key] = mine.get(key, 0) + count
        self.bytes_written += other.bytes_written
        return self

    def as_dict(self) -> dict:
        return {
            "seeds_read": self.seeds_read,
            "subgraphs_written": self.subgraphs_written,
            "seeds_missing": self.seeds_missing,
            "missing_seed_ids": self.missing_seed_ids,
            "nodes_per_subgraph": {k: v.as_dict() for k, v in sorted(self.nodes_per_subgraph.items())},
            "edges_per_subgraph": {k: v.as_dict() for k, v in sorted(self.edges_per_subgraph.items())},
            "edges_sampled_per_op": dict(self.edges_sampled_per_op),
            "dangling_edges_dropped": dict(sorted(self.dangling_edges_dropped.items())),
            "nodes_missing_from_tables": dict(sorted(self.nodes_missing_from_tables.items())),
            "bytes_written": self.bytes_written,
        }


def to_json(stats: RunStats, **extra) -> str:
    return json.dumps({**stats.as_dict(), **extra}, indent=2)


def format_report(report: dict) -> str:
    """A short human summary of a report dict."""
    lines = [f"seeds read: {report['seeds_read']}, subgraphs written: "
             f"{report['subgraphs_written']}, seeds missing from the graph: "
             f"{report['seeds_missing']}"]
    if report["missing_seed_ids"]:
        shown = ", ".join(report["missing_seed_ids"][:10])
        more = report["seeds_missing"] - min(10, len(report["missing_seed_ids"]))
        lines.append(f"  missing seeds: {shown}" + (f" (+{more} more)" if more > 0 else ""))
    for title, key in (("nodes", "nodes_per_subgraph"), ("edges", "edges_per_subgraph")):
        for name, d in report[key].items():
            lines.append(f"{title} '{name}' per subgraph: min {d['min']}, mean {d['mean']}, "
                         f"max {d['max']}")
    for op, count in report["edges_sampled_per_op"].items():
        lines.append(f"op '{op}': {count} edges sampled")
    for name, count in report["dangling_edges_dropped"].items():
        lines.append(f"edge set '{name}': {count} sampled edges dropped: an endpoint is absent "
                     f"from its node table")
    for name, count in report["nodes_missing_from_tables"].items():
        lines.append(f"node set '{name}': {count} reached ids absent from its table")
    if "wall_time_s" in report:
        lines.append(f"wall time: {report['wall_time_s']:.2f} s")
    return "\n".join(lines)
