"""An assembled shard as GraphTensors of the numpy core: the reference output.

The product writes records with output/encoder.py straight from the shard's
arrays; tests check those bytes against `encode_example` of these graphs, and
tools that want objects (rather than bytes) can use them too.
"""
from __future__ import annotations

from typing import Iterator

import numpy as np

from sampler.core.assemble import AssembledShard
from sampler.graph_tensor.model import Adjacency, Context, EdgeSet, GraphTensor, NodeSet
from sampler.graph_tensor.structured_readout import add_readout
from sampler.graph_tensor.readout_structure import READOUT_NODE_SET
from sampler.output.names import (ID_FEATURE, LINK_READOUT_KEYS, READOUT_KEY, SEED_ID_FEATURE,
                                  SEED_TIMESTAMP_FEATURE, SOURCE_ID_FEATURE, TARGET_ID_FEATURE)
from unigraph.columnar.ragged import take


def shard_graphs(shard: AssembledShard) -> Iterator[tuple[int, GraphTensor]]:
    """(sample id, GraphTensor) per sample: the reference the fast encoder must match."""
    for i, (sample_id, seed_id) in enumerate(zip(shard.sample_ids.tolist(), shard.seed_ids)):
        node_sets = {}
        for name, layout in shard.nodes.items():
            lo, hi = layout.offsets[i], layout.offsets[i + 1]
            features = layout.features(lo, hi)
            features[ID_FEATURE] = layout.ids[lo:hi].astype(object)
            node_sets[name] = NodeSet.from_fields(sizes=[hi - lo], features=features)
        edge_sets = {}
        for name, layout in shard.edges.items():
            lo, hi = layout.offsets[i], layout.offsets[i + 1]
            proto = shard.schema.edge_sets[name]
            edge_sets[name] = EdgeSet.from_fields(
                sizes=[hi - lo],
                adjacency=Adjacency.from_indices(source=(proto.source, layout.sources[lo:hi]),
                                                 target=(proto.target, layout.targets[lo:hi])),
                features=layout.features(lo, hi))
        if shard.target_ids is None:
            context_features = {SEED_ID_FEATURE: np.array([bytes(seed_id)], dtype=object)}
            if shard.seed_timestamps is not None:
                context_features[SEED_TIMESTAMP_FEATURE] = shard.seed_timestamps[i:i + 1]
            context = Context.from_fields(features=context_features, sizes=[1])
            graph = GraphTensor.from_pieces(context=context, node_sets=node_sets,
                                            edge_sets=edge_sets, validate=False)
            yield sample_id, add_readout(graph, READOUT_KEY, shard.seed_set, [0], validate=False)
            continue
        target_id = shard.target_ids[i]
        context_features = {SOURCE_ID_FEATURE: np.array([bytes(seed_id)], dtype=object),
                            TARGET_ID_FEATURE: np.array([bytes(target_id)], dtype=object)}
        if shard.seed_timestamps is not None:  # the pair's cut-off
            context_features[SEED_TIMESTAMP_FEATURE] = shard.seed_timestamps[i:i + 1]
        context = Context.from_fields(features=context_features, sizes=[1])
        node_sets[READOUT_NODE_SET] = NodeSet.from_fields(
            sizes=[1], features={k: take(v, np.array([i])) for k, v in shard.readout.items()})
        graph = GraphTensor.from_pieces(context=context, node_sets=node_sets,
                                        edge_sets=edge_sets, validate=False)
        source_key, target_key = LINK_READOUT_KEYS
        graph = add_readout(graph, source_key, shard.seed_set, [0], validate=False)
        yield sample_id, add_readout(graph, target_key, shard.seed_set,
                                     [int(bytes(target_id) != bytes(seed_id))], validate=False)
