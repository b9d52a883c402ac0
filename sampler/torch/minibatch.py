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
With an `encoder` (sampler.features.FeatureEncoder) every feature becomes a tensor by
its spec, as `to_hetero_data` makes them (docs/features.md).
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from sampler.features import FeatureEncoder
from sampler.minibatch.batch import MergedBatch
from sampler.minibatch.features import item_cutoffs, pop_label, tensor_arrays
from sampler.torch.data import SampledHeteroData
from unigraph.errors import SamplerError, require_extra

torch = require_extra("torch", "torch", "sampler.torch")

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
                          link_edge_type: Optional[tuple[str, str, str]] = None,
                          encoder: Optional[FeatureEncoder] = None) -> "SampledHeteroData":
    """`HeteroData` of a mini-batch (module docstring). `features`: "x" or "names";
    `label`: a dense feature of the seed set, as `y` (left out of `x`); link batches
    take `edge_label` from the negatives' labels or the pairs' `label` column;
    `encoder`: every feature by a feature spec."""
    return hetero_data(hetero_items(batch, features=features, label=label, reverse=reverse,
                                    link_edge_type=link_edge_type, encoder=encoder))


Item = tuple  # (store key: a node type, an edge type or None, attribute, value)


def hetero_items(batch: MergedBatch, *, features: str = "x", label: Optional[str] = None,
                 reverse: bool = True, link_edge_type=None,
                 encoder: Optional[FeatureEncoder] = None) -> list[Item]:
    """What the HeteroData of a batch holds, as numpy arrays and Python values (no torch:
    a loader's worker makes them, sampler.torch.loader packs them)."""
    source = batch.source
    if source is None:
        raise SamplerError("this MergedBatch came from another process without its graph: "
                           "make the HeteroData where it was sampled")
    items: list[Item] = []
    for name, nodes in batch.nodes.items():
        items.append((name, "n_id", source.node_ids(name, nodes.codes)))
        values = source.node_features(name, nodes.codes, every=encoder is not None)
        if name == batch.seed_set and label is not None:
            items.append((name, "y", np.ascontiguousarray(pop_label(values, label, name))))
        cutoffs = item_cutoffs(encoder, "nodes", name, batch.seed_time, nodes.slots,
                               len(nodes))
        items += [(name, key, array) for key, array in tensor_arrays(
            values, features, "x", encoder=encoder, set_name=name, cutoffs=cutoffs).items()]
        items += [(name, "num_nodes", len(nodes)),
                  (name, "num_sampled_nodes", list(nodes.num_sampled_nodes))]
        if nodes.slots is not None:
            items.append((name, "batch", nodes.slots))
    for name, edges in batch.edges.items():
        kind = edge_type(batch, name, reverse)
        ends = (edges.targets, edges.sources) if reverse else (edges.sources, edges.targets)
        items += [(kind, "edge_index", np.stack(ends)),
                  (kind, "e_id", source.edge_ids(name, edges.positions))]
        slots = batch.nodes[edges.source_set].slots
        cutoffs = item_cutoffs(encoder, "edges", name, batch.seed_time,
                               None if slots is None else slots[edges.sources], len(edges))
        items += [(kind, key, array) for key, array in tensor_arrays(
            source.edge_features(name, edges.positions, every=encoder is not None), features,
            "edge_attr", encoder=encoder, set_kind="edges", set_name=name,
            cutoffs=cutoffs).items()]
        items.append((kind, "num_sampled_edges", list(edges.num_sampled_edges)))
    if batch.link:
        items += _link_items(batch, link_edge_type)
    else:
        seed_set = batch.seed_set
        items += [(seed_set, "batch_size", batch.batch_size),
                  (seed_set, "input_id", np.asarray(batch.input_id, np.int64))]
        if batch.seed_time is not None:
            items.append((seed_set, "seed_time", np.asarray(batch.seed_time)))
    return items


def hetero_data(items: list[Item]) -> "SampledHeteroData":
    """The HeteroData of `hetero_items` (arrays become tensors without a copy)."""
    data = SampledHeteroData()
    stores: dict = {None: data}  # each store looked up once (PyG: about 1 us a lookup)
    for key, attribute, value in items:
        store = stores.get(key)
        if store is None:
            store = stores[key] = data[key]
        store[attribute] = torch.from_numpy(value) if isinstance(value, np.ndarray) else value
    return data


def _link_items(batch: MergedBatch, link_edge_type) -> list[Item]:
    pair_set = batch.seed_set
    kind = tuple(link_edge_type) if link_edge_type else (pair_set, "link", pair_set)
    if len(kind) != 3 or kind[0] != pair_set or kind[2] != pair_set:
        raise SamplerError(f"link_edge_type {kind}: give (source set, relation, target set), "
                           f"both sets '{pair_set}' (the pairs' node set)")
    items = [(kind, "edge_label_index", batch.edge_label_index.astype(np.int64)),
             (kind, "input_id", np.asarray(batch.input_id, np.int64))]
    labels = batch.edge_label
    if labels is None and LINK_LABEL in batch.pair_features:
        values = np.asarray(batch.pair_features[LINK_LABEL])
        labels = values.reshape(len(values))
    if labels is not None:
        items.append((kind, "edge_label", np.ascontiguousarray(labels)))
    if batch.seed_time is not None:
        items.append((kind, "edge_label_time", np.asarray(batch.seed_time)))
    return items
