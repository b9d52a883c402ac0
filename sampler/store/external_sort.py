"""Sorting more records than memory holds: sorted runs spilled to disk, then merged.

    sorter = ExternalSort(folder, "edges", key=("targets",), budget=budget)
    for block in blocks:
        sorter.add(block)
    for block in sorter.sorted_blocks():   # blocks in key order, each of bounded size
        ...
    sorter.close()

Records are blocks of columns (sampler.store.spill). `add` buffers blocks until they
hold `budget.run_bytes`, then sorts the buffer by its key columns and writes it as a
run. `sorted_blocks` merges the runs: each run is read a page at a time; every step
takes, from each run's page in hand, the records whose key is at most the smallest
last key among those pages (nothing later in any run can come before them), sorts
those together and yields them. More runs than `budget.fan_in` are first merged in
groups into longer runs (another pass over the disk). Records that never filled a run
are sorted in memory and never touch the disk.

Keys: the first key column is byte strings ('S') or integers, the others integers.
Equal keys come out in no particular order (a caller that needs one gives the
tie-breaker as a key column). `unique=k` keeps, of the records that agree on the first
k key columns, the first in key order only (unique=1 on ids alone: the sorted distinct
ids; on (id, source): each id once, from the source that sorts first).
"""
from __future__ import annotations

import dataclasses
import os
from typing import Iterator, Sequence

import numpy as np

from sampler.core.arrays import argsort, order_keys, run_starts
from sampler.store.spill import (Block, RunReader, RunWriter, block_concat, block_len,
                                 block_nbytes, block_slice, block_take)

MIN_PAGE_BYTES = 16 << 10
MAX_PAGE_BYTES = 8 << 20


@dataclasses.dataclass(frozen=True)
class Budget:
    """How a build's working memory (bytes beside the interpreter and the readers) is
    shared by what may be held at once: a sorter's buffer while it is sorted (about
    2.5 times its records), a merge's pages, a bucket of edges being laid out."""

    work: int

    @property
    def run_bytes(self) -> int:
        return max(1, self.work // 5)

    @property
    def merge_bytes(self) -> int:
        return max(1, self.work // 5)

    @property
    def page_bytes(self) -> int:
        return int(min(MAX_PAGE_BYTES, max(MIN_PAGE_BYTES, self.work // 512)))

    @property
    def fan_in(self) -> int:
        """Runs merged at once: each holds a page, and a step may hold them all again,
        sorted."""
        return max(2, self.merge_bytes // (3 * self.page_bytes))

    @property
    def bucket_bytes(self) -> int:
        """An edge bucket's records: laid out, they take about four times as much."""
        return max(1, self.work // 10)

    def part(self, share: int) -> "Budget":
        """A budget for one of `share` sorters that fill at the same time."""
        return Budget(max(1, self.work // share))


def sort_order(block: Block, key: Sequence[str]) -> np.ndarray:
    """The permutation that sorts a block by its key columns (stable)."""
    columns = [order_keys(block[k]) if block[k].dtype.kind == "S" else block[k] for k in key]
    if len(columns) == 1:
        return argsort(columns[0])
    return np.lexsort(columns[::-1])


def _count_at_most(block: Block, key: Sequence[str], bound: tuple) -> int:
    """Records of a sorted block whose key is at most `bound`."""
    lo, hi = 0, block_len(block)
    for k, value in zip(key, bound):
        column = block[k][lo:hi]
        first = int(np.searchsorted(column, value, side="left"))
        last = int(np.searchsorted(column, value, side="right"))
        if last == first:  # no record has this key's value: the bound falls between
            return lo + first
        lo, hi = lo + first, lo + last
    return hi


def _last_key(block: Block, key: Sequence[str]) -> tuple:
    i = block_len(block) - 1
    return tuple(block[k][i].item() if hasattr(block[k][i], "item") else block[k][i]
                 for k in key)


class ExternalSort:
    def __init__(self, folder: str, name: str, key: Sequence[str], budget: Budget, *,
                 unique: int = 0):
        self.folder, self.name, self.key = folder, name, tuple(key)
        self.budget, self.unique = budget, unique
        self.buffer: list[Block] = []
        self.buffered = 0
        self.runs: list[tuple[str, dict]] = []  # (path, column kinds)
        self.serial = 0
        os.makedirs(folder, exist_ok=True)

    def add(self, block: Block) -> None:
        if not block_len(block):
            return
        self.buffer.append(block)
        self.buffered += block_nbytes(block)
        if self.buffered >= self.budget.run_bytes:
            self.spill()

    def open_run(self) -> RunWriter:
        """A run the caller writes itself, records in key order (and distinct, for
        `unique`); `close_run` adds it."""
        return self._writer()

    def close_run(self, writer: RunWriter) -> None:
        self._finish(writer)

    def _sorted_buffer(self) -> Block:
        block = block_concat(self.buffer)
        self.buffer, self.buffered = [], 0
        block = block_take(block, sort_order(block, self.key))
        return self._distinct(block, None) if self.unique else block

    def _distinct(self, block: Block, before: tuple | None) -> Block:
        """The block without records that repeat the record before in the first
        `unique` key columns (`before`: the key of the record before the block)."""
        key = self.key[:self.unique]
        keep = run_starts(*(block[k] for k in key))
        if before is not None and len(keep) and _last_key(block_slice(block, 0, 1),
                                                          key) == before[:self.unique]:
            keep[0] = False
        return block if keep.all() else block_take(block, np.flatnonzero(keep))

    def _writer(self) -> RunWriter:
        self.serial += 1
        return RunWriter(os.path.join(self.folder, f"{self.name}.run{self.serial}"),
                         self.budget.page_bytes)

    def _finish(self, writer: RunWriter) -> None:
        writer.close()
        if writer.rows:
            self.runs.append((writer.path, writer.kinds))
        else:
            os.remove(writer.path)

    def spill(self) -> None:
        """Writes what is buffered as a run."""
        if not self.buffer:
            return
        writer = self._writer()
        writer.write(self._sorted_buffer())
        self._finish(writer)

    def sorted_blocks(self) -> Iterator[Block]:
        """Every record added, in key order, in blocks of bounded size."""
        if not self.runs:
            if self.buffer:
                block = self._sorted_buffer()
                step = max(1, self.budget.merge_bytes // max(1, block_nbytes(block)
                                                              // max(1, block_len(block))))
                for lo in range(0, block_len(block), step):
                    yield block_slice(block, lo, lo + step)
            return
        self.spill()
        while len(self.runs) > self.budget.fan_in:  # merge groups into longer runs
            group, self.runs = self.runs[:self.budget.fan_in], self.runs[self.budget.fan_in:]
            writer = self._writer()
            for block in self._merge(group):
                writer.write(block)
            self._finish(writer)
        runs, self.runs = self.runs, []
        yield from self._merge(runs)

    def _merge(self, runs: list[tuple[str, dict]]) -> Iterator[Block]:
        readers = [RunReader(path, kinds) for path, kinds in runs]
        try:
            pages = [reader.next_page() for reader in readers]
            before = None
            while True:
                live = [i for i, page in enumerate(pages) if page is not None]
                if not live:
                    return
                bound = min(_last_key(pages[i], self.key) for i in live)
                parts = []
                for i in live:
                    n = _count_at_most(pages[i], self.key, bound)
                    if n:
                        parts.append(block_slice(pages[i], 0, n))
                    if n == block_len(pages[i]):
                        pages[i] = readers[i].next_page()
                    elif n:
                        pages[i] = block_slice(pages[i], n, block_len(pages[i]))
                block = block_concat(parts)
                block = block_take(block, sort_order(block, self.key))
                if self.unique:
                    block = self._distinct(block, before)
                    before = bound
                if block_len(block):
                    yield block
        finally:
            for reader in readers:
                reader.close()

    def close(self) -> None:
        """Deletes the runs (idempotent)."""
        for path, _ in self.runs:
            if os.path.exists(path):
                os.remove(path)
        self.runs, self.buffer = [], []
