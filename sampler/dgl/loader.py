"""`sampler.dgl.DataLoader`: mini-batches of blocks as `dgl.dataloading.DataLoader` with a
NeighborSampler hands them out, sampled by the spec's ops (docs/minibatches.md).

Each batch is (input_nodes, output_nodes, blocks) for node seeds; for link specs
(input_nodes, pair_graph, blocks), or (input_nodes, pair_graph, neg_pair_graph, blocks)
when the graph was loaded with negatives. The workers, the epochs and the seeds are
sampler.torch.NeighborLoader's (sampler.api.loader): forked workers share the graph,
any number of them gives the same batches, every pass is a new epoch.
"""
from __future__ import annotations

import functools
from typing import Callable, Optional

from sampler.api.graph import Graph
from sampler.api.loader import NodeBatches, PairBatches, pair_input
from sampler.api.torch_loader import MinibatchLoader, View
from sampler.dgl.blocks import block_items, blocks_of
from sampler.features import FeatureEncoder
from sampler.job.job import DEFAULT_SEED


class DataLoader(MinibatchLoader):
    """Batches of blocks (module docstring).

    graph: `sampler.api.load_graph(...)`. indices: the seeds, as
    sampler.torch.NeighborLoader's `input_nodes` (None: every node of the seed set);
    for link specs the pairs, as LinkNeighborLoader's `edge_label_index` (a pairs table,
    or (sources, targets) ids). label: a dense feature of the seed set, put on the last
    block's destination nodes under its name. encoder: every feature by a feature spec
    (lists padded, sampler.dgl.blocks). Others as NeighborLoader's."""

    def __init__(self, graph: Graph, indices=None, *, batch_size: int = 1,
                 shuffle: bool = False, num_workers: int = 0, disjoint: bool = False,
                 seed: int = DEFAULT_SEED, epoch: int = 0, drop_last: bool = False,
                 label: Optional[str] = None, reverse: bool = True, input_time=None,
                 edge_label=None, transform: Optional[Callable] = None,
                 encoder: Optional[FeatureEncoder] = None, multiprocessing_context=None,
                 **kwargs):
        view = View(functools.partial(block_items, label=label, reverse=reverse,
                                      encoder=encoder), blocks_of,
                    transform, packed=num_workers > 0)
        if graph.link:
            make = PairBatches(graph, pair_input(graph, indices, edge_label, input_time),
                               seed=seed, disjoint=disjoint, view=view)
        else:
            make = NodeBatches(graph, indices, input_time, seed=seed, disjoint=disjoint,
                               view=view)
        super().__init__(graph, make, batch_size=batch_size, shuffle=shuffle,
                         drop_last=drop_last, num_workers=num_workers, seed=seed, epoch=epoch,
                         multiprocessing_context=multiprocessing_context, **kwargs)
