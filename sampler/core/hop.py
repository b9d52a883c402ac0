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
from sampler.core.arrays import offsets, unique_codes, unique_inverse
from sampler.core.buckets import split_by_shard, split_requests
from sampler.core.long_rows import Candidates, best, chunk_candidates, chunk_rows
from sampler.core.pieces import EdgePiece, Requests, prune
from sampler.core.stats import RunStats
from sampler.core.strategies import sample_edges
from sampler.core.temporal import eligible_prefix
from sampler.plan.plan import PlannedOp
from unigraph.columnar.ragged import take


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
    queries = Queries.of(adjacency, requests)
    query_index, edge_position, excluded = sample_queries(adjacency, queries, op, seed)
    return Draws(edge_piece(adjacency, op, queries.samples, queries.rows, query_index,
                            edge_position),
                 len(requests), _at_cap(query_index, len(queries.rows), op.sample_size),
                 None if queries.pairs is None else queries.pairs[query_index], excluded,
                 None if queries.cutoffs is None else queries.cutoffs[query_index])


def sample_queries(adjacency: AdjacencyBucket, queries: "Queries", op: PlannedOp, seed: int,
                   exclusions: "Exclusions | None" = None
                   ) -> tuple[np.ndarray, np.ndarray, int]:
    """`op`'s strategy for every query (each a distinct (sample, node) with edges here),
    long rows chunk by chunk: (query index, edge position, edges left out), sorted by
    query then position. `exclusions`: which edges each query must not draw, where the
    op excludes pair edges (default: the edges between the ends of the query's pair,
    `pair_edges`; sampler.core.merged's for a batch sampled at once)."""
    if not len(queries.rows):
        return np.zeros(0, np.int64), np.zeros(0, np.int64), 0
    if adjacency.long_rows is None:  # no row in chunks: every query at once, no copies
        return _sample_rows(adjacency, queries, op, seed, exclusions)
    long = np.isin(queries.rows, adjacency.long_rows.rows)
    parts, excluded = [], 0
    for subset, sample in ((np.flatnonzero(~long), _sample_rows),
                           (np.flatnonzero(long), _sample_long_rows)):
        if subset.size:
            query_index, edge_position, n_excluded = sample(adjacency, queries.take(subset),
                                                            op, seed, exclusions)
            parts.append((subset[query_index], edge_position))
            excluded += n_excluded
    query_index = np.concatenate([q for q, _ in parts]) if parts else np.zeros(0, np.int64)
    edge_position = np.concatenate([p for _, p in parts]) if parts else np.zeros(0, np.int64)
    if len(parts) > 1:  # by query, then position, as one call would give them
        order = np.lexsort((edge_position, query_index))
        query_index, edge_position = query_index[order], edge_position[order]
    return query_index, edge_position, excluded


class Exclusions:
    """Per query, the positions of its row's edges it must not draw (a CSR over the
    queries, as core.strategies takes them); `row_splits` indexes `queries.rows` (a long
    row's chunks: core.long_rows)."""

    def positions(self, adjacency: AdjacencyBucket, queries: "Queries",
                  row_splits: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        raise NotImplementedError


@dataclasses.dataclass(eq=False)
class Queries:
    """(sample, node) requests whose node has edges here, as the strategies take them."""

    samples: np.ndarray          # int64 sample id
    rows: np.ndarray             # int64 CSR row of the node
    nodes: np.ndarray            # uint64 fingerprint of the node
    pairs: np.ndarray | None     # the sample's pair (link samples)
    cutoffs: np.ndarray | None   # the sample's cut-off

    @staticmethod
    def of(adjacency: AdjacencyBucket, requests: Requests) -> "Queries":
        """The requests (distinct) whose node has a row in `adjacency`."""
        rows = adjacency.rows_of(requests.ids)[requests.codes]
        with_edges = np.flatnonzero(rows >= 0)
        rows = rows[with_edges]
        return Queries(requests.samples[with_edges], rows, adjacency.source_fingerprints[rows],
                        None if requests.pairs is None else requests.pairs[with_edges],
                        None if requests.cutoffs is None else requests.cutoffs[with_edges])

    def take(self, positions: np.ndarray) -> "Queries":
        return Queries(*[None if a is None else a[positions] for a in (
            self.samples, self.rows, self.nodes, self.pairs, self.cutoffs)])

    def on_rows(self, rows: np.ndarray) -> "Queries":
        """The same queries, addressing other rows (a long row's chunks)."""
        return Queries(self.samples, rows, self.nodes, self.pairs, self.cutoffs)


def _at_cap(query_index: np.ndarray, n_queries: int, k: int) -> int:
    """Draws that returned k edges."""
    return int((np.bincount(query_index, minlength=n_queries) >= k).sum())


def _eligibility(adjacency: AdjacencyBucket, queries: Queries, op: PlannedOp,
                 row_splits: np.ndarray, exclusions: Exclusions | None = None) -> dict:
    """What limits each query to some of its row's edges, as core.strategies takes it: a
    cut-off's eligible prefix, and a link sample's excluded edges."""
    excluded_splits, excluded_positions = None, None
    if op.exclude_pair_edges and exclusions is not None:
        excluded_splits, excluded_positions = exclusions.positions(adjacency, queries,
                                                                   row_splits)
    elif op.exclude_pair_edges and queries.pairs is not None:
        excluded_splits, excluded_positions = pair_edges(adjacency, queries.rows, queries.nodes,
                                                         queries.pairs, row_splits)
    # A cut-off over a time-ordered row is an eligible prefix; timeless rows are whole.
    limit = (eligible_prefix(row_splits, adjacency.times, queries.rows, queries.cutoffs)
             if queries.cutoffs is not None and adjacency.times is not None else None)
    return dict(limit=limit, excluded_splits=excluded_splits,
                excluded_positions=excluded_positions)


def _excluded_count(eligibility: dict) -> int:
    positions = eligibility["excluded_positions"]
    return 0 if positions is None else len(positions)


def _sample_rows(adjacency: AdjacencyBucket, queries: Queries, op: PlannedOp, seed: int,
                 exclusions: Exclusions | None = None):
    """The strategy on whole rows: (query index, edge position, edges excluded)."""
    eligibility = _eligibility(adjacency, queries, op, adjacency.row_splits, exclusions)
    query_index, edge_position = sample_edges(
        op.strategy, row_splits=adjacency.row_splits, weights=adjacency.weights,
        query_rows=queries.rows, query_samples=queries.samples, query_nodes=queries.nodes,
        k=op.sample_size, seed=seed, op_salt=rng.name_salt(op.name), **eligibility)
    return query_index, edge_position, _excluded_count(eligibility)


def _chunk_candidates(adjacency: AdjacencyBucket, queries: Queries, chunk_index: np.ndarray,
                      row_splits: np.ndarray, op: PlannedOp, seed: int,
                      exclusions: Exclusions | None = None) -> tuple[Candidates, int]:
    """Each (query, chunk)'s k best edges of the chunk (core.long_rows), and the edges
    left out: queries.rows[i] is the chunk as a row of `row_splits`, chunk_index[i] its
    index in its long row."""
    eligibility = _eligibility(adjacency, queries, op, row_splits, exclusions)
    candidates = chunk_candidates(
        op.strategy, row_splits=row_splits, weights=adjacency.weights, times=adjacency.times,
        query_rows=queries.rows, query_samples=queries.samples, query_nodes=queries.nodes,
        query_chunks=chunk_index, k=op.sample_size, seed=seed,
        op_salt=rng.name_salt(op.name), **eligibility)
    return candidates, _excluded_count(eligibility)


def _sample_long_rows(adjacency: AdjacencyBucket, queries: Queries, op: PlannedOp, seed: int,
                      exclusions: Exclusions | None = None):
    """Long rows in this adjacency: every chunk's candidates, then the k best per query."""
    long_rows = adjacency.long_rows
    query_of, chunk_index, chunk = long_rows.chunks_of(queries.rows)
    row_splits, rows = chunk_rows(long_rows.chunk_starts, long_rows.chunk_ends, chunk)
    candidates, n_excluded = _chunk_candidates(adjacency, queries.take(query_of).on_rows(rows),
                                               chunk_index, row_splits, op, seed, exclusions)
    query = query_of[candidates.query]
    kept = best(query, candidates.primary, candidates.secondary, op.sample_size)
    return query[kept], candidates.position[kept], n_excluded


def edge_piece(adjacency: AdjacencyBucket, op: PlannedOp, samples: np.ndarray, rows: np.ndarray,
               query_index: np.ndarray, edge_position: np.ndarray) -> EdgePiece:
    """The drawn edges as a piece: query i is (samples[i], the node of CSR row rows[i])."""
    if not len(query_index):
        return EdgePiece.from_ids(op.edge_set, *[np.zeros(0, t) for t in (
            np.int64, "S1", "S1", np.int32)], {})
    # Sources are coded by their CSR row (adjacency.sources is sorted and distinct), and
    # requests come sorted by sample, so every dictionary here is cheap to build.
    sample_ids, sample_codes = unique_inverse(samples[query_index])
    # Sources: the rows of the queries that drew an edge, pruned once per query (several
    # times fewer than the edges), then each edge takes its query's code.
    drew = unique_codes(query_index, len(rows))
    source_ids, drew_codes = prune(adjacency.sources, take(rows, drew))
    code_of_query = np.zeros(len(rows), np.int32)
    code_of_query[drew] = drew_codes
    source_codes = take(code_of_query, query_index)
    # take, not [], for a batch's largest gathers (unigraph.columnar.ragged.take).
    target_ids, target_codes = prune(adjacency.target_ids,
                                     take(adjacency.target_codes, edge_position))
    return EdgePiece(
        edge_set=op.edge_set, sample_codes=sample_codes.astype(np.int32),
        source_codes=source_codes, target_codes=target_codes,
        positions=(edge_position - take(adjacency.row_splits, take(rows, query_index))
                   ).astype(np.int32),
        rows=adjacency.edge_rows(edge_position),
        sample_ids=sample_ids.astype(np.int64),
        source_ids=source_ids, target_ids=target_ids,
        features={k: take(v, edge_position) for k, v in adjacency.features.items()})


def pair_edges(adjacency: AdjacencyBucket, rows: np.ndarray, node_fingerprints: np.ndarray,
               pairs: np.ndarray, row_splits: np.ndarray | None = None
               ) -> tuple[np.ndarray, np.ndarray]:
    """Leakage: for each query at one end of its sample's pair, the positions of its row's
    edges to the other end (at a pair of a node and itself, its self-loops), as a CSR
    over the queries (core.strategies' excluded edges). So the edge a pair predicts, and
    its reverse, never enter the pair's own subgraph. Ends are compared by 64-bit
    fingerprint (a false match has chance 2**-64 per comparison). `row_splits`: the CSR
    `rows` index, the adjacency's own by default (long rows' chunks: core.long_rows)."""
    row_splits = adjacency.row_splits if row_splits is None else row_splits
    at_source = node_fingerprints == pairs[:, 0]
    at_target = node_fingerprints == pairs[:, 1]
    partner = np.where(at_source, pairs[:, 1], pairs[:, 0])
    queries = np.flatnonzero(at_source | at_target)
    counts = np.zeros(len(rows), np.int64)
    if not queries.size:
        return np.zeros(len(rows) + 1, np.int64), np.zeros(0, np.int64)
    starts = row_splits[rows[queries]]
    lengths = row_splits[rows[queries] + 1] - starts
    seg = np.repeat(np.arange(len(queries)), lengths)
    positions = np.arange(len(seg)) - np.repeat(np.cumsum(lengths) - lengths, lengths) + starts[seg]
    hit = adjacency.target_fingerprints_of(adjacency.target_codes[positions]) == partner[
        queries][seg]
    counts[queries] = np.bincount(seg[hit], minlength=len(queries))
    return offsets(counts), positions[hit].astype(np.int64)


@dataclasses.dataclass(eq=False)
class HopOutput:
    edges_by_shard: list[tuple[int, EdgePiece]]
    reached_by_bucket: list[tuple[int, Requests]]   # empty unless asked for
    stats: RunStats


def hop_bucket(adjacency: AdjacencyBucket, requests: Requests, op: PlannedOp, seed: int, *,
               num_shards: int, node_buckets: int, emit_reached: bool) -> HopOutput:
    """`op` on one bucket: sampled edges by output shard, and (with `emit_reached`) the
    targets they reach as the next requests, by node bucket."""
    return _cut(sample_hop(adjacency, requests, op, seed), op, num_shards, node_buckets,
                emit_reached)


def _cut(drawn: Draws, op: PlannedOp, num_shards: int, node_buckets: int,
         emit_reached: bool) -> HopOutput:
    if not len(drawn.edges):
        return HopOutput([], [], drawn.stats(op))
    reached = list(split_requests(drawn.reached(), node_buckets)) if emit_reached else []
    return HopOutput(list(split_by_shard(drawn.edges, num_shards)), reached, drawn.stats(op))


# ---------------------------------------------------------------- hubs as chunk elements

@dataclasses.dataclass(eq=False)
class ChunkDraws:
    """One chunk's candidates for the requests that reached its hub (core.long_rows):
    per edge, its sample's pair and cut-off (as Draws), and its rank keys."""

    edges: EdgePiece
    primary: np.ndarray     # uint64: smaller is better
    secondary: np.ndarray   # uint64: ties
    pairs: np.ndarray | None = None
    cutoffs: np.ndarray | None = None

    @property
    def samples(self) -> np.ndarray:  # for core.buckets.split_by_shard
        return self.edges.samples

    def take(self, positions: np.ndarray) -> "ChunkDraws":
        return ChunkDraws(self.edges.take(positions), self.primary[positions],
                          self.secondary[positions],
                          None if self.pairs is None else self.pairs[positions],
                          None if self.cutoffs is None else self.cutoffs[positions])


def sample_chunk(chunk: AdjacencyBucket, chunk_index: int, requests: Requests, op: PlannedOp,
                 seed: int, num_shards: int) -> tuple[list[tuple[int, ChunkDraws]], RunStats]:
    """`op` on one chunk of a hub (`chunk`: the chunk's edges as a one-row adjacency):
    every request's k best edges of the chunk, by the output shard of its sample, and
    the edges it left out for link samples."""
    queries = Queries.of(chunk, requests.unique())
    candidates, n_excluded = _chunk_candidates(
        chunk, queries, np.full(len(queries.rows), chunk_index, np.int64), chunk.row_splits,
        op, seed)
    q = candidates.query
    drawn = ChunkDraws(edge_piece(chunk, op, queries.samples, queries.rows, q,
                                  candidates.position),
                       candidates.primary, candidates.secondary,
                       None if queries.pairs is None else queries.pairs[q],
                       None if queries.cutoffs is None else queries.cutoffs[q])
    pieces = list(split_by_shard(drawn, num_shards)) if len(q) else []
    return pieces, RunStats(pair_edges_excluded=n_excluded)


def merge_chunks(requests: list[Requests], chunks: list[ChunkDraws], op: PlannedOp, *,
                 num_shards: int, node_buckets: int, emit_reached: bool) -> HopOutput:
    """The hub requests of one output shard and their chunks' candidates -> the k best
    edges of each request, as hop_bucket gives them (the same edges and counts the
    in-memory engine draws from its chunked rows)."""
    requests = Requests.concat(requests).unique()
    chunks = [c for c in chunks if len(c.edges)]
    if not chunks:
        return HopOutput([], [], RunStats(draws_per_op={op.name: len(requests)},
                                          draws_at_cap_per_op={op.name: 0},
                                          edges_sampled_per_op={op.name: 0}))
    edges = EdgePiece.concat([c.edges for c in chunks])
    # A request is a (sample, hub) pair: one integer per pair from the pieces' codes.
    query = edges.sample_codes.astype(np.int64) * len(edges.source_ids) + edges.source_codes
    kept = best(query, np.concatenate([c.primary for c in chunks]),
                np.concatenate([c.secondary for c in chunks]), op.sample_size)
    kept = kept[np.lexsort((edges.positions[kept], query[kept]))]
    pairs = (np.concatenate([c.pairs for c in chunks])[kept]
             if chunks[0].pairs is not None else None)
    cutoffs = (np.concatenate([c.cutoffs for c in chunks])[kept]
               if chunks[0].cutoffs is not None else None)
    _, per_query = unique_inverse(query[kept])
    at_cap = int((np.bincount(per_query) >= op.sample_size).sum())
    return _cut(Draws(edges.take(kept), len(requests), at_cap, pairs, 0, cutoffs), op,
                num_shards, node_buckets, emit_reached)
