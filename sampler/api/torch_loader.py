"""The torch DataLoader both frameworks' mini-batch loaders are (sampler.torch's
NeighborLoader and LinkNeighborLoader, sampler.dgl's DataLoader), and how a worker hands
the main process a batch: imports torch (never torch_geometric or DGL), and only
those two packages import this module.

A worker turns its batch into a framework's arrays (`make` of sampler.api.loader) and
`Packed` puts every array into one buffer of shared memory: one storage, one file
descriptor per batch, where a PyG or DGL object would pass one per tensor and the main
process would pay for each while the workers sample. The main process turns the
unpacked arrays (views of the buffer, no copy) into the framework's object (`finish`).
"""
from __future__ import annotations

from typing import Callable, Optional

import numpy as np

from sampler.api.loader import EpochBatches, MinibatchDataset, first, prepare_for_workers, \
    worker_context
from unigraph.errors import SamplerError, require_extra

torch = require_extra("torch", "torch", "a mini-batch loader")
torch_data = require_extra("torch.utils.data", "torch", "a mini-batch loader")

_ALIGN = 64


class Packed:
    """Items (key, attribute, value) with every numpy array in one buffer of shared
    memory; `unpack` gives the items back, the arrays as views of the buffer."""

    def __init__(self, items: list):
        layout, offset = [], 0
        for key, attribute, value in items:
            if isinstance(value, np.ndarray):
                layout.append((key, attribute, value.dtype.str, value.shape, offset))
                offset += -(-value.nbytes // _ALIGN) * _ALIGN
            else:
                layout.append((key, attribute, None, value, None))
        self.buffer = torch.empty(max(offset, 1), dtype=torch.uint8).share_memory_()
        memory = self.buffer.numpy()
        for (_, _, dtype, _, at), (_, _, value) in zip(layout, items):
            if dtype is not None:
                memory[at:at + value.nbytes] = np.ascontiguousarray(value).reshape(-1).view(
                    np.uint8)
        self.layout = layout

    def unpack(self) -> list:
        memory = self.buffer.numpy()
        items = []
        for key, attribute, dtype, shape, at in self.layout:
            if dtype is None:
                items.append((key, attribute, shape))
                continue
            dtype = np.dtype(dtype)
            count = int(np.prod(shape, dtype=np.int64))
            items.append((key, attribute,
                          memory[at:at + count * dtype.itemsize].view(dtype).reshape(shape)))
        return items


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
        result = self.build(made.unpack() if isinstance(made, Packed) else made)
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
        super().__init__(MinibatchDataset(make, len(make)), batch_sampler=self.batches,
                         num_workers=num_workers, collate_fn=first,
                         multiprocessing_context=context, **kwargs)

    def __iter__(self):
        """The batches of one epoch (the next, or the one set_epoch named)."""
        for made in super().__iter__():
            result = made if self._finish is None else self._finish(made)
            yield _pinned(result) if self._pin else result

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
