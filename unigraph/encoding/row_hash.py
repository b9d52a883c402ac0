"""Row identity from content: a 64-bit hash of the values a row holds, vectorized.

A file row is named by its position (RowId = file index << 40 | row). A BigQuery
table has no row order, and its read streams split the rows differently from
one session to the next, so a BigQuery row is named by a hash of its content
instead: the columns the sampler reads (ids or ends, weight, features), in
the table layout's order. Identical rows get identical RowIds, which is harmless:
they are interchangeable wherever RowIds matter (the adjacency's tie-break
between parallel edges, and messages).

The hash only has to be stable (the same on every platform, process and
batch cut) and well spread; it is not a random stream, which is why it lives
here, below the sampler, and not in sampler.core.rng. Its mixing step is
splitmix64's finalizer, a bijection of 64-bit words with full avalanche.

Per column, every row gets a uint64:
  fixed-width values ([n, *dims] numbers or bools): the row's little-endian bytes,
      folded word by word;
  ids ('S' arrays): the id's bytes folded while any remain (so the NUL padding
      of a wider array, which depends on the batch, changes nothing);
  strings (object arrays of bytes): each string's bytes, then the strings of a row;
  Ragged: the hashes of its items, combined per row with the row length.
Variable-length sequences are combined as a wrapping sum of position-salted
item hashes, closed with the length, so the whole batch is hashed at once.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from unigraph.encoding import splitmix
from unigraph.columnar.ragged import Ragged

_START = np.uint64(0x9E6C63D0676A9A99)
ID_HASH_START = _START  # where id_hashes' chain starts (for implementations elsewhere)
_step = splitmix.step
_words = splitmix.words


def _fold_fixed(matrix: np.ndarray) -> np.ndarray:
    """One hash per row of a [n, width] byte matrix (every word counts)."""
    words = _words(matrix)
    state = np.full(len(words), _START, dtype=np.uint64)
    for j in range(words.shape[1]):
        state = _step(state, words[:, j])
    return _step(state, np.uint64(matrix.shape[1]))


def _ids(ids: np.ndarray) -> np.ndarray:
    """One hash per 'S' id; trailing NUL padding is not part of an id."""
    n, width = len(ids), ids.dtype.itemsize
    matrix = np.ascontiguousarray(ids).view(np.uint8).reshape(n, width)
    words = _words(matrix)
    live = np.logical_or.accumulate((words != 0)[:, ::-1], axis=1)[:, ::-1]
    state = np.full(n, _START, dtype=np.uint64)
    for j in range(words.shape[1]):
        if not live[:, j].any():
            break
        state = np.where(live[:, j], _step(state, words[:, j]), state)
    return state


def id_hashes(ids: np.ndarray) -> np.ndarray:
    """One uint64 per 'S' value, as an id column folds into a RowId (trailing NULs do
    not count); sampler.features hashes categorical strings with it."""
    return _ids(ids)


def _sequences(item_hashes: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """One hash per sequence of consecutive items, `lengths[i]` items in sequence i."""
    lengths = np.asarray(lengths, dtype=np.int64)
    starts = np.cumsum(lengths) - lengths
    position = np.arange(len(item_hashes), dtype=np.int64) - np.repeat(starts, lengths)
    terms = _step(_step(_START, item_hashes), position.astype(np.uint64))
    with np.errstate(over="ignore"):
        totals = np.zeros(len(item_hashes) + 1, dtype=np.uint64)
        np.cumsum(terms, dtype=np.uint64, out=totals[1:])
        ends = starts + lengths
        sums = totals[ends] - totals[starts]  # wraps mod 2**64, as the sum does
    return _step(sums, lengths.astype(np.uint64))


def _strings(values: np.ndarray) -> np.ndarray:
    """One hash per string (bytes) of a flat object array."""
    flat = values.reshape(-1)
    lengths = np.fromiter(map(len, flat), dtype=np.int64, count=len(flat))
    data = np.frombuffer(b"".join(flat), dtype=np.uint8)
    return _sequences(data.astype(np.uint64), lengths)


def _items(values) -> np.ndarray:
    """One hash per item (first dimension) of a column's values."""
    if isinstance(values, Ragged):
        return _sequences(_items(values.values), values.row_lengths)
    values = np.asarray(values)
    n = len(values)
    if values.dtype.kind == "S" and values.ndim == 1:
        return _ids(values)
    if values.dtype == object:
        per_item = int(np.prod(values.shape[1:], dtype=np.int64))
        strings = _strings(values)
        return _sequences(strings, np.full(n, per_item, dtype=np.int64))
    little = np.ascontiguousarray(values.astype(values.dtype.newbyteorder("<"), copy=False))
    width = little.dtype.itemsize * int(np.prod(values.shape[1:], dtype=np.int64))
    return _fold_fixed(little.view(np.uint8).reshape(n, width))


def row_hashes(columns: Sequence) -> np.ndarray:
    """int64 RowIds of n rows from their column values (arrays or Ragged, n items each)."""
    if not columns:
        raise ValueError("row_hashes: needs at least one column")
    state = np.full(len(columns[0]), _START, dtype=np.uint64)
    for column in columns:
        state = _step(state, _items(column))
    return state.view(np.int64)
