"""An assembled shard as GraphTensors of the numpy core.

What `sampler.api` hands out, and the reference the product's record encoder
(output/encoder.py) is tested against: `encode_example` of these graphs must be its
bytes.

Built for speed, since the Python API makes one graph per sample in the training
loop: each set's ids (as the core's object arrays of bytes) and features are
gathered once for the whole shard and made read-only, and every sample's pieces are
views into them, constructed directly (the arrays already have the types
`NodeSet.from_fields` would normalize them to). The `_readout` pieces that are alike
in every sample are shared.
"""
from __future__ import annotations

import types
from typing import Iterator

import numpy as np

from sampler.core.assemble import AssembledShard, _Layout
from sampler.graph_tensor.model import Adjacency, Context, EdgeSet, GraphTensor, NodeSet
from sampler.graph_tensor.readout_structure import READOUT_NODE_SET, READOUT_PREFIX
from sampler.output.names import (ID_FEATURE, LINK_READOUT_KEYS, READOUT_KEY, SEED_ID_FEATURE,
                                  SEED_TIMESTAMP_FEATURE, SOURCE_ID_FEATURE, TARGET_ID_FEATURE)
from unigraph.columnar.ragged import Ragged

_ONE = np.ones(1, np.int64)
_ZERO = np.zeros(1, np.int64)
for _array in (_ONE, _ZERO):
    _array.flags.writeable = False


def _frozen(value):
    """The value with every array read-only (slices of it are then read-only views)."""
    if isinstance(value, Ragged):
        return Ragged(_frozen(value.values), _frozen(value.row_lengths))
    value = np.asarray(value)
    value.flags.writeable = False
    return value


def _rows(value, lo: int, hi: int):
    """Items [lo, hi) of an array or Ragged, as views."""
    if not isinstance(value, Ragged):
        return value[lo:hi]
    splits = value.row_splits
    return Ragged(_rows(value.values, int(splits[lo]), int(splits[hi])), value.row_lengths[lo:hi])


def _features(layout: _Layout, with_ids: bool) -> dict:
    """Every item's features (and ids), gathered once for the shard, read-only."""
    features = layout.features(0, int(layout.offsets[-1]))
    if with_ids:
        features[ID_FEATURE] = layout.ids.astype(object)
    return {name: _frozen(value) for name, value in sorted(features.items())}


class _SetRows:
    """One set's items for the whole shard, cut per sample without copies: offsets as
    Python ints, the sizes of every sample as one-element read-only views, features."""

    def __init__(self, layout: _Layout, features: dict):
        self.offsets = layout.offsets.tolist()
        self.sizes = _frozen(np.diff(layout.offsets).astype(np.int64).reshape(-1, 1))
        self.features = list(features.items())

    def features_of(self, lo: int, hi: int) -> types.MappingProxyType:
        return types.MappingProxyType({k: _rows(v, lo, hi) if isinstance(v, Ragged) else v[lo:hi]
                                       for k, v in self.features})


def shard_graphs(shard: AssembledShard) -> Iterator[tuple[int, GraphTensor]]:
    """(sample id, GraphTensor) per sample, in the shard's order (ascending sample id)."""
    nodes = {name: _SetRows(layout, _features(layout, True))
             for name, layout in shard.nodes.items()}
    edges = {name: (_SetRows(layout, _features(layout, False)), _frozen(layout.sources),
                    _frozen(layout.targets), shard.schema.edge_sets[name].source,
                    shard.schema.edge_sets[name].target)
             for name, layout in shard.edges.items()}
    seed_ids = _frozen(shard.seed_ids.astype(object))
    link = shard.target_ids is not None
    target_ids = _frozen(shard.target_ids.astype(object)) if link else None
    readout = {name: _frozen(value) for name, value in (shard.readout or {}).items()}
    times = _frozen(shard.seed_timestamps) if shard.seed_timestamps is not None else None
    # The readout pieces every node-seed sample shares: one `_readout` node, one edge
    # from the seed (node 0 of the seed set) to it.
    empty = types.MappingProxyType({})
    readout_nodes = NodeSet(_ONE, empty)

    def readout_edge(source_index: np.ndarray) -> EdgeSet:
        return EdgeSet(_ONE, Adjacency(shard.seed_set, source_index, READOUT_NODE_SET, _ZERO),
                       empty)

    seed_edge = {READOUT_PREFIX + READOUT_KEY: readout_edge(_ZERO)}
    link_edges = [{READOUT_PREFIX + LINK_READOUT_KEYS[0]: readout_edge(_ZERO),
                   READOUT_PREFIX + LINK_READOUT_KEYS[1]: readout_edge(index)}
                  for index in (_ZERO, _ONE)]  # the target is node 1 unless it is the source
    for i, sample_id in enumerate(shard.sample_ids.tolist()):
        node_sets = {}
        for name, rows in nodes.items():
            lo, hi = rows.offsets[i], rows.offsets[i + 1]
            node_sets[name] = NodeSet(rows.sizes[i], rows.features_of(lo, hi))
        edge_sets = {}
        for name, (rows, sources, targets, source, target) in edges.items():
            lo, hi = rows.offsets[i], rows.offsets[i + 1]
            edge_sets[name] = EdgeSet(
                rows.sizes[i], Adjacency(source, sources[lo:hi], target, targets[lo:hi]),
                rows.features_of(lo, hi))
        if not link:
            context = {SEED_ID_FEATURE: seed_ids[i:i + 1]}
            edge_sets.update(seed_edge)
            node_sets[READOUT_NODE_SET] = readout_nodes
        else:
            context = {SOURCE_ID_FEATURE: seed_ids[i:i + 1],
                       TARGET_ID_FEATURE: target_ids[i:i + 1]}
            edge_sets.update(link_edges[int(target_ids[i] != seed_ids[i])])
            node_sets[READOUT_NODE_SET] = NodeSet(
                _ONE, types.MappingProxyType({k: _rows(v, i, i + 1) for k, v in readout.items()}))
        if times is not None:
            context[SEED_TIMESTAMP_FEATURE] = times[i:i + 1]
        yield sample_id, GraphTensor(
            Context(_ONE, types.MappingProxyType(context)),
            types.MappingProxyType(node_sets), types.MappingProxyType(edge_sets))
