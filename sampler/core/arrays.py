"""Sorting primitives the core uses everywhere, faster than their numpy spellings.

numpy 2.x's `np.unique` hashes integers before sorting, which measured 14x slower
than a plain sort here (4M int64: 3.8 s against 0.27 s), and its string path sorts
slowly too. These helpers give the same results (sorted distinct values, and the
inverse codes) by one sort, or by no sort when the values are codes of a known range.
"""
from __future__ import annotations

import dataclasses
import mmap
import tempfile

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


def run_starts(*columns: np.ndarray) -> np.ndarray:
    """True where a run of equal rows begins (a row: the columns' values at one index),
    so at 0 and wherever a row differs from the one before. One pass per column, no
    concatenation (np.r_[True, x[1:] != x[:-1]] copies and parses its arguments)."""
    starts = np.empty(len(columns[0]), bool)
    if len(starts):
        starts[0] = True
        np.not_equal(columns[0][1:], columns[0][:-1], out=starts[1:])
        for column in columns[1:]:
            starts[1:] |= column[1:] != column[:-1]
    return starts


def offsets(counts: np.ndarray) -> np.ndarray:
    """int64 [0, counts[0], counts[0] + counts[1], ...]: where each of the counted runs
    begins, and the end of the last."""
    result = np.zeros(len(counts) + 1, np.int64)
    np.cumsum(counts, out=result[1:])
    return result


# Integers within a range this many times their count are counted rather than sorted:
# 250K int64 among 1.1M, counted 1.1 ms, sorted 3.3 ms; 50K among 1.1M, 1.5 against 0.7.
COUNT_RANGE_FACTOR = 8


def unique(values: np.ndarray) -> np.ndarray:
    """The distinct values, sorted (as np.unique): integers of a small range (codes)
    counted, anything else sorted."""
    if len(values) < 2:
        return np.asarray(values).copy()
    if values.dtype.kind in "iu":
        low, high = int(values.min()), int(values.max())
        if high - low < COUNT_RANGE_FACTOR * len(values) + 1024:
            distinct = unique_codes(values - low, high - low + 1)
            return distinct.astype(values.dtype) + values.dtype.type(low)
    keys = byte_keys(values)
    if keys is not None:  # byte strings: their integer keys sorted, then back to bytes
        return keys.to_bytes(unique(keys.keys))
    ordered = np.sort(values)
    return ordered[run_starts(ordered)]


# Byte-string ids ('S') are sorted and searched by numpy one byte comparison at a time:
# 250K ids of 12 bytes sorted in 43 ms, their uint64 keys in 5 ms.
KEY_BYTES = 8


@dataclasses.dataclass(frozen=True)
class ByteKeys:
    """Byte strings that share a prefix and differ in at most KEY_BYTES bytes after it
    ("paper/123", "paper/45"), as uint64 keys that order and compare like the strings:
    the bytes after the prefix, NUL-padded (as 'S' pads) and read big-endian. numpy
    orders 'S' values bytewise over their NUL-padded width, so equal keys are equal
    strings and the keys sort as the strings do. `to_bytes` turns keys back into the
    strings, byte for byte."""

    keys: np.ndarray  # uint64
    prefix: bytes
    width: int        # the strings' itemsize

    def to_bytes(self, keys: np.ndarray) -> np.ndarray:
        rest = self.width - len(self.prefix)
        raw = np.empty((len(keys), self.width), np.uint8)
        raw[:, :len(self.prefix)] = np.frombuffer(self.prefix, np.uint8)
        raw[:, len(self.prefix):] = keys.astype(">u8").view(np.uint8).reshape(-1, 8)[:, :rest]
        return raw.view(f"S{self.width}").reshape(-1)


def byte_keys(values: np.ndarray, prefix: bytes | None = None) -> ByteKeys | None:
    """The ByteKeys of an 'S' array: of its own longest common prefix, or of `prefix` (a
    dictionary's); None where they do not fit KEY_BYTES after it (or a value lacks the
    prefix), or the array is not byte strings."""
    if values.dtype.kind != "S" or not len(values) or values.dtype.itemsize == 0:
        return None
    width = values.dtype.itemsize
    raw = np.ascontiguousarray(values).view(np.uint8).reshape(-1, width)
    if prefix is None:
        # The longest prefix every value shares with the first: a sorted array's is that
        # of its ends, any other's is found column by column.
        ends = raw[[0, -1]]
        shared = int(np.argmin(np.append(ends[0] == ends[1], False)))
        if shared < width - KEY_BYTES:
            return None
        same = (raw[:, :shared] == raw[0, :shared]).all(axis=0)
        shared = int(np.argmin(np.append(same, False)))
        prefix = raw[0, :shared].tobytes()
    elif len(prefix) > width or (raw[:, :len(prefix)] != np.frombuffer(prefix, np.uint8)).any():
        return None
    rest = width - len(prefix)
    if rest > KEY_BYTES:
        return None
    padded = np.zeros((len(raw), KEY_BYTES), np.uint8)
    padded[:, :rest] = raw[:, len(prefix):]
    return ByteKeys(padded.view(">u8").reshape(-1).astype(np.uint64), prefix, width)


def order_keys(values: np.ndarray) -> np.ndarray:
    """Keys that sort and compare like `values`: byte strings' ByteKeys where they have
    them, else the values themselves."""
    keys = byte_keys(values)
    return values if keys is None else keys.keys


def unique_codes(codes: np.ndarray, size: int) -> np.ndarray:
    """The distinct codes in [0, size), ascending, without sorting (as np.unique)."""
    seen = np.zeros(size, bool)
    seen[codes] = True
    return np.flatnonzero(seen)


def unique_inverse(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(sorted distinct values, int64 index of each value among them), as np.unique
    with return_inverse=True. Byte-string ids are hashed by Arrow and only the distinct
    ones sorted; integers of a small range (codes) are counted, others sorted."""
    if values.dtype.kind == "S" and len(values) and values.dtype.itemsize:
        return _unique_inverse_bytes(values)
    if values.dtype.kind in "iu" and len(values):
        low, high = int(values.min()), int(values.max())
        if high - low < 4 * len(values) + 1024:  # codes of a known range: count, no sort
            seen = np.zeros(high - low + 1, bool)
            seen[values - low] = True
            rank = np.cumsum(seen) - 1
            return np.flatnonzero(seen).astype(values.dtype) + low, rank[values - low]
    if len(values) and bool(np.all(values[1:] >= values[:-1])):  # sorted already: no sort
        first = run_starts(values)
        return values[first], np.cumsum(first) - 1
    order = argsort(values)
    ordered = values[order]
    first = run_starts(ordered)
    inverse = np.empty(len(values), np.int64)
    inverse[order] = np.cumsum(first) - 1
    return ordered[first], inverse


# A dictionary built for one batch, whose codes are looked up many times more often
# than it holds ids, may have a lookup table this many times its size: 250K codes into
# 220K among 1.1M, the table built and gathered 1.5 ms, binary-searched 44 ms.
LOOKUP_TABLE_FACTOR = 64


_UNKNOWN = object()  # not yet computed


class SortedIndex:
    """Where values are in a sorted array of distinct values: `positions(values)` is
    each value's index there, -1 where it is absent. Integer codes (the in-memory
    engine's ids) that fill their range densely are looked up by one gather from a
    code -> position table (4 bytes per code), built on first use; a sorted array that
    is 0..n-1 (a node set's table, its codes) needs no table at all. Over a graph
    store's mapped arrays the table is itself a mapped temporary file, so that it is
    page cache the kernel may evict, not the process's own memory (docs/store.md).
    Anything else (byte-string ids, sparse codes) is binary-searched. 50K sorted codes
    among 1.9M (a batch's lookups at OGBN-MAG size): searched 8.4 ms, gathered 0.16 ms
    here."""

    def __init__(self, ordered: np.ndarray, table_factor: int = 4):
        """`table_factor`: codes up to this many times their count (plus 1024) are
        looked up in a table; a caller that looks up far more values than `ordered`
        holds, and drops the index soon, may allow a sparser table."""
        self.ordered = ordered
        self._by_code: np.ndarray | None = None
        self._keys: ByteKeys | None | object = _UNKNOWN  # byte strings' keys, made on first use
        codes = (ordered.dtype.kind in "iu" and len(ordered) > 0 and int(ordered[0]) >= 0
                 and len(ordered) < 2**31)
        # Distinct and sorted from 0 to n-1: the codes are their own positions.
        self._identity = codes and int(ordered[-1]) == len(ordered) - 1
        self._dense = self._identity or (
            codes and int(ordered[-1]) < table_factor * len(ordered) + 1024)

    def positions(self, values: np.ndarray) -> np.ndarray:
        ordered = self.ordered
        if len(ordered) == 0:
            return np.full(len(values), -1, np.int64)
        if self._dense and values.dtype.kind in "iu":
            table_size = len(ordered) if self._identity else int(ordered[-1]) + 1
            inside = (values >= 0) & (values < table_size)
            if not inside.all():
                found = np.full(len(values), -1, np.int64)
                found[inside] = self.positions(values[inside])
                return found
            if self._identity:
                return values.astype(np.int64)
            return self._table()[values].astype(np.int64)
        if ordered.dtype.kind == "S":
            ordered, values = self._as_keys(values)
            if (ordered.dtype == values.dtype  # keys, or byte strings of one width
                    and len(values) * HASH_LOOKUP_FACTOR >= len(ordered)):
                return _hashed_positions(ordered, values)
        pos = np.minimum(np.searchsorted(ordered, values), len(ordered) - 1)
        return np.where(ordered[pos] == values, pos, -1).astype(np.int64)

    def _as_keys(self, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(the sorted byte strings, the values) as ByteKeys' keys where both have them
        (the values with the strings' prefix), else as they are."""
        if self._keys is _UNKNOWN:  # threads may race here: each makes the same keys
            self._keys = byte_keys(self.ordered)
        if self._keys is not None:
            query = byte_keys(values, self._keys.prefix)
            if query is not None:
                return self._keys.keys, query.keys
        if values.dtype.kind == "S" and values.dtype.itemsize <= self.ordered.dtype.itemsize:
            # Widened with NULs, as numpy compares them: one width for the hash table.
            return self.ordered, values.astype(self.ordered.dtype, copy=False)
        return self.ordered, values

    def _table(self) -> np.ndarray:
        if self._by_code is None:  # threads may race here: each builds the same table
            size = int(self.ordered[-1]) + 1
            if _mapped(self.ordered):
                with tempfile.TemporaryFile(prefix="sampler-index-") as backing:
                    backing.truncate(4 * size)  # the mapping outlives the closed file
                    by_code = np.memmap(backing, np.int32, "r+", shape=(size,))
                by_code[:] = -1
            else:
                by_code = np.full(size, -1, np.int32)
            by_code[self.ordered] = np.arange(len(self.ordered), dtype=np.int32)
            self._by_code = by_code
        return self._by_code


# Byte-string ids looked up at least this many times fewer than the dictionary holds
# are found by one Arrow hash table rather than binary search: 250K lookups into 45K
# ids, 3 ms hashed (their integer keys), 22 ms searched (42 ms as byte strings).
HASH_LOOKUP_FACTOR = 8


def _hashed_positions(ordered: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Each value's index in `ordered` (distinct), -1 where absent, by a hash table."""
    return arrow_positions(_arrow(values), _arrow(ordered))


def arrow_positions(values: pa.Array, value_set: pa.Array) -> np.ndarray:
    """int64 index of each value in `value_set` (distinct, of the same Arrow type), -1
    where absent: one Arrow hash table."""
    found = pc.index_in(values, value_set=value_set)  # null where absent
    positions = _int32s(found).astype(np.int64)
    if found.null_count:
        bits = np.unpackbits(np.frombuffer(found.buffers()[0], np.uint8), bitorder="little")
        positions[~bits[found.offset:found.offset + len(found)].astype(bool)] = -1
    return positions


def _arrow(values: np.ndarray) -> pa.Array:
    """An 'S' or uint64 array as an Arrow array over the same memory. Arrays and results
    cross by their buffers: pa.array(ndarray), pa.scalar and Array.to_numpy import
    pandas, a quarter second per process."""
    values = np.ascontiguousarray(values)
    kind = pa.binary(values.dtype.itemsize) if values.dtype.kind == "S" else pa.uint64()
    return pa.Array.from_buffers(kind, len(values), [None, pa.py_buffer(values)])


def _int32s(array: pa.Array) -> np.ndarray:
    """An Arrow int32 array's values as a numpy view of its buffer (what its null slots
    hold is unspecified)."""
    return np.frombuffer(array.buffers()[1], np.int32, len(array), array.offset * 4)


def index_beside(holder, key: str, ordered: np.ndarray) -> SortedIndex:
    """The SortedIndex of `ordered`, made on first use and kept in `holder.__dict__`
    under `key`, beside the holder's dataclass fields rather than as one (the Beam
    element codec ships fields only); made again if `ordered` was replaced."""
    index = holder.__dict__.get(key)
    if index is None or index.ordered is not ordered:
        index = holder.__dict__[key] = SortedIndex(ordered)
    return index


def _mapped(array: np.ndarray) -> bool:
    """Whether the array's memory is a mapped file (np.memmap, or a view of an mmap)."""
    while array is not None:
        if isinstance(array, (np.memmap, mmap.mmap)):
            return True
        array = getattr(array, "base", None)
    return False


def argsort(values: np.ndarray) -> np.ndarray:
    """np.argsort(values, kind="stable"), faster for non-negative integers: each value is
    packed with its index into one int64 and those are sorted, which numpy does with SIMD
    (250K int64: 7 ms sorted, 19 ms argsorted, 37 ms argsorted stably, here). Values too
    wide to pack with their index are argsorted stably."""
    n = len(values)
    if values.dtype.kind in "iu" and n > 1:
        low, high = int(values.min()), int(values.max())
        index_bits = (n - 1).bit_length()
        if low >= 0 and high < 1 << (63 - index_bits):
            packed = np.sort((values.astype(np.int64) << index_bits) | np.arange(n))
            return packed & ((1 << index_bits) - 1)
    return np.argsort(values, kind="stable")


def _unique_inverse_bytes(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    values = np.ascontiguousarray(values)
    # The fixed-width (NUL-padded) bytes as an Arrow array, without a copy: equal ids are
    # equal there, and bytewise order of the padded values is numpy's order of 'S'.
    encoded = pc.dictionary_encode(_arrow(values))
    distinct = np.frombuffer(encoded.dictionary.buffers()[1], dtype=values.dtype,
                             count=len(encoded.dictionary))
    order = np.argsort(order_keys(distinct))  # distinct: no ties to keep in order
    rank = np.empty(len(order), np.int64)
    rank[order] = np.arange(len(order))
    return distinct[order].copy(), rank[_int32s(encoded.indices)]
