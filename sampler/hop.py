"""One sampling hop on one bucket: the (sample, node) requests that reached the
bucket's nodes, joined with the bucket's adjacency, sampled by the op's strategy
in one vectorized call."""
from __future__ import annotations

import numpy as np

from sampler import rng
from sampler.adjacency import AdjacencyBucket
from sampler.pieces import EdgePiece, Requests
from sampler.spec import PlannedOp
from sampler.strategies import sample_edges
from unigraph.ragged import take


def sample_hop(adjacency: AdjacencyBucket, requests: Requests, op: PlannedOp,
               seed: int) -> EdgePiece:
    """The edges `op` samples for every (sample, node) request, in request order."""
    requests = requests.unique()
    rows = adjacency.rows_of(requests.nodes)
    with_edges = np.flatnonzero(rows >= 0)
    samples, nodes, rows = requests.samples[with_edges], requests.nodes[with_edges], rows[
        with_edges]
    query_index, edge_position = sample_edges(
        op.strategy, row_splits=adjacency.row_splits, weights=adjacency.weights,
        query_rows=rows, query_samples=samples, query_nodes=rng.fingerprint(nodes),
        k=op.sample_size, seed=seed, op_salt=rng.name_salt(op.name))
    return EdgePiece(
        edge_set=op.edge_set, samples=samples[query_index], sources=nodes[query_index],
        targets=adjacency.targets[edge_position], rows=adjacency.rows[edge_position],
        features={k: take(v, edge_position) for k, v in adjacency.features.items()})
