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
from sampler.output.names import ID_FEATURE, READOUT_KEY, SEED_ID_FEATURE, SEED_TIMESTAMP_FEATURE


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
        context_features = {SEED_ID_FEATURE: np.array([bytes(seed_id)], dtype=object)}
        if shard.seed_timestamps is not None:
            context_features[SEED_TIMESTAMP_FEATURE] = shard.seed_timestamps[i:i + 1]
        context = Context.from_fields(features=context_features, sizes=[1])
        graph = GraphTensor.from_pieces(context=context, node_sets=node_sets,
                                        edge_sets=edge_sets, validate=False)
        yield sample_id, add_readout(graph, READOUT_KEY, shard.seed_set, [0], validate=False)
