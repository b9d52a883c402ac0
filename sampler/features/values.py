"""Feature values as the encoders take them: tokens as 'S' arrays, ragged values as
flat values with each item's count.

Strings reach the encoders as the readers and the decoder give them (object arrays of
bytes); numpy's one C-level conversion turns those into an 'S' array, which sorts,
searches and hashes as fixed-width bytes. Trailing NUL bytes do not count ('S' pads
with them), the one place where two distinct byte strings read as one token.
"""
from __future__ import annotations

from typing import Optional

import numpy as np
import pyarrow as pa

from unigraph.columnar.ragged import Ragged


def as_bytes(values) -> np.ndarray:
    """Values (bytes, str or integers) as an 'S' array, each as the records hold it
    (str as UTF-8, integers as their decimal digits)."""
    array = np.asarray(values)
    if array.dtype.kind == "S":
        return array
    if array.dtype.kind in "iu":
        return array.astype("S")
    if not array.size:
        return np.zeros(array.shape, "S1")
    if array.dtype.kind == "O":
        try:  # bytes (the decoder's and the readers'), ASCII str, numbers: one C-level pass
            return array.astype("S")
        except (UnicodeEncodeError, TypeError, ValueError):
            pass  # other str: UTF-8 below
    out = [i.encode() if isinstance(i, str) else bytes(i) if isinstance(i, (bytes, np.bytes_))
           else str(i).encode() for i in array.reshape(-1).tolist()]
    return (np.array(out, dtype="S") if out else np.zeros(0, "S1")).reshape(array.shape)


def bytes_as_lines(values: np.ndarray) -> Optional[pa.Array]:
    """An object array of bytes as an Arrow large_binary array of lines: each value with
    a line break after it, as a vocabulary file holds its tokens. One join makes them (no
    'S' array as wide as the longest value, no Python call per value: the breaks are
    found in the joined bytes). None when a value is not bytes (str, numbers: as_bytes
    converts those), holds a line break (the lines could not be told apart; no token
    holds one), or ends in a NUL byte (as_bytes's 'S' array drops it: the two would
    disagree)."""
    items = values.reshape(-1).tolist()
    try:
        data = b"\n".join(items) + b"\n" if items else b""
    except TypeError:
        return None
    raw = np.frombuffer(data, np.uint8)
    breaks = np.flatnonzero(raw == 10)
    if len(breaks) != len(items):
        return None
    before = breaks[1:] - 1  # the last byte of each value but the first
    if len(breaks) and ((breaks[0] > 0 and raw[breaks[0] - 1] == 0)
                        or (raw[before[breaks[1:] - breaks[:-1] > 1]] == 0).any()):
        return None
    offsets = np.zeros(len(items) + 1, np.int64)
    offsets[1:] = breaks + 1
    return pa.Array.from_buffers(pa.large_binary(), len(items),
                                 [None, pa.py_buffer(offsets), pa.py_buffer(data)])


def flat_items(values) -> tuple[np.ndarray, np.ndarray | None]:
    """(values, None) for a dense feature [items, *shape]; for a ragged one (a Ragged,
    one row per item) its values and each item's count of them: the items' values of
    a shape [-1, *fixed] keep their fixed dimensions, deeper raggedness is flattened
    (an item's bag is all of its values)."""
    if not isinstance(values, Ragged):
        return np.asarray(values), None
    lengths = values.row_lengths
    inner = values.values
    while isinstance(inner, Ragged):
        splits = inner.row_splits
        ends = np.cumsum(lengths)
        lengths = np.diff(splits[np.concatenate([[0], ends])])
        inner = inner.values
    return np.asarray(inner), lengths.astype(np.int64, copy=False)


def item_offsets(lengths: np.ndarray) -> np.ndarray:
    """Where each item's values start in the flat values (torch.nn.EmbeddingBag's
    `offsets`, without the end of the last)."""
    return np.cumsum(lengths) - lengths


def first_value(values: np.ndarray):
    """The first value, as a message quotes it."""
    flat = np.asarray(values).reshape(-1)
    if not len(flat):
        return None
    value = flat[0]
    if isinstance(value, (bytes, np.bytes_)):
        return bytes(value).decode("utf-8", errors="replace")
    return value.item() if hasattr(value, "item") else value
