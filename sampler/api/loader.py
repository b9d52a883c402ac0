"""What PyTorch loaders of mini-batches share, framework-neutral: the loader's seeds
(prepared once), each epoch's batches as small keys, and the dataset a DataLoader's
workers turn keys into batches with (sampler.torch.NeighborLoader, sampler.dgl).

    EpochBatches (main process) ──BatchKey(epoch, index, positions)──► worker:
        MinibatchDataset.__getitems__(key) ─ make ─► a MergedBatch, then its view

A batch is a function of (graph, spec, seed, epoch, the batch's seeds): a worker holds
no state that changes it, so any number of workers gives the same batches, in order
(the DataLoader keeps the order). The graph reaches the workers by fork (a store's
arrays are mapped files, a loaded graph's arrays copy-on-write pages): nothing is
pickled but keys and finished batches.
"""
from __future__ import annotations

import dataclasses
import logging
import multiprocessing
import os
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from sampler.api.batching import epoch_order
from sampler.api.minibatches import known_pairs, minibatch, node_seeds
from sampler.api.seed_tables import SeedRows
from sampler.memory.engine import fork_is_safe
from sampler.minibatch.sample import seed_fingerprints
from unigraph.errors import SamplerError

if TYPE_CHECKING:
    from sampler.api.graph import Graph

log = logging.getLogger("sampler")


@dataclasses.dataclass(frozen=True, eq=False)
class BatchKey:
    """One batch of one epoch: positions into the loader's prepared seeds (pairs)."""

    epoch: int
    index: int
    positions: np.ndarray


class EpochBatches:
    """The batch sampler: each pass over it is one epoch's batches, in that epoch's order
    (shuffled from the seed and the epoch); the next pass is the next epoch unless
    `set_epoch` says which."""

    def __init__(self, n: int, batch_size: int, shuffle: bool, drop_last: bool, seed: int,
                 first_epoch: int = 0):
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise SamplerError(f"batch_size {batch_size!r}: give a whole number of at least 1")
        if first_epoch < 0:
            raise SamplerError(f"epoch {first_epoch}: give 0 or more")
        self.n, self.batch_size, self.shuffle, self.drop_last = n, batch_size, shuffle, drop_last
        self.seed = seed
        self.epoch = first_epoch  # the epoch of the next pass

    def set_epoch(self, epoch: int) -> None:
        if isinstance(epoch, bool) or not isinstance(epoch, int) or epoch < 0:
            raise SamplerError(f"epoch {epoch!r}: give a whole number, 0 or more")
        self.epoch = epoch

    def __len__(self) -> int:
        if self.drop_last:
            return self.n // self.batch_size
        return -(-self.n // self.batch_size)

    def __iter__(self):  # a generator: the epoch moves on once a pass starts (torch's
        epoch = self.epoch  # DataLoader calls iter() on it more than once per pass)
        self.epoch += 1
        yield from self.keys(epoch)

    def keys(self, epoch: int):
        """The batches of `epoch`, in their order."""
        order = epoch_order(self.n, self.shuffle, self.seed, epoch)
        for index in range(len(self)):
            lo = index * self.batch_size
            yield BatchKey(epoch, index, order[lo:lo + self.batch_size])


class EpochStream:
    """The batch sampler of a loader whose workers persist: the batches of one epoch
    after another from `start`, without end, so that the workers go on into the next
    epoch while the main process takes the last batches of one (MinibatchLoader reads
    each pass's batches off it, and starts it again where a pass is not the next)."""

    def __init__(self, batches: EpochBatches):
        self.batches, self.start = batches, batches.epoch

    def __len__(self) -> int:
        return len(self.batches)

    def __iter__(self):
        epoch = self.start
        while True:
            yield from self.batches.keys(epoch)
            epoch += 1


class MinibatchDataset:
    """A map-style dataset whose items are whole batches: torch's DataLoader hands each
    BatchKey the batch sampler yields to `__getitems__` (in a worker, or in the main
    process without workers)."""

    def __init__(self, make: Callable[[BatchKey], Any], n: int):
        self.make, self.n = make, n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index):
        raise TypeError("a mini-batch loader's dataset makes whole batches (__getitems__)")

    def __getitems__(self, key: BatchKey):
        return self.make(key)


def first(batch):
    """The DataLoader's collate_fn: a batch comes made already."""
    return batch


class NodeBatches:
    """Makes node-seed batches: the loader's seeds prepared once (found, as codes)."""

    def __init__(self, graph: "Graph", input_nodes, input_time, *, seed: int, disjoint: bool,
                 view: Callable):
        ids, cutoffs = _node_input(graph, input_nodes, input_time)
        prepared, missing = node_seeds(graph, ids, cutoffs)
        if missing:
            shown = ", ".join(_shown(m) for m in missing[:3])
            raise SamplerError(f"input_nodes: {len(missing)} of {len(ids)} are not nodes of "
                               f"'{graph.seed_set}' (first: {shown})")
        if not disjoint and prepared.cutoffs is not None and len(
                np.unique(prepared.cutoffs)) > 1:
            raise SamplerError("input_time: merged batches share nodes between seeds, so "
                               "their seeds need one cut-off; give disjoint=True for each "
                               "seed's own cut-off")
        self.graph, self.seeds, self.seed, self.disjoint, self.view = (graph, prepared, seed,
                                                                       disjoint, view)

    def __len__(self) -> int:
        return len(self.seeds)

    def __call__(self, key: BatchKey):
        batch = minibatch(self.graph, self.seeds.take(key.positions), seed=self.seed,
                          epoch=key.epoch, disjoint=self.disjoint)
        return self.view(batch)


class PairBatches:
    """Makes link batches: the pairs decoded once; a batch draws its negatives (loaded
    with `negatives=K`) for its epoch, every pair of the loader a known positive."""

    def __init__(self, graph: "Graph", pairs: SeedRows, *, seed: int, disjoint: bool,
                 view: Callable):
        if pairs.cutoffs is not None and not disjoint and len(np.unique(pairs.cutoffs)) > 1:
            raise SamplerError("edge_label_time: merged batches share nodes between pairs, "
                               "so their pairs need one cut-off; give disjoint=True for "
                               "each pair's own cut-off")
        self.graph, self.pairs, self.seed, self.disjoint, self.view = (graph, pairs, seed,
                                                                       disjoint, view)
        self.known = (known_pairs(graph, (pairs.sources, pairs.targets))
                      if graph._plan.negatives else None)

    def __len__(self) -> int:
        return len(self.pairs)

    def __call__(self, key: BatchKey):
        rows = self.pairs.take(key.positions)
        batch = self.graph.sample_merged_pairs(
            rows.sources, rows.targets, seed=self.seed, epoch=key.epoch, cutoffs=rows.cutoffs,
            features=rows.features or None, known_positives=self.known,
            disjoint=self.disjoint)
        batch.input_id = key.positions[batch.input_id]  # rows of the loader's pairs
        return self.view(batch)


def _node_input(graph: "Graph", input_nodes, input_time):
    """(ids, cut-offs) of a loader's input_nodes: None (every node of the seed set), ids,
    a boolean mask over Graph.node_ids(), (node set, either), a seeds table's path or
    its SeedRows."""
    if isinstance(input_nodes, tuple) and len(input_nodes) == 2 and isinstance(
            input_nodes[0], str):
        if input_nodes[0] != graph.seed_set:
            raise SamplerError(f"input_nodes: the spec seeds node set '{graph.seed_set}', "
                               f"not '{input_nodes[0]}'")
        input_nodes = input_nodes[1]
    if isinstance(input_nodes, (str, os.PathLike)):
        input_nodes = graph.read_seeds(os.fspath(input_nodes))
    if isinstance(input_nodes, SeedRows):
        if input_time is None:
            input_time = input_nodes.cutoffs
        input_nodes = input_nodes.ids
    if input_nodes is None:
        ids = graph.node_ids()
    else:
        values = np.asarray(input_nodes.numpy() if hasattr(input_nodes, "numpy")
                            else input_nodes)
        if values.dtype == bool:
            nodes = graph.node_ids()
            if values.shape != (len(nodes),):
                raise SamplerError(f"input_nodes: a mask needs one value per node of "
                                   f"'{graph.seed_set}' ({len(nodes)}), got {values.shape}")
            ids = nodes[values]
        else:
            ids = values
    if input_time is not None:
        input_time = np.asarray(input_time.numpy() if hasattr(input_time, "numpy")
                                else input_time)
    return ids, input_time


def pair_input(graph: "Graph", edge_label_index, edge_label, edge_label_time) -> SeedRows:
    """A link loader's pairs: a pairs table's path or SeedRows, or (sources, targets) ids
    with their labels (the `_readout` `label`) and cut-offs."""
    if isinstance(edge_label_index, (str, os.PathLike)):
        return graph.read_seeds(os.fspath(edge_label_index))
    if isinstance(edge_label_index, SeedRows):
        return edge_label_index
    if edge_label_index is None or len(edge_label_index) != 2:
        raise SamplerError("edge_label_index: give (sources, targets) ids, a pairs table or "
                           "its SeedRows")
    sources, targets = (np.asarray(e.numpy() if hasattr(e, "numpy") else e)
                        for e in edge_label_index)
    if len(sources) != len(targets):
        raise SamplerError(f"edge_label_index: {len(sources)} sources but {len(targets)} "
                           f"targets")
    features = {}
    if edge_label is not None:
        features["label"] = np.asarray(edge_label.numpy() if hasattr(edge_label, "numpy")
                                       else edge_label)
    cutoffs = None if edge_label_time is None else np.asarray(
        edge_label_time.numpy() if hasattr(edge_label_time, "numpy") else edge_label_time)
    return SeedRows(sources=sources, targets=targets, features=features, cutoffs=cutoffs)


def worker_context(num_workers: int, multiprocessing_context) -> tuple[int, Any]:
    """(workers, the DataLoader's multiprocessing context): fork, which shares the graph's
    pages with the workers, unless the caller chose a context. Where forking is unsafe
    (gRPC loaded, say by Beam or a BigQuery graph: sampler.memory.engine.fork_is_safe) or
    impossible, the batches are made in this process instead, and a warning says so (as
    the memory engine writes its shards itself there): the same batches, one core."""
    if num_workers == 0 or multiprocessing_context is not None:
        return num_workers, multiprocessing_context
    why = None
    if "fork" not in multiprocessing.get_all_start_methods():
        why = "this platform cannot fork"
    elif not fork_is_safe():
        why = "forking is unsafe once gRPC is loaded (Beam, a BigQuery graph)"
    if why is not None:
        log.warning("num_workers=%d: %s, so the batches are made in this process (the same "
                    "batches; map a graph store in a fresh process for workers)",
                    num_workers, why)
        return 0, None
    return num_workers, multiprocessing.get_context("fork")


def prepare_for_workers(graph: "Graph") -> None:
    """Builds what the graph builds on first use (row lookups, fingerprints, the features'
    index) before workers fork, so that they share it rather than build it each."""
    memory = graph._memory
    probe = np.zeros(1, np.int64)
    for adjacency in memory.adjacency.values():
        adjacency.rows_of(probe)
    for table in memory.node_tables.values():
        table.positions_of(probe)
    seed_fingerprints(memory, graph.seed_set)
    graph._features()


def _shown(value) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)

