"""The torch DataLoader both frameworks' mini-batch loaders are (sampler.torch's
NeighborLoader and LinkNeighborLoader, sampler.dgl's DataLoader), and how a worker hands
the main process a batch: imports torch (never torch_geometric or DGL), and only
those two packages import this module.

A worker turns its batch into a framework's arrays (`make` of sampler.api.loader) and
`Packed` puts every array into one block of shared memory the worker reuses
(sampler.api.shared_blocks): one block per batch, mapped by the main process once, where
a PyG or DGL object would pass one fresh segment and one file descriptor per tensor, and
the main process would pay for each while the workers sample. The main process turns
the unpacked arrays (views of the block, no copy) into the framework's object (`finish`).

With persistent workers, the workers go on from one epoch into the next (EpochStream):
while the main process takes the last batches of an epoch, they already make the first
ones of the next, as they do within an epoch (else each epoch's end would leave the
workers idle: a worker with the epoch's short last batch, or none, waits for the
other; then both wait for the next pass to start). A pass that is not the one the
workers went on with (`set_epoch` named another, or the last pass stopped midway)
starts them again at its epoch, what they made ahead dropped.
"""
from __future__ import annotations

import math
from typing import Callable, Optional

import numpy as np

from sampler.api.loader import EpochBatches, EpochStream, MinibatchDataset, first, \
    prepare_for_workers, worker_context
from sampler.api.shared_blocks import Blocks, memory_of
from unigraph.errors import SamplerError, require_extra

torch = require_extra("torch", "torch", "a mini-batch loader")
torch_data = require_extra("torch.utils.data", "torch", "a mini-batch loader")


class Packed:
    """Items (key, attribute, value) with every numpy array in one block of shared
    memory (the pool of this worker process). Pickled, it is an `_Unpacked` in the main
    process, whose `unpack` gives the items back, the arrays views of the block."""

    def __init__(self, items: list):
        arrays = [value for _, _, value in items if isinstance(value, np.ndarray)]
        block, memory, offsets = Blocks.of_process().place([a.nbytes for a in arrays])
        layout, at = [], iter(offsets)
        for key, attribute, value in items:
            if isinstance(value, np.ndarray):
                offset = next(at)
                memory[offset:offset + value.nbytes] = np.ascontiguousarray(
                    value).reshape(-1).view(np.uint8)
                layout.append((key, attribute, value.dtype.str, value.shape, offset))
            else:
                layout.append((key, attribute, None, value, None))
        self.block, self.layout = block, layout

    def __reduce__(self):
        return _unpacked, (self.block.ref(), self.layout)


class _Unpacked:
    """A Packed in the main process: its items, the arrays views of the block."""

    def __init__(self, items: list):
        self.items = items

    def unpack(self) -> list:
        return self.items


def _unpacked(entry, layout) -> _Unpacked:
    memory = memory_of(entry)
    items = []
    for key, attribute, dtype, shape, at in layout:
        if dtype is None:
            items.append((key, attribute, shape))
            continue
        dtype = np.dtype(dtype)
        size = math.prod(shape) * dtype.itemsize  # math's: numpy's costs more than the view
        items.append((key, attribute, memory[at:at + size].view(dtype).reshape(shape)))
    return _Unpacked(items)


class View:
    """A batch as a framework's object: `items(batch)` its arrays (in the worker),
    `build(items)` the object (in the main process with workers), then `transform`."""

    def __init__(self, items: Callable, build: Callable, transform: Optional[Callable],
                 packed: bool):
        self.items, self.build, self.transform, self.packed = items, build, transform, packed

    def __call__(self, batch):
        made = self.items(batch)
        return Packed(made) if self.packed else self.finish(made)

    def finish(self, made):
        result = self.build(made.unpack() if isinstance(made, _Unpacked) else made)
        return result if self.transform is None else self.transform(result)


class MinibatchLoader(torch_data.DataLoader):
    """A DataLoader of one epoch's batches per pass (sampler.api.loader): `make` turns a
    BatchKey into a batch through its `view` (a View)."""

    def __init__(self, graph, make, *, batch_size: int, shuffle: bool, drop_last: bool,
                 num_workers: int, seed: int, epoch: int, multiprocessing_context,
                 **kwargs):
        from sampler.api.graph import Graph

        if not isinstance(graph, Graph):
            raise SamplerError(f"give a graph of sampler.api.load_graph, got "
                               f"{type(graph).__name__}")
        self.graph = graph
        self.batches = EpochBatches(len(make), batch_size, shuffle, drop_last, seed, epoch)
        num_workers, context = worker_context(num_workers, multiprocessing_context)
        if num_workers:
            prepare_for_workers(graph)
        else:
            for option in ("prefetch_factor", "persistent_workers"):  # workers' options
                kwargs.pop(option, None)
        make.view.packed = num_workers > 0
        self._finish = make.view.finish if num_workers else None
        self._pin = bool(kwargs.pop("pin_memory", False))
        self._stream = EpochStream(self.batches) if num_workers and kwargs.get(
            "persistent_workers") else None
        self._ahead = None  # the epoch the workers went on with (a stream's), if known
        super().__init__(MinibatchDataset(make, len(make)),
                         batch_sampler=self._stream or self.batches, num_workers=num_workers,
                         collate_fn=first, multiprocessing_context=context, **kwargs)

    def __iter__(self):
        """The batches of one epoch (the next, or the one set_epoch named)."""
        for made in self._made():
            result = made if self._finish is None else self._finish(made)
            yield _pinned(result) if self._pin else result

    def _made(self):
        if self._stream is None:
            yield from super().__iter__()
            return
        epoch = self.batches.epoch
        self.batches.epoch += 1
        if self._ahead != epoch or self._iterator is None:
            self._stream.start = epoch
            super().__iter__()  # the workers (re)started at this epoch
        self._ahead, made = None, self._iterator
        for _ in range(len(self.batches)):
            yield next(made)
        self._ahead = epoch + 1  # the workers went on with it

    def set_epoch(self, epoch: int) -> None:
        """The epoch of the next pass (then the one after, and so on)."""
        self.batches.set_epoch(epoch)

    @property
    def epoch(self) -> int:
        """The epoch the next pass will be."""
        return self.batches.epoch


def _pinned(result):
    if hasattr(result, "pin_memory"):
        return result.pin_memory()
    if isinstance(result, (tuple, list)):
        return type(result)(_pinned(r) for r in result)
    if isinstance(result, dict):
        return {k: _pinned(v) for k, v in result.items()}
    return result
