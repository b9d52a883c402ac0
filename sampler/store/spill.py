"""Blocks of records, and the run files they are spilled to while a store is built.

A *block* is a dict of equal-length columns, each a numpy array (ids as 'S', codes,
numbers, dense features [n, *shape]), an object array of byte strings (string
features), or a Ragged of either (unigraph.columnar.ragged): any column a reader gives.
sampler.store.external_sort sorts blocks that do not fit in memory by writing sorted
*runs* to disk and merging them; this module holds the block operations and the run
files.

A run file is a sequence of *pages* (a few thousand records each), each page its
columns' arrays one after another in .npy format (np.lib.format, no pickle): a string
column as its byte lengths and one blob, a Ragged column as its row lengths and then
its values. Pages are read back front to back; a reader gives the disk it has read
back to the file system as it goes (fallocate's punch-hole, where the file system has
it), so that a merge of runs does not hold its input and its output on disk at once.
"""
from __future__ import annotations

import ctypes
import os
from typing import Iterator

import numpy as np

from unigraph.columnar.batches import FeatureValues
from unigraph.columnar.ragged import Ragged, concat, take

Block = dict[str, FeatureValues]

PYTHON_BYTES_OVERHEAD = 40  # a bytes object beyond its content (an object array's item)


def block_len(block: Block) -> int:
    return len(next(iter(block.values()))) if block else 0


def block_take(block: Block, index: np.ndarray) -> Block:
    return {key: take(values, index) for key, values in block.items()}


def block_slice(block: Block, lo: int, hi: int) -> Block:
    """Rows lo:hi (views where the column is an array)."""
    hi = min(hi, block_len(block))
    return {key: values[lo:hi] if not isinstance(values, Ragged)
            else take(values, np.arange(lo, hi)) for key, values in block.items()}


def block_concat(blocks: list[Block]) -> Block:
    blocks = [b for b in blocks if block_len(b)] or blocks[:1]
    if len(blocks) == 1:
        return blocks[0]
    return {key: concat([b[key] for b in blocks]) for key in blocks[0]}


def values_nbytes(values: FeatureValues) -> int:
    """Memory a column holds (byte strings with Python's per-object cost)."""
    if isinstance(values, Ragged):
        return values.row_lengths.nbytes + values_nbytes(values.values)
    if values.dtype == object:
        return sum(len(v) for v in values.reshape(-1)) + values.size * (
            PYTHON_BYTES_OVERHEAD + 8)
    return values.nbytes


def block_nbytes(block: Block) -> int:
    return sum(values_nbytes(v) for v in block.values())


# ---- columns as plain arrays ------------------------------------------------------------

def _flatten(values: FeatureValues, arrays: list[np.ndarray]) -> None:
    """A column's arrays, appended to `arrays` (read back by _unflatten)."""
    if isinstance(values, Ragged):
        arrays.append(values.row_lengths)
        _flatten(values.values, arrays)
    elif values.dtype == object:  # byte strings: their lengths, then one blob
        flat = values.reshape(-1)
        arrays.append(np.array([len(v) for v in flat], np.int64).reshape(values.shape))
        arrays.append(np.frombuffer(b"".join(flat), np.uint8))
    else:
        arrays.append(np.ascontiguousarray(values))


def column_kind(values: FeatureValues) -> tuple:
    """How a column is laid out in a page: ("ragged", inner) ... ("strings",) or ("array",)."""
    if isinstance(values, Ragged):
        return ("ragged",) + column_kind(values.values)
    return ("strings",) if values.dtype == object else ("array",)


def _unflatten(kind: tuple, arrays: Iterator[np.ndarray]) -> FeatureValues:
    if kind[0] == "ragged":
        lengths = next(arrays)
        return Ragged(_unflatten(kind[1:], arrays), lengths)
    if kind[0] == "strings":
        lengths, blob = next(arrays), next(arrays).tobytes()
        ends = np.cumsum(lengths.reshape(-1))
        values = np.empty(lengths.size, object)
        values[:] = [blob[a:b] for a, b in zip((ends - lengths.reshape(-1)).tolist(),
                                               ends.tolist())]
        return values.reshape(lengths.shape)
    return next(arrays)


# ---- run files ---------------------------------------------------------------------------

class RunWriter:
    """A run file written page by page; `rows` counts its records."""

    def __init__(self, path: str, page_bytes: int):
        self.path, self.page_bytes = path, page_bytes
        self.file = open(path, "wb")
        self.rows = 0
        self.kinds: dict[str, tuple] | None = None

    def write(self, block: Block) -> None:
        n = block_len(block)
        if not n:
            return
        if self.kinds is None:
            self.kinds = {key: column_kind(values) for key, values in block.items()}
        per_row = max(1, block_nbytes(block) // n)
        rows = max(1, self.page_bytes // per_row)
        for lo in range(0, n, rows):
            page = block_slice(block, lo, min(n, lo + rows)) if rows < n else block
            arrays: list[np.ndarray] = []
            for values in page.values():
                _flatten(values, arrays)
            np.lib.format.write_array(self.file, np.array([block_len(page)], np.int64))
            for array in arrays:
                np.lib.format.write_array(self.file, array, allow_pickle=False)
        self.rows += n

    def close(self) -> None:
        self.file.close()


class RunReader:
    """A run file's pages, front to back; the part read is given back to the file system
    (the file keeps its size; `close` deletes it)."""

    RELEASE_BYTES = 64 << 20  # read this much before giving it back

    def __init__(self, path: str, kinds: dict[str, tuple]):
        self.path, self.kinds = path, kinds
        self.file = open(path, "r+b")  # writable: punching holes needs it
        self.released = 0

    def next_page(self) -> Block | None:
        header = self.file.read(1)
        if not header:
            return None
        self.file.seek(-1, os.SEEK_CUR)
        read = np.lib.format.read_array
        count = int(read(self.file)[0])
        page = {}

        def arrays():
            while True:
                yield read(self.file, allow_pickle=False)

        for key, kind in self.kinds.items():
            page[key] = _unflatten(kind, arrays())
        if block_len(page) != count:
            raise AssertionError(f"{self.path}: a page of {block_len(page)} rows, not {count}")
        at = self.file.tell()
        if at - self.released >= self.RELEASE_BYTES:
            punch_hole(self.file.fileno(), self.released, at - self.released)
            self.released = at
        return page

    def pages(self) -> Iterator[Block]:
        while (page := self.next_page()) is not None:
            yield page

    def close(self) -> None:
        self.file.close()
        if os.path.exists(self.path):
            os.remove(self.path)


_FALLOC_FL_KEEP_SIZE, _FALLOC_FL_PUNCH_HOLE = 1, 2
try:
    _fallocate = ctypes.CDLL(None, use_errno=True).fallocate
    _fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64]
except (AttributeError, OSError):  # not glibc/Linux: the disk is given back at deletion
    _fallocate = None


def punch_hole(fd: int, offset: int, length: int) -> bool:
    """Frees a byte range of an open file on disk (it then reads as zeros); False where
    the system cannot."""
    if _fallocate is None or length <= 0:
        return False
    return _fallocate(fd, _FALLOC_FL_KEEP_SIZE | _FALLOC_FL_PUNCH_HOLE, offset, length) == 0
