"""A mini-batch as framework-neutral numpy arrays: every node once per batch (per seed
with `disjoint`), hop after hop, and the sampled edges between them, hop after hop.

PyG's layout (NeighborLoader): a node set's nodes are the seeds, then the nodes each
hop reached first, with `num_sampled_nodes` per hop; an edge set's edges are those of
hop 1, hop 2, ... with `num_sampled_edges` per hop. Every layer of a GNN is then a
prefix (`layers`): a layer's destination nodes are the first nodes of its sources, as
in DGL's message flow graphs, and `sampler.torch.to_hetero_data` / `sampler.dgl`
make PyG's and DGL's objects from it.

Edges are kept as the graph has them: `sources` the nodes an op sampled from (the seed
side), `targets` the nodes it reached. Messages to the seeds go the other way (the
views turn them round).
"""
from __future__ import annotations

import dataclasses
from typing import Optional

import numpy as np


@dataclasses.dataclass(eq=False)
class NodeSetBatch:
    """A node set's nodes in the batch, by local index."""

    codes: np.ndarray               # int64: the node's code in the graph (sorted ids)
    num_sampled_nodes: list[int]    # per hop 0 .. num_hops: the nodes new at that hop
    slots: Optional[np.ndarray] = None  # disjoint: the seed (pair) each node is sampled for

    def __len__(self) -> int:
        return len(self.codes)


@dataclasses.dataclass(eq=False)
class EdgeSetBatch:
    """An edge set's sampled edges in the batch, hop after hop, ends as local indices."""

    edge_set: str
    source_set: str
    target_set: str
    sources: np.ndarray          # int64 local index in source_set: the node sampled from
    targets: np.ndarray          # int64 local index in target_set: the node reached
    positions: np.ndarray        # int64: the edge's position in the graph's adjacency
    num_sampled_edges: list[int]  # per hop 1 .. num_hops

    def __len__(self) -> int:
        return len(self.sources)


@dataclasses.dataclass(eq=False)
class Layer:
    """One GNN layer of a batch (layer 0 reads the input features): its source nodes,
    its destination nodes (the first of the sources) and its edges, each a count of a
    node set's (edge set's) first items in the batch."""

    index: int
    src: dict[str, int]     # node set -> the layer's first-n source nodes
    dst: dict[str, int]     # node set -> the layer's first-n destination nodes
    edges: dict[str, int]   # edge set -> the layer's first-n edges


@dataclasses.dataclass(eq=False)
class MergedBatch:
    """One mini-batch (module docstring). Node seeds: the seed set's first `batch_size`
    nodes, `input_id` their rows in the call (merged: a seed given twice is one node,
    at its first row). Link seeds: `edge_label_index` (2 x pairs, local indices in the
    seed set), `edge_label` (1 for a pair given, 0 for a negative) and `input_id` of the
    pairs given."""

    seed_set: str
    num_hops: int
    disjoint: bool
    nodes: dict[str, NodeSetBatch]
    edges: dict[str, EdgeSetBatch]
    input_id: np.ndarray
    batch_size: int
    seed: int
    epoch: int
    seed_time: Optional[np.ndarray] = None       # node seeds' cut-offs (pairs': per pair)
    edge_label_index: Optional[np.ndarray] = None
    edge_label: Optional[np.ndarray] = None
    pair_features: dict = dataclasses.field(default_factory=dict)  # the pairs' columns
    missing: list = dataclasses.field(default_factory=list)  # ids asked for, not in the set
    report: dict = dataclasses.field(default_factory=dict)   # sampled edges per op, ...
    # Per op, what it drew, as it drew it (each frontier node's edges by position): the
    # nodes it sampled from and reached (codes; disjoint: keys, sampler.core.merged) and
    # each edge's adjacency position. The dense EgoGraph (ego.py) is read from these.
    op_edges: dict = dataclasses.field(default_factory=dict)
    source: object = None  # where the features are (sampler.minibatch.features.Features)

    @property
    def link(self) -> bool:
        return self.edge_label_index is not None

    @property
    def num_nodes(self) -> int:
        return sum(len(n) for n in self.nodes.values())

    @property
    def num_edges(self) -> int:
        return sum(len(e) for e in self.edges.values())

    def layers(self) -> list[Layer]:
        """The layers of a `num_hops`-layer GNN, input layer first: layer i's sources
        are the nodes of hops 0 .. num_hops - i, its destinations those of hops
        0 .. num_hops - i - 1 and its edges those of hops 1 .. num_hops - i (what PyG's
        trim_to_layer keeps), so the last layer's destinations are the seeds."""
        result = []
        for i in range(self.num_hops):
            keep = self.num_hops - i
            result.append(Layer(
                i, {name: int(sum(n.num_sampled_nodes[:keep + 1]))
                    for name, n in self.nodes.items()},
                {name: int(sum(n.num_sampled_nodes[:keep])) for name, n in self.nodes.items()},
                {name: int(sum(e.num_sampled_edges[:keep])) for name, e in self.edges.items()}))
        return result

    def __getstate__(self):
        """Pickled (to another process) without the graph its features come from."""
        state = dict(self.__dict__)
        state["source"] = None
        return state

    def __repr__(self) -> str:
        kind = "pairs" if self.link else "seeds"
        count = self.edge_label_index.shape[1] if self.link else self.batch_size
        return (f"MergedBatch({count} {kind} of '{self.seed_set}', "
                f"{'disjoint' if self.disjoint else 'merged'}, {self.num_hops} hops, "
                f"{self.num_nodes} nodes, {self.num_edges} edges)")
