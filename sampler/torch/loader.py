"""PyG's loaders over the sampler: `NeighborLoader` (node seeds) and `LinkNeighborLoader`
(pairs), torch DataLoaders of `HeteroData` mini-batches laid out as PyG's own
(sampler.torch.minibatch), sampled by the spec's ops (docs/minibatches.md).

Parameters follow PyG's where they apply (`input_nodes`, `input_time`, `disjoint`,
`edge_label_index`, `edge_label`, `edge_label_time`, `transform`, and DataLoader's
`batch_size`, `shuffle`, `num_workers`, `drop_last`, `prefetch_factor`,
`persistent_workers`, `pin_memory`); the fan-outs are the spec's, so there is no
`num_neighbors`. Batches are made in the workers (sampler.api.loader): forked, they
share the graph's pages; each batch is a function of (graph, seed, epoch, its seeds),
so any `num_workers` gives the same batches. A worker hands the main process a batch's
arrays in one buffer of shared memory, which becomes the HeteroData there (one
descriptor per batch, not one per tensor). Every pass is a new epoch (new order, new
draws), or the one `set_epoch` names.
"""
from __future__ import annotations

import functools
from typing import Callable, Optional

from sampler.api.graph import Graph
from sampler.api.loader import NodeBatches, PairBatches, pair_input
from sampler.api.torch_loader import MinibatchLoader, View
from sampler.features import FeatureEncoder
from sampler.job.job import DEFAULT_SEED
from sampler.torch.minibatch import hetero_data, hetero_items
from unigraph.errors import SamplerError


def _view(features: str, label: Optional[str], reverse: bool, link_edge_type,
          transform: Optional[Callable], packed: bool,
          encoder: Optional[FeatureEncoder]) -> View:
    return View(functools.partial(hetero_items, features=features, label=label,
                                  reverse=reverse, link_edge_type=link_edge_type,
                                  encoder=encoder),
                hetero_data, transform, packed)


class NeighborLoader(MinibatchLoader):
    """Mini-batches of node seeds as `HeteroData` (module docstring).

    graph: `sampler.api.load_graph(...)` (tables read, or a graph store mapped).
    input_nodes: the seeds: None (every node of the seed set), ids, a boolean mask over
        `graph.node_ids()`, (seed set, either), or a seeds table (its path or SeedRows).
    input_time: each seed's cut-off (graphs loaded with `cutoffs=True`); a merged batch's
        seeds need one cut-off, `disjoint=True` samples each seed at its own.
    disjoint: each seed's own subgraph (the draws of `Graph.sample`), with `batch`.
    seed, epoch: the draws' seed and the first pass's epoch.
    features, label, reverse: as `merged_to_hetero_data` takes them.
    encoder: every feature by a feature spec (sampler.features.FeatureEncoder, e.g.
        `FeatureEncoder.fit(graph)`: the same indices as `sample`'s files); applied in
        the workers, which get it with the dataset.
    transform: a function of each HeteroData, called in the main process (workers hand
        it the batch's arrays in one buffer of shared memory, which it makes into the
        HeteroData without a copy)."""

    def __init__(self, graph: Graph, input_nodes=None, input_time=None, *,
                 batch_size: int = 1, shuffle: bool = False, num_workers: int = 0,
                 disjoint: bool = False, seed: int = DEFAULT_SEED, epoch: int = 0,
                 drop_last: bool = False, features: str = "x", label: Optional[str] = None,
                 reverse: bool = True, transform: Optional[Callable] = None,
                 encoder: Optional[FeatureEncoder] = None, multiprocessing_context=None,
                 **kwargs):
        if getattr(graph, "link", False):
            raise SamplerError("the spec seeds with pairs: use LinkNeighborLoader")
        make = NodeBatches(graph, input_nodes, input_time, seed=seed, disjoint=disjoint,
                           view=_view(features, label, reverse, None, transform,
                                      packed=num_workers > 0, encoder=encoder))
        super().__init__(graph, make, batch_size=batch_size, shuffle=shuffle,
                         drop_last=drop_last, num_workers=num_workers, seed=seed, epoch=epoch,
                         multiprocessing_context=multiprocessing_context, **kwargs)


class LinkNeighborLoader(MinibatchLoader):
    """Mini-batches of pairs as `HeteroData`, as PyG's LinkNeighborLoader gives them: the
    pairs' ends are the seeds, `edge_label_index`, `edge_label` and `input_id` on
    `link_edge_type`. Negatives are the graph's (`load_graph(..., negatives=K)`), drawn
    anew every epoch, every pair of the loader a known positive; no edge between the two
    ends of a pair of the batch is sampled.

    edge_label_index: (sources, targets) ids, or a pairs table (its path or SeedRows).
    edge_label: the pairs' `label` (without negatives); edge_label_time: cut-offs.
    Other parameters as NeighborLoader's."""

    def __init__(self, graph: Graph, edge_label_index=None, edge_label=None,
                 edge_label_time=None, *, batch_size: int = 1, shuffle: bool = False,
                 num_workers: int = 0, disjoint: bool = False, seed: int = DEFAULT_SEED,
                 epoch: int = 0, drop_last: bool = False, features: str = "x",
                 reverse: bool = True, link_edge_type=None,
                 transform: Optional[Callable] = None,
                 encoder: Optional[FeatureEncoder] = None, multiprocessing_context=None,
                 **kwargs):
        if not getattr(graph, "link", True):
            raise SamplerError("the spec seeds nodes: use NeighborLoader")
        pairs = pair_input(graph, edge_label_index, edge_label, edge_label_time)
        make = PairBatches(graph, pairs, seed=seed, disjoint=disjoint,
                           view=_view(features, None, reverse, link_edge_type, transform,
                                      packed=num_workers > 0, encoder=encoder))
        super().__init__(graph, make, batch_size=batch_size, shuffle=shuffle,
                         drop_last=drop_last, num_workers=num_workers, seed=seed, epoch=epoch,
                         multiprocessing_context=multiprocessing_context, **kwargs)
