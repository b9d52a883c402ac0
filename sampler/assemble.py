"""Assembling subgraphs: the node and edge pieces of one output shard, turned into
one GraphTensor per sample in canonical order.

Canonical order (DESIGN.md section 3), so the output is a function of the inputs
alone: within a subgraph, the seed is node 0 of its node set, the other nodes of
each set follow by id; edges are ordered by (source index, target index, row).
A node reached several times, or an edge sampled by several ops, appears once.

Everything up to the per-sample slicing runs vectorized over the whole shard.
"""
from __future__ import annotations

import dataclasses
from typing import Iterator, Sequence

import numpy as np

from sampler.graph_tensor import (Adjacency, Context, EdgeSet, GraphTensor, NodeSet,
                                  add_readout)
from sampler.pieces import EdgePiece, NodePiece
from sampler.spec import Plan
from unigraph import graph_schema_pb2 as gs
from unigraph.batches import FeatureValues
from unigraph.ragged import Ragged, take
from unigraph.schema import ID_COLUMNS, feature_shape, numpy_dtype

ID_FEATURE = "#id"
SEED_ID_FEATURE = "seed_id"
READOUT_KEY = "seed"


@dataclasses.dataclass
class ShardStats:
    """Counts from assembling one shard, merged across shards for the run report."""

    subgraphs: int = 0
    nodes: dict[str, list[int]] = dataclasses.field(default_factory=dict)  # set -> per subgraph
    edges: dict[str, list[int]] = dataclasses.field(default_factory=dict)
    dangling_edges: dict[str, int] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class _Layout:
    """One set's items for every sample of the shard, sorted by (sample, canonical order)."""

    offsets: np.ndarray                  # int64 [num_samples + 1]
    features: dict[str, FeatureValues]   # item dimension first, in layout order
    ids: np.ndarray | None = None        # node sets: 'S' ids in layout order
    sources: np.ndarray | None = None    # edge sets: local source indices
    targets: np.ndarray | None = None    # edge sets: local target indices


def empty_feature(feature: gs.Feature) -> FeatureValues:
    """A zero-item value of the feature's dtype and shape (each ragged dim a Ragged level)."""
    shape = feature_shape(feature)
    dtype = numpy_dtype(feature)
    if -1 not in shape:
        return np.zeros((0,) + shape, dtype=dtype)
    last_ragged = len(shape) - 1 - shape[::-1].index(-1)
    value: FeatureValues = np.zeros((0,) + shape[last_ragged + 1:], dtype=dtype)
    for _ in range(shape.count(-1)):
        value = Ragged(value, np.zeros(0, np.int64))
    return value


def _offsets(ranks: np.ndarray, num_samples: int) -> np.ndarray:
    counts = np.bincount(ranks, minlength=num_samples)
    return np.r_[0, np.cumsum(counts)].astype(np.int64)


def _schema_features(features: dict[str, gs.Feature]) -> dict[str, gs.Feature]:
    return {k: v for k, v in sorted(features.items()) if k not in ID_COLUMNS}


class ShardAssembler:
    """Builds the GraphTensors of one shard from its pieces."""

    def __init__(self, plan: Plan, schema: gs.GraphSchema):
        self.plan = plan
        self.schema = schema
        self.node_features = {s: _schema_features(schema.node_sets[s].features)
                              for s in plan.node_sets()}
        self.edge_features = {e: _schema_features(schema.edge_sets[e].features)
                              for e in plan.edge_sets()}

    def assemble(self, seed_pieces: Sequence[NodePiece], node_pieces: Sequence[NodePiece],
                 edge_pieces: Sequence[EdgePiece]) -> tuple[Iterator[tuple[int, GraphTensor]],
                                                            ShardStats]:
        """(sample id, GraphTensor) for every sample, by ascending sample id; and the stats."""
        seeds = NodePiece.concat(list(seed_pieces)) if seed_pieces else None
        stats = ShardStats()
        if seeds is None or len(seeds) == 0:
            return iter(()), stats
        order = np.argsort(seeds.samples, kind="stable")
        sample_ids, seed_ids = seeds.samples[order], seeds.ids[order]
        nodes = {s: self._node_layout(s, [seeds] * (s == self.plan.seed_set) + [
            p for p in node_pieces if p.node_set == s], sample_ids, seed_ids)
            for s in self.plan.node_sets()}
        edges = {}
        for e in self.plan.edge_sets():
            edges[e], dropped = self._edge_layout(e, [p for p in edge_pieces if p.edge_set == e],
                                                  sample_ids, nodes)
            if dropped:
                stats.dangling_edges[e] = dropped
        stats.subgraphs = len(sample_ids)
        stats.nodes = {s: np.diff(l.offsets).tolist() for s, l in nodes.items()}
        stats.edges = {e: np.diff(l.offsets).tolist() for e, l in edges.items()}
        return self._graphs(sample_ids, seed_ids, nodes, edges), stats

    def _node_layout(self, node_set: str, pieces: list[NodePiece], sample_ids: np.ndarray,
                     seed_ids: np.ndarray) -> _Layout:
        wanted = self.node_features[node_set]
        pieces = [p for p in pieces if len(p)]
        if not pieces:
            return _Layout(np.zeros(len(sample_ids) + 1, np.int64),
                           {k: empty_feature(f) for k, f in wanted.items()},
                           ids=np.zeros(0, "S1"))
        piece = NodePiece.concat([_with_features(p, wanted) for p in pieces])
        ranks = np.searchsorted(sample_ids, piece.samples)
        not_seed = piece.ids != seed_ids[ranks] if node_set == self.plan.seed_set else \
            np.ones(len(piece), bool)
        order = np.lexsort((piece.ids, not_seed, ranks))
        ranks, ids = ranks[order], piece.ids[order]
        keep = np.r_[True, (ranks[1:] != ranks[:-1]) | (ids[1:] != ids[:-1])]
        order, ranks, ids = order[keep], ranks[keep], ids[keep]
        return _Layout(_offsets(ranks, len(sample_ids)),
                       {k: take(piece.features[k], order) for k in wanted}, ids=ids)

    def _edge_layout(self, edge_set: str, pieces: list[EdgePiece], sample_ids: np.ndarray,
                     nodes: dict[str, _Layout]) -> tuple[_Layout, int]:
        wanted = self.edge_features[edge_set]
        pieces = [p for p in pieces if len(p)]
        if not pieces:
            empty = np.zeros(0, np.int64)
            return _Layout(np.zeros(len(sample_ids) + 1, np.int64),
                           {k: empty_feature(f) for k, f in wanted.items()},
                           sources=empty, targets=empty), 0
        piece = EdgePiece.concat(pieces)
        ranks = np.searchsorted(sample_ids, piece.samples)
        order = np.lexsort((piece.rows, ranks))
        keep = np.r_[True, (ranks[order][1:] != ranks[order][:-1])
                     | (piece.rows[order][1:] != piece.rows[order][:-1])]
        piece, ranks = piece.take(order[keep]), ranks[order[keep]]
        edge_set_proto = self.schema.edge_sets[edge_set]
        sources = _local_indices(nodes[edge_set_proto.source], ranks, piece.sources)
        targets = _local_indices(nodes[edge_set_proto.target], ranks, piece.targets)
        valid = (sources >= 0) & (targets >= 0)
        order = np.flatnonzero(valid)
        order = order[np.lexsort((piece.rows[order], targets[order], sources[order],
                                  ranks[order]))]
        layout = _Layout(_offsets(ranks[order], len(sample_ids)),
                         {k: take(piece.features[k], order) for k in wanted},
                         sources=sources[order], targets=targets[order])
        return layout, int((~valid).sum())

    def _graphs(self, sample_ids, seed_ids, nodes, edges) -> Iterator[tuple[int, GraphTensor]]:
        seed_set = self.plan.seed_set
        for i, (sample_id, seed_id) in enumerate(zip(sample_ids.tolist(), seed_ids)):
            node_sets = {}
            for name, layout in nodes.items():
                lo, hi = layout.offsets[i], layout.offsets[i + 1]
                features = {k: _slice(v, lo, hi) for k, v in layout.features.items()}
                features[ID_FEATURE] = layout.ids[lo:hi].astype(object)
                node_sets[name] = NodeSet.from_fields(sizes=[hi - lo], features=features)
            edge_sets = {}
            for name, layout in edges.items():
                lo, hi = layout.offsets[i], layout.offsets[i + 1]
                proto = self.schema.edge_sets[name]
                edge_sets[name] = EdgeSet.from_fields(
                    sizes=[hi - lo],
                    adjacency=Adjacency.from_indices(source=(proto.source, layout.sources[lo:hi]),
                                                     target=(proto.target, layout.targets[lo:hi])),
                    features={k: _slice(v, lo, hi) for k, v in layout.features.items()})
            context = Context.from_fields(
                features={SEED_ID_FEATURE: np.array([bytes(seed_id)], dtype=object)}, sizes=[1])
            graph = GraphTensor.from_pieces(context=context, node_sets=node_sets,
                                            edge_sets=edge_sets, validate=False)
            yield sample_id, add_readout(graph, READOUT_KEY, seed_set, [0], validate=False)


def _with_features(piece: NodePiece, wanted: dict[str, gs.Feature]) -> NodePiece:
    """The piece with exactly the schema's features (a piece from a table-less set has none)."""
    if all(k in piece.features for k in wanted) and len(piece.features) == len(wanted):
        return piece
    features = {k: piece.features[k] for k in wanted if k in piece.features}
    return NodePiece(piece.node_set, piece.samples, piece.ids, features, piece.is_seed)


def _slice(values: FeatureValues, lo: int, hi: int) -> FeatureValues:
    if isinstance(values, Ragged):
        return take(values, np.arange(lo, hi))
    return values[lo:hi]


def _local_indices(layout: _Layout, ranks: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """Index of node (sample rank, id) within its sample's node set; -1 if absent."""
    if len(layout.ids) == 0 or len(ids) == 0:
        return np.full(len(ids), -1, np.int64)
    node_ranks = np.repeat(np.arange(len(layout.offsets) - 1), np.diff(layout.offsets))
    local = np.arange(len(layout.ids)) - layout.offsets[node_ranks]
    # One integer key per (rank, id): codes of the ids, offset by rank.
    uniq, codes = np.unique(np.concatenate([layout.ids, ids]), return_inverse=True)
    width = np.int64(len(uniq))
    node_keys = node_ranks.astype(np.int64) * width + codes[:len(layout.ids)]
    query_keys = ranks.astype(np.int64) * width + codes[len(layout.ids):]
    order = np.argsort(node_keys)
    sorted_keys = node_keys[order]
    pos = np.minimum(np.searchsorted(sorted_keys, query_keys), len(sorted_keys) - 1)
    return np.where(sorted_keys[pos] == query_keys, local[order[pos]], -1).astype(np.int64)
