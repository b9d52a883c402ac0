"""A HeteroData from a DataLoader worker to the main process, in a block of shared
memory the worker reuses (sampler.api.shared_blocks: why, and how blocks are reused and
mapped once).

  - a worker copies a batch's tensors into a block of its pool (`sent`) and sends the
    block (its number once the main process has it) with the HeteroData's other
    attributes and where each tensor sits;
  - the main process (`Sent.__reduce__` -> `_received`) makes the tensors views of
    the block's memory, whose death (after the last view's) frees the block.

So a batch never changes under its user. The HeteroData keeps its class on both sides
(SampledHeteroData, whose rule moves a ragged feature's offsets when PyG's Batch
collates, sampler.torch.data): in the worker it is a Sent subclass of it, in the main
process that class again.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from sampler.api.shared_blocks import Blocks, memory_of
from sampler.torch.convert import HeteroData, torch

__all__ = ["Blocks", "Sent", "sent"]


def sent(data, blocks: Blocks):
    """`data` (a HeteroData, changed in place) with its tensors moved into a block of
    `blocks`: still a HeteroData in the worker (a collate_fn there works on it as on any
    other), which pickles as the block, the other attributes and where each tensor sits."""
    tensors = [(store, key, value) for store in data.stores for key, value in store.items()
               if isinstance(value, torch.Tensor)]
    sizes = [tensor.numel() * tensor.element_size() for _, _, tensor in tensors]
    block, memory, offsets = blocks.place(sizes)
    placed = {}
    for (store, key, tensor), at, size in zip(tensors, offsets, sizes):
        entry = (_store_key(store), key, tensor.dtype, tuple(tensor.shape), at, size)
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
        return _received, (block.ref(), rest, layout)


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


def _received(entry, data, layout):
    """The HeteroData in the main process (the module docstring); `entry`: the block, as
    shared_blocks' registry holds it. Runs in the training process once per batch, so it
    keeps to cheap steps: numpy arrays over the block made into tensors (a third of the
    cost of slicing a tensor of it), and each tensor put straight into its store's
    mapping (PyG's own setter also clears caches a store made here has none of)."""
    memory = memory_of(entry)
    whole = None
    stores = {_store_key(store): store for store in data.stores}
    for store_key, key, dtype, shape, at, size in layout:
        as_numpy = _numpy_dtype(dtype)
        if as_numpy is not None:
            # An array whose base is `memory` (the buffer given): the block stays in use
            # until the last tensor made of it dies.
            tensor = torch.from_numpy(np.ndarray(shape, as_numpy, buffer=memory, offset=at))
        else:  # a dtype numpy lacks (bfloat16): a view of a tensor over the whole block
            if whole is None:
                whole = torch.from_numpy(memory)  # it keeps `memory` while views live
            tensor = whole[at:at + size].view(dtype).view(shape)
        if store_key is None:  # the global store
            setattr(data, key, tensor)
        else:
            _put(stores[store_key], key, tensor)
    return data


_NUMPY_DTYPES: dict = {}


def _numpy_dtype(dtype):
    """numpy's dtype of a torch dtype; None for one numpy lacks (found once each)."""
    if dtype not in _NUMPY_DTYPES:
        try:
            _NUMPY_DTYPES[dtype] = torch.empty(0, dtype=dtype).numpy().dtype
        except (TypeError, RuntimeError):
            _NUMPY_DTYPES[dtype] = None
    return _NUMPY_DTYPES[dtype]


def _put(store, key: str, tensor) -> None:
    mapping = getattr(store, "_mapping", None)
    if isinstance(mapping, dict) and not key.startswith("_"):
        mapping[key] = tensor
    else:  # a PyG whose stores keep no plain mapping: its own setter
        store[key] = tensor
