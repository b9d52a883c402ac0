"""The items of many bytes_lists at once (`bytes_list_items`), on the protobuf wire
primitives of wire.py: a bytes_list's payload is a run of items `0x0A varint(length)
bytes`, and the payloads of many records' lists, written back to back, are read in whole
array passes (the batched decoder's strings, sampler.graph_tensor.batch_columns)."""
from __future__ import annotations

import numpy as np

from unigraph.encoding.wire import TAG_FIELD_1, padded, read_varints, windows


def bytes_list_items(data: np.ndarray, offsets: np.ndarray
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """(start, length of every item, items in each span) of BytesList data written back
    to back, span i being data[offsets[i]:offsets[i + 1]] and each a run of items
    `0x0A varint(length) bytes` (a bytes_list's payload); None when they are not
    exactly that (another field, an item running past its span or the data).

    The items are a chain (each length says where the next starts). Short items of
    bytes without control characters (ids, most labels) are found in one pass: the only
    bytes below 0x20 are then each item's tag and length, in pairs. Anything else is
    found by following the chain from every span's start with pointer doubling over the
    positions of 0x0A bytes (log2 of the longest run of items, a few array passes each).
    Either way the items found must tile the data exactly, span by span.
    """
    data = np.asarray(data, dtype=np.uint8)
    n = len(data)
    if n == 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, np.zeros(len(offsets) - 1, dtype=np.int64)
    marks = np.flatnonzero(data < 0x20)
    found = None
    if len(marks) % 2 == 0:
        heads, length_at = marks[0::2], marks[1::2]
        if (length_at == heads + 1).all() and (data[heads] == TAG_FIELD_1).all():
            found = heads, heads + 2, data[length_at].astype(np.int64)
    if found is None or not _tiles(found[0], found[1] + found[2], n, offsets):
        found = _chained_items(data, offsets)
        if found is None or not _tiles(found[0], found[1] + found[2], n, offsets):
            return None
    heads, starts, lengths = found
    return starts, lengths, np.diff(np.searchsorted(heads, offsets))


def _tiles(heads: np.ndarray, ends: np.ndarray, n: int, offsets: np.ndarray) -> bool:
    """Whether items [heads, ends) cover [0, n) one after the other, and every non-empty
    span starts an item."""
    if not len(heads) or heads[0] != 0 or ends[-1] != n or (ends[:-1] != heads[1:]).any():
        return False
    inner = offsets[:-1][offsets[1:] > offsets[:-1]]
    at = np.minimum(np.searchsorted(heads, inner), len(heads) - 1)
    return bool((heads[at] == inner).all())


def _chained_items(data: np.ndarray, offsets: np.ndarray):
    """(heads, starts, lengths) of the items on the chains from the spans' starts, or
    None when a chain breaks (a position that is no item's tag, a length too long)."""
    n = len(data)
    buffer = padded(data)
    heads = np.flatnonzero(data == TAG_FIELD_1)
    value, size, ok = read_varints(windows(buffer)[heads + 1])
    after = heads + 1 + size + value
    count = len(heads)
    done, broken = count, count + 1          # the chain's end, and a break
    index_of = np.full(n + 1, broken, dtype=np.int64)
    index_of[heads] = np.arange(count)
    index_of[n] = done
    jump = np.empty(count + 2, dtype=np.int64)
    jump[:count] = np.where(ok & (after <= n), index_of[np.minimum(after, n)], broken)
    jump[done], jump[broken] = done, broken
    members = index_of[offsets[:-1][offsets[1:] > offsets[:-1]]]
    if (members >= count).any():
        return None
    reached = np.zeros(count + 2, dtype=bool)
    reached[count:] = True
    reached[members] = True
    step = jump
    while True:  # members: the first 2**k items of every chain
        ahead = step[members]
        ahead = ahead[~reached[ahead]]
        if not len(ahead):
            break
        reached[ahead] = True
        members = np.concatenate([members, ahead])
        step = step[step]
    chosen = np.flatnonzero(reached[:count])
    if (jump[chosen] == broken).any():
        return None
    return heads[chosen], heads[chosen] + 1 + size[chosen], value[chosen]
