"""The run's counts: small mergeable values every stage emits, summed into one report.

A stage (or a shard) returns a RunStats of what it did; RunStats.merge adds them
up in any order and grouping, so every engine and runner gets the same totals.
output/report.py renders the result for people.
"""
from __future__ import annotations

import dataclasses

MAX_LISTED_IDS = 100  # missing seeds and dropped edges listed in the report; all are counted


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
    # (sample, node) draws per op, and those that returned sample_size edges: how often
    # the cap bit (sample-stats shows the rate).
    draws_per_op: dict[str, int] = dataclasses.field(default_factory=dict)
    draws_at_cap_per_op: dict[str, int] = dataclasses.field(default_factory=dict)
    dangling_edges_dropped: dict[str, int] = dataclasses.field(default_factory=dict)
    # The first dropped edges (by edge set, source, target, row): [edge set, source id,
    # target id, RowId]; output/report.py names the RowId's file and row.
    dangling_edge_examples: list[tuple] = dataclasses.field(default_factory=list)
    nodes_missing_from_tables: dict[str, int] = dataclasses.field(default_factory=dict)
    bytes_written: int = 0
    # Link jobs: pairs read (positives and negatives), and those left out because an
    # endpoint is not a node of the paired node set (seeds_missing counts the endpoints).
    pairs_read: int = 0
    pairs_dropped: int = 0
    pair_edges_excluded: int = 0  # edges between a sample's pair that hops left out
    # --negatives: pairs of the table, negatives made, draws rejected because they hit
    # the source or a known positive of it (or a node later than the pair's cut-off),
    # and negatives given up after too many.
    induced_edges: dict[str, int] = dataclasses.field(default_factory=dict)  # per edge set
    positives: int = 0
    negatives: int = 0
    negatives_redrawn: int = 0
    negatives_not_found: int = 0
    negatives_after_cutoff: int = 0  # of the redrawn: targets later than the pair's cut-off

    def merge(self, other: "RunStats") -> "RunStats":
        self.seeds_read += other.seeds_read
        self.subgraphs_written += other.subgraphs_written
        self.seeds_missing += other.seeds_missing
        self.missing_seed_ids = sorted(self.missing_seed_ids + other.missing_seed_ids)[
            :MAX_LISTED_IDS]
        self.dangling_edge_examples = sorted(
            set(map(tuple, self.dangling_edge_examples + other.dangling_edge_examples)))[
            :MAX_LISTED_IDS]
        for mine, theirs in ((self.nodes_per_subgraph, other.nodes_per_subgraph),
                             (self.edges_per_subgraph, other.edges_per_subgraph)):
            for key, dist in theirs.items():
                mine.setdefault(key, Distribution()).merge(dist)
        for mine, theirs in ((self.edges_sampled_per_op, other.edges_sampled_per_op),
                             (self.draws_per_op, other.draws_per_op),
                             (self.draws_at_cap_per_op, other.draws_at_cap_per_op),
                             (self.dangling_edges_dropped, other.dangling_edges_dropped),
                             (self.nodes_missing_from_tables, other.nodes_missing_from_tables),
                             (self.induced_edges, other.induced_edges)):
            for key, count in theirs.items():
                mine[key] = mine.get(key, 0) + count
        self.bytes_written += other.bytes_written
        self.pairs_read += other.pairs_read
        self.pairs_dropped += other.pairs_dropped
        self.pair_edges_excluded += other.pair_edges_excluded
        self.positives += other.positives
        self.negatives += other.negatives
        self.negatives_redrawn += other.negatives_redrawn
        self.negatives_not_found += other.negatives_not_found
        self.negatives_after_cutoff += other.negatives_after_cutoff
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
            "draws_per_op": dict(self.draws_per_op),
            "draws_at_cap_per_op": dict(self.draws_at_cap_per_op),
            "dangling_edges_dropped": dict(sorted(self.dangling_edges_dropped.items())),
            "dangling_edge_examples": [list(e) for e in self.dangling_edge_examples],
            "nodes_missing_from_tables": dict(sorted(self.nodes_missing_from_tables.items())),
            "bytes_written": self.bytes_written,
            **({"induced_edges": dict(sorted(self.induced_edges.items()))}
               if self.induced_edges else {}),
            **({"pairs_read": self.pairs_read, "pairs_dropped": self.pairs_dropped,
                "pair_edges_excluded": self.pair_edges_excluded}
               if self.pairs_read else {}),
            **({"positives": self.positives, "negatives": self.negatives,
                "negatives_redrawn": self.negatives_redrawn,
                "negatives_not_found": self.negatives_not_found,
                "negatives_after_cutoff": self.negatives_after_cutoff}
               if self.positives else {}),
        }
