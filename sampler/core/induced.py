"""Induced edges (`--edge-aggregation node`, TF-GNN v1's "edge aggregation"): every
input edge of an edge set whose two endpoints are both in a subgraph, added to it.

Two keyed joins by node bucket, so no edge set is ever held whole by one worker:

  1. `candidate_edges`: the subgraph nodes of the edge set's source node set that fall
     in a bucket (its *members*: seeds and targets of sampled edges) ⋈ the bucket's
     adjacency -> every edge of theirs, for each sample that holds the source;
  2. `keep_induced`: those candidates, by the bucket of their target ⋈ the members of
     the target node set in that bucket -> the edges whose target is in the sample too.

The result is an EdgePiece like a hop's (positions within the source's row of the
canonical adjacency), so the assembly keeps an edge that was also sampled once, and orders
and encodes induced edges with the others. For link samples, the edges between a
pair are left out here too when the edge set leaves them out in hops (core.hop). A
sample with a time cut-off gets no edge later than it (effective time, as in hops:
core.temporal): its members' rows of a time-ordered edge set are cut to their
eligible prefix, so induced edges leak no future either.
"""
from __future__ import annotations

import numpy as np

from sampler.core.adjacency import AdjacencyBucket
from sampler.core.arrays import unique_inverse
from sampler.core.buckets import node_buckets, split_by_bucket
from sampler.core.hop import pair_edges
from sampler.core.pieces import EdgePiece, Requests, prune
from unigraph.columnar.ragged import take


def candidate_edges(adjacency: AdjacencyBucket, members: Requests, *,
                    exclude_pair_edges: bool = False) -> tuple[EdgePiece, np.ndarray | None]:
    """Every edge of the members' rows, once per (sample, member); and, for link samples,
    the pair fingerprints of each edge's sample (None otherwise)."""
    members = members.unique()
    rows = adjacency.rows_of(members.ids)[members.codes]
    with_edges = np.flatnonzero(rows >= 0)
    samples, rows = members.samples[with_edges], rows[with_edges]
    pairs = None if members.pairs is None else members.pairs[with_edges]
    starts = adjacency.row_splits[rows]
    lengths = adjacency.row_splits[rows + 1] - starts
    query = np.repeat(np.arange(len(rows)), lengths)
    positions = (np.arange(len(query)) - np.repeat(np.cumsum(lengths) - lengths, lengths)
                 + starts[query]).astype(np.int64)
    if members.cutoffs is not None and adjacency.times is not None:
        # Only edges not later than the sample's cut-off. Filtered by time, not cut to a
        # prefix: a long row (core.long_rows) is in time order chunk by chunk only.
        cutoffs = members.cutoffs[with_edges].astype(adjacency.times.dtype, copy=False)
        eligible = adjacency.times[positions] <= cutoffs[query]
        query, positions = query[eligible], positions[eligible]
    if exclude_pair_edges and pairs is not None and len(rows):
        splits, excluded = pair_edges(adjacency, rows, adjacency.source_fingerprints[rows], pairs)
        if len(excluded):
            width = np.int64(adjacency.row_splits[-1] + 1)
            excluded_keys = np.repeat(np.arange(len(rows)), np.diff(splits)) * width + excluded
            keep = ~np.isin(query * width + positions, excluded_keys)
            query, positions = query[keep], positions[keep]
    sample_ids, sample_codes = unique_inverse(samples[query])
    source_ids, source_codes = prune(adjacency.sources, rows[query])
    target_ids, target_codes = prune(adjacency.target_ids, adjacency.target_codes[positions])
    piece = EdgePiece(adjacency.edge_set, sample_codes.astype(np.int32), source_codes,
                      target_codes, (positions - starts[query]).astype(np.int32),
                      adjacency.edge_rows(positions),
                      sample_ids.astype(np.int64), source_ids, target_ids,
                      {k: take(v, positions) for k, v in adjacency.features.items()})
    return piece, None if pairs is None else pairs[query]


def keep_induced(candidates: EdgePiece, members: Requests) -> EdgePiece:
    """The candidates whose (sample, target) is a member of the target node set: all
    candidates and members of one target bucket (or of the whole graph)."""
    if not len(candidates) or not len(members):
        return candidates.take(np.zeros(0, np.int64))
    ids = np.union1d(candidates.target_ids, members.ids)
    samples = np.union1d(candidates.sample_ids, members.samples)
    width = np.int64(len(ids))
    member_keys = (np.searchsorted(samples, members.samples) * width
                   + np.searchsorted(ids, members.ids)[members.codes])
    keys = (np.searchsorted(samples, candidates.sample_ids)[candidates.sample_codes] * width
            + np.searchsorted(ids, candidates.target_ids)[candidates.target_codes])
    return candidates.take(np.flatnonzero(np.isin(keys, member_keys)))


def by_target_bucket(candidates: EdgePiece, num_buckets: int):
    """(node bucket of the target, the candidates whose target is there)."""
    bucket_of_target = node_buckets(candidates.target_ids, num_buckets)
    for bucket, positions in split_by_bucket(bucket_of_target[candidates.target_codes]):
        yield bucket, candidates.take(positions)
