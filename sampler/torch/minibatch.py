"""A mini-batch (sampler.minibatch.MergedBatch) as PyTorch Geometric `HeteroData`, laid
out as PyG's NeighborLoader / LinkNeighborLoader lay out theirs (docs/minibatches.md):

  node sets   `data[set]`: `n_id` (positions in `Graph.node_ids(set)`), `x` (the dense
              numeric features concatenated, float32) or each feature by name,
              `num_sampled_nodes` (per hop, the seeds' hop first), `batch` (disjoint
              batches: the seed each node is sampled for); every node set of the spec,
              empty ones included, so that every batch has one layout.
  edge sets   messages flow to the seeds, as NeighborLoader samples them: an op that
              samples edge set E from S to T gives edge type (T, "rev_E", S), from the
              node reached to the node sampled from (`reverse=False`: (S, E, T) as the
              graph has them); `edge_index`, `e_id` (each edge's row in its table),
              `edge_attr` (or by name), `num_sampled_edges` (per hop).
  node seeds  the seed set's first `batch_size` nodes, `input_id` their rows, `y` the
              label of every node of the seed set, `seed_time` with cut-offs.
  link seeds  `data[link_edge_type]` ((S, "link", S) by default): `edge_label_index`,
              `edge_label`, `input_id`, `edge_label_time`.

Nodes and edges are ordered by hop, so PyG's `trim_to_layer` trims each layer's.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from sampler.minibatch.batch import MergedBatch
from sampler.minibatch.features import pop_label, tensor_arrays
from unigraph.errors import SamplerError, require_extra

torch = require_extra("torch", "torch", "sampler.torch")
HeteroData = require_extra("torch_geometric.data", "torch", "sampler.torch").HeteroData

LINK_LABEL = "label"
REVERSED = "rev_"


def edge_type(batch: MergedBatch, edge_set: str, reverse: bool = True) -> tuple[str, str, str]:
    """The HeteroData edge type of a batch's edge set."""
    edges = batch.edges[edge_set]
    if reverse:
        return edges.target_set, REVERSED + edge_set, edges.source_set
    return edges.source_set, edge_set, edges.target_set


def merged_to_hetero_data(batch: MergedBatch, *, features: str = "x",
                          label: Optional[str] = None, reverse: bool = True,
                          link_edge_type: Optional[tuple[str, str, str]] = None
                          ) -> "HeteroData":
    """`HeteroData` of a mini-batch (module docstring). `features`: "x" or "names";
    `label`: a dense feature of the seed set, as `y` (left out of `x`); link batches
    take `edge_label` from the negatives' labels or the pairs' `label` column."""
    source = batch.source
    if source is None:
        raise SamplerError("this MergedBatch came from another process without its graph: "
                           "make the HeteroData where it was sampled")
    data = HeteroData()
    for name, nodes in batch.nodes.items():
        store = data[name]
        store.n_id = torch.from_numpy(source.node_ids(name, nodes.codes))
        values = source.node_features(name, nodes.codes)
        if name == batch.seed_set and label is not None:
            store.y = torch.from_numpy(np.ascontiguousarray(pop_label(values, label, name)))
        for key, array in tensor_arrays(values, features, "x").items():
            store[key] = torch.from_numpy(array)
        store.num_nodes = len(nodes)
        store.num_sampled_nodes = list(nodes.num_sampled_nodes)
        if nodes.slots is not None:
            store.batch = torch.from_numpy(nodes.slots)
    for name, edges in batch.edges.items():
        store = data[edge_type(batch, name, reverse)]
        ends = (edges.targets, edges.sources) if reverse else (edges.sources, edges.targets)
        store.edge_index = torch.from_numpy(np.stack(ends))
        store.e_id = torch.from_numpy(source.edge_ids(name, edges.positions))
        for key, array in tensor_arrays(source.edge_features(name, edges.positions), features,
                                        "edge_attr").items():
            store[key] = torch.from_numpy(array)
        store.num_sampled_edges = list(edges.num_sampled_edges)
    seeds = data[batch.seed_set]
    if batch.link:
        _link(data, batch, link_edge_type)
    else:
        seeds.batch_size = batch.batch_size
        seeds.input_id = torch.from_numpy(np.asarray(batch.input_id, np.int64))
        if batch.seed_time is not None:
            seeds.seed_time = torch.from_numpy(np.asarray(batch.seed_time))
    return data


def _link(data, batch: MergedBatch, link_edge_type) -> None:
    pair_set = batch.seed_set
    kind = tuple(link_edge_type) if link_edge_type else (pair_set, "link", pair_set)
    if len(kind) != 3 or kind[0] != pair_set or kind[2] != pair_set:
        raise SamplerError(f"link_edge_type {kind}: give (source set, relation, target set), "
                           f"both sets '{pair_set}' (the pairs' node set)")
    store = data[kind]
    store.edge_label_index = torch.from_numpy(batch.edge_label_index.astype(np.int64))
    store.input_id = torch.from_numpy(np.asarray(batch.input_id, np.int64))
    labels = batch.edge_label
    if labels is None and LINK_LABEL in batch.pair_features:
        values = np.asarray(batch.pair_features[LINK_LABEL])
        labels = values.reshape(len(values))
    if labels is not None:
        store.edge_label = torch.from_numpy(np.ascontiguousarray(labels))
    if batch.seed_time is not None:
        store.edge_label_time = torch.from_numpy(np.asarray(batch.seed_time))
