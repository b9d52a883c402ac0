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

from typing import Callable, Optional

from sampler.api.graph import Graph
from sampler.api.loader import (EpochBatches, MinibatchDataset, NodeBatches, PairBatches,
                                first, pair_input, prepare_for_workers, worker_context)
from sampler.job.job import DEFAULT_SEED
from sampler.torch.minibatch import Packed, hetero_data, hetero_items
from unigraph.errors import SamplerError, require_extra

torch_data = require_extra("torch.utils.data", "torch", "sampler.torch")


class _View:
    """A batch as what HeteroData is made of: in a worker, packed into one buffer of
    shared memory (minibatch.Packed), which the main process turns into the HeteroData
    (`finish`); without workers, the HeteroData at once."""

    def __init__(self, features: str, label: Optional[str], reverse: bool,
                 link_edge_type, transform: Optional[Callable], packed: bool):
        self.features, self.label, self.reverse = features, label, reverse
        self.link_edge_type, self.transform, self.packed = link_edge_type, transform, packed

    def __call__(self, batch):
        items = hetero_items(batch, features=self.features, label=self.label,
                             reverse=self.reverse, link_edge_type=self.link_edge_type)
        return Packed(items) if self.packed else self.finish(items)

    def finish(self, made):
        data = hetero_data(made.unpack() if isinstance(made, Packed) else made)
        return data if self.transform is None else self.transform(data)


class _Loader(torch_data.DataLoader):
    def __init__(self, graph: Graph, make, *, batch_size: int, shuffle: bool, drop_last: bool,
                 num_workers: int, seed: int, epoch: int, multiprocessing_context,
                 **kwargs):
        if not isinstance(graph, Graph):
            raise SamplerError(f"give a graph of sampler.api.load_graph, got "
                               f"{type(graph).__name__}")
        self.graph = graph
        self.batches = EpochBatches(len(make), batch_size, shuffle, drop_last, seed, epoch)
        if num_workers:
            prepare_for_workers(graph)
        self._finish = make.view.finish if num_workers else None
        self._pin = bool(kwargs.pop("pin_memory", False))
        super().__init__(MinibatchDataset(make, len(make)), batch_sampler=self.batches,
                         num_workers=num_workers, collate_fn=first,
                         multiprocessing_context=worker_context(num_workers,
                                                                multiprocessing_context),
                         **kwargs)

    def __iter__(self):
        """The batches of one epoch (the next, or the one set_epoch named)."""
        for made in super().__iter__():
            data = made if self._finish is None else self._finish(made)
            yield data.pin_memory() if self._pin else data

    def set_epoch(self, epoch: int) -> None:
        """The epoch of the next pass (then the one after, and so on)."""
        self.batches.set_epoch(epoch)

    @property
    def epoch(self) -> int:
        """The epoch the next pass will be."""
        return self.batches.epoch


class NeighborLoader(_Loader):
    """Mini-batches of node seeds as `HeteroData` (module docstring).

    graph: `sampler.api.load_graph(...)` (tables read, or a graph store mapped).
    input_nodes: the seeds: None (every node of the seed set), ids, a boolean mask over
        `graph.node_ids()`, (seed set, either), or a seeds table (its path or SeedRows).
    input_time: each seed's cut-off (graphs loaded with `cutoffs=True`); a merged batch's
        seeds need one cut-off, `disjoint=True` samples each seed at its own.
    disjoint: each seed's own subgraph (the draws of `Graph.sample`), with `batch`.
    seed, epoch: the draws' seed and the first pass's epoch.
    features, label, reverse: as `merged_to_hetero_data` takes them.
    transform: a function of each HeteroData, called in the main process (workers hand
        it the batch's arrays in one buffer of shared memory, which it makes into the
        HeteroData without a copy)."""

    def __init__(self, graph: Graph, input_nodes=None, input_time=None, *,
                 batch_size: int = 1, shuffle: bool = False, num_workers: int = 0,
                 disjoint: bool = False, seed: int = DEFAULT_SEED, epoch: int = 0,
                 drop_last: bool = False, features: str = "x", label: Optional[str] = None,
                 reverse: bool = True, transform: Optional[Callable] = None,
                 multiprocessing_context=None, **kwargs):
        if getattr(graph, "link", False):
            raise SamplerError("the spec seeds with pairs: use LinkNeighborLoader")
        make = NodeBatches(graph, input_nodes, input_time, seed=seed, disjoint=disjoint,
                           view=_View(features, label, reverse, None, transform,
                                      packed=num_workers > 0))
        super().__init__(graph, make, batch_size=batch_size, shuffle=shuffle,
                         drop_last=drop_last, num_workers=num_workers, seed=seed, epoch=epoch,
                         multiprocessing_context=multiprocessing_context, **kwargs)


class LinkNeighborLoader(_Loader):
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
                 transform: Optional[Callable] = None, multiprocessing_context=None,
                 **kwargs):
        if not getattr(graph, "link", True):
            raise SamplerError("the spec seeds nodes: use NeighborLoader")
        pairs = pair_input(graph, edge_label_index, edge_label, edge_label_time)
        make = PairBatches(graph, pairs, seed=seed, disjoint=disjoint,
                           view=_View(features, None, reverse, link_edge_type, transform,
                                      packed=num_workers > 0))
        super().__init__(graph, make, batch_size=batch_size, shuffle=shuffle,
                         drop_last=drop_last, num_workers=num_workers, seed=seed, epoch=epoch,
                         multiprocessing_context=multiprocessing_context, **kwargs)
