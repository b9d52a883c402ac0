"""One batch of samples on a graph in memory, through every step of the job.

The CLI's in-memory engine (engine.py) runs each chunk of an output shard through
`sample_batch`, and sampler.api runs each call's seeds through it: a subgraph is one
function of (graph, plan, seed, the sample's row) whoever asks.

    seed rows ─ node_samples ─┐
    pair rows ─ pair_samples ─┴► Samples ─ sample_batch ─► ShardChunk (pieces to assemble)

`node_samples` and `pair_samples` number the rows (core.seeds, core.pairs), find their
seeds in the graph (core.seeds.join_seeds: the others are counted as missing) and
intern ids as the graph's codes; `sample_batch` runs every op (core.hop.sample_hop),
the induced edges (core.induced) and the feature lookup (core.node_table).
"""
from __future__ import annotations

import dataclasses
from typing import Iterator, Sequence

import numpy as np

from sampler.core.buckets import split_by_shard
from sampler.core.hop import sample_hop
from sampler.core.induced import candidate_edges, keep_induced
from sampler.core.negatives import (Candidates, DrawGroups, draw_groups_in_memory,
                                    negative_stats, negatives_from_groups)
from sampler.core.node_table import features_by_shard
from sampler.core.pairs import pair_requests
from sampler.core.pieces import PairPiece, Requests, SeedPiece
from sampler.core.seeds import join_seeds
from sampler.core.stats import RunStats
from sampler.memory.graph import GraphInMemory
from sampler.output.shards import ShardChunk
from sampler.plan.plan import DEGREE, Plan, excludes_pair_edges, members_ops, pair_edge_sets
from sampler.plan.timing import TimePlan
from unigraph.columnar.batches import PairBatch
from unigraph.protos import graph_schema_pb2 as gs


@dataclasses.dataclass(eq=False)
class Samples:
    """Numbered samples, ids as the graph's codes, each piece sorted by sample id: the
    requests of every seed found in the graph, the seed pieces for the assembly and
    (link samples) the pairs, whose seeds are then their endpoints."""

    found: Requests
    seeds: SeedPiece
    pairs: PairPiece | None
    stats: RunStats  # seeds read and missing

    @property
    def samples(self) -> np.ndarray:
        """The sample ids (a link sample is its pair, found or not), ascending."""
        return (self.pairs if self.pairs is not None else self.seeds).samples

    def __len__(self) -> int:
        return len(self.samples)

    def by_shard(self, num_shards: int) -> dict[int, "Samples"]:
        """The samples of each output shard that has any."""
        found = dict(split_by_shard(self.found, num_shards))
        seeds = dict(split_by_shard(self.seeds, num_shards))
        pairs = dict(split_by_shard(self.pairs, num_shards)) if self.pairs is not None else {}
        shards = pairs if self.pairs is not None else seeds
        return {shard: Samples(found.get(shard, _NO_REQUESTS), seeds.get(shard, _NO_SEEDS),
                               pairs.get(shard), RunStats())
                for shard in shards}

    def chunks(self, size: int) -> Iterator["Samples"]:
        """The samples `size` at a time, in ascending sample id."""
        samples = self.samples
        for lo in range(0, len(samples), size):
            first, last = samples[lo], samples[min(lo + size, len(samples)) - 1]
            yield Samples(_within(self.found, first, last), _within(self.seeds, first, last),
                          None if self.pairs is None else _within(self.pairs, first, last),
                          RunStats())


_NO_REQUESTS = Requests.concat([])
_NO_SEEDS = SeedPiece(np.zeros(0, np.int64), np.zeros(0, np.int64))


def _within(piece, first: int, last: int):
    """The part of a piece sorted by sample whose samples are in [first, last]."""
    lo = np.searchsorted(piece.samples, first, side="left")
    hi = np.searchsorted(piece.samples, last, side="right")
    return piece.take(np.arange(lo, hi))


def _sorted(piece):
    return piece.take(np.argsort(piece.samples, kind="stable"))


def node_samples(graph: GraphInMemory, seed_set: str, numbered: Requests) -> Samples:
    """Numbered seed rows (core.seeds.number_seeds) found in the seed set, as codes."""
    join = join_seeds(graph.seed_table, numbered, 1, with_features=False)
    found = graph.intern_requests(seed_set, join.found)
    seeds = [graph.intern_seeds(seed_set, piece) for _, piece in join.seeds_by_shard]
    return Samples(_sorted(found), _sorted(seeds[0]) if seeds else _NO_SEEDS, None, join.stats)


def pair_samples(graph: GraphInMemory, seed_set: str, numbered: PairPiece) -> Samples:
    """Numbered pairs (core.pairs.number_pairs) and their endpoints found in the seed set,
    as codes; a pair missing an endpoint is left out by the assembly (counted there)."""
    endpoints = node_samples(graph, seed_set, pair_requests(numbered))
    endpoints.pairs = _sorted(graph.intern_pairs(seed_set, numbered))
    return endpoints


def sample_batch(graph: GraphInMemory, plan: Plan, schema: gs.GraphSchema, seed: int,
                 batch: Samples) -> tuple[ShardChunk, RunStats]:
    """Every op for the batch's samples, then the features of the nodes they reached."""
    reached = {plan.seed_op: batch.found}
    edges, stats = [], RunStats()
    for op in plan.ops:
        requests = Requests.concat([reached[name] for name in op.input_ops])
        drawn = sample_hop(graph.adjacency[op.edge_set], requests, op, seed)
        stats.merge(drawn.stats(op))
        edges.append(drawn.edges)
        reached[op.name] = drawn.reached()
    for name in plan.induced_edge_sets:
        edge_set = schema.edge_sets[name]
        members = {end: Requests.concat([reached[op] for op in members_ops(plan, end)])
                   for end in (edge_set.source, edge_set.target)}
        candidates, _ = candidate_edges(graph.adjacency[name], members[edge_set.source],
                                        exclude_pair_edges=excludes_pair_edges(plan, name))
        induced = keep_induced(candidates, members[edge_set.target])
        stats.merge(RunStats(induced_edges={name: len(induced)}))
        edges.append(induced)
    features = []
    for name, table in graph.node_tables.items():
        arriving = [batch.found] if name == plan.seed_set else []
        arriving += [reached[op.name] for op in plan.ops if op.target_set == name]
        if arriving:
            features += [piece for _, piece in
                         features_by_shard(table, Requests.concat(arriving), 1,
                                           gather=False)[0]]
    pairs = [batch.pairs] if batch.pairs is not None else []
    return ShardChunk([batch.seeds], features, edges, pairs), stats


def negative_draw_groups(graph: GraphInMemory, plan: Plan, time: TimePlan | None
                         ) -> DrawGroups:
    """The candidates of --negatives on this graph (core.negatives), built once."""
    if plan.negatives.mode == DEGREE:
        names = graph.names[plan.seed_set]
        parts = [graph.adjacency[name] for name in pair_edge_sets(plan)]
        candidates = np.concatenate([names[a.sources] for a in parts])
        degrees = np.concatenate([np.diff(a.row_splits) for a in parts])
    else:
        candidates, degrees = graph.seed_table.ids, None
    node_times = None
    if time is not None and time.negative_target_set is not None:
        # Negatives' targets must exist at their pair's cut-off: the paired set's times.
        node_times = Candidates(graph.seed_table.ids, times=graph.seed_table.timestamps)
    return draw_groups_in_memory(candidates, degrees, plan.negatives, node_times)


def with_negatives(rows: Sequence[PairBatch], plan: Plan, draw_groups: DrawGroups, seed: int,
                   label_dtype: np.dtype, known: PairBatch | None = None
                   ) -> tuple[list[PairBatch], RunStats]:
    """The pair rows and their negatives (core.negatives), with the run report's counts;
    `known`: more known positives that get no negatives of their own."""
    chosen, counts = negatives_from_groups(rows, draw_groups, plan.negatives, seed,
                                           label_dtype, known)
    return chosen, negative_stats(counts)
