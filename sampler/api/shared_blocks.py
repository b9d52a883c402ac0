"""Blocks of shared memory in which a DataLoader worker hands batches to the main process,
reused, and mapped by the main process once (sampler.torch.handoff for SampleDataset's
HeteroData, sampler.api.torch_loader.Packed for the mini-batch loaders).

Left to torch, each tensor a worker sends is moved into a fresh shared-memory segment,
and the main process fetches its file descriptor over a socket (an authenticated
connection to the worker's resource sharer, per segment) and maps it. Both are dear
beside a batch: fresh pages are faulted in and zeroed again for every batch, and the
descriptor's round trip cost the main process about 40% of its time per batch of
`SampleDataset` (py-spy, docs/benchmarks/decode.json's machine). So:

  - each worker process keeps a pool of blocks (`Blocks.of_process()`); a batch is
    copied into a free one, which is marked in use (its first byte, `state`);
  - the first time a block is sent, it goes as a torch storage (one descriptor); the
    main process keeps it mapped in a registry, by (worker pid, block number), and
    from then on the worker sends the number only (`BlockRef`);
  - in the main process a batch's arrays are views of the block through one numpy
    array (`memory_of`); when it dies (after the last view), a finalizer marks the block
    free again, and known: the worker reuses it, by number;
  - the worker never waits for a block: while all are in use it makes another (a caller
    keeping every batch costs what fresh segments cost), keeping at most `POOL`; a block
    it lets go, and every block when the worker ends, is marked retired, and the main
    process lets go of retired blocks, and of those of workers no longer alive (not in
    use), whenever a batch is received or released.

A worker process is also set up once for making batches (`settle_worker`):

  - it keeps the memory it frees for its next batches (`_keep_freed_memory`, glibc's
    malloc only): by default glibc gives large blocks back to the system as soon as
    they are freed, and a worker then faults every page of its next batch in again
    (about 1,900 page faults per mini-batch of 1,024 seeds, a quarter of its time);
  - the objects it holds then, those it inherited from the training process (torch's
    and PyG's modules alone are about 360,000), are frozen (gc.freeze): Python's full
    collections, which a worker's batches set off every few hundred, walked all of them
    (about 200 ms each here, the worker making nothing meanwhile, and the other waiting
    on it once the main process waits for its batch), and wrote to each, copying the
    parent's pages into the worker. Over 12 passes of `SampleDataset` (decode
    benchmark's folder, 3 rounds) a pass took 0.788 -> 0.742 s with 1 worker and
    0.494 -> 0.438 s with 2.

A block whose batch never arrives (a loader stopped midway) stays in use until the
worker ends. The main process holds a worker's blocks (a few batches' size) while the
worker lives; after it, until its next batch received or released from any worker.
"""
from __future__ import annotations

import ctypes
import gc
import itertools
import multiprocessing.util
import os
import platform
import weakref
from typing import Optional

import numpy as np

from unigraph.errors import SamplerError, require_extra

torch = require_extra("torch", "torch", "a DataLoader's workers")

ALIGN = 64     # bytes: every array of a block starts at a multiple of this
HEADER = ALIGN  # the block's first bytes: its state, then its retired flag
_STATE, _RETIRED = 0, 1
FREE, IN_USE, KNOWN = 0, 1, 2  # state: free (never mapped by the main process) / holding
#                                a batch / free and mapped by the main process
_SPARE = 1.25   # a new block has room for batches this much larger
POOL = 8        # blocks kept per worker (more are made while all are in use)


class Block:
    """A uint8 tensor of shared memory (`tensor`), its header as numpy (`header`), its
    key (worker pid, number) and whether the main process has it mapped (`known`, as
    it was when the block was taken)."""

    __slots__ = ("tensor", "header", "key", "known")

    def __init__(self, size: int, key: tuple):
        self.tensor = _shared(size)
        self.header = self.tensor[:HEADER].numpy()
        self.key, self.known = key, False

    def ref(self) -> "BlockRef":
        return BlockRef(self.key, None if self.known else self.tensor)


class Blocks:
    """A worker's pool of blocks."""

    _of_process: Optional["Blocks"] = None

    def __init__(self):
        self._blocks: list = []
        self._numbers = itertools.count()

    @classmethod
    def of_process(cls) -> "Blocks":
        """The pool of this process (made on first use; its blocks are retired when the
        process ends, a DataLoader worker's normal end included)."""
        if cls._of_process is None:
            settle_worker()
            cls._of_process = cls()
            multiprocessing.util.Finalize(cls._of_process, _retire,
                                          args=(cls._of_process._blocks,), exitpriority=10)
        return cls._of_process

    def take(self, size: int) -> Block:
        """A block with room for `size` bytes after its header, marked in use."""
        need = HEADER + size
        for block in self._blocks:
            state = int(block.header[_STATE])
            if state != IN_USE and len(block.tensor) >= need:
                block.header[_STATE] = IN_USE
                block.known = state == KNOWN
                return block
        free = [b for b in self._blocks if b.header[_STATE] != IN_USE]
        if len(self._blocks) >= POOL and free:  # room for the new one: drop a small free one
            free[0].header[_RETIRED] = 1
            self._blocks.remove(free[0])
        block = Block(int(need * _SPARE), (os.getpid(), next(self._numbers)))
        block.header[_STATE] = IN_USE
        if len(self._blocks) < POOL:
            self._blocks.append(block)
        else:  # for this batch only: let go once the main process is done with it
            block.header[_RETIRED] = 1
        return block

    def place(self, sizes: list[int]) -> tuple[Block, np.ndarray, list[int]]:
        """A block taken for arrays of these sizes in bytes, the block's memory (numpy
        uint8, the worker's side) and where each array starts."""
        offsets, offset = [], HEADER
        for size in sizes:
            offsets.append(offset)
            offset += -(-size // ALIGN) * ALIGN
        block = self.take(offset - HEADER)
        return block, block.tensor.numpy(), offsets


_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameters
_MMAP_THRESHOLD = 32 << 20  # glibc's largest: arrays above it are still mapped apart
_TRIM_THRESHOLD = 1 << 30


_settled = False  # settle_worker has run in this process (a forked one starts unsettled)


def settle_worker() -> None:
    """Sets this process, a DataLoader worker, up for making batches, once (the module
    docstring): glibc keeps what it frees, and what the process holds now is frozen."""
    global _settled
    if _settled:
        return
    _settled = True
    _keep_freed_memory()
    gc.freeze()


def _keep_freed_memory() -> None:
    """glibc's malloc in this process (a worker) keeps what it frees, up to 1 GB at the
    top of its heap, and takes arrays up to 32 MB from its heap: a worker's memory stays
    at its largest batch's size instead of being faulted in anew for every batch."""
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return
    mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD)
    mallopt(_M_TRIM_THRESHOLD, _TRIM_THRESHOLD)


def _retire(blocks: list) -> None:
    for block in blocks:
        block.header[_RETIRED] = 1


def _shared(size: int):
    """`size` bytes of shared memory (torch's constructor of shared storage where it has
    one: made shared from the start, nothing moved when sent)."""
    new_shared = getattr(torch.UntypedStorage, "_new_shared", None)
    if new_shared is None:
        return torch.zeros(size, dtype=torch.uint8).share_memory_()
    return torch.empty(0, dtype=torch.uint8).set_(new_shared(size))


class BlockRef:
    """How a block travels: its tensor the first time (torch passes its descriptor),
    its key only once the main process has it mapped."""

    __slots__ = ("key", "tensor")

    def __init__(self, key: tuple, tensor):
        self.key, self.tensor = key, tensor

    def __reduce__(self):
        return _mapped, (self.key, self.tensor)


# ---- the main process's side ------------------------------------------------------------

_MAPPED: dict = {}  # key -> (uint8 tensor, header): the blocks of workers mapped here


def _mapped(key: tuple, tensor) -> tuple:
    """The block of `key`: registered if it comes with its tensor, else looked up."""
    if tensor is not None:
        _MAPPED[key] = (tensor, tensor[:HEADER].numpy())
        _prune()
    entry = _MAPPED.get(key)
    if entry is None:
        raise SamplerError(f"a DataLoader worker (pid {key[0]}) sent block {key[1]} of "
                           f"shared memory, which this process does not have")
    return entry


def memory_of(entry: tuple) -> np.ndarray:
    """The block's memory as numpy, for this batch: every array of the batch is a view
    of it, and its death (after the last view's) marks the block free and known."""
    tensor, header = entry
    memory = tensor.numpy()
    weakref.finalize(memory, _release, header)
    return memory


def _release(header: np.ndarray) -> None:
    header[_STATE] = KNOWN
    _prune()


def _prune() -> None:
    """Lets go of the blocks their workers retired, or whose worker is gone (ended
    without retiring them: killed, say), none in use."""
    alive: dict = {}
    for key, (_, header) in list(_MAPPED.items()):
        if header[_STATE] == IN_USE:
            continue
        pid = key[0]
        if pid not in alive:
            alive[pid] = _alive(pid)
        if header[_RETIRED] or not alive[pid]:
            _MAPPED.pop(key, None)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's: a pid used again, so not our worker
        return False
    return True


def _forked() -> None:
    """A forked process (a worker) neither holds its parent's blocks nor shares its pool,
    and is not yet settled."""
    global _settled
    _MAPPED.clear()
    Blocks._of_process = None
    _settled = False


os.register_at_fork(after_in_child=_forked)
