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
    cutoffs: np.ndarray | None = None  # per sampled edge: its sample's cut-off

    def stats(self, op: PlannedOp) -> RunStats:
        return RunStats(edges_sampled_per_op={op.name: len(self.edges)},
                        draws_per_op={op.name: self.draws},
                        draws_at_cap_per_op={op.name: self.at_cap})

    def reached(self) -> Requests:
        """The sampled edges' targets as (sample, node) requests: the next ops' input."""
        return Requests(self.edges.samples, self.edges.target_codes, self.edges.target_ids,
                        self.cutoffs)


def sample_hop(adjacency: AdjacencyBucket, requests: Requests, op: PlannedOp,
               seed: int) -> Draws:
    """The edges `op` samples for every (sample, node) request."""
    requests = requests.unique()
    rows = adjacency.rows_of(requests.ids)[requests.codes]  # the CSR row of every request
    with_edges = np.flatnonzero(rows >= 0)
    samples, codes, rows = requests.samples[with_edges], requests.codes[with_edges], rows[
        with_edges]
    cutoffs = None if requests.cutoffs is None else requests.cutoffs[with_edges]
    if not len(rows):  # no request's node has an edge here (an empty bucket, say)
        return Draws(EdgePiece.from_ids(op.edge_set, *[np.zeros(0, t) for t in (
            np.int64, "S1", "S1", np.int32)], {}), len(requests), 0,
            None if cutoffs is None else cutoffs[:0])
    # A cut-off over a time-ordered row is an eligible prefix; timeless rows are whole.
    limit = (eligible_prefix(adjacency.row_splits, adjacency.times, rows, cutoffs)
             if cutoffs is not None and adjacency.times is not None else None)
    query_index, edge_position = sample_edges(
        op.strategy, row_splits=adjacency.row_splits, weights=adjacency.weights,
        query_rows=rows, query_samples=samples,
        query_nodes=adjacency.source_fingerprints[rows],
        k=op.sample_size, seed=seed, op_salt=rng.name_salt(op.name), limit=limit)
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
                 None if cutoffs is None else cutoffs[query_index])


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
