"""A mini-batch (sampler.minibatch.MergedBatch) as DGL blocks, one per GNN layer, as
`dgl.dataloading`'s NeighborSampler makes them (docs/minibatches.md):

- block i (input layer first) is the batch's layer i (MergedBatch.layers): its
  destination nodes are the first of its source nodes (DGL's MFG rule), the last
  block's destinations are the seeds (hop 0);
- an op that samples edge set E from S to T gives edge type (T, "rev_E", S), messages
  from the node reached to the node sampled from (`reverse=False`: (S, E, T));
- `dgl.NID` on every block's source and destination nodes: positions in
  `Graph.node_ids(node_set)`; `dgl.EID` on its edges: each edge's row in its table;
- the dense numeric node features, each by its name, on the first block's source
  nodes; the label (`label=`) on the last block's destination nodes; edge features on
  every block's edges. With an `encoder` (sampler.features.FeatureEncoder) every
  feature by its spec: categories as int64 indices, and lists padded with a
  `<name>_mask` (a block's node data has one row per node, so a bag's flat values and
  offsets cannot be node data: DGL gets them padded).

`block_items` makes the numpy arrays (in a DataLoader worker), `blocks_of` the blocks
(in the main process): blocks share nothing but the arrays, each a prefix of them.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from sampler.features import FeatureEncoder
from sampler.minibatch.batch import MergedBatch
from sampler.minibatch.features import item_cutoffs, pop_label, tensor_arrays
from unigraph.errors import SamplerError

import dgl  # noqa: E402  (sampler.dgl/__init__ said what to install without it)
import torch  # noqa: E402

REVERSED = "rev_"
_META = "meta"


def block_items(batch: MergedBatch, *, label: Optional[str] = None,
                reverse: bool = True, encoder: Optional[FeatureEncoder] = None) -> list:
    """The arrays (and small values) the blocks of a batch are made of."""
    source = batch.source
    if source is None:
        raise SamplerError("this MergedBatch came from another process without its graph: "
                           "make the blocks where it was sampled")
    layers = batch.layers()
    items = [(_META, "seed_set", batch.seed_set), (_META, "link", batch.link),
             (_META, "layers", [(layer.src, layer.dst, layer.edges) for layer in layers]),
             (_META, "batch_size", batch.batch_size), (_META, "label", label)]
    for name, nodes in batch.nodes.items():
        items.append((("node", name), "n_id", source.node_ids(name, nodes.codes)))
        values = source.node_features(name, nodes.codes, every=encoder is not None)
        if name == batch.seed_set and label is not None:
            items.append((("node", name), "label",
                          np.ascontiguousarray(pop_label(values, label, name))))
        cutoffs = item_cutoffs(encoder, "nodes", name, batch.seed_time, nodes.slots,
                               len(nodes))
        items += [(("feature", name), key, array) for key, array in tensor_arrays(
            values, "names", "x", encoder=encoder, set_name=name, cutoffs=cutoffs,
            padded=True).items()]
    for name, edges in batch.edges.items():
        kind = ((edges.target_set, REVERSED + name, edges.source_set) if reverse
                else (edges.source_set, name, edges.target_set))
        ends = (edges.targets, edges.sources) if reverse else (edges.sources, edges.targets)
        items += [(("edge", name), "type", kind), (("edge", name), "src", ends[0]),
                  (("edge", name), "dst", ends[1]),
                  (("edge", name), "e_id", source.edge_ids(name, edges.positions))]
        slots = batch.nodes[edges.source_set].slots
        cutoffs = item_cutoffs(encoder, "edges", name, batch.seed_time,
                               None if slots is None else slots[edges.sources], len(edges))
        items += [(("edge_feature", name), key, array) for key, array in tensor_arrays(
            source.edge_features(name, edges.positions, every=encoder is not None), "names",
            "x", encoder=encoder, set_kind="edges", set_name=name, cutoffs=cutoffs,
            padded=True).items()]
    if batch.link:
        items += [(_META, "edge_label_index", batch.edge_label_index.astype(np.int64)),
                  (_META, "input_id", np.asarray(batch.input_id, np.int64))]
        labels = batch.edge_label
        if labels is None and "label" in batch.pair_features:
            labels = np.asarray(batch.pair_features["label"]).reshape(-1)
        items.append((_META, "edge_label", None if labels is None
                      else np.ascontiguousarray(labels)))
    return items


def blocks_of(items: list):
    """(input_nodes, output_nodes, blocks) as dgl.dataloading gives them; link batches
    (input_nodes, pair_graph, blocks), or with negatives (input_nodes, pair_graph,
    neg_pair_graph, blocks): the pairs as edges over the last block's destination nodes,
    `edata["label"]` their labels."""
    meta, nodes, features, edges, edge_features = {}, {}, {}, {}, {}
    for key, attribute, value in items:
        if key == _META:
            meta[attribute] = value
            continue
        kind, name = key
        {"node": nodes, "feature": features, "edge": edges,
         "edge_feature": edge_features}[kind].setdefault(name, {})[attribute] = value
    blocks = []
    layers = meta["layers"]
    for index, (src, dst, counts) in enumerate(layers):
        data = {edges[name]["type"]: (torch.from_numpy(edges[name]["src"][:counts[name]]),
                                      torch.from_numpy(edges[name]["dst"][:counts[name]]))
                for name in edges}
        block = dgl.create_block(data, num_src_nodes=dict(src), num_dst_nodes=dict(dst))
        for name, values in nodes.items():
            n_id = torch.from_numpy(values["n_id"])
            block.srcnodes[name].data[dgl.NID] = n_id[:src[name]]
            block.dstnodes[name].data[dgl.NID] = n_id[:dst[name]]
            if index == 0:
                for feature, array in features.get(name, {}).items():
                    block.srcnodes[name].data[feature] = torch.from_numpy(array)
            if index == len(layers) - 1 and "label" in values:
                block.dstnodes[name].data[meta["label"]] = torch.from_numpy(
                    values["label"][:dst[name]])
        for name, values in edges.items():
            count = counts[name]
            block.edges[values["type"]].data[dgl.EID] = torch.from_numpy(
                values["e_id"][:count])
            for feature, array in edge_features.get(name, {}).items():
                block.edges[values["type"]].data[feature] = torch.from_numpy(array[:count])
        blocks.append(block)
    input_nodes = {name: torch.from_numpy(values["n_id"]) for name, values in nodes.items()}
    seed_set = meta["seed_set"]
    if not meta["link"]:
        output = {seed_set: input_nodes[seed_set][:meta["batch_size"]]}
        return input_nodes, output, blocks
    return (input_nodes, *_pair_graphs(meta, nodes, seed_set), blocks)


def _pair_graphs(meta: dict, nodes: dict, seed_set: str) -> tuple:
    """The pairs as graphs over the seeds (hop 0): one with every pair, or, where
    negatives have label 0, the pairs given and the negatives apart."""
    ends, labels = meta["edge_label_index"], meta["edge_label"]
    layers = meta["layers"]
    counts = (dict(layers[-1][1]) if layers  # the last block's destinations
              else {name: len(values["n_id"]) for name, values in nodes.items()})
    kind = (seed_set, "link", seed_set)

    def graph(keep):
        made = dgl.heterograph({kind: (torch.from_numpy(ends[0][keep]),
                                       torch.from_numpy(ends[1][keep]))},
                               num_nodes_dict=counts)
        if labels is not None:
            made.edata["label"] = torch.from_numpy(labels[keep])
        return made

    everything = np.ones(ends.shape[1], bool)
    if labels is None or not (labels == 0).any():
        return (graph(everything),)
    return graph(labels != 0), graph(labels == 0)


def to_blocks(batch: MergedBatch, *, label: Optional[str] = None,
              reverse: bool = True, encoder: Optional[FeatureEncoder] = None) -> list:
    """The blocks of a batch, input layer first (module docstring)."""
    return blocks_of(block_items(batch, label=label, reverse=reverse, encoder=encoder))[-1]
