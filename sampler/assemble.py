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
from sampler import rng
from sampler.pieces import EdgePiece, NodeFeatures, SeedPiece
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
    nodes_missing: dict[str, int] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class _Layout:
    """One set's items for every sample of the shard, sorted by (sample, canonical order)."""

    offsets: np.ndarray                  # int64 [num_samples + 1]
    features: dict[str, FeatureValues]   # item dimension first, in layout order
    ids: np.ndarray | None = None        # node sets: 'S' ids in layout order
    ranks: np.ndarray | None = None      # node sets: sample rank of each id
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
    """Builds the GraphTensors of one shard from its pieces.

    A subgraph's nodes of a set are its seed (for the seed set) and the targets of
    its sampled edges into the set; their features come from the shard's
    NodeFeatures. A node absent from its set's table is left out, and so are the
    edges that touch it (counted as dangling).
    """

    def __init__(self, plan: Plan, schema: gs.GraphSchema):
        self.plan = plan
        self.schema = schema
        self.node_features = {s: _schema_features(schema.node_sets[s].features)
                              for s in plan.node_sets()}
        self.edge_features = {e: _schema_features(schema.edge_sets[e].features)
                              for e in plan.edge_sets()}
        self.has_table = {s: bool(schema.node_sets[s].metadata.filename)
                          for s in plan.node_sets()}

    def assemble(self, seed_pieces: Sequence[SeedPiece], feature_pieces: Sequence[NodeFeatures],
                 edge_pieces: Sequence[EdgePiece]) -> tuple[Iterator[tuple[int, GraphTensor]],
                                                            ShardStats]:
        """(sample id, GraphTensor) for every sample, by ascending sample id; and the stats."""
        stats = ShardStats()
        seed_pieces = [p for p in seed_pieces if len(p)]
        if not seed_pieces:
            return iter(()), stats
        seeds = SeedPiece.concat(seed_pieces)
        order = np.argsort(seeds.samples, kind="stable")
        sample_ids, seed_ids = seeds.samples[order], seeds.ids[order]
        edge_pieces = [p for p in edge_pieces if len(p)]
        nodes = {}
        for s in self.plan.node_sets():
            arriving = [(p.samples, p.targets) for p in edge_pieces
                        if self.schema.edge_sets[p.edge_set].target == s]
            if s == self.plan.seed_set:
                arriving.insert(0, (sample_ids, seed_ids))
            nodes[s], missing = self._node_layout(
                s, arriving, [p for p in feature_pieces if p.node_set == s], sample_ids, seed_ids)
            if missing:
                stats.nodes_missing[s] = missing
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

    def _node_layout(self, node_set: str, arriving: list[tuple[np.ndarray, np.ndarray]],
                     feature_pieces: list[NodeFeatures], sample_ids: np.ndarray,
                     seed_ids: np.ndarray) -> tuple[_Layout, int]:
        wanted = self.node_features[node_set]
        num_samples = len(sample_ids)
        if not arriving:
            return _Layout(np.zeros(num_samples + 1, np.int64),
                           {k: empty_feature(f) for k, f in wanted.items()},
                           ids=np.zeros(0, "S1"), ranks=np.zeros(0, np.int64)), 0
        samples = np.concatenate([a[0] for a in arriving])
        ids = np.concatenate([a[1] for a in arriving])
        ranks = np.searchsorted(sample_ids, samples)
        not_seed = ids != seed_ids[ranks] if node_set == self.plan.seed_set else \
            np.ones(len(ids), bool)
        order = np.lexsort((ids, not_seed, ranks))
        ranks, ids = ranks[order], ids[order]
        keep = np.r_[True, (ranks[1:] != ranks[:-1]) | (ids[1:] != ids[:-1])]
        ranks, ids = ranks[keep], ids[keep]
        features, missing = {}, 0
        if self.has_table[node_set]:
            table = _feature_table(node_set, feature_pieces, wanted)
            positions = _positions(table.ids, ids)
            found = positions >= 0
            missing = int((~found).sum())
            if missing:
                ranks, ids, positions = ranks[found], ids[found], positions[found]
            features = {k: take(table.features[k], positions) for k in wanted}
        return _Layout(_offsets(ranks, num_samples), features, ids=ids, ranks=ranks), missing

    def _edge_layout(self, edge_set: str, pieces: list[EdgePiece], sample_ids: np.ndarray,
                     nodes: dict[str, _Layout]) -> tuple[_Layout, int]:
        wanted = self.edge_features[edge_set]
        if not pieces:
            empty = np.zeros(0, np.int64)
            return _Layout(np.zeros(len(sample_ids) + 1, np.int64),
                           {k: empty_feature(f) for k, f in wanted.items()},
                           sources=empty, targets=empty), 0
        piece = EdgePiece.concat(pieces)
        ranks = np.searchsorted(sample_ids, piece.samples)
        order = np.lexsort((piece.rows, ranks))
        sorted_ranks, sorted_rows = ranks[order], piece.rows[order]
        keep = np.r_[True, (sorted_ranks[1:] != sorted_ranks[:-1])
                     | (sorted_rows[1:] != sorted_rows[:-1])]
        piece, ranks = piece.take(order[keep]), sorted_ranks[keep]
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


def _feature_table(node_set: str, pieces: list[NodeFeatures],
                   wanted: dict[str, gs.Feature]) -> NodeFeatures:
    """The shard's features of `node_set`, each node once, sorted by id."""
    pieces = [p for p in pieces if len(p)]
    if not pieces:
        return NodeFeatures(node_set, np.zeros(0, "S1"),
                            {k: empty_feature(f) for k, f in wanted.items()})
    table = NodeFeatures.concat(pieces)
    _, first = np.unique(table.ids, return_index=True)  # sorted ids, one row each
    return table.take(first)


def _positions(sorted_ids: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """Position of each id in `sorted_ids`, -1 where absent."""
    if len(sorted_ids) == 0:
        return np.full(len(ids), -1, np.int64)
    pos = np.minimum(np.searchsorted(sorted_ids, ids), len(sorted_ids) - 1)
    return np.where(sorted_ids[pos] == ids, pos, -1).astype(np.int64)


def _slice(values: FeatureValues, lo: int, hi: int) -> FeatureValues:
    if isinstance(values, Ragged):
        return take(values, np.arange(lo, hi))
    return values[lo:hi]


def _local_indices(layout: _Layout, ranks: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """Index of node (sample rank, id) within its sample's node set; -1 if absent.

    Searches one uint64 key per (rank, id) -- a hash -- and then checks rank and id
    exactly, so a hash collision can only send a lookup down the exact slow path.
    """
    if len(layout.ids) == 0 or len(ids) == 0:
        return np.full(len(ids), -1, np.int64)
    local = np.arange(len(layout.ids)) - layout.offsets[layout.ranks]
    node_keys = rng.mix(layout.ranks, rng.fingerprint(layout.ids))
    query_keys = rng.mix(ranks, rng.fingerprint(ids))
    order = np.argsort(node_keys)
    sorted_keys = node_keys[order]
    candidate = order[np.minimum(np.searchsorted(sorted_keys, query_keys), len(order) - 1)]
    hit = node_keys[candidate] == query_keys
    exact = hit & (layout.ranks[candidate] == ranks) & (layout.ids[candidate] == ids)
    if (hit != exact).any():  # a collision: resolve those lookups exactly
        slow = np.flatnonzero(hit != exact)
        for q in slow:
            match = np.flatnonzero((layout.ranks == ranks[q]) & (layout.ids == ids[q]))
            if len(match):
                candidate[q], exact[q] = match[0], True
    return np.where(exact, local[candidate], -1).astype(np.int64)
