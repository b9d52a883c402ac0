"""Epochs of batches for training: the order of each epoch (shuffled reproducibly from
the seed and the epoch), and sampling calls run ahead in a thread (`prefetch`)."""
from __future__ import annotations

import collections
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Optional

import numpy as np

from sampler.api.subgraphs import Subgraphs
from sampler.core import rng
from unigraph.errors import SamplerError

_SHUFFLE_SALT = rng.name_salt("api-shuffle")


def prefetch_depth(prefetch) -> int:
    if isinstance(prefetch, bool) or not isinstance(prefetch, int) or prefetch < 0:
        raise SamplerError(f"prefetch must be a whole number of 0 or more, got {prefetch!r}")
    return prefetch


def ahead(calls: Iterator[Callable[[], Subgraphs]], depth: int) -> Iterator[Subgraphs]:
    """Each call's result, in order; with depth > 0 up to `depth` calls run ahead in a
    background thread while the caller holds the current result. Closing the iterator
    early cancels what has not started and waits for what has."""
    if depth == 0:
        for call in calls:
            yield call()
        return
    with ThreadPoolExecutor(1, "sampler-prefetch") as pool:
        pending: collections.deque = collections.deque()
        try:
            for call in calls:
                pending.append(pool.submit(call))
                if len(pending) > depth:
                    yield pending.popleft().result()
            while pending:
                yield pending.popleft().result()
        finally:
            for future in pending:
                future.cancel()


def epoch_order(n: int, shuffle: bool, seed: int, epoch: int) -> np.ndarray:
    """The rows 0 .. n-1 in epoch `epoch`'s order: shuffled from the seed and the epoch
    by counter-based keys (the same order on every machine and numpy), or as given."""
    order = np.arange(n)
    if shuffle:
        keys = rng.mix(np.uint64(seed & (2**64 - 1)), np.uint64(_SHUFFLE_SALT),
                       np.uint64(epoch), order.astype(np.uint64))
        order = np.argsort(keys, kind="stable")
    return order


def epochs_of(n: int, batch_size: int, shuffle: bool, epochs: Optional[int], seed: int,
            drop_last: bool, first_epoch: int) -> Iterator[tuple[int, np.ndarray]]:
    """(epoch, the rows of one batch) for every batch of every epoch."""
    if batch_size < 1:
        raise SamplerError(f"batch_size {batch_size}: give at least 1")
    if epochs is not None and epochs < 0:
        raise SamplerError(f"epochs {epochs}: give 0 or more, or None for no end")
    epoch = first_epoch
    while epochs is None or epoch < first_epoch + epochs:
        order = epoch_order(n, shuffle, seed, epoch)
        end = n - n % batch_size if drop_last else n
        for lo in range(0, end, batch_size):
            yield epoch, order[lo:lo + batch_size]
        epoch += 1
