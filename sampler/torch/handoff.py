"""A HeteroData from a DataLoader worker to the main process, in shared memory the
worker reuses.

Left to torch, a worker moves each tensor into a fresh shared-memory segment and the
main process maps each one (a file descriptor fetched over a socket per segment).
Fresh shared memory is the expensive part: every page is faulted in and zeroed again
for every batch (on the machine of docs/benchmarks/decode.json, filling a fresh block
of a batch's 4 MB cost about 8 times as much as filling one already used). So:

  - a worker copies a batch's tensors into one block of a small pool of shared-memory
    blocks (`sent`) and sends the block with the HeteroData's other attributes and
    where each tensor sits (one storage, one file descriptor per batch);
  - the main process (`Sent.__reduce__` -> `_received`) makes the tensors views of
    the block, through a numpy array whose death says that none of them is left: a
    finalizer then clears the block's first byte, its "in use" flag;
  - the worker reuses a block whose flag is clear (it never waits for one: it makes
    another block while all are in use, so a caller keeping every batch costs what
    fresh segments cost).

The flag is cleared only when the main process holds no view of the block (the numpy
array is freed after the last tensor's storage), so a batch never changes under its
user. A block whose batch never arrives (a loader stopped midway) stays in use until
the worker exits; the memory goes with the processes, as torch's own segments do.

The HeteroData keeps its class on both sides (SampledHeteroData, whose rule moves a
ragged feature's offsets when PyG's Batch collates, sampler.torch.data): in the worker
it is a Sent subclass of it, in the main process that class again.
"""
from __future__ import annotations

import weakref
from typing import Optional

import numpy as np

from sampler.torch.convert import HeteroData, torch

_ALIGN = 64     # bytes: every tensor of a block starts at a multiple of this
_HEADER = _ALIGN  # the block's first bytes: byte 0 is 1 while the main process uses it
_SPARE = 1.25   # a new block has room for batches this much larger
_POOL = 8       # blocks kept per worker (more are made while all are in use)


class Blocks:
    """A worker's pool of shared-memory blocks (uint8 tensors, flag first)."""

    def __init__(self):
        self._blocks: list = []

    def take(self, size: int):
        """A block with room for `size` bytes after its header, marked in use."""
        need = _HEADER + size
        for i, (block, flag) in enumerate(self._blocks):
            if flag[0] == 0 and len(block) >= need:
                flag[0] = 1
                return block
        free = [i for i, (_, flag) in enumerate(self._blocks) if flag[0] == 0]
        if len(self._blocks) >= _POOL and free:  # room for the new one: drop a small free one
            del self._blocks[free[0]]
        block = _shared(int(need * _SPARE))
        flag = block[:1].numpy()
        flag[0] = 1
        if len(self._blocks) < _POOL:
            self._blocks.append((block, flag))
        return block


def _shared(size: int):
    """`size` bytes of shared memory (torch's constructor of shared storage where it has
    one: made shared from the start, nothing moved when sent)."""
    new_shared = getattr(torch.UntypedStorage, "_new_shared", None)
    if new_shared is None:
        return torch.zeros(size, dtype=torch.uint8).share_memory_()
    return torch.empty(0, dtype=torch.uint8).set_(new_shared(size))


def sent(data, blocks: Blocks):
    """`data` (a HeteroData, changed in place) with its tensors moved into a block of
    `blocks`: still a HeteroData in the worker (a collate_fn there works on it as on any
    other), which pickles as the block, the other attributes and where each tensor sits."""
    tensors = [(store, key, value) for store in data.stores for key, value in store.items()
               if isinstance(value, torch.Tensor)]
    layout, offset = [], _HEADER
    for store, key, tensor in tensors:
        size = tensor.numel() * tensor.element_size()
        layout.append((_store_key(store), key, tensor.dtype, tuple(tensor.shape), offset, size))
        offset += -(-size // _ALIGN) * _ALIGN
    block = blocks.take(offset - _HEADER)[:offset]
    memory = block.numpy()
    placed = {}
    for (store, key, tensor), entry in zip(tensors, layout):
        at, size = entry[-2:]
        view = torch.from_numpy(memory[at:at + size]).view(tensor.dtype).view(tensor.shape)
        view.copy_(tensor)
        store[key] = view
        placed[entry[:2]] = (view, entry)
    original = type(data)
    object.__setattr__(data, "__class__", _sent_class(original))
    object.__setattr__(data, "_handoff", (block, placed, original))
    return data


class Sent(HeteroData):
    """A HeteroData whose tensors sit in one block of shared memory (`sent`). Pickled
    (by the DataLoader's queue), it is a HeteroData of its class before again in the main
    process, its tensors views of the block."""

    def __reduce__(self):
        block, placed, original = self.__dict__["_handoff"]
        rest, layout = original(), []
        for store in self.stores:
            key = _store_key(store)
            target = rest if key is None else rest[key]  # the stores in their order
            for name, value in store.items():
                view, entry = placed.get((key, name), (None, None))
                if value is view:
                    layout.append(entry)
                else:  # not a tensor, or one set after `sent` (a collate_fn's): as it is
                    setattr(target, name, value)
        return _received, (block, rest, layout)


_SENT_CLASSES: dict = {HeteroData: Sent}


def _sent_class(original: type) -> type:
    """Sent for a HeteroData, and a Sent subclass of any subclass of it (made once)."""
    if original not in _SENT_CLASSES:
        _SENT_CLASSES[original] = type(f"Sent{original.__name__}", (Sent, original),
                                       {"__module__": __name__})
    return _SENT_CLASSES[original]


def _store_key(store) -> Optional[object]:
    """A store's node or edge type; None for the global store."""
    return getattr(store, "_key", None)


def _received(block, data, layout):
    """The HeteroData in the main process (Sent's module docstring)."""
    memory = block.numpy()
    weakref.finalize(memory, _release, block[:1].numpy())
    whole = torch.from_numpy(memory)  # its storage keeps `memory` until its last view dies
    for store_key, key, dtype, shape, at, size in layout:
        tensor = whole[at:at + size].view(dtype).view(shape)
        if store_key is None:  # the global store
            setattr(data, key, tensor)
        else:
            data[store_key][key] = tensor
    return data


def _release(flag: np.ndarray) -> None:
    flag[0] = 0
