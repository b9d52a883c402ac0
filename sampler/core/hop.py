"""One sampling hop on one bucket: the (sample, node) requests that reached the
bucket's nodes, joined with the bucket's adjacency, sampled by the op's strategy
in one vectorized call.

`hop_bucket` is the whole step an engine runs per bucket: it samples, then cuts
the result into what the later stages need: the sampled edges by output shard
(for the assembly) and the reached nodes by node bucket (for later hops and the
feature lookup).
"""
from __future__ import annotations

import dataclasses

import numpy as np

from sampler.core import rng
from sampler.core.adjacency import AdjacencyBucket
from sampler.core.arrays import unique_inverse
from sampler.core.buckets import split_by_shard, split_requests
from sampler.core.pieces import EdgePiece, Requests, prune
from sampler.core.stats import RunStats
from sampler.core.strategies import sample_edges
from sampler.core.temporal import eligible_prefix
from sampler.plan.plan import PlannedOp
from unigraph.ragged import take


@dataclasses.dataclass(eq=False)
class Draws:
    """What one op sampled on one bucket."""

    edges: EdgePiece
    draws: int      # distinct (sample, node) requests, each one draw of up to k edges
    at_cap: int     # draws that returned sample_size edges (the node had at least that many)
    pairs: np.ndarray | None = None  # link samples: each edge's sample's pair (Requests.pairs)
    pair_edges_excluded: int = 0     # edges left out: they join the sample's pair
    cutoffs: np.ndarray | None = None  # per sampled edge: its sample's cut-off

    def stats(self, op: PlannedOp) -> RunStats:
        return RunStats(edges_sampled_per_op={op.name: len(self.edges)},
                        draws_per_op={op.name: self.draws},
                        draws_at_cap_per_op={op.name: self.at_cap},
                        pair_edges_excluded=self.pair_edges_excluded)

    def reached(self) -> Requests:
        """The sampled edges' targets as (sample, node) requests: the next ops' input."""
        return Requests(self.edges.samples, self.edges.target_codes, self.edges.target_ids,
                        self.pairs, self.cutoffs)


def sample_hop(adjacency: AdjacencyBucket, requests: Requests, op: PlannedOp,
               seed: int) -> Draws:
    """The edges `op` samples for every (sample, node) request."""
    requests = requests.unique()
    rows = adjacency.rows_of(requests.ids)[requests.codes]  # the CSR row of every request
    with_edges = np.flatnonzero(rows >= 0)
    samples, codes, rows = requests.samples[with_edges], requests.codes[with_edges], rows[
        with_edges]
    pairs = None if requests.pairs is None else requests.pairs[with_edges]
    cutoffs = None if requests.cutoffs is None else requests.cutoffs[with_edges]
    if not len(rows):  # no request's node has an edge here (an empty bucket, say)
        return Draws(EdgePiece.from_ids(op.edge_set, *[np.zeros(0, t) for t in (
            np.int64, "S1", "S1", np.int32)], {}), len(requests), 0,
            None if pairs is None else pairs[:0], 0,
            None if cutoffs is None else cutoffs[:0])
    node_fingerprints = adjacency.source_fingerprints[rows]
    excluded_splits, excluded_positions = None, None
    if op.exclude_pair_edges and pairs is not None:
        excluded_splits, excluded_positions = pair_edges(adjacency, rows, node_fingerprints,
                                                         pairs)
    # A cut-off over a time-ordered row is an eligible prefix; timeless rows are whole.
    limit = (eligible_prefix(adjacency.row_splits, adjacency.times, rows, cutoffs)
             if cutoffs is not None and adjacency.times is not None else None)
    query_index, edge_position = sample_edges(
        op.strategy, row_splits=adjacency.row_splits, weights=adjacency.weights,
        query_rows=rows, query_samples=samples, query_nodes=node_fingerprints,
        k=op.sample_size, seed=seed, op_salt=rng.name_salt(op.name), limit=limit,
        excluded_splits=excluded_splits, excluded_positions=excluded_positions)
    # Sources are coded by their CSR row (adjacency.sources is sorted and distinct), and
    # requests come sorted by sample, so every dictionary here is cheap to build.
    sample_ids, sample_codes = unique_inverse(samples[query_index])
    source_ids, source_codes = prune(adjacency.sources, rows[query_index])
    target_ids, target_codes = prune(adjacency.target_ids, adjacency.target_codes[edge_position])
    edges = EdgePiece(
        edge_set=op.edge_set, sample_codes=sample_codes.astype(np.int32),
        source_codes=source_codes, target_codes=target_codes,
        positions=edge_position.astype(np.int32), rows=adjacency.rows[edge_position],
        sample_ids=sample_ids.astype(np.int64),
        source_ids=source_ids, target_ids=target_ids,
        features={k: take(v, edge_position) for k, v in adjacency.features.items()})
    per_draw = np.bincount(query_index, minlength=len(rows))
    return Draws(edges, len(requests), int((per_draw >= op.sample_size).sum()),
                 None if pairs is None else pairs[query_index],
                 0 if excluded_positions is None else len(excluded_positions),
                 None if cutoffs is None else cutoffs[query_index])


def pair_edges(adjacency: AdjacencyBucket, rows: np.ndarray, node_fingerprints: np.ndarray,
               pairs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Leakage: for each query at one end of its sample's pair, the positions of its row's
    edges to the other end (at a pair of a node and itself, its self-loops), as a CSR
    over the queries (core.strategies' excluded edges). So the edge a pair predicts, and
    its reverse, never enter the pair's own subgraph. Ends are compared by 64-bit
    fingerprint (a false match has chance 2**-64 per comparison)."""
    at_source = node_fingerprints == pairs[:, 0]
    at_target = node_fingerprints == pairs[:, 1]
    partner = np.where(at_source, pairs[:, 1], pairs[:, 0])
    queries = np.flatnonzero(at_source | at_target)
    counts = np.zeros(len(rows), np.int64)
    if not queries.size:
        return np.zeros(len(rows) + 1, np.int64), np.zeros(0, np.int64)
    starts = adjacency.row_splits[rows[queries]]
    lengths = adjacency.row_splits[rows[queries] + 1] - starts
    seg = np.repeat(np.arange(len(queries)), lengths)
    positions = np.arange(len(seg)) - np.repeat(np.cumsum(lengths) - lengths, lengths) + starts[seg]
    hit = adjacency.target_fingerprints_of(adjacency.target_codes[positions]) == partner[
        queries][seg]
    counts[queries] = np.bincount(seg[hit], minlength=len(queries))
    return np.r_[0, np.cumsum(counts)].astype(np.int64), positions[hit].astype(np.int64)


@dataclasses.dataclass(eq=False)
class HopOutput:
    edges_by_shard: list[tuple[int, EdgePiece]]
    reached_by_bucket: list[tuple[int, Requests]]   # empty unless asked for
    stats: RunStats


def hop_bucket(adjacency: AdjacencyBucket, requests: Requests, op: PlannedOp, seed: int, *,
               num_shards: int, node_buckets: int, emit_reached: bool) -> HopOutput:
    """`op` on one bucket: sampled edges by output shard, and (with `emit_reached`) the
    targets they reach as the next requests, by node bucket."""
    drawn = sample_hop(adjacency, requests, op, seed)
    if not len(drawn.edges):
        return HopOutput([], [], drawn.stats(op))
    reached = list(split_requests(drawn.reached(), node_buckets)) if emit_reached else []
    return HopOutput(list(split_by_shard(drawn.edges, num_shards)), reached, drawn.stats(op))
