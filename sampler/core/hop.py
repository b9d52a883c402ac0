"""One sampling hop on one bucket: the (sample, node) requests that reached the
bucket's nodes, joined with the bucket's adjacency, sampled by the op's strategy
in one vectorized call."""
from __future__ import annotations

import numpy as np

from sampler.core import rng
from sampler.core.adjacency import AdjacencyBucket
from sampler.core.pieces import EdgePiece, Requests, prune
from sampler.plan.spec import PlannedOp
from sampler.core.strategies import sample_edges
from unigraph.ragged import take


def sample_hop(adjacency: AdjacencyBucket, requests: Requests, op: PlannedOp,
               seed: int) -> EdgePiece:
    """The edges `op` samples for every (sample, node) request."""
    requests = requests.unique()
    rows = adjacency.rows_of(requests.ids)[requests.codes]  # the CSR row of every request
    with_edges = np.flatnonzero(rows >= 0)
    samples, codes, rows = requests.samples[with_edges], requests.codes[with_edges], rows[
        with_edges]
    query_index, edge_position = sample_edges(
        op.strategy, row_splits=adjacency.row_splits, weights=adjacency.weights,
        query_rows=rows, query_samples=samples,
        query_nodes=rng.fingerprint(requests.ids)[codes],
        k=op.sample_size, seed=seed, op_salt=rng.name_salt(op.name))
    # Sources are coded by their CSR row (adjacency.sources is sorted and distinct), and
    # requests come sorted by sample, so every dictionary here is cheap to build.
    sample_ids, sample_codes = np.unique(samples[query_index], return_inverse=True)
    source_ids, source_codes = prune(adjacency.sources, rows[query_index])
    target_ids, target_codes = prune(adjacency.target_ids, adjacency.target_codes[edge_position])
    return EdgePiece(
        edge_set=op.edge_set, sample_codes=sample_codes.astype(np.int32),
        source_codes=source_codes, target_codes=target_codes,
        positions=edge_position.astype(np.int32), sample_ids=sample_ids.astype(np.int64),
        source_ids=source_ids, target_ids=target_ids,
        features={k: take(v, edge_position) for k, v in adjacency.features.items()})
